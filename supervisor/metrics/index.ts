/**
 * Metrics: the supervisor's Prometheus registry of reconciles, transitions, starts and heartbeats.
 */
export { SupervisorMetrics } from './supervisor-metrics.js';
