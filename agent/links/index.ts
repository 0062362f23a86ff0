/**
 * The agent's links to the fleet: control and heartbeats, heard events (and the hints they carry), the inbox, world watches, the remote embedder and the shared concept extractor.
 */
export { type AgentControlChannel } from './agent-control-channel.js';
export { HintBook } from './hint-book.js';
export { SharedConceptExtractor } from './shared-concept-extractor.js';
