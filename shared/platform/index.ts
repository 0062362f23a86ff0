/**
 * The machine underneath: logging, data locks, deadlines, port probes, clean-up order, start-up phase timing, agent tokens, the embedder interface and the offline model's reader, where the package is, the concept extractor, a process's CPU and memory from /proc, and Node's compile cache.
 */
export { agentTokenPath, bearerMatches, ensureAgentToken, readAgentToken } from './agent-token.js';
export { CleanupStack } from './cleanup-stack.js';
export { compileCacheAvailable, flushCompileCache } from './compile-cache.js';
export { CompromiseExtractor, type ConceptExtractor, type ExtractedConcept } from './concept-extractor.js';
export { DataLock, isAlive, readLockPid } from './data-lock.js';
export { withDeadline } from './deadline.js';
export { dot, type Embedder } from './embedder.js';
export { LogFeed, type Logger, type LogRecord } from './logger.js';
export { PhaseClock, processCpuMs } from './phase-clock.js';
export { portTaken, refusesConnections } from './port-probe.js';
export { cpuSeconds, memoryBytes } from './process-usage.js';
export { STATIC_VECTORS_FILE, StaticEmbedder } from './static-embedder.js';
export { StopOnce } from './stop-once.js';
export { writeAtomic } from './write-atomic.js';
