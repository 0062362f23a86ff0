/**
 * Launching a fleet: `thymos up` starts its nats-server and supervisor under pm2, `thymos down` stops them.
 */
export { downFleet, type DownResult, type LaunchOptions, upFleet, type UpResult } from './fleet-launcher.js';
