/**
 * Talking over NATS: the connection, one coded request/reply helper for each side, the event and inbox streams, and the world store's client.
 */
export { deleteAgentConsumer, ensureAgentConsumer, ensureEventStream, publishWorldEvent, sendAgentMessage } from './event-stream.js';
export { connectNats, isNoResponders, type NatsConnection, type NatsConnectOptions } from './nats-connection.js';
export { REQUESTER_HEADER, SupervisorRequester } from './supervisor-requester.js';
export { WorldClient, type WorldClientOptions, type WorldSubscription } from './world-client.js';
