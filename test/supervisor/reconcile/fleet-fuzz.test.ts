import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { connect as natsConnect, type NatsConnection } from '@nats-io/transport-node';

import type { Fleet } from '../../../client/fleet-client.js';
import { readFleetInfo } from '../../../shared/config/fleet-runtime.js';
import { loadConfig } from '../../../shared/config/thymos-config.js';
import { readAgentToken } from '../../../shared/platform/agent-token.js';
import { asFleetSupervisor, eventually, fleetPids, startTestFleet, type TestFleet } from '../../helpers/fleet.js';
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
} from '../../helpers/fuzz.js';

// Sized for CI; `npm run bench -- fuzz` runs the same campaign ten times larger.
const N = { tools: 200, http: 200, nats: 300, publish: 200, toml: 300, pkl: 10 };
const MAX_BODY = 65_536;
const AGENTS = ['elder_rowan', 'bram_smith'];

let testFleet: TestFleet | undefined;
let fleet: Fleet;
let nc: NatsConnection;
let data: string;
let pidsBefore: Map<string, number>;
const tallies: Tally[] = [];

/** The port of a running agent: started again if a busy machine left it down, waited for until it runs. */
async function port(id: string): Promise<number> {
  return eventually(
    async () => {
      const row = (await fleet.status()).agents.find((a) => a.id === id);
      if (row?.state === 'active' && row.port !== null) return row.port;
      await fleet.start(id);
      return undefined;
    },
    120_000,
    `${id} to run with a port`,
  );
}

describe('fuzzing every boundary of a real fleet: every case gets a coded answer, nothing crashes', () => {
  before(async () => {
    testFleet = await startTestFleet(['[lifecycle]', 'min_dwell_ms = 0', '[mcp]', 'require_token = true', `max_body_bytes = ${MAX_BODY}`]);
    fleet = testFleet.fleet;
    data = join(testFleet.ws.dir, 'data');
    await fleet.reconcile({ agents: Object.fromEntries(AGENTS.map((id) => [id, { relevance: 1 }])) });
    nc = await natsConnect({
      servers: readFleetInfo(loadConfig(testFleet.ws.configPath))!.nats_url,
      ...asFleetSupervisor(loadConfig(testFleet.ws.configPath).dataPath),
    });
    pidsBefore = fleetPids(data).apps;
  });

  after(async () => {
    await nc?.close();
    await testFleet?.dispose();
  });

  test(`MCP tool calls: ${N.tools} with random tools and arguments (wrong types, huge strings, deep JSON)`, async (t) => {
    const tools = tally('MCP tool calls');
    await fuzzMcpTools(await fleet.agent('elder_rowan'), N.tools, new Rng(11), tools);
    tallies.push(tools);
    t.diagnostic(describeTally(tools));
    assert.equal(tools.cases, N.tools);
    assert.ok(tools.accepted > 0 && Object.keys(tools.refused).length > 1, 'both accepted and refused cases');
    assert.ok((tools.refused.INVALID_INPUT ?? 0) + (tools.refused['JSON-RPC -32602'] ?? 0) > 0, 'invalid arguments are refused as such');
  });

  test(`raw HTTP to the MCP port: ${N.http} random methods, paths, headers and bodies (invalid UTF-8, cut JSON, oversize)`, async (t) => {
    const http = tally('HTTP to an MCP port');
    await fuzzMcpHttp(await port('bram_smith'), readAgentToken(data, 'bram_smith'), MAX_BODY, N.http, new Rng(12), http);
    tallies.push(http);
    t.diagnostic(describeTally(http));
    assert.equal(http.cases, N.http);
    for (const status of ['HTTP 401', 'HTTP 400', 'HTTP 404']) assert.ok((http.refused[status] ?? 0) > 0, `some requests got ${status}`);
  });

  test(`NATS requests: ${N.nats} to the supervisor's control and world APIs, the agents' control and the embedding service`, async (t) => {
    const requests = tally('NATS requests (control, world, embed, reconcile contexts)');
    await fuzzNatsRequests(nc, fleetRequestSubjects(AGENTS), N.nats, new Rng(13), requests);
    tallies.push(requests);
    t.diagnostic(describeTally(requests));
    assert.equal(requests.cases, N.nats);
    for (const code of ['INVALID_INPUT', 'INVALID_CONTEXT']) assert.ok((requests.refused[code] ?? 0) > 0, `some requests got ${code}`);
  });

  test(`NATS publishes: ${N.publish} garbage world events, inbox messages and heartbeats`, async (t) => {
    const publishes = tally('NATS publishes (events, inboxes, heartbeats)');
    await fuzzNatsPublishes(nc, fleetPublishSubjects(AGENTS), N.publish, new Rng(14), publishes);
    tallies.push(publishes);
    t.diagnostic(describeTally(publishes));
    assert.equal(publishes.cases, N.publish);
  });

  test(`thymos.toml: ${N.toml} texts from pieces of TOML; Pkl: ${N.pkl} mutated village schemas`, async (t) => {
    const toml = tally('thymos.toml');
    fuzzToml(N.toml, new Rng(15), toml);
    const pkl = tally('Pkl domain schema');
    await fuzzPkl(N.pkl, new Rng(16), pkl);
    tallies.push(toml, pkl);
    t.diagnostic(describeTally(toml));
    t.diagnostic(describeTally(pkl));
    assert.ok((toml.refused.CONFIG_INVALID ?? 0) > N.toml / 2);
    assert.ok((pkl.refused.SCHEMA_INVALID ?? 0) > 0);
  });

  test('afterwards every process is the one from before, and the fleet still works', async () => {
    assert.deepEqual(fleetPids(data).apps, pidsBefore, 'no process of the fleet died or was restarted');
    const status = await fleet.status();
    for (const id of AGENTS) assert.equal(status.agents.find((a) => a.id === id)!.restarts, 0);
    const elder = await fleet.agent('elder_rowan');
    const stored = await elder.callTool({ name: 'remember', arguments: { content: 'The fuzzing storm passed over Ashford' } });
    assert.equal(stored.isError, undefined);
    const recalled = (await elder.callTool({ name: 'recall', arguments: { query: 'fuzzing storm' } })).content as Array<{ text: string }>;
    assert.match(recalled[0]!.text, /The fuzzing storm passed over Ashford/);
    // A Dormant agent wakes to a backlog that holds the garbage events: it starts and skips them.
    assert.deepEqual((await fleet.start('mira_herbalist')).started, ['mira_herbalist']);
    const mira = await fleet.agent('mira_herbalist');
    await eventually(
      async () => ((await mira.callTool({ name: 'get_mira_herbalist_state', arguments: {} })).isError ? undefined : true),
      10_000,
      'mira to answer',
    );
    const total = tallies.reduce((s, t) => s + t.cases, 0);
    assert.equal(total, N.tools + N.http + N.nats + N.publish + N.toml + N.pkl);
  });
});
