/**
 * Events: the router that reads the fleet's event stream once and delivers each event to the agents that hear it.
 */
export { EventRouter, type EventRouterOptions } from './event-router.js';
