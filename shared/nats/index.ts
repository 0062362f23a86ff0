/**
 * Talking over NATS: the connection and the identity it connects as, one coded request/reply helper for each side, the event and inbox streams and the long pulls that read them, and the world store's client.
 */
export { lostRace } from './api-error.js';
export { codedRequest, type Unanswered, validatedRequest } from './coded-request.js';
export { type CodedReply, serveCoded, serveConstant } from './coded-responder.js';
export { watchLastDeliveries } from './dead-letter-watch.js';
export { deadLetters, type GivenUp, giveUpJob, requeueDeadLetter, writeDeadLetter } from './dead-letters.js';
export {
  deleteAgentConsumer,
  ensureAgentConsumer,
  ensureEventStream,
  ensureRouterConsumer,
  publishWorldEvent,
  sendAgentMessage,
} from './event-stream.js';
export { ensureJobQueues, JOB_DEDUP_WINDOW_MS, jobBacklog, publishJob } from './job-queue.js';
export { consumeLong, LONG_PULL, type PullTiming } from './long-pull.js';
export {
  admission,
  connectNats,
  connectOnce,
  connectsAs,
  logRefusals,
  type NatsConnection,
  type NatsConnectOptions,
  type NatsLink,
  permissionViolation,
  refusal,
  replyInbox,
} from './nats-connection.js';
export {
  agentIdentity,
  ensureNatsIdentity,
  fleetNatsLink,
  fleetNatsSeed,
  listNatsIdentities,
  natsAnswers,
  natsCredentialsFile,
  type NatsIdentity,
  natsIdentityFile,
  natsInboxPrefix,
  natsPublicKey,
  natsSecretsDir,
  nkeySigner,
  readNatsSeed,
  removeNatsIdentity,
  staleAgentIdentities,
  writeNatsSeed,
} from './nats-identity.js';
export { domainWork, natsPermissions, type NatsUserPermissions, type NatsWork } from './nats-permissions.js';
export { ownDelivery } from './own-delivery.js';
export { published, PUBLISHED_MARK } from './published-mark.js';
export { publishAttempts, type PublishOptions, updateStream } from './stream-replicas.js';
export { REQUESTER, REQUESTER_HEADER, SupervisorRequester } from './supervisor-requester.js';
export { WorldClient, type WorldClientOptions, type WorldSubscription } from './world-client.js';
