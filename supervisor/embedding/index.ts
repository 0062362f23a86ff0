/**
 * The fleet's text models, served on NATS: the one embedding model (fastembed) and the concept
 * extractor, so that agents share them instead of each loading its own.
 */
export { ConceptService } from './concept-service.js';
export { EmbeddingService } from './embedding-service.js';
