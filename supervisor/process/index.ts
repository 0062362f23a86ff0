/**
 * The supervisor program's composition root: start-up order, adoption, and shutdown.
 */
export { type RunningSupervisor, runSupervisorProcess, type SupervisorOptions } from './supervisor-process.js';
