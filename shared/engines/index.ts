/**
 * The engines a Thymos process hosts: the embedded SurrealDB and the pino logger. `thymos/client` loads neither.
 */
export { openEmbeddedSurreal, openRemoteSurreal } from './embedded-surreal.js';
export { createLogger, logFeedOf, type LoggerOptions } from './pino-logger.js';
