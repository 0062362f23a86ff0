import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { fleetPaths, Pm2Names, spareClaimFile } from '../../shared/config/index.js';
import { createLogger } from '../../shared/engines/index.js';
import { describeIssues, ErrorCode, ThymosError, toThymosError } from '../../shared/errors/index.js';
import { connectNats, fleetNatsLink, logRefusals, serveCoded } from '../../shared/nats/index.js';
import { flushCompileCache, processCpuMs } from '../../shared/platform/index.js';
import { FleetNames, parseWireJson, type SpareClaim, SpareClaimSchema } from '../../shared/protocol/index.js';
import { SharedConceptExtractor } from '../links/shared-concept-extractor.js';
import { resolveConfig, runAgentProcess, type RunningAgent } from './agent-process.js';
import { rehearseAgent } from './spare-rehearsal.js';

/** Options of `thymos spare`, which the supervisor's warm pool starts under pm2. */
export interface SpareOptions {
  /** The spare's pm2 app name (`thymos-spare-<n>`), which is also its claim subject's token. */
  slot: string;
  config?: string | undefined;
  natsUrl: string;
}

/** A spare that is waiting, or the agent it became. */
export interface Spare {
  /** Settles with the agent once a claim made it one (rejects if that agent could not start). */
  readonly agent: Promise<RunningAgent>;
  /** Ends a spare that no claim took: it stops listening for one. */
  close(): Promise<void>;
}

/**
 * A warm spare: loads every module an agent needs before it knows which agent it will be,
 * links to NATS and tells pm2 it is ready. Its one claim names an agent: the spare renames
 * its pm2 app `agent-<id>` (so `pm2 ls` and the supervisor see that agent), then starts it
 * exactly as `thymos agent` would — data lock, database, index, MCP port, NATS links — with
 * its log in the agent's own file, and answers the claim once the agent is ready. It never
 * takes a second claim: the process is that agent's until it exits.
 *
 * When pm2 restarts a claimed spare after a crash, its app is already `agent-<id>`: the
 * process starts that agent again from the claim the supervisor left in `run/<id>.claim.json`,
 * with pm2's back-off, as a cold agent would restart.
 */
export async function runSpareProcess(options: SpareOptions): Promise<Spare> {
  const config = resolveConfig(options.config);
  const paths = fleetPaths(config.dataPath);
  const renamed = Pm2Names.agentId(process.env.name ?? '');
  if (renamed) {
    const agent = become(readClaim(spareClaimFile(paths, renamed)), options, paths.logs);
    return { agent, close: async () => undefined };
  }
  const logger = createLogger({ level: config.log.level, bindings: { spare: options.slot, host: config.host.name } });
  // Everything an agent loads after its database opens, loaded now, while nobody waits.
  await Promise.all([
    import('../mcp/agent-http-server.js'),
    import('../links/agent-control-channel.js'),
    import('../links/agent-event-listener.js'),
    import('../links/agent-inbox.js'),
    import('../links/agent-world-watcher.js'),
    import('../../shared/nats/index.js'),
  ]);
  const nc = await connectNats({
    servers: options.natsUrl,
    name: options.slot,
    ...fleetNatsLink(config, 'spare', options.natsUrl),
    who: 'spare',
  });
  logRefusals(nc, logger, 'spare');
  const concepts = new SharedConceptExtractor(logger);
  concepts.link(nc, new FleetNames(config.fleet.name));
  logger.info({ cpu_ms: processCpuMs() }, 'modules loaded and linked');
  const rehearsal = await rehearseAgent(config, join(paths.run, 'pool', `${options.slot}.warm`), logger, concepts);
  logger.info({ ...rehearsal, cpu_ms: processCpuMs() }, 'rehearsed');
  let settle: { resolve: (a: RunningAgent) => void; reject: (e: Error) => void } = { resolve: () => undefined, reject: () => undefined };
  const agent = new Promise<RunningAgent>((resolve, reject) => (settle = { resolve, reject }));
  let claimed = false;
  const sub = serveCoded(
    nc,
    {
      subject: new FleetNames(config.fleet.name).spareClaim(options.slot),
      schema: SpareClaimSchema,
      handle: async (claim) => {
        if (claimed) throw new ThymosError(ErrorCode.AGENT_START_FAILED, `${options.slot} was already claimed; a spare serves one agent`);
        claimed = true;
        sub.unsubscribe();
        logger.info({ agent: claim.agentId, port: claim.port, cpu_ms: processCpuMs() }, 'claimed');
        logger.flush();
        try {
          const running = await become(claim, options, paths.logs);
          settle.resolve(running);
          return { pid: process.pid };
        } catch (err) {
          // Rejected after the reply is on its way: the caller then ends this process.
          setImmediate(() => settle.reject(err as Error));
          throw err;
        } finally {
          setImmediate(() => void nc.drain().catch(() => undefined));
        }
      },
    },
    logger,
  );
  logger.info({ slot: options.slot, cpu_ms: processCpuMs() }, 'spare ready');
  process.send?.('ready');
  // Everything an agent runs is compiled by now (the rehearsal ran the MCP path): keep it for the next start.
  setImmediate(flushCompileCache);
  return {
    agent,
    close: async () => {
      if (claimed) return;
      claimed = true;
      await nc.drain().catch(() => undefined);
      logger.flush();
    },
  };
}

/**
 * Renames this pm2 app after the agent, then starts the agent in this process. A start that
 * fails says why in the agent's log, as a cold agent's would (its stderr goes there).
 */
async function become(claim: SpareClaim, options: SpareOptions, logs: string): Promise<RunningAgent> {
  process.send?.({ type: 'axm:option:configuration', data: { name: Pm2Names.agent(claim.agentId) } });
  const logFile = join(logs, `${claim.agentId}.log`);
  try {
    return await runAgentProcess(
      {
        agentId: claim.agentId,
        port: claim.port,
        mode: claim.mode,
        context: claim.context,
        config: options.config,
        natsUrl: options.natsUrl,
      },
      { logFile },
    );
  } catch (err) {
    const e = toThymosError(err);
    try {
      appendFileSync(logFile, `thymos: ${e.code}: ${e.message}\n`);
    } catch {
      // The log is unwritable too; the claim's answer still carries the error.
    }
    throw e;
  }
}

/** The claim a restarted spare starts its agent from. */
function readClaim(file: string): SpareClaim {
  let raw: unknown;
  try {
    raw = parseWireJson(readFileSync(file, 'utf8'), file);
  } catch (err) {
    throw new ThymosError(ErrorCode.AGENT_START_FAILED, `cannot read the claim ${file}: ${(err as Error).message}`, { cause: err });
  }
  const parsed = SpareClaimSchema.safeParse(raw);
  if (!parsed.success) throw new ThymosError(ErrorCode.AGENT_START_FAILED, `${file}: ${describeIssues(parsed.error, raw)}`);
  return parsed.data;
}
