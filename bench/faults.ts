import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';

import type { Fleet } from '../client/fleet-client.js';
import { isThymosError } from '../shared/errors/errors.js';
import { agentProcesses, hammerWithKills } from '../test/helpers/faults.js';
import { alive, eventually, fleetPids, startTestFleet } from '../test/helpers/fleet.js';
import type { Figure, Scenario } from './scenario.js';
import { quantile, round } from './stats.js';

const AGENT_KILLS = 12;
const SUPERVISOR_KILLS = 3;
const NATS_RESTARTS = 3;
const EVENTS_PER_PHASE = 50;
const IDS = ['elder_rowan', 'bram_smith', 'mira_herbalist', 'tomas_innkeeper', 'captain_lysa', 'old_fenn'];

async function recallCount(fleet: Fleet, id: string, word: string, memoryId: string): Promise<boolean> {
  const client = await fleet.agent(id);
  const r = await client.callTool({ name: 'recall', arguments: { query: word, k: 3 } });
  return ((r.structuredContent as { results?: Array<{ id: string }> } | undefined)?.results ?? []).some((h) => h.id === memoryId);
}

export const faultsScenario: Scenario = {
  name: 'faults',
  title: 'Faults: kill -9 of agents and of the supervisor, nats-server restarts',
  async run() {
    const tf = await startTestFleet(['[lifecycle]', 'min_dwell_ms = 0', '[supervisor]', 'concurrency = 1']);
    const { fleet } = tf;
    const data = join(tf.ws.dir, 'data');
    const figures: Figure[] = [];
    try {
      // 1. Agents killed again and again under a stream of MCP writes.
      await fleet.reconcile({ agents: { elder_rowan: { relevance: 1 }, bram_smith: { relevance: 1 } } });
      const hammer = await hammerWithKills({
        fleet,
        ids: ['elder_rowan', 'bram_smith'],
        kills: AGENT_KILLS,
        pidOf: async (id) => (await fleet.status()).agents.find((a) => a.id === id)?.pid,
        backTimeoutMs: 60_000,
        gapMs: 1000,
      });
      let lost = 0;
      for (const w of hammer.acked) if (!(await recallCount(fleet, w.id, w.word, w.memoryId))) lost++;
      figures.push({
        metric: `acknowledged MCP writes lost across ${hammer.kills} kill -9 of 2 agents (of ${hammer.acked.length} acknowledged; ${hammer.failedWrites} refused or cut while down)`,
        value: lost,
        unit: 'writes',
        goal: '0',
      });
      figures.push({
        metric: 'kill -9 → the restarted agent acknowledges a write, p50 / p95 / max',
        value: `${round(quantile(hammer.backMs, 0.5), 0)} / ${round(quantile(hammer.backMs, 0.95), 0)} / ${Math.max(...hammer.backMs)}`,
        unit: 'ms',
        goal: "back within pm2's back-off",
      });

      // 2. The supervisor killed in the middle of a reconcile, which the restarted one finishes.
      const targets = [
        { elder_rowan: 0.2, bram_smith: 0.2, mira_herbalist: 1, tomas_innkeeper: 1, captain_lysa: 1, old_fenn: 0.2 },
        { elder_rowan: 1, bram_smith: 1, mira_herbalist: 0.2, tomas_innkeeper: 0.2, captain_lysa: 0.2, old_fenn: 1 },
      ];
      const finishMs: number[] = [];
      const lostMs: number[] = [];
      let doubleRuns = 0;
      let unfinished = 0;
      for (let k = 0; k < SUPERVISOR_KILLS; k++) {
        const target = targets[k % 2]!;
        const expected = Object.fromEntries(Object.entries(target).map(([id, s]) => [id, s >= 0.5 ? 'active' : 'dormant']));
        const supervisor = (await fleet.status()).supervisor.pid;
        let killedAt = 0;
        const outcome = await fleet
          .reconcile(
            { agents: Object.fromEntries(Object.entries(target).map(([id, relevance]) => [id, { relevance }])) },
            {
              onProgress: () => {
                if (killedAt === 0) {
                  killedAt = performance.now();
                  process.kill(supervisor, 'SIGKILL');
                }
              },
            },
          )
          .then(
            () => 'answered',
            (err: unknown) => (isThymosError(err) ? err.code : String(err)),
          );
        if (outcome === 'SUPERVISOR_LOST') lostMs.push(performance.now() - killedAt);
        try {
          await eventually(
            async () => {
              const s = await fleet.status();
              return s.supervisor.pid !== supervisor &&
                isDeepStrictEqual(Object.fromEntries(s.agents.map((a) => [a.id, a.state])), expected)
                ? true
                : undefined;
            },
            120_000,
            'the reconcile to be finished',
          );
          finishMs.push(performance.now() - killedAt);
        } catch {
          unfinished++;
        }
        for (const id of IDS) if (agentProcesses(data, id).length > 1) doubleRuns++;
        if (alive(supervisor)) doubleRuns++;
      }
      figures.push({
        metric: `reconciles left unfinished after ${SUPERVISOR_KILLS} kill -9 of the supervisor mid-reconcile`,
        value: unfinished,
        unit: 'reconciles',
        goal: '0',
      });
      figures.push({
        metric: 'agents (or supervisors) found running twice after those kills',
        value: doubleRuns,
        unit: 'processes',
        goal: '0',
      });
      figures.push({
        metric: 'kill -9 → the caller gets SUPERVISOR_LOST, median',
        value: lostMs.length ? Math.round(quantile(lostMs, 0.5)) : 'never',
        unit: lostMs.length ? 'ms' : '',
        goal: `${SUPERVISOR_KILLS} of ${SUPERVISOR_KILLS}, not the 5-minute request timeout`,
      });
      figures.push({
        metric: 'kill -9 → the restarted supervisor has finished the reconcile, median',
        value: finishMs.length ? Math.round(quantile(finishMs, 0.5)) : 'never',
        unit: 'ms',
      });

      // 3. nats-server killed with -9 and restarted by pm2, with events retained for a Dormant agent.
      await fleet.stop('elder_rowan');
      let published = 0;
      const publish = async () => {
        const n = published++;
        await eventually(
          () =>
            fleet.publish({
              id: `soak-${n}`,
              type: 'council.notice',
              tags: ['council'],
              payload: { summary: `Soak notice number${n} was posted` },
            }),
          30_000,
          'a publish',
        );
      };
      const restartMs: number[] = [];
      for (let k = 0; k < NATS_RESTARTS; k++) {
        for (let i = 0; i < EVENTS_PER_PHASE; i++) await publish();
        const pid = fleetPids(data).apps.get('thymos-nats')!;
        const t0 = performance.now();
        process.kill(pid, 'SIGKILL');
        await eventually(
          async () => {
            const now = fleetPids(data).apps.get('thymos-nats');
            return now && now !== pid ? (await fleet.status()).supervisor.pid : undefined;
          },
          30_000,
          'nats-server and the supervisor back',
        );
        restartMs.push(performance.now() - t0);
      }
      for (let i = 0; i < EVENTS_PER_PHASE; i++) await publish();
      await fleet.start('elder_rowan');
      const elder = await fleet.agent('elder_rowan');
      let found = 0;
      for (let n = 0; n < published; n++) {
        const r = await elder.callTool({ name: 'recall', arguments: { query: `number${n}`, k: 3 } });
        if (((r.content as Array<{ text: string }>)[0]?.text ?? '').includes(`number${n} was posted`)) found++;
      }
      figures.push({
        metric: `events retained for a Dormant agent lost across ${NATS_RESTARTS} kill -9 of nats-server (of ${published} published)`,
        value: published - found,
        unit: 'events',
        goal: '0',
      });
      figures.push({
        metric: 'kill -9 of nats-server → the supervisor answers again through it, median',
        value: Math.round(quantile(restartMs, 0.5)),
        unit: 'ms',
      });
      return {
        figures,
        notes: [
          `A fleet of the village's six agents under its own pm2 (restart_delay_ms 200, pm2's exponential back-off), nats-server managed by the same pm2; \`[supervisor] concurrency = 1\` so a reconcile has moves left when the kill lands.`,
          `Agents: one client per agent writes memories through MCP without pause while the two agents are killed in turn, ${AGENT_KILLS} times, a second apart once each is back; every acknowledged write is then looked up by its unique word. "Back" is the acknowledgement of the first write sent after the kill (pm2 restart, database reopened, index rebuilt, MCP listening).`,
          `Supervisor: killed as the first of five moves finishes; the reconcile journal (run/reconcile.pending.json) lets the restarted supervisor finish it; "running twice" counts processes holding an agent's database open (from /proc) and a killed supervisor still alive.`,
          `nats-server: ${EVENTS_PER_PHASE} events for elder_rowan (Dormant) before each of ${NATS_RESTARTS} kills and ${EVENTS_PER_PHASE} after the last; on wake every one must be recalled.`,
          'The test suite runs the same faults at CI size (test/supervisor/reconcile/fleet-faults.test.ts).',
        ],
      };
    } finally {
      await tf.dispose();
    }
  },
};
