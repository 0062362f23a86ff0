import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import type { Fleet } from '../client/fleet-client.js';
import { memoryBytes } from '../shared/platform/process-usage.js';
import { REPO_ROOT } from '../test/helpers/workspace.js';
import { withBenchFleet } from './bench-fleet.js';
import { bareNodeSpawnMs, cpuSeconds } from './proc-stats.js';
import type { Figure, Scenario, ScenarioResult } from './scenario.js';
import { quantile, round } from './stats.js';

export const AGENTS = 50;
const PLACES = 5;
/** NPCs that live at the places the player walks between: 4 at each of 5. */
const NPCS = 20;
/** Steps of the walk: odd ones talk after the reconcile returns, even ones to each NPC as soon as its wake is reported. */
const WALK_STEPS = 20;
const SINGLE_WAKES = 5;
const IDLE_SECONDS = 10;

export const id = (i: number) => `npc_${String(i).padStart(2, '0')}`;
const place = (i: number) => `place_${i % PLACES}`;

/** 50 agents; the first 20 live at 5 places, and an NPC is relevant where the player is. */
export function domainPkl(): string {
  const lines = [`amends ${JSON.stringify(join(REPO_ROOT, 'schemas', 'Thymos.pkl'))}`, 'agents {'];
  // The agents beyond the walk's NPCs live where the player never goes.
  for (let i = 0; i < AGENTS; i++) lines.push(`  ["${id(i)}"] { persona { name = "Npc ${i}" }; homeLocation = "${i < NPCS ? place(i) : 'far_away'}" }`);
  lines.push('}', 'relevanceRules {', '  new { name = "same location"; condition = new SameAs { property = "location"; global = "player_location" }; score = 0.9 }', '}');
  return lines.join('\n');
}

/** `Pss:` and `Rss:` of a process from /proc/<pid>/smaps_rollup, in MB. */
export function memoryMb(pid: number): { pss: number; rss: number } {
  const usage = memoryBytes(pid);
  return usage ? { pss: usage.pss / 2 ** 20, rss: usage.rss / 2 ** 20 } : { pss: Number.NaN, rss: Number.NaN };
}

/** PSS and RSS of a bare idle `node`, once it has settled. */
async function bareIdleMb(): Promise<{ pss: number; rss: number }> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], { stdio: 'ignore' });
  try {
    await sleep(1000);
    return memoryMb(child.pid!);
  } finally {
    child.kill('SIGKILL');
  }
}

/** The JSON lines of a pino log whose message starts with `msg`. */
function logLines(file: string, msg: string): Array<Record<string, unknown>> {
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .flatMap((line) => {
        try {
          const entry = JSON.parse(line) as Record<string, unknown>;
          return typeof entry.msg === 'string' && entry.msg.startsWith(msg) ? [entry] : [];
        } catch {
          return [];
        }
      });
  } catch {
    return [];
  }
}

/** Median of each phase over the entries' `phases`, in the order they first appear. */
function phaseMedians(entries: Array<Record<string, unknown>>, extra: (e: Record<string, unknown>) => Record<string, number> = () => ({})): string {
  const byPhase = new Map<string, number[]>();
  for (const e of entries) {
    for (const [name, ms] of Object.entries({ ...extra(e), ...(e.phases as Record<string, number>) })) (byPhase.get(name) ?? byPhase.set(name, []).get(name)!).push(ms);
  }
  return [...byPhase.entries()].map(([name, values]) => `${name} ${round(quantile(values, 0.5), 0)}`).join(' · ');
}

/**
 * Idle: the running agents once the work that follows a start (compiling, collecting) has
 * died down: 2-second windows until one costs under 5 % of a core together, at most 40 s.
 */
