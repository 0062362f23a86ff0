/**
 * Plain words to calls of an agent's granted tools: the tools ranked by their metadata only (words, words near in meaning, the offline model's vectors), arguments filled offline or by a model, `resolve_intent`, `act` and `[TOOL: …]` in replies, each act remembered; intents in French, Spanish and German read through glossaries built from FreeDict dictionaries.
 */
export { fillArguments, type Filled, type KnownName } from './argument-filler.js';
export { type AstrayExample, checkExamples, type ExampleCheck } from './example-check.js';
export { Glossary } from './glossary.js';
export { buildGlossaries } from './glossary-build.js';
export { INTENT_TAG, IntentActs, knownNames } from './intent-acts.js';
export { foreignLanguage, IntentResolver } from './intent-resolver.js';
export { type ModelReader, modelReader, type ModelReading } from './model-reader.js';
export { DEFAULT_TUNING, type ResolverTuning, ToolRanker } from './tool-ranker.js';
export { customWordsModel, readWords, type WordsReader } from './words-model.js';
