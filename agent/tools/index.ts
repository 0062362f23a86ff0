/**
 * The agent's declared tools: the governed path every call takes (validate, reason, permission and mode, run, record), the Http, Script, Subprocess and Mcp executors, the input and output shapes MCP advertises, and the tools as a model is offered them.
 */
export { type CallStore } from './call-store.js';
export { type ExecutorContext } from './executor-context.js';
export { modelResultOf, modelToolsOf, toolLoopOf } from './model-tools.js';
export { type ScriptContext, type ScriptFunction } from './script-context.js';
export { type CallRequest, ToolCaller, type ToolCallerOptions } from './tool-caller.js';
export { inputShape, outputShape, REASON_MAX, toolAnnotations } from './tool-shapes.js';