async function idleFigures(fleet: Fleet, bare: { pss: number; rss: number }, notes: string[]): Promise<Figure[]> {
  const status = await fleet.status();
  const pids = status.agents.flatMap((a) => (a.pid ? [a.pid] : []));
  const fleetCpu = () => pids.reduce((sum, p) => sum + cpuSeconds(p), 0);
  const settleStart = performance.now();
  for (;;) {
    const before = fleetCpu();
    await sleep(2000);
    if ((fleetCpu() - before) / 2 < 0.05 || performance.now() - settleStart > 40_000) break;
  }
  const settledAfter = (performance.now() - settleStart) / 1000;
  const memory = pids.map(memoryMb);
  const cpu0 = fleetCpu();
  const supervisorCpu0 = cpuSeconds(status.supervisor.pid);
  await sleep(IDLE_SECONDS * 1000);
  const cpuIdle = (fleetCpu() - cpu0) / IDLE_SECONDS;
  const supervisorIdle = (cpuSeconds(status.supervisor.pid) - supervisorCpu0) / IDLE_SECONDS;
  const pss = quantile(memory.map((m) => m.pss), 0.5);
  const rss = quantile(memory.map((m) => m.rss), 0.5);
  notes.push(`The idle figures were taken ${round(settledAfter, 0)} s after the 50 had started, once a 2-second window cost the 50 under 5 % of a core (or after 40 s).`);
  return [
    { metric: `idle agent PSS / RSS, median of ${pids.length}`, value: `${round(pss, 1)} / ${round(rss, 1)}`, unit: 'MB', goal: 'PSS ≤ 40 MB' },
    { metric: 'bare idle node PSS / RSS (same run)', value: `${round(bare.pss, 1)} / ${round(bare.rss, 1)}`, unit: 'MB' },
    { metric: `CPU of ${pids.length} idle agents together, over ${IDLE_SECONDS} s`, value: round(cpuIdle * 100, 1), unit: '% of one core', goal: '≤ 5 %' },
    { metric: `supervisor CPU while ${pids.length} agents idle`, value: round(supervisorIdle * 100, 1), unit: '% of one core' },
  ];
}

async function talk(fleet: Fleet, who: string): Promise<void> {
  const client = await fleet.agent(who);
  const result = await client.callTool({ name: `talk_to_${who}`, arguments: { message: 'Good day. What news?', speaker: 'player' } });
  if (result.isError) throw new Error(`${who} did not answer: ${JSON.stringify(result.content)}`);
}

/**
 * Waking, as a game loop sees it: one agent Dormant → Active; a player walking between 5
 * places where 4 NPCs each live (each step wakes the 4 there, puts the 4 left behind to
 * sleep, and has each of the 4 answer a talk); 20 and 50 agents in one reconcile; then 50
 * idle agents' memory (PSS beside RSS) and CPU. Every figure beside a bare `node` of the same
 * run, and the wake trace (the supervisor's and the agent's phases) from their logs.
 */
export const wakeScenario: Scenario = {
  name: 'wake',
  title: 'Waking: one agent, a player walking between places, 20 and 50 at once, and 50 idle agents',
  run: () => wakeRun(0),
};

/** The same with a warm pool of 4 spares (one place's NPCs); the player lingers until it has refilled. */
export const wakePoolScenario: Scenario = {
  name: 'wake-pool',
  title: 'Waking from a warm pool of 4 spares: one agent, a player walking between places, Archived → Active, 20 and 50 at once',
  run: () => wakeRun(POOL),
};

const POOL = 4;

/** Waits until the pool is full again (at most 30 s); the ms it took. */
async function refilled(fleet: Fleet): Promise<number> {
  const t = performance.now();
  for (;;) {
    const pool = (await fleet.status()).supervisor.pool;
    if (!pool || pool.ready >= pool.size || performance.now() - t > 30_000) return performance.now() - t;
    await sleep(100);
  }
}

