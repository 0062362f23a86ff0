/**
 * Configuration: `thymos.toml` (one schema per section, every default in it), the data directory's layout, the running fleet's recorded addresses, and where the Thymos package and what it ships are.
 */
export { type MemorySettings, ToolsSettingsSchema } from './agent-settings.js';
export { type StreamReplicas } from './cluster-settings.js';
export { type FleetPaths, fleetPaths, Pm2Names, spareClaimFile } from './fleet-paths.js';
export { type FleetInfo, fleetNatsUrl, readFleetInfo, writeFleetInfo } from './fleet-runtime.js';
export { DEFAULT_FLEET_NAME, type EventsSettings, FleetNameSchema, type LifecycleSettings } from './fleet-settings.js';
export { isLoopback, natsLinkPrivate } from './host-settings.js';
export {
  LLM_PROVIDERS,
  LLM_USE_SCHEMAS,
  LLM_USES,
  type LlmContextSettings,
  LlmContextUseSettingsSchema,
  type LlmUse,
  type LlmUseSettings,
  LlmUseSettingsSchema,
} from './llm-settings.js';
export {
  agentMcpUrl,
  configFromObject,
  loadConfig,
  type NatsTlsFiles,
  parseConfig,
  resolveConfigFile,
  type ThymosConfig,
  type ThymosConfigInput,
  ThymosConfigSchema,
  type ThymosSettings,
  unreadableByDomain,
} from './thymos-config.js';
export { glossaryDir, offlineModelDir, thymosRoot } from './thymos-root.js';
