/**
 * Concepts: what a memory is about, extracted, aliased, related and kept as graph edges.
 */
export { ConceptTracker, type ConceptView } from './concept-tracker.js';
export type { CauseStep, RelatedConcept } from './concept-walks.js';
export { ModelConceptExtractor, type ModelConceptExtractorOptions } from './model-concept-extractor.js';