async function wakeRun(poolSize: number): Promise<Omit<ScenarioResult, 'name' | 'title'>> {
  const bareSpawn: number[] = [];
  for (let i = 0; i < 5; i++) bareSpawn.push(await bareNodeSpawnMs());
  const bare = await bareIdleMb();
  const toml = ['[lifecycle]', 'min_dwell_ms = 0', `max_running = ${AGENTS}`, `max_active = ${AGENTS}`, '[log]', 'level = "info"', '[supervisor]', `pool_size = ${poolSize}`];
  return withBenchFleet('wake', domainPkl(), toml, async (fleet, data) => {
    const figures: Figure[] = [];
    const notes: string[] = [];
    const force = (ids: string[], relevance: number) => ({ agents: Object.fromEntries(ids.map((a) => [a, { relevance }])) });
    const all = Array.from({ length: AGENTS }, (_, i) => id(i));
    const checked = async (what: string, context: Parameters<Fleet['reconcile']>[0], started: number, stopped: number) => {
      const t = performance.now();
      const report = await fleet.reconcile(context);
      const ms = performance.now() - t;
      if (report.failed.length > 0 || report.started.length !== started || report.stopped.length !== stopped) {
        throw new Error(`${what}: started ${report.started.length}/${started}, stopped ${report.stopped.length}/${stopped}, failed ${JSON.stringify(report.failed)}`);
      }
      return ms;
    };

    // One agent Dormant → Active, the agent the walk never visits.
    const single: number[] = [];
    const lone = id(AGENTS - 1);
    await refilled(fleet);
    for (let i = 0; i < SINGLE_WAKES; i++) {
      single.push(await checked('one wake', force([lone], 1), 1, 0));
      await checked('one sleep', force([lone], 0.2), 0, 1);
      await refilled(fleet);
    }
    // Archived → Active: the archive unpacked, then the start.
    const fromArchive: number[] = [];
    for (let i = 0; i < 3; i++) {
      const report = await fleet.reconcile(force([lone], 0.05));
      if (report.archived.length !== 1) throw new Error(`archive: ${JSON.stringify(report)}`);
      await refilled(fleet);
      const t = performance.now();
      const woke = await fleet.reconcile(force([lone], 1));
      fromArchive.push(performance.now() - t);
      if (woke.restored.length !== 1 || woke.started.length !== 1) throw new Error(`restore: ${JSON.stringify(woke)}`);
      await checked('one sleep', force([lone], 0.2), 0, 1);
    }
    const supervisorLog = join(data, 'logs', 'supervisor.log');
    const singleStarts = logLines(supervisorLog, 'agent started').filter((e) => e.agent === lone);
    const singleReady = logLines(join(data, 'logs', `${lone}.log`), 'agent ready');
    const singleStops = logLines(supervisorLog, 'agent stopped').filter((e) => e.agent === lone);

    // A player walking: each step wakes the 4 NPCs where the player is and puts the others to sleep.
    const npcs = Array.from({ length: NPCS }, (_, i) => id(i));
    const poolBeforeWalk = (await fleet.status()).supervisor.pool;
    const locations = Object.fromEntries(npcs.map((n, i) => [n, { location: place(i) }]));
    const steps: number[] = [];
    const eagerSteps: number[] = [];
    const stepReconciles: number[] = [];
    const lingered: number[] = [];
    for (let s = 0; s <= WALK_STEPS; s++) {
      const here = `place_${s % PLACES}`;
      const there = npcs.filter((_, i) => place(i) === here);
      // The player lingers at a place until the pool has refilled (no wait without a pool).
      lingered.push(await refilled(fleet));
      const context = { global: { player_location: here }, agents: locations };
      const t = performance.now();
      if (s % 2 === 1 || s === 0) {
        await checked(`step ${s}`, context, there.length, s === 0 ? 0 : there.length);
        const reconciled = performance.now() - t;
        await Promise.all(there.map((n) => talk(fleet, n)));
        // The first step starts from an empty village: it wakes without putting anyone to sleep.
        if (s > 0) {
          steps.push(performance.now() - t);
          stepReconciles.push(reconciled);
        }
      } else {
        // As a game loop that talks to each NPC the moment the fleet reports it awake: the step ends
        // when the last of them answers, whether or not the NPCs left behind have stopped yet.
        const talks: Array<Promise<number>> = [];
        const onProgress = (p: { id: string; step: string; ok: boolean }) => {
          if (p.ok && p.step.endsWith('→ active')) talks.push(talk(fleet, p.id).then(() => performance.now()));
        };
        const report = await fleet.reconcile(context, { onProgress });
        if (report.failed.length > 0 || talks.length !== there.length) throw new Error(`eager step ${s}: ${talks.length} talks, failed ${JSON.stringify(report.failed)}`);
        eagerSteps.push(Math.max(...(await Promise.all(talks))) - t);
      }
    }
    await checked('walk end', force(npcs, 0.2), 0, NPCS / PLACES);
    await refilled(fleet);
    const poolAfterWalk = (await fleet.status()).supervisor.pool;
    const walkers = new Set(npcs);
    const walkStarts = logLines(supervisorLog, 'agent started').filter((e) => walkers.has(String(e.agent)));
    const walkStops = logLines(supervisorLog, 'agent stopped').filter((e) => walkers.has(String(e.agent)));
    const walkReconciles = logLines(supervisorLog, 'reconcile done').slice(-(WALK_STEPS + 2), -1);

    // Many at once.
    const twenty = all.slice(NPCS, NPCS + 20);
    await refilled(fleet);
    const wake20 = await checked('20 wake', force(twenty, 1), 20, 0);
    await checked('20 sleep', force(twenty, 0.2), 0, 20);
    await refilled(fleet);
    const wake50 = await checked('50 wake', force(all, 1), AGENTS, 0);
    // What the 50 starts cost in CPU, read as soon as the reconcile returns: on 2 cores this
    // divided by 2 is the floor of the 50-at-once figure, whatever the supervisor does.
    const started = await fleet.status();
    const startCpu = started.agents.reduce((sum, a) => sum + (a.pid ? cpuSeconds(a.pid) : 0), 0);
    const cores = availableParallelism();
    const pool = started.supervisor.pool;

    const spawnMs = quantile(bareSpawn, 0.5);
    const singleMs = quantile(single, 0.5);
    const stepMs = quantile(steps, 0.5);
    figures.push(
      { metric: `one agent Dormant → Active, fleet.reconcile returns, median of ${SINGLE_WAKES}`, value: round(singleMs, 0), unit: 'ms', goal: poolSize ? '≤ 150 ms' : '≤ 250 ms (≤ 150 ms with the pool)' },
      { metric: 'ratio one wake / bare node spawn → exit (same run)', value: round(singleMs / spawnMs, 1), unit: '×' },
      { metric: 'one agent Archived → Active (unpacked, then started), median of 3', value: round(quantile(fromArchive, 0.5), 0), unit: 'ms' },
      { metric: `a player's step: reconcile wakes the 4 NPCs there (20 at 5 places) and each answers a talk once it returns, median of ${WALK_STEPS / 2}`, value: round(stepMs, 0), unit: 'ms', goal: poolSize ? '≤ 300 ms' : '≤ 800 ms (≤ 300 ms with the pool)' },
      { metric: "a player's step: p95, and the reconcile alone (median)", value: `${round(quantile(steps, 0.95), 0)} / ${round(quantile(stepReconciles, 0.5), 0)}`, unit: 'ms' },
      {
        metric: `a player's step, talking to each NPC as soon as onProgress reports it active (the other ${WALK_STEPS / 2} steps): median / p95`,
        value: `${round(quantile(eagerSteps, 0.5), 0)} / ${round(quantile(eagerSteps, 0.95), 0)}`,
        unit: 'ms',
      },
      { metric: '20 agents Dormant → Active in one reconcile', value: round(wake20, 0), unit: 'ms' },
      { metric: `${AGENTS} agents Dormant → Active in one reconcile`, value: round(wake50 / 1000, 1), unit: 's', goal: poolSize ? '≤ 3 s' : '≤ 8 s (≤ 3 s with the pool)' },
      {
        metric: `CPU of one agent's start, mean of the ${AGENTS} started together; their total over ${cores} cores`,
        value: `${round((startCpu / AGENTS) * 1000, 0)} ms / ${round(startCpu / cores, 1)} s`,
        unit: '',
      },
      { metric: 'bare node spawn → exit, median of 5', value: round(spawnMs, 0), unit: 'ms' },
    );
    if (pool) {
      figures.push(
        { metric: `pool of ${pool.size}: wakes that took a spare / started cold, over the whole run`, value: `${pool.hits} / ${pool.misses}`, unit: '' },
        { metric: 'pool: the walk alone, warm / cold wakes', value: poolAfterWalk && poolBeforeWalk ? `${poolAfterWalk.hits - poolBeforeWalk.hits} / ${poolAfterWalk.misses - poolBeforeWalk.misses}` : '-', unit: '' },
        { metric: 'pool: refilling 4 spares after a step, median (the player lingers that long); one spare, the last', value: `${round(quantile(lingered.slice(2), 0.5), 0)} / ${pool.lastRefillMs ?? '-'}`, unit: 'ms' },
      );
    } else {
      figures.push(...(await idleFigures(fleet, bare, notes)));
    }
    notes.push(
      `Wake trace, supervisor side (medians of the ${SINGLE_WAKES} single wakes, ms; each phase from the end of the one before): ${phaseMedians(singleStarts.slice(0, SINGLE_WAKES))}.`,
      `Stop trace, supervisor side (same agent, ms): ${phaseMedians(singleStops.slice(0, SINGLE_WAKES))}.`,
      poolSize
        ? `Wake trace, agent side in the claimed spare (same wakes, ms): ${phaseMedians(singleReady.slice(0, SINGLE_WAKES))}.`
        : `Wake trace, agent side (same wakes, ms): ${phaseMedians(singleReady.slice(0, SINGLE_WAKES), (e) => ({ boot: Number(e.since_process_start_ms) - Number(e.ms) }))}; boot is Node starting and loading the bundle, before the agent's code runs.`,
      `The walk's trace (medians over its ${walkStarts.length} starts and ${walkStops.length} stops, ms): starts ${phaseMedians(walkStarts)}; stops ${phaseMedians(walkStops)}; each step's reconcile ${phaseMedians(walkReconciles, (e) => ({ total: Number(e.ms) }))}.`,
      `The walk: ${NPCS} NPCs at ${PLACES} places, [lifecycle] min_dwell_ms = 0 so the NPCs left behind go Dormant at once; talks to the 4 NPCs of a place run together, each a talk_to_<id> call over MCP with the offline dialogue provider.`,
    );
    if (poolSize) {
      notes.push(
        `[supervisor] pool_size = ${poolSize}. Before each wake, step and many-at-once reconcile the run waits until the pool is full again, as a player lingers at a place; the pool refills one spare at a time and only while no reconcile runs. 20 and 50 at once outnumber the pool: ${poolSize} wake warm and the rest cold.`,
      );
    }
    return { figures, notes };
  });
}
