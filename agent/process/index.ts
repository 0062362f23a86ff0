/**
 * The agent program's composition root: `thymos agent` arguments, the start context, start-up order and shutdown.
 */
export { AGENT_USAGE, type AgentOptions, AgentOptionsSchema, parseAgentArgs } from './agent-options.js';
export { type AgentStartContext, AgentStartContextSchema } from '../../shared/protocol/agent-start-context.js';
export { agentDataDir, defaultDefinition, resolveConfig, runAgentProcess, type RunningAgent } from './agent-process.js';
