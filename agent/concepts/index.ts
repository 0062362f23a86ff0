/**
 * Concepts: what a memory is about, extracted, aliased, related and kept as graph edges.
 */
export { type CauseStep, ConceptTracker, type ConceptView, type RelatedConcept } from './concept-tracker.js';
