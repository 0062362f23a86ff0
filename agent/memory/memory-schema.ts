/**
 * Schema of the private database. Deliberately no DEFINE INDEX: search runs in an
 * in-process index rebuilt from these rows (measured faster, see docs/benchmarks.md),
 * and an HNSW index on surrealkv has lost batched writes across a reopen.
 */
export const MEMORY_SCHEMA = `
DEFINE TABLE IF NOT EXISTS memory SCHEMAFULL;
DEFINE FIELD IF NOT EXISTS content ON memory TYPE string;
DEFINE FIELD IF NOT EXISTS importance ON memory TYPE number;
DEFINE FIELD IF NOT EXISTS emotional_weight ON memory TYPE number;
DEFINE FIELD IF NOT EXISTS tags ON memory TYPE array<string>;
DEFINE FIELD IF NOT EXISTS source ON memory TYPE object;
DEFINE FIELD IF NOT EXISTS source.kind ON memory TYPE string;
DEFINE FIELD IF NOT EXISTS source.by ON memory TYPE string;
DEFINE FIELD IF NOT EXISTS source.thread ON memory TYPE option<string>;
DEFINE FIELD IF NOT EXISTS source.event ON memory TYPE option<string>;
DEFINE FIELD IF NOT EXISTS source.model ON memory TYPE option<string>;
DEFINE FIELD IF NOT EXISTS created_at ON memory TYPE int;
DEFINE FIELD IF NOT EXISTS occurred_at ON memory TYPE option<int>;
DEFINE FIELD IF NOT EXISTS last_accessed ON memory TYPE int;
DEFINE FIELD IF NOT EXISTS access_count ON memory TYPE int;
DEFINE FIELD IF NOT EXISTS embedding ON memory TYPE option<bytes>;
DEFINE FIELD IF NOT EXISTS embedding_model ON memory TYPE option<string>;
DEFINE FIELD IF NOT EXISTS derived_from ON memory TYPE option<array<string>>;
DEFINE FIELD IF NOT EXISTS insight_key ON memory TYPE option<string>;
DEFINE FIELD IF NOT EXISTS superseded_by ON memory TYPE option<string>;
DEFINE FIELD IF NOT EXISTS superseded_reason ON memory TYPE option<string>;
DEFINE FIELD IF NOT EXISTS superseded_at ON memory TYPE option<int>;
DEFINE FIELD IF NOT EXISTS demoted_at ON memory TYPE option<int>;
DEFINE FIELD IF NOT EXISTS compacted_into ON memory TYPE option<string>;
DEFINE FIELD IF NOT EXISTS concepts_at ON memory TYPE option<int>;
DEFINE TABLE IF NOT EXISTS concept SCHEMAFULL;
DEFINE FIELD IF NOT EXISTS name ON concept TYPE string;
DEFINE FIELD IF NOT EXISTS type ON concept TYPE string;
DEFINE FIELD IF NOT EXISTS tier ON concept TYPE string;
DEFINE FIELD IF NOT EXISTS mentions ON concept TYPE int;
DEFINE FIELD IF NOT EXISTS significance ON concept TYPE number;
DEFINE FIELD IF NOT EXISTS first_seen ON concept TYPE int;
DEFINE FIELD IF NOT EXISTS last_seen ON concept TYPE int;
DEFINE FIELD IF NOT EXISTS attributes ON concept TYPE option<string>;
DEFINE TABLE IF NOT EXISTS alias SCHEMAFULL;
DEFINE FIELD IF NOT EXISTS text ON alias TYPE string;
DEFINE FIELD IF NOT EXISTS concept ON alias TYPE string;
DEFINE FIELD IF NOT EXISTS type ON alias TYPE string;
DEFINE FIELD IF NOT EXISTS source ON alias TYPE string;
DEFINE TABLE IF NOT EXISTS mentions TYPE RELATION IN memory OUT concept;
DEFINE TABLE IF NOT EXISTS relates TYPE RELATION IN concept OUT concept SCHEMAFULL;
DEFINE FIELD IF NOT EXISTS type ON relates TYPE string;
DEFINE FIELD IF NOT EXISTS properties ON relates TYPE string;
DEFINE FIELD IF NOT EXISTS at ON relates TYPE int;
DEFINE TABLE IF NOT EXISTS caused_by TYPE RELATION IN memory OUT memory SCHEMAFULL;
DEFINE FIELD IF NOT EXISTS reason ON caused_by TYPE string;
DEFINE FIELD IF NOT EXISTS at ON caused_by TYPE int;
DEFINE TABLE IF NOT EXISTS snapshot SCHEMAFULL;
DEFINE FIELD IF NOT EXISTS at ON snapshot TYPE int;
DEFINE FIELD IF NOT EXISTS reason ON snapshot TYPE string;
DEFINE FIELD IF NOT EXISTS state ON snapshot TYPE string;
DEFINE TABLE IF NOT EXISTS meta SCHEMALESS;
DEFINE TABLE IF NOT EXISTS tool_call SCHEMAFULL;
DEFINE FIELD IF NOT EXISTS status ON tool_call TYPE string;
DEFINE FIELD IF NOT EXISTS record ON tool_call TYPE string;
DEFINE TABLE IF NOT EXISTS call_key SCHEMAFULL;
DEFINE FIELD IF NOT EXISTS call ON call_key TYPE string;
DEFINE TABLE IF NOT EXISTS job_delivery SCHEMAFULL;
DEFINE FIELD IF NOT EXISTS here ON job_delivery TYPE int;
DEFINE FIELD IF NOT EXISTS stamp ON job_delivery TYPE string;
DEFINE FIELD IF NOT EXISTS at ON job_delivery TYPE int;
`;
