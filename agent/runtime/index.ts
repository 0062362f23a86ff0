/**
 * One agent's state and behaviour: mode, memory and concepts wired together, dialogue and the application's behaviour module.
 */
export { type AgentBehavior, type AgentBehaviorContext, type CreateBehavior, type TalkReply, type TalkRequest } from './agent-behavior.js';
export { AgentRuntime } from './agent-runtime.js';
export { DialogueBehavior, onlyAsks, QUESTION_TAG, SAID_TAG } from './dialogue-behavior.js';
