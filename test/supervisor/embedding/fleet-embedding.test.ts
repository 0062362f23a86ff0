import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import type { Msg } from '@nats-io/transport-node';

import type { Fleet } from '../../../client/fleet-client.js';
import { loadConfig } from '../../../shared/config/thymos-config.js';
import { connectNats, type NatsConnection } from '../../../shared/nats/nats-connection.js';
import { readNatsSeed } from '../../../shared/nats/nats-identity.js';
import { dot } from '../../../shared/platform/embedder.js';
import { decodeVectors } from '../../../shared/protocol/embed-protocol.js';
import { HintHeaders, readHints } from '../../../shared/protocol/heard-hints.js';
import { ensureModel } from '../../helpers/embedding-model.js';
import { eventually, startTestFleet, type TestFleet } from '../../helpers/fleet.js';

let testFleet: TestFleet | undefined;
let fleet: Fleet;
let nc: NatsConnection;

type Hit = { id: string; content: string; score: { strategy: string; bm25: number; vector?: number; final: number } };
const recall = async (id: string, query: string, strategy: string) =>
  (
    (await (await fleet.agent(id)).callTool({ name: 'recall', arguments: { query, k: 3, strategy } })).structuredContent as {
      results: Hit[];
    }
  ).results;

describe('the fleet’s embedding and concept services', () => {
  before(async () => {
    ensureModel();
    testFleet = await startTestFleet(['[lifecycle]', 'min_dwell_ms = 0']);
    fleet = testFleet.fleet;
    const status = await fleet.status();
    nc = await connectNats({
      servers: status.supervisor.nats_url,
      name: 'test-embed',
      seed: readNatsSeed(loadConfig(testFleet.ws.configPath).dataPath, 'supervisor'),
      who: 'supervisor',
    });
    const report = await fleet.reconcile({ agents: { elder_rowan: { relevance: 1 } } });
    assert.deepEqual(report.failed, []);
  });

  after(async () => {
    await nc?.close();
    await testFleet?.dispose();
  });

  test('thymos.embed answers with unit vectors of the offline model, the same text twice the same', async () => {
    const info = JSON.parse((await nc.request('thymos.embed.info', '', { timeout: 5000 })).string()) as { model: string; dims: number };
    assert.deepEqual(info, { model: 'custom:glove-100d', dims: 100 });
    const reply = JSON.parse(
      (
        await nc.request('thymos.embed', JSON.stringify({ texts: ['wolves in the pasture', 'wolves in the pasture', 'a loaf of bread'] }), {
          timeout: 5000,
        })
      ).string(),
    ) as {
      ok: boolean;
      result: { vectors: string; dims: number };
    };
    assert.equal(reply.ok, true);
    const [a, b, c] = decodeVectors(reply.result.vectors, reply.result.dims);
    assert.ok(Math.abs(dot(a!, a!) - 1) < 1e-4);
    assert.deepEqual(Array.from(a!), Array.from(b!));
    assert.ok(dot(a!, c!) < 0.9);
    for (const bad of [
      '{nope',
      JSON.stringify({ texts: [] }),
      JSON.stringify({ texts: 'x' }),
      JSON.stringify({ texts: ['a'], extra: 1 }),
    ]) {
      const r = JSON.parse((await nc.request('thymos.embed', bad, { timeout: 5000 })).string()) as {
        ok: boolean;
        error: { code: string; message: string };
      };
      assert.equal(r.ok, false);
      assert.equal(r.error.code, 'INVALID_INPUT', r.error.message);
    }
  });

  test('thymos.concepts answers with the people and places each text names, and refuses bad requests', async () => {
    const reply = JSON.parse(
      (
        await nc.request('thymos.concepts', JSON.stringify({ texts: ['Mira walked to Millbrook with Bram', 'no names here'] }), {
          timeout: 5000,
        })
      ).string(),
    ) as {
      ok: boolean;
      result: { concepts: Array<Array<{ name: string; type: string }>> };
    };
    assert.equal(reply.ok, true);
    assert.equal(reply.result.concepts.length, 2);
    assert.ok(
      reply.result.concepts[0]!.some((c) => c.name === 'Mira' && c.type === 'person'),
      JSON.stringify(reply.result.concepts[0]),
    );
    assert.deepEqual(reply.result.concepts[1], []);
    for (const bad of [
      '{nope',
      JSON.stringify({ texts: [] }),
      JSON.stringify({ texts: ['x'.repeat(100_001)] }),
      JSON.stringify({ texts: ['a'], extra: 1 }),
    ]) {
      const r = JSON.parse((await nc.request('thymos.concepts', bad, { timeout: 5000 })).string()) as {
        ok: boolean;
        error: { code: string; message: string };
      };
      assert.equal(r.ok, false);
      assert.equal(r.error.code, 'INVALID_INPUT', r.error.message);
    }
  });

  test('a running agent recalls by meaning through the service; BM25 alone finds nothing', async () => {
    const elder = await fleet.agent('elder_rowan');
    await elder.callTool({ name: 'remember', arguments: { content: 'Bram seemed dishonest about the missing silver', importance: 0.8 } });
    assert.deepEqual(await recall('elder_rowan', 'betrayal', 'bm25'), []);
    const [hit] = await recall('elder_rowan', 'betrayal and deceit', 'vector');
    assert.match(hit!.content, /dishonest/);
    assert.equal(hit!.score.strategy, 'vector');
    assert.ok(hit!.score.vector! > 0);
    const hybrid = await recall('elder_rowan', 'silver deceit', 'hybrid');
    assert.match(hybrid[0]!.content, /dishonest/);
    assert.equal(hybrid[0]!.score.strategy, 'hybrid');
  });

  test('a heard event comes with its concepts and vector: the hearer asks neither service, and recalls it by meaning and by name', async () => {
    // Requests for the event's text; the recall below asks for its query's vector, as it should.
    const asked: string[] = [];
    const services = [nc.subscribe('thymos.embed'), nc.subscribe('thymos.concepts')];
    for (const sub of services)
      void (async () => {
        for await (const m of sub) if (m.string().includes('Margaret')) asked.push(m.subject);
      })();
    const copies = nc.subscribe('thymos.agent.elder_rowan.heard', { max: 1 });
    await nc.flush();
    const summary = 'Margaret the tanner fled the village with the tithe chest';
    await fleet.publish({ type: 'council.news', tags: ['council'], payload: { summary } });
    let copy: Msg | undefined;
    for await (const m of copies) copy = m;
    const hints = readHints(copy!.headers);
    assert.ok(
      hints.concepts?.some((c) => c.name === 'Margaret'),
      copy!.headers?.get(HintHeaders.concepts),
    );
    assert.equal(hints.vector?.model, 'custom:glove-100d');
    assert.equal(hints.vector?.values.length, 100);
    const elder = await fleet.agent('elder_rowan');
    const concepts = async () =>
      (
        (await elder.callTool({ name: 'concepts', arguments: { name: 'Margaret' } })).structuredContent as {
          concepts: Array<{ name: string }>;
        }
      ).concepts;
    await eventually(async () => ((await concepts()).length === 1 ? true : undefined), 20_000, 'the heard event’s concept Margaret');
    const hits = await recall('elder_rowan', 'escaped with stolen money', 'vector');
    assert.ok(
      hits.some((h) => h.content.includes('Margaret')),
      JSON.stringify(hits),
    );
    await nc.flush();
    for (const sub of services) sub.unsubscribe();
    assert.deepEqual(asked, []);
  });
});
