import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';

import { connect as natsConnect } from '@nats-io/transport-node';

import { readFleetInfo } from '../shared/config/fleet-runtime.js';
import { loadConfig } from '../shared/config/thymos-config.js';
import { readAgentToken } from '../shared/platform/agent-token.js';
import { asFleetSupervisor, fleetPids, startTestFleet } from '../test/helpers/fleet.js';
import {
  describeTally,
  fleetPublishSubjects,
  fleetRequestSubjects,
  fuzzMcpHttp,
  fuzzMcpTools,
  fuzzNatsPublishes,
  fuzzNatsRequests,
  fuzzPkl,
  fuzzToml,
  Rng,
  type Tally,
  tally,
} from '../test/helpers/fuzz.js';
import type { Figure, Scenario } from './scenario.js';

// Ten times what the test suite runs (test/supervisor/reconcile/fleet-fuzz.test.ts), other seeds.
const N = { tools: 2000, http: 2000, nats: 3000, publish: 2000, toml: 3000, pkl: 60 };
const MAX_BODY = 65_536;
const AGENTS = ['elder_rowan', 'bram_smith'];

export const fuzzScenario: Scenario = {
  name: 'fuzz',
  title: 'Fuzzing every boundary of a running fleet',
  async run() {
    const tf = await startTestFleet(['[lifecycle]', 'min_dwell_ms = 0', '[mcp]', 'require_token = true', `max_body_bytes = ${MAX_BODY}`]);
    const { fleet } = tf;
    const data = join(tf.ws.dir, 'data');
    const nc = await natsConnect({ servers: readFleetInfo(loadConfig(tf.ws.configPath))!.nats_url, ...asFleetSupervisor(data) });
    const tallies: Tally[] = [];
    try {
      await fleet.reconcile({ agents: Object.fromEntries(AGENTS.map((id) => [id, { relevance: 1 }])) });
      const before = fleetPids(data).apps;
      const started = performance.now();
      const run = async (t: Tally, go: (t: Tally) => Promise<void> | void) => {
        await go(t);
        tallies.push(t);
        process.stdout.write(`  ${describeTally(t)}\n`);
      };
      await run(tally('MCP tool calls'), async (t) => fuzzMcpTools(await fleet.agent('elder_rowan'), N.tools, new Rng(101), t));
      const port = (await fleet.status()).agents.find((a) => a.id === 'bram_smith')!.port!;
      await run(tally('HTTP to an MCP port'), (t) =>
        fuzzMcpHttp(port, readAgentToken(data, 'bram_smith'), MAX_BODY, N.http, new Rng(102), t),
      );
      await run(tally('NATS requests (supervisor control and world APIs, reconcile contexts, agent control, embedding)'), (t) =>
        fuzzNatsRequests(nc, fleetRequestSubjects(AGENTS), N.nats, new Rng(103), t),
      );
      await run(tally('NATS publishes (world events, inboxes, heartbeats)'), (t) =>
        fuzzNatsPublishes(nc, fleetPublishSubjects(AGENTS), N.publish, new Rng(104), t),
      );
      await run(tally('thymos.toml'), (t) => fuzzToml(N.toml, new Rng(105), t));
      await run(tally('Pkl domain schema'), (t) => fuzzPkl(N.pkl, new Rng(106), t));
      const seconds = (performance.now() - started) / 1000;
      const after = fleetPids(data).apps;
      const crashed = [...before].filter(([name, pid]) => after.get(name) !== pid).map(([name]) => name);
      // A Dormant agent wakes to a backlog holding the garbage events.
      const woke = (await fleet.start('mira_herbalist')).started.includes('mira_herbalist');
      const total = tallies.reduce((s, t) => s + t.cases, 0);
      const figures: Figure[] = tallies.map((t) => ({
        metric: `${t.boundary}: cases (accepted / refused by code)`,
        value: `${t.cases} (${t.accepted} / ${
          Object.entries(t.refused)
            .sort((a, b) => b[1] - a[1])
            .map(([c, k]) => `${c} ${k}`)
            .join(', ') || 'none'
        })`,
        unit: '',
      }));
      figures.push({ metric: 'all cases', value: total, unit: 'cases' });
      figures.push({
        metric: 'answers without a stable code (INTERNAL, HTTP 5xx, none, unclear)',
        value: 0,
        unit: '',
        goal: '0 (the run stops at the first)',
      });
      figures.push({
        metric: 'fleet processes that died or restarted (supervisor, nats-server, agents)',
        value: crashed.length === 0 && isDeepStrictEqual(before, after) ? 0 : crashed.join(', '),
        unit: '',
        goal: '0',
      });
      figures.push({ metric: 'a Dormant agent woke to a backlog of garbage events', value: woke ? 'yes' : 'no', unit: '', goal: 'yes' });
      figures.push({ metric: 'campaign wall time', value: Math.round(seconds), unit: 's' });
      return {
        figures,
        notes: [
          'One fleet of the village schema with `[mcp] require_token = true` and `max_body_bytes = 65536`; two agents active. Every generator is seeded: a failing case is replayed from its seed.',
          'Values: wrong types, odd numbers (1e308, 2^53+1, -0.0001), hostile strings (SurrealQL, NATS wildcards, paths, lone surrogates, NUL), strings up to 300,000 characters, arrays of 20,000 items, nesting up to 1,500 levels through the MCP client and up to 100,000 levels as raw text (HTTP bodies and NATS payloads), invalid UTF-8, cut JSON.',
          'Nothing generated can change the fleet for real: reconciles are dry runs or invalid, agent commands name no agent, `stop_all` always carries an unknown field. Refusals are counted by their code: an ErrorCode, a JSON-RPC code, an HTTP status, or NATS "no responders" for an op nobody serves.',
          'Pkl: the village schema with 1–3 lines deleted, doubled, cut, retyped or inserted, each evaluated by pkl.',
        ],
      };
    } finally {
      await nc.close();
      await tf.dispose();
    }
  },
};
