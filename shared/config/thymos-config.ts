import { accessSync, constants, existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';

import toml from 'toml';
import { z } from 'zod';

import { ErrorCode, ThymosError } from '../errors/errors.js';
import { describeIssue } from '../errors/zod-issues.js';
import { AgentSettingsSchema, JobsSettingsSchema, McpSettingsSchema, MemorySettingsSchema, ToolsSettingsSchema } from './agent-settings.js';
import { ClusterSettingsSchema } from './cluster-settings.js';
import {
  DomainSettingsSchema,
  EmbeddingSettingsSchema,
  EventsSettingsSchema,
  FleetSettingsSchema,
  LifecycleSettingsSchema,
  LogSettingsSchema,
  NatsSettingsSchema,
  SupervisorSettingsSchema,
  WorldSettingsSchema,
} from './fleet-settings.js';
import { HostSettingsSchema, isLoopback, isWildcard } from './host-settings.js';
import { LlmSettingsSchema } from './llm-settings.js';

/** The whole of `thymos.toml`. Every default lives here. */
const ThymosBaseSchema = z
  .object({
    /** Where agents, the world store and pm2 keep their files, relative to this file. @default "data" */
    data_dir: z.string().min(1).default('data'),
    fleet: FleetSettingsSchema.prefault({}),
    host: HostSettingsSchema.prefault({}),
    domain: DomainSettingsSchema.prefault({}),
    agent: AgentSettingsSchema.prefault({}),
    lifecycle: LifecycleSettingsSchema.prefault({}),
    supervisor: SupervisorSettingsSchema.prefault({}),
    nats: NatsSettingsSchema.prefault({}),
    cluster: ClusterSettingsSchema.prefault({}),
    events: EventsSettingsSchema.prefault({}),
    world: WorldSettingsSchema.prefault({}),
    embedding: EmbeddingSettingsSchema.prefault({}),
    memory: MemorySettingsSchema.prefault({}),
    llm: LlmSettingsSchema.prefault({}),
    mcp: McpSettingsSchema.prefault({}),
    tools: ToolsSettingsSchema.prefault({}),
    jobs: JobsSettingsSchema.prefault({}),
    log: LogSettingsSchema.prefault({}),
  })
  .strict();

/** The whole of `thymos.toml`, with what a fleet reachable from other machines, or on a cluster, must have. */
export const ThymosConfigSchema = ThymosBaseSchema.superRefine(refuseOpenExposure).superRefine(refuseLoneReplicas);

/**
 * Streams kept on three nodes need a cluster of them: the nats-server `thymos up` runs (no `[nats]
 * url`) is one node, which refuses every stream of more replicas than it.
 */
function refuseLoneReplicas(c: z.output<typeof ThymosBaseSchema>, ctx: z.RefinementCtx): void {
  if (c.cluster.replicas > 1 && c.nats.url === undefined)
    ctx.addIssue({
      code: 'custom',
      path: ['cluster', 'replicas'],
      message: `expected [nats] url, the nats-server cluster to keep each stream on ${c.cluster.replicas} nodes: without it thymos up runs a nats-server of one node`,
    });
}

/**
 * What a fleet reachable from other machines must have. Listening on every interface needs an
 * address to advertise; an MCP endpoint off loopback needs its token; agents advertised off
 * loopback, or a NATS server off loopback, need the fleet's identities or credentials, or anyone
 * who reaches the server could drive the fleet.
 */
function refuseOpenExposure(c: z.output<typeof ThymosBaseSchema>, ctx: z.RefinementCtx): void {
  if (isWildcard(c.agent.host) && c.host.advertise === undefined)
    ctx.addIssue({
      code: 'custom',
      path: ['host', 'advertise'],
      message: `expected the address other hosts reach agents on: [agent] host = "${c.agent.host}" listens on every interface, which is no address to give out`,
    });
  const offLoopback = !isLoopback(c.agent.host) || (c.host.advertise !== undefined && !isLoopback(c.host.advertise));
  if (offLoopback && !c.mcp.require_token)
    ctx.addIssue({
      code: 'custom',
      path: ['mcp', 'require_token'],
      message: `expected require_token = true: the agents' endpoint is reached off loopback ([agent] host "${c.agent.host}"${c.host.advertise ? `, [host] advertise "${c.host.advertise}"` : ''}), and without its token it is open to anyone who reaches it`,
    });
  const keyed = c.nats.identities || c.nats.credentials !== undefined;
  if (c.nats.url === undefined || keyed) return;
  const advertised = c.host.advertise ?? c.agent.host;
  // String(): an entry that failed its own check leaves the array untransformed here.
  const natsHosts = String(c.nats.url)
    .split(',')
    .map((u) => natsHostOf(u.trim()));
  const open = [
    ...(isLoopback(advertised) || isWildcard(advertised) ? [] : [`[host] advertise "${advertised}"`]),
    ...natsHosts.filter((h) => h !== undefined && !isLoopback(h)).map((h) => `[nats] url's server ${h}`),
  ];
  if (open.length > 0)
    ctx.addIssue({
      code: 'custom',
      path: ['nats', 'identities'],
      message: `expected identities = true or credentials: ${open.join(' and ')} is not loopback, and without the fleet's identities anyone who reaches the NATS server could drive the fleet`,
    });
}

/** The host a NATS URL names (`nats://host:port`, `host:port`), or undefined when it names none. */
function natsHostOf(url: string): string | undefined {
  try {
    return new URL(url.includes('://') ? url : `nats://${url}`).hostname || undefined;
  } catch {
    return undefined;
  }
}

export type ThymosConfigInput = z.input<typeof ThymosConfigSchema>;
export type ThymosSettings = z.infer<typeof ThymosConfigSchema>;

/** A validated configuration with its paths resolved. */
export interface ThymosConfig extends ThymosSettings {
  /** Absolute path of the file it came from, or undefined for built-in defaults. */
  readonly file: string | undefined;
  /** Absolute data directory. */
  readonly dataPath: string;
  /** Absolute path of the application's Pkl module, if any. */
  readonly domainSchemaPath: string | undefined;
  /** Absolute path of the application's behaviour module, if any. */
  readonly behaviorPath: string | undefined;
  /** Absolute path of the application's relevance module, if any. */
  readonly relevancePath: string | undefined;
  /** The TLS files of `[nats] tls_*`, absolute and checked readable; undefined when none is set. */
  readonly natsTls: NatsTlsFiles | undefined;
  /** The folder of `[nats] credentials`, absolute and checked to be a folder; undefined when unset. */
  readonly natsCredentialsPath: string | undefined;
  /** The folder of `[tools] glossary_dir`, absolute; undefined when unset (the Thymos install's models/glossary). */
  readonly glossaryPath: string | undefined;
  /** The folder of `[embedding] model_dir`, absolute; undefined when unset (the Thymos install's models/glove-100d). */
  readonly embeddingModelPath: string | undefined;
  /** The folder of `[embedding] cache_dir`, absolute; `<data_dir>/models` when unset. */
  readonly embeddingCachePath: string;
}

/** Files a connection to the server of `[nats] url` uses for TLS (nats.js reads them as it connects, and again on each reconnect). */
export interface NatsTlsFiles {
  readonly caFile?: string;
  readonly certFile?: string;
  readonly keyFile?: string;
}

/**
 * Reads and validates a `thymos.toml`. Errors name the file, the key, what was
 * expected, what came, and the line.
 */
export function loadConfig(file: string): ThymosConfig {
  const path = resolve(file);
  let source: string;
  try {
    source = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ThymosError(ErrorCode.CONFIG_INVALID, `cannot read config file ${path}: ${(err as Error).message}`, {
      cause: err,
      location: { file: path },
    });
  }
  return parseConfig(source, path);
}

/** `file`, else `$THYMOS_CONFIG`, else `./thymos.toml` if present, else built-in defaults. */
export function resolveConfigFile(file: string | undefined): ThymosConfig {
  const path = file ?? (process.env.THYMOS_CONFIG || undefined) ?? (existsSync('thymos.toml') ? 'thymos.toml' : undefined);
  return path === undefined ? configFromObject({}) : loadConfig(path);
}

/** Validates configuration text. `file` is used for messages and to resolve relative paths. */
export function parseConfig(source: string, file?: string): ThymosConfig {
  const where = file ?? '<config>';
  let raw: unknown;
  try {
    raw = toml.parse(source);
  } catch (err) {
    const loc = (err as { location?: { start?: { line?: number; column?: number } } }).location?.start;
    throw new ThymosError(
      ErrorCode.CONFIG_INVALID,
      `${where}${loc?.line ? `:${loc.line}:${loc.column}` : ''}: not valid TOML: ${(err as Error).message}`,
      { cause: err, location: { file: where, line: loc?.line, column: loc?.column } },
    );
  }
  return fromObject(raw, where, source, file);
}

/** Validates an already-parsed configuration object (for the library and tests). */
export function configFromObject(input: ThymosConfigInput, baseDir: string = process.cwd()): ThymosConfig {
  return fromObject(input, '<object>', undefined, resolve(baseDir, 'thymos.toml'), false);
}

function fromObject(raw: unknown, where: string, source: string | undefined, file: string | undefined, fromFile = true): ThymosConfig {
  const result = ThymosConfigSchema.safeParse(raw);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const keyPath = issue.path.map(String);
    const line = source === undefined ? undefined : findKeyLine(source, keyPath, issue);
    const dotted = keyPath.join('.') || '(top level)';
    throw new ThymosError(ErrorCode.CONFIG_INVALID, `${where}${line ? `:${line}` : ''}: ${dotted}: ${describeIssue(issue, raw)}`, {
      location: { file: where, line, path: dotted },
    });
  }
  const base = file === undefined ? process.cwd() : dirname(resolve(file));
  const settings = result.data;
  const at = (p: string) => (isAbsolute(p) ? p : resolve(base, p));
  const tlsFile = (key: 'tls_ca' | 'tls_cert' | 'tls_key'): string | undefined => {
    const given = settings.nats[key];
    if (given === undefined) return undefined;
    const path = at(given);
    try {
      accessSync(path, constants.R_OK);
      const stat = statSync(path);
      if (!stat.isFile()) throw new Error('not a file');
      // A private key any user of the machine may read proves nothing (a group, as ssl-cert, may).
      if (key === 'tls_key' && (stat.mode & 0o004) !== 0)
        throw new Error(`any user may read it (mode ${(stat.mode & 0o777).toString(8)}): chmod o-r it`);
    } catch (err) {
      const line = source === undefined ? undefined : findKeyLine(source, ['nats', key]);
      throw new ThymosError(
        ErrorCode.CONFIG_INVALID,
        `${where}${line ? `:${line}` : ''}: nats.${key}: expected a readable PEM file, got ${path} (${(err as Error).message})`,
        {
          location: { file: where, line, path: `nats.${key}` },
        },
      );
    }
    return path;
  };
  const tls = { caFile: tlsFile('tls_ca'), certFile: tlsFile('tls_cert'), keyFile: tlsFile('tls_key') };
  const credentials = settings.nats.credentials === undefined ? undefined : at(settings.nats.credentials);
  if (credentials !== undefined && !(existsSync(credentials) && statSync(credentials).isDirectory())) {
    const line = source === undefined ? undefined : findKeyLine(source, ['nats', 'credentials']);
    throw new ThymosError(
      ErrorCode.CONFIG_INVALID,
      `${where}${line ? `:${line}` : ''}: nats.credentials: expected a folder of <identity>.creds files, got ${credentials}`,
      {
        location: { file: where, line, path: 'nats.credentials' },
      },
    );
  }
  const natsTls = Object.values(tls).some((f) => f !== undefined)
    ? Object.freeze(Object.fromEntries(Object.entries(tls).filter(([, f]) => f !== undefined)))
    : undefined;
  const dataPath = at(settings.data_dir);
  return Object.freeze({
    natsTls,
    natsCredentialsPath: credentials,
    ...settings,
    file: fromFile && file !== undefined ? resolve(file) : undefined,
    dataPath,
    domainSchemaPath: settings.domain.schema === undefined ? undefined : at(settings.domain.schema),
    behaviorPath: settings.agent.behavior === undefined ? undefined : at(settings.agent.behavior),
    relevancePath: settings.supervisor.relevance === undefined ? undefined : at(settings.supervisor.relevance),
    glossaryPath: settings.tools.glossary_dir ? at(settings.tools.glossary_dir) : undefined,
    embeddingModelPath: settings.embedding.model_dir ? at(settings.embedding.model_dir) : undefined,
    embeddingCachePath: settings.embedding.cache_dir ? at(settings.embedding.cache_dir) : join(dataPath, 'models'),
  });
}

