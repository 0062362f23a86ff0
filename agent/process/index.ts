/**
 * The agent program's composition root: `thymos agent` arguments, the start context, start-up order and shutdown.
 */
export { defaultDefinition } from './agent-assembly.js';
export { AGENT_USAGE, type AgentOptions, AgentOptionsSchema, parseAgentArgs } from './agent-options.js';
export { agentDataDir, resolveConfig, runAgentProcess, type RunningAgent } from './agent-process.js';
