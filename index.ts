export * as agent from './agent/index.js';
export * from './shared/index.js';
