/**
 * Processes: pm2 under the fleet's PM2_HOME, a program's launch and its log, and finding the bundled `thymos` command.
 */
export { AppLaunch } from './app-launch.js';
export { freePort } from './free-port.js';
export { logOffset, settledLog } from './log-tail.js';
export { type AppExit, type AppSpec, IDLE_PROCESS_NODE_ARGS, type ProcessInfo, ProcessManager } from './process-manager.js';
export { thymosBinPath } from './thymos-bin.js';
