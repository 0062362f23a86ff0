import { LLM_USES } from '../config/llm-settings.js';
import { type ThymosConfig, unreadableByDomain } from '../config/thymos-config.js';
import { ErrorCode, ThymosError } from '../errors/errors.js';
import { type DomainSchema, EMPTY_DOMAIN, loadDomainSchema } from './domain-schema.js';
import { grantedTools, toolSecrets } from './tool-schema.js';

/** Something the config and the domain allow that will fail later: where it is, and what to do. */
export interface FleetWarning {
  /** Dotted paths of the keys concerned, e.g. `llm.dialogue.api_key_env`. */
  paths: string[];
  message: string;
}

/**
 * What `thymos validate` and `thymos up` warn about (`--strict` makes each an error): API key
 * variables an `openai-compatible` model needs that are not set in `env`, declared tools granted to
 * no agent, and the variables of granted tools' secrets that are not set. Each agent reads its
 * key when it starts, from the environment the supervisor hands it — the one `thymos up` ran in.
 */
export function fleetWarnings(config: ThymosConfig, domain: DomainSchema, env: NodeJS.ProcessEnv = process.env): FleetWarning[] {
  const needed = new Map<string, string[]>();
  const need = (variable: string, path: string) => needed.set(variable, [...(needed.get(variable) ?? []), path]);
  for (const use of LLM_USES) {
    const s = config.llm[use];
    if (s.provider === 'openai-compatible' && s.api_key_env) need(s.api_key_env, `llm.${use}.api_key_env`);
  }
  for (const [id, def] of Object.entries(domain.agents)) {
    for (const use of LLM_USES) {
      const own = def.llm?.[use];
      const provider = own?.provider ?? config.llm[use].provider;
      if (provider === 'openai-compatible' && own?.apiKeyEnv) need(own.apiKeyEnv, `agents.${id}.llm.${use}.apiKeyEnv`);
    }
  }
  const out: FleetWarning[] = [];
  for (const [variable, paths] of needed) {
    if (env[variable]) continue;
    out.push({
      paths,
      message:
        `${paths.join(', ')}: the environment variable ${variable} is not set. Each agent reads it when it starts, from the environment ` +
        `the supervisor passes on, which is the one \`thymos up\` ran in; until it is set there the agents that use it fail to start. ` +
        `Export it, then run \`thymos down\` and \`thymos up\`.`,
    });
  }
  return [...out, ...toolWarnings(domain, env)];
}

/** Declared tools no agent is granted, and secrets granted tools read from variables that are not set. */
function toolWarnings(domain: DomainSchema, env: NodeJS.ProcessEnv): FleetWarning[] {
  const out: FleetWarning[] = [];
  const grantedTo = toolGrants(domain);
  for (const [name, tool] of Object.entries(domain.tools)) {
    if (grantedTo[name]!.length === 0) {
      out.push({ paths: [`tools.${name}`], message: `tools.${name}: no agent's capabilities grant it, so nothing can call it.` });
      continue;
    }
    for (const { path, secret } of toolSecrets(tool)) {
      if (env[secret.env]) continue;
      out.push({
        paths: [`tools.${name}.${path}`],
        message: `tools.${name}.${path}: the environment variable ${secret.env} is not set, so every call of ${name} fails (TOOL_FAILED) until it is set where \`thymos up\` runs.`,
      });
    }
  }
  return out;
}

/** Each declared tool with the agents its capabilities grant it to. */
export function toolGrants(domain: DomainSchema): Record<string, string[]> {
  const out: Record<string, string[]> = Object.fromEntries(Object.keys(domain.tools).map((n) => [n, []]));
  for (const [id, def] of Object.entries(domain.agents))
    for (const name of Object.keys(grantedTools(domain.tools, def.capabilities))) out[name]!.push(id);
  return out;
}

/**
 * What `thymos validate` and `thymos up` check before anything runs: the domain evaluates
 * (SCHEMA_INVALID otherwise), and the warnings about it; with `strict` a warning is
 * CONFIG_INVALID instead.
 */
export async function checkFleet(config: ThymosConfig, strict = false): Promise<{ domain: DomainSchema; warnings: FleetWarning[] }> {
  const domain = config.domainSchemaPath
    ? await loadDomainSchema(config.domainSchemaPath, { exclude: unreadableByDomain(config) })
    : EMPTY_DOMAIN;
  const warnings = fleetWarnings(config, domain);
  if (strict && warnings.length > 0) throw strictFailure(warnings, config.file);
  return { domain, warnings };
}

/** The error `--strict` makes of warnings: CONFIG_INVALID with each of them. */
function strictFailure(warnings: readonly FleetWarning[], file: string | undefined): ThymosError {
  return new ThymosError(ErrorCode.CONFIG_INVALID, `${warnings.map((w) => w.message).join(' ')} (--strict makes warnings errors)`, {
    location: { ...(file ? { file } : {}), path: warnings[0]!.paths[0]! },
    details: { warnings },
  });
}
