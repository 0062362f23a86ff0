/**
 * Private memory: records in SurrealDB, the in-process BM25 and vector indexes kept in step with it, strength, and the ways of searching (bm25, vector, hybrid, the cascade).
 */
export { AgentMemory, type ConceptCompanionWrite, type NewMemory, type RecallOptions } from './agent-memory.js';
export { Bm25Index } from './bm25-index.js';
export { CASCADE, type CascadeStage, type CascadeTuning } from './cascade-recall.js';
export { entry } from './map-entry.js';
export { isCurrent, type MemoryChanges, type MemoryRecord, type MemorySource, occurredAt, type RecallHit } from './memory-record.js';
export { type AliasRow, type ConceptRecord, type ConceptWrite, MemoryStore } from './memory-store.js';
export { memoryStrength } from './memory-strength.js';
export { resolveSearchStrategy } from './search-strategy.js';
export { STOP_WORDS } from './stop-words.js';
