/**
 * The shared world store: its database, tables, live queries and their API on NATS.
 */
export { worldControlApi } from './world-api.js';
export { openWorldDatabase } from './world-database.js';
export { WorldStore } from './world-store.js';
