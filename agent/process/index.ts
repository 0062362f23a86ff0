/**
 * The agent program's composition root: `thymos agent` arguments, the start context, start-up order and shutdown.
 */
export { AGENT_USAGE, type AgentOptions, AgentOptionsSchema, parseAgentArgs } from './agent-options.js';
export { agentDataDir, defaultDefinition, resolveConfig, runAgentProcess, type RunningAgent } from './agent-process.js';
