import { join } from 'node:path';

import { fleetPaths, type ThymosConfig } from '../../shared/config/index.js';
import { ExitCode } from '../../shared/errors/index.js';
import { compileCacheAvailable } from '../../shared/platform/index.js';
import { type AppSpec, IDLE_PROCESS_NODE_ARGS } from '../pm2/process-manager.js';

/**
 * Node flags of every agent process, cold or spare: those of every idle fleet process; a young
 * generation of 1 MB semi-spaces (instead of up to 16), which keeps about 6 MB less resident per
 * agent for a few more, cheaper scavenges during a burst; and regular expressions compiled to
 * machine code only after 100 runs instead of 1. By default V8 compiles a regular expression
 * natively on its second run: chrono's date patterns, run once per query that may name a time,
 * cost about 120 ms of CPU to compile on a process's second date parse, and ran as fast
 * interpreted (3 ms a parse). A spare's boot and rehearsal took about 200 ms less CPU (docs/waking.md).
 */
export const AGENT_NODE_ARGS: readonly string[] = [...IDLE_PROCESS_NODE_ARGS, '--max-semi-space-size=1', '--regexp-tier-up-ticks=100'];

/**
 * How pm2 runs a process that is or becomes an agent (`thymos agent`, or a warm spare, which pm2
 * restarts after a crash as the agent it became): the bundled command with `args` (and the
 * fleet's `--config`), waiting for its ready within the start budget, stopped within the agent's
 * shutdown budget, restarted with the fleet's back-off, both output streams to `logFile`. Where
 * Node keeps compiled code on disk (≥ 22.10; pm2 runs agents on the supervisor's own Node), agents
 * share one compile cache under the data directory, so a start reads the bundle's compiled code
 * instead of compiling it again.
 */
export function agentApp(config: ThymosConfig, thymosBin: string, name: string, args: string[], logFile: string): AppSpec {
  return {
    name,
    script: thymosBin,
    args: config.file ? [...args, '--config', config.file] : args,
    nodeArgs: [...AGENT_NODE_ARGS],
    ...(compileCacheAvailable() ? { env: { NODE_COMPILE_CACHE: fleetPaths(config.dataPath).compileCache } } : {}),
    cwd: config.file ? join(config.file, '..') : process.cwd(),
    waitReady: true,
    listenTimeoutMs: config.supervisor.start_timeout_ms,
    killTimeoutMs: config.agent.shutdown_timeout_ms + 2000,
    // pm2 looks for the exit every 100 ms by default, which a stop then waits for on average half of;
    // a check is one kill(pid, 0).
    killCheckMs: 10,
    // With pm2's default source-map support, each start reads and parses the bundle's maps and every
    // Error's stack is mapped back (about 35 ms of a start's CPU, measured); an agent's stack traces
    // name the bundle's lines instead.
    noSourceMaps: true,
    autorestart: true,
    // An agent that stopped itself because its lease ended is started again by its supervisor only, under a new claim.
    stopExitCodes: [ExitCode.FENCED],
    restartDelayMs: config.supervisor.restart_delay_ms,
    logFile,
  };
}
