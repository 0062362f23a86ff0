/**
 * Processes: pm2 under the fleet's PM2_HOME, `thymos up`/`down`, and finding the bundled `thymos` command.
 */
export { downFleet, type DownResult, findNatsServer, type LaunchOptions, upFleet, type UpResult } from './fleet-launcher.js';
export { logOffset, settledLog } from './log-tail.js';
export { type AppExit, type AppSpec, IDLE_PROCESS_NODE_ARGS, type ProcessInfo, ProcessManager } from './process-manager.js';
export { thymosBinPath, thymosRoot } from './thymos-bin.js';