/**
 * Finds the line of a key in TOML text: the `[table]` header of its parent, then
 * the `key =` line inside it. Best effort: returns undefined when not found.
 */
export function findKeyLine(
  source: string,
  path: readonly string[],
  issue?: { code: string; keys?: readonly string[] },
): number | undefined {
  const keys = issue?.code === 'unrecognized_keys' && issue.keys?.[0] ? [...path, issue.keys[0]] : [...path];
  if (keys.length === 0) return undefined;
  const lines = source.split(/\r?\n/);
  const table = keys.slice(0, -1).join('.');
  const key = keys[keys.length - 1]!;
  let current = '';
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i]!.trim();
    const header = /^\[\s*([^\]]+?)\s*\]/.exec(text);
    if (header) {
      current = header[1]!.replace(/\s+/g, '');
      if (current === keys.join('.')) return i + 1;
      continue;
    }
    const m = /^("?)([A-Za-z0-9_\-.]+)\1\s*=/.exec(text);
    if (!m) continue;
    const full = current ? `${current}.${m[2]}` : m[2]!;
    if (full === `${table ? `${table}.` : ''}${key}` || (current === table && m[2] === key)) return i + 1;
  }
  return undefined;
}

/**
 * The address an MCP client reaches an agent on at `port`: `[host] advertise`, else `[agent] host`.
 */
export function agentMcpUrl(config: ThymosConfig, port: number): string {
  return `http://${advertisedHost(config)}:${port}/mcp`;
}

/** The address this host's agents are reached on: `[host] advertise`, else `[agent] host`. */
export function advertisedHost(config: ThymosConfig): string {
  return config.host.advertise ?? config.agent.host;
}

/**
 * What a domain module may never read, though it may lie in the application's folder: the data
 * directory (keys, tokens, memories), the NATS credentials folder and the TLS private key.
 */
export function unreadableByDomain(config: ThymosConfig): string[] {
  return [config.dataPath, config.natsCredentialsPath, config.natsTls?.keyFile].filter((p): p is string => p !== undefined);
}
