/**
 * Processes: pm2 under the fleet's PM2_HOME, `thymos up`/`down`, the nats-server binary (found, or installed where it may be) and who it admits, and finding the bundled `thymos` command.
 */
export { downFleet, type DownResult, type LaunchOptions, upFleet, type UpResult } from './fleet-launcher.js';
export { logOffset, settledLog } from './log-tail.js';
export { NatsAccess, type NatsAccessOptions } from './nats-access.js';
export {
  type EnsuredNatsServer,
  ensureNatsServer,
  type EnsureNatsServerOptions,
  findNatsServer,
  type HostFacts,
  hostFacts,
  natsServerInstallCommand,
  natsServerVersion,
} from './nats-server-binary.js';
export {
  AUTH_ERRORS,
  natsServerConfigFile,
  type NatsUsers,
  natsUsersIncludeFile,
  refuseEarlierNatsServer,
  reloadNatsUsers,
  writeNatsServerConfig,
  writeNatsUsersInclude,
} from './nats-server-config.js';
export { type AppExit, type AppSpec, IDLE_PROCESS_NODE_ARGS, type ProcessInfo, ProcessManager } from './process-manager.js';
export { thymosBinPath } from './thymos-bin.js';
