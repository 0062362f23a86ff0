/**
 * The fleet's one embedding model (fastembed), served on NATS.
 */
export { EmbeddingService } from './embedding-service.js';
