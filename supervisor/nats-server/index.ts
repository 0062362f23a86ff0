/**
 * The fleet's nats-server: the binary (found, or installed where it may be), its configuration, and who it
 * admits (an agent's identity granted before its first start, revoked when it leaves the domain).
 */
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
} from './server-binary.js';
export {
  AUTH_ERRORS,
  natsServerConfigFile,
  type NatsUsers,
  natsUsersIncludeFile,
  natsUsersIncludeIsCurrent,
  reloadNatsUsers,
  writeNatsServerConfig,
  writeNatsUsersInclude,
} from './server-config.js';
