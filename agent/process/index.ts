/**
 * The agent program's composition root: `thymos agent` arguments, the start context, start-up order and shutdown, and the warm spare that becomes an agent when claimed.
 */
export { agentDataDir } from './agent-data.js';
export { AGENT_USAGE, type AgentOptions, AgentOptionsSchema, parseAgentArgs } from './agent-options.js';
export { resolveConfig, runAgentProcess, type RunningAgent } from './agent-process.js';
export { defaultDefinition } from './agent-setup.js';
export { runSpareProcess, type Spare, type SpareOptions } from './spare-process.js';
