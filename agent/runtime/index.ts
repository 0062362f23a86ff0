/**
 * One agent's state and behaviour: mode, memory and concepts wired together, dialogue and the application's behaviour module.
 */
export {
  type Acting,
  type ActOutcome,
  type ActRequest,
  actSteps,
  INTENT_OUTCOMES,
  type IntentAnswer,
  type IntentCandidate,
  type IntentOutcome,
  type JobCalls,
  type ReadRequest,
  REPLY_MARKER,
  withActs,
  withoutMarkers,
} from './acting.js';
export {
  type AgentBehavior,
  type AgentBehaviorContext,
  type CreateBehavior,
  type JobDelivery,
  type JobRequest,
  type JobResult,
  JobResultSchema,
  type TalkReply,
  type TalkRequest,
} from './agent-behavior.js';
export { type EventPublisher } from './agent-links.js';
export { type Decision, type Thought } from './agent-reasoner.js';
export { AgentRuntime } from './agent-runtime.js';
export {
  buildContext,
  CONTEXT_TIERS,
  type ContextItem,
  type ContextPacket,
  type ContextTier,
  countTokens,
  TOKEN_COUNT,
} from './context-packet.js';
export { DialogueBehavior, onlyAsks } from './dialogue-behavior.js';
export { JOB_TAG, jobCalls, type JobEnding, jobText, settledEnding } from './job-work.js';
export { type Controllable, type Conversing, type Hearing, type Messenger, type RuntimeGate, type Working } from './runtime-ports.js';
