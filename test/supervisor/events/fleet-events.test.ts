import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';

import { jetstreamManager } from '@nats-io/jetstream';
import { connect as natsConnect } from '@nats-io/transport-node';

import type { Fleet } from '../../../client/fleet-client.js';
import { isThymosError } from '../../../shared/errors/errors.js';
import type { WorldEventInput } from '../../../shared/protocol/world-event.js';
import { alive, asFleetSupervisor, eventually, fleetPids, runThymos, startTestFleet, type TestFleet } from '../../helpers/fleet.js';
import type { Workspace } from '../../helpers/workspace.js';

let ws: Workspace;
let fleet: Fleet;
let testFleet: TestFleet | undefined;

const text = (r: unknown) => (r as { content: Array<{ text: string }> }).content.map((c) => c.text).join('\n');
const memoryCount = async (id: string) =>
  (JSON.parse(text(await (await fleet.agent(id)).callTool({ name: `get_${id}_state`, arguments: {} }))) as { memory_count: number })
    .memory_count;
const recall = async (id: string, query: string, k = 100) =>
  text(await (await fleet.agent(id)).callTool({ name: `query_${id}_knowledge`, arguments: { query, k } }));
const counts = async (ids: string[]) => Object.fromEntries(await Promise.all(ids.map(async (id) => [id, await memoryCount(id)] as const)));
const natsUrl = () => (JSON.parse(readFileSync(join(ws.dir, 'data', 'run', 'fleet.json'), 'utf8')) as { nats_url: string }).nats_url;

/** Publishes `n` events made by `event(i)`, `inFlight` at a time. */
async function publishMany(n: number, inFlight: number, event: (i: number) => WorldEventInput): Promise<void> {
  for (let i = 0; i < n; i += inFlight)
    await Promise.all(Array.from({ length: Math.min(inFlight, n - i) }, (_, j) => fleet.publish(event(i + j))));
}

/** Resolves once the router has routed every event and `id` has taken every copy it was sent. */
async function settled(id: string): Promise<void> {
  const nc = await natsConnect({ servers: natsUrl(), ...asFleetSupervisor(join(ws.dir, 'data')) });
  try {
    const jsm = await jetstreamManager(nc);
    await eventually(
      async () => {
        const router = await jsm.consumers.info('THYMOS_EVENTS', 'events_router');
        const heard = await jsm.consumers.info('THYMOS_HEARD', `heard_${id}`);
        return router.num_pending + router.num_ack_pending + heard.num_pending + heard.num_ack_pending === 0 ? true : undefined;
      },
      30_000,
      `every event routed and taken by ${id}`,
    );
  } finally {
    await nc.close();
  }
}

const running = {
  tomas_innkeeper: { relevance: 1 },
  bram_smith: { relevance: 1 },
  elder_rowan: { relevance: 1 },
  mira_herbalist: { relevance: 0.5 },
};
const IDS = Object.keys(running);

describe('world events over JetStream', () => {
  before(async () => {
    testFleet = await startTestFleet(['[lifecycle]', 'min_dwell_ms = 0', '[events]', 'ack_wait_s = 2', 'store_delay_ms = 1500']);
    ({ ws, fleet } = testFleet);
    const report = await fleet.reconcile({ agents: running });
    assert.deepEqual(report.failed, []);
  });

  after(async () => {
    await testFleet?.dispose();
  });

  test('a tavern event reaches exactly the agents whose filters match; a Listening agent hears too', async () => {
    const before = await counts(IDS);
    await fleet.publish({
      type: 'tavern.brawl',
      location: 'tavern',
      mentions: ['Bram'],
      payload: { summary: 'A brawl broke out at the Drowned Lantern' },
    });
    await fleet.publish({
      type: 'garden.blight',
      location: 'herb_garden',
      payload: { summary: 'Grey blight spreads among the silverleaf' },
    });
    const expected = { tomas_innkeeper: 1, bram_smith: 1, elder_rowan: 0, mira_herbalist: 1 };
    const delta = await eventually(
      async () => {
        const now = await counts(IDS);
        const d = Object.fromEntries(IDS.map((id) => [id, now[id]! - before[id]!]));
        return JSON.stringify(d) === JSON.stringify(expected) ? d : undefined;
      },
      10_000,
      'memories of the events',
    );
    assert.deepEqual(delta, expected);
    assert.match(await recall('bram_smith', 'brawl'), /A brawl broke out at the Drowned Lantern \(tavern\.brawl at tavern\)/);
    assert.match(await recall('mira_herbalist', 'blight'), /Grey blight spreads/);
    assert.doesNotMatch(await recall('elder_rowan', 'brawl'), /Drowned Lantern/);
  });

  test('an agent that moves hears the events of where it is now, from then on; the others spend nothing on them', async () => {
    const heardBy = async (summary: string, location: string) => {
      const before = await counts(IDS);
      await fleet.publish({ type: 'square.news', location, payload: { summary } });
      // Routed, and every copy taken (a copy is acknowledged once its memory is stored): the counts are final.
      for (const id of IDS) await settled(id);
      const after = await counts(IDS);
      return IDS.filter((id) => after[id]! - before[id]! === 1).sort();
    };
    assert.deepEqual(await heardBy('A juggler performs by the well', 'village_square'), ['elder_rowan']);
    const moved = await fleet.reconcile({ agents: { ...running, elder_rowan: { relevance: 1, location: 'tavern' } } });
    assert.deepEqual(moved.failed, []);
    assert.deepEqual(
      await heardBy('A bard sings of the old war', 'tavern'),
      ['elder_rowan', 'tomas_innkeeper'],
      'the elder, now at the tavern, hears it',
    );
    assert.deepEqual(await heardBy('The juggler drops a torch', 'village_square'), [], 'and no longer what happens at the square');
    await fleet.reconcile({ agents: { ...running, elder_rowan: { relevance: 1, location: 'village_square' } } });
    assert.deepEqual(await heardBy('The juggler bows', 'village_square'), ['elder_rowan']);
    const nc = await natsConnect({ servers: natsUrl(), ...asFleetSupervisor(join(ws.dir, 'data')) });
    try {
      const jsm = await jetstreamManager(nc);
      // Only copies for hearers are stored; none waits unread for an agent that does not hear it.
      assert.equal((await jsm.consumers.info('THYMOS_HEARD', 'heard_bram_smith')).num_pending, 0);
      const consumers: string[] = [];
      for await (const c of jsm.consumers.list('THYMOS_EVENTS')) consumers.push(c.name);
      assert.deepEqual(consumers, ['events_router'], 'agents read the events routed to them, not the event stream');
    } finally {
      await nc.close();
    }
  });

  test('the supervisor killed with -9 while it routes: pm2 restarts it and every event reaches its hearer once', async () => {
    const base = await memoryCount('tomas_innkeeper');
    const supervisorBefore = (await fleet.status()).supervisor.pid;
    const nc = await natsConnect({ servers: natsUrl(), ...asFleetSupervisor(join(ws.dir, 'data')) });
    const N = 2000;
    try {
      const jsm = await jetstreamManager(nc);
      const startSeq = (await jsm.consumers.info('THYMOS_EVENTS', 'events_router')).delivered.consumer_seq;
      // Published straight to JetStream, so the publisher does not need the supervisor.
      const publishing = publishMany(N, 200, (i) => ({
        id: `round-${i}`,
        type: 'tavern.round',
        location: 'tavern',
        payload: { summary: `Round ${i} is poured` },
      }));
      const deadline = Date.now() + 20_000;
      let delivered = startSeq;
      while (delivered <= startSeq + 50) {
        delivered = (await jsm.consumers.info('THYMOS_EVENTS', 'events_router')).delivered.consumer_seq;
        assert.ok(Date.now() < deadline, 'the routing began');
        await sleep(5);
      }
      process.kill(supervisorBefore, 'SIGKILL');
      assert.ok(delivered < startSeq + N, 'the kill landed before every event reached the router');
      await publishing;
    } finally {
      await nc.close();
    }
    await eventually(
      async () => ((await fleet.status()).supervisor.pid !== supervisorBefore ? true : undefined),
      60_000,
      'a new supervisor',
    );
    await eventually(
      async () => ((await memoryCount('tomas_innkeeper')) === base + N ? true : undefined),
      60_000,
      `tomas_innkeeper to hold all ${N} rounds`,
    );
    await sleep(3000); // past ack_wait: a copy routed twice and delivered late would show up now
    assert.equal(await memoryCount('tomas_innkeeper'), base + N, 'none lost, none doubled');
  });

  test('nats-server killed with -9 while the router routes: pm2 restarts it and every event reaches its hearer once', async () => {
    await settled('tomas_innkeeper');
    const base = await memoryCount('tomas_innkeeper');
    const nc = await natsConnect({ servers: natsUrl(), ...asFleetSupervisor(join(ws.dir, 'data')) });
    const N = 2000;
    let natsPid: number | undefined;
    try {
      const jsm = await jetstreamManager(nc);
      const startSeq = (await jsm.consumers.info('THYMOS_EVENTS', 'events_router')).delivered.consumer_seq;
      await publishMany(N, 200, (i) => ({
        id: `toast-${i}`,
        type: 'tavern.toast',
        location: 'tavern',
        payload: { summary: `Toast ${i} is raised` },
      }));
      await eventually(
        async () =>
          (await jsm.consumers.info('THYMOS_EVENTS', 'events_router')).delivered.consumer_seq > startSeq + 50 ? true : undefined,
        20_000,
        'the routing began',
      );
      natsPid = fleetPids(join(ws.dir, 'data')).apps.get('thymos-nats');
      assert.ok(natsPid);
      const routed = (await jsm.consumers.info('THYMOS_EVENTS', 'events_router')).delivered.consumer_seq;
      process.kill(natsPid, 'SIGKILL');
      assert.ok(routed < startSeq + N, 'the kill landed before every event reached the router');
    } finally {
      await nc.close().catch(() => undefined);
    }
    await eventually(
      () => {
        const pid = fleetPids(join(ws.dir, 'data')).apps.get('thymos-nats');
        return pid && pid !== natsPid && alive(pid) ? true : undefined;
      },
      20_000,
      'pm2 to restart nats-server',
    );
    await eventually(
      async () => ((await memoryCount('tomas_innkeeper')) === base + N ? true : undefined),
      90_000,
      `tomas_innkeeper to hold all ${N} toasts`,
    );
    await settled('tomas_innkeeper');
    assert.equal(await memoryCount('tomas_innkeeper'), base + N, 'none lost, none doubled');
  });

  test('an agent killed with -9 while it hears a burst of 1,000 live events: restarted by pm2, it holds each once', async () => {
    await settled('tomas_innkeeper');
    const base = await memoryCount('tomas_innkeeper');
    const pid = fleetPids(join(ws.dir, 'data')).apps.get('agent-tomas-innkeeper');
    assert.ok(pid);
    const nc = await natsConnect({ servers: natsUrl(), ...asFleetSupervisor(join(ws.dir, 'data')) });
    const N = 1000;
    try {
      const jsm = await jetstreamManager(nc);
      const startSeq = (await jsm.consumers.info('THYMOS_HEARD', 'heard_tomas_innkeeper')).delivered.consumer_seq;
      const publishing = publishMany(N, 100, (i) => ({
        id: `song-${i}`,
        type: 'tavern.song',
        location: 'tavern',
        payload: { summary: `Song ${i} is sung` },
      }));
      await eventually(
        async () => {
          const c = await jsm.consumers.info('THYMOS_HEARD', 'heard_tomas_innkeeper');
          return c.delivered.consumer_seq > startSeq + 20 ? true : undefined;
        },
        20_000,
        'the hearing began',
      );
      process.kill(pid, 'SIGKILL');
      await publishing;
    } finally {
      await nc.close();
    }
    await eventually(
      async () => {
        const now = fleetPids(join(ws.dir, 'data')).apps.get('agent-tomas-innkeeper');
        return now && now !== pid && alive(now) && (await memoryCount('tomas_innkeeper').catch(() => 0)) === base + N ? true : undefined;
      },
      90_000,
      `tomas_innkeeper, restarted, to hold all ${N} songs`,
    );
    await settled('tomas_innkeeper');
    assert.equal(await memoryCount('tomas_innkeeper'), base + N, 'none lost, none doubled');
  });

  test('an agent killed with -9 after it announced live events but before it stored them: they come again and are stored once', async () => {
    let round = 0;
    let base = 0;
    const nc = await natsConnect({ servers: natsUrl(), ...asFleetSupervisor(join(ws.dir, 'data')) });
    try {
      const jsm = await jetstreamManager(nc);
      // A round shows the window when its events are recallable while unacknowledged (stored within 1.5 s, acknowledged after); a slow round is tried again.
      for (let caught = false; !caught; round++) {
        assert.ok(round < 5, 'caught live events recallable and not yet stored');
        await settled('tomas_innkeeper');
        base = await memoryCount('tomas_innkeeper');
        await publishMany(30, 10, (i) => ({
          id: `ballad-${round}-${i}`,
          type: 'tavern.song',
          location: 'tavern',
          payload: { summary: `Ballad ${round}.${i} is sung` },
        }));
        await eventually(
          async () => ((await memoryCount('tomas_innkeeper')) === base + 30 ? true : undefined),
          10_000,
          'the ballads recallable',
        );
        caught = (await jsm.consumers.info('THYMOS_HEARD', 'heard_tomas_innkeeper')).num_ack_pending > 0;
        if (caught) process.kill(fleetPids(join(ws.dir, 'data')).apps.get('agent-tomas-innkeeper')!, 'SIGKILL');
      }
    } finally {
      await nc.close();
    }
    await eventually(
      async () => ((await memoryCount('tomas_innkeeper').catch(() => 0)) >= 30 ? true : undefined),
      60_000,
      'tomas_innkeeper back',
    );
    await settled('tomas_innkeeper');
    const held =
      (await recall('tomas_innkeeper', `ballad ${round - 1} sung`, 100)).match(new RegExp(`Ballad ${round - 1}\\.\\d+ is sung`, 'g')) ?? [];
    assert.equal(new Set(held).size, 30, 'every ballad of the round is held after the restart');
    assert.equal(held.length, 30, 'and none twice');
    assert.equal(await memoryCount('tomas_innkeeper'), base + 30, 'nothing else lost or doubled');
  });

  test('a Dormant agent replays the 100 events it missed when it wakes, and a second restart duplicates none', async () => {
    const base = await memoryCount('elder_rowan');
    assert.deepEqual((await fleet.stop('elder_rowan')).stopped, ['elder_rowan']);
    for (let i = 0; i < 100; i++) {
      await fleet.publish({
        id: `motion-${i}`,
        type: 'council.vote',
        tags: ['council'],
        payload: { summary: `Council motion ${i} carried` },
      });
    }
    await fleet.publish({ id: 'motion-0', type: 'council.vote', tags: ['council'], payload: { summary: 'Council motion 0 carried' } }); // a duplicate id: dropped
    assert.deepEqual((await fleet.start('elder_rowan')).started, ['elder_rowan']);
    assert.equal(await memoryCount('elder_rowan'), base + 100, 'heard before it said ready');
    const found = (await recall('elder_rowan', 'council motion carried', 100)).match(/Council motion \d+ carried/g) ?? [];
    assert.equal(new Set(found).size, 100);
    await fleet.stop('elder_rowan');
    await fleet.start('elder_rowan');
    assert.equal(await memoryCount('elder_rowan'), base + 100, 'no duplicates after another restart');
  });

  test('an agent killed with -9 in the middle of its replay loses none and duplicates none', async () => {
    const base = await memoryCount('elder_rowan');
    await fleet.stop('elder_rowan');
    const N = 10_000;
    for (let i = 0; i < N; i += 500) {
      await Promise.all(
        Array.from({ length: Math.min(500, N - i) }, (_, j) =>
          fleet.publish({
            id: `decree-${i + j}`,
            type: 'council.decree',
            tags: ['council'],
            payload: { summary: `Decree ${i + j} was read out` },
          }),
        ),
      );
    }
    const starting = runThymos(['start', 'elder_rowan'], ws.dir);
    // Kill it while it is replaying: its consumer has handed out some of the events, not all.
    const nc = await natsConnect({ servers: natsUrl(), ...asFleetSupervisor(join(ws.dir, 'data')) });
    try {
      const jsm = await jetstreamManager(nc);
      const startSeq = (await jsm.consumers.info('THYMOS_HEARD', 'heard_elder_rowan')).delivered.consumer_seq;
      const deadline = Date.now() + 20_000;
      for (;;) {
        const c = await jsm.consumers.info('THYMOS_HEARD', 'heard_elder_rowan');
        if (c.delivered.consumer_seq > startSeq && c.num_pending > 0) break;
        assert.ok(Date.now() < deadline, 'the replay began');
        await sleep(5);
      }
      process.kill(fleetPids(join(ws.dir, 'data')).apps.get('agent-elder-rowan')!, 'SIGKILL');
    } finally {
      await nc.close();
    }
    const first = await starting;
    assert.equal(first.code, 1, 'the kill landed before the agent said ready');
    assert.match(first.stdout, /FAILED +elder_rowan: AGENT_START_FAILED/);
    await eventually(
      async () => {
        const s = (await fleet.status()).agents.find((a) => a.id === 'elder_rowan')!;
        if (s.state !== 'active') await fleet.start('elder_rowan').catch(() => undefined); // replays the rest; unacked ones return after ack_wait
        return (await memoryCount('elder_rowan')) === base + N ? true : undefined;
      },
      60_000,
      `elder_rowan to hold all ${N} decrees`,
    );
    await sleep(3000); // past ack_wait: anything redelivered late would show up now
    assert.equal(await memoryCount('elder_rowan'), base + N, 'none lost, none duplicated');
  });

  test('an Archived agent stops retaining events; restored, it hears only what comes after', async () => {
    await fleet.reconcile({ agents: { ...running, old_fenn: { relevance: 1 } } });
    // Events of the tests before may still be on their way to Fenn: counted once they are in.
    await settled('old_fenn');
    const before = await memoryCount('old_fenn');
    await fleet.reconcile({ agents: { ...running, old_fenn: { relevance: 0.01 } } });
    await fleet.publish({ type: 'river.flood', location: 'river', payload: { summary: 'The river burst its banks while Fenn was away' } });
    await fleet.reconcile({ agents: { ...running, old_fenn: { relevance: 1 } } });
    assert.equal(await memoryCount('old_fenn'), before, 'nothing kept while archived');
    await fleet.publish({ type: 'river.fish', location: 'river', payload: { summary: 'A great pike was caught at the weir' } });
    await eventually(async () => ((await memoryCount('old_fenn')) === before + 1 ? true : undefined), 10_000, 'the new event');
  });

  test('agents tell and ask each other; a question to a sleeping agent is answered when it wakes', async () => {
    const call = async (id: string, name: string, args: Record<string, unknown>) =>
      (await fleet.agent(id)).callTool({ name, arguments: args });
    const told = await call('bram_smith', 'send_message', { to: 'tomas_innkeeper', message: 'Keep an ale cold for me tonight' });
    assert.equal(told.isError, undefined, text(told));
    await eventually(
      async () => (/bram_smith told me: Keep an ale cold/.test(await recall('tomas_innkeeper', 'ale cold')) ? true : undefined),
      10_000,
      'the message',
    );

    const live = await call('bram_smith', 'ask_agent', { to: 'elder_rowan', question: 'What burned the mill?', timeout_ms: 10_000 });
    assert.equal((live.structuredContent as { answered: boolean }).answered, true, text(live));
    assert.match(text(live), /^Hmm\. Let me think on that\./, "answered in the elder's voice");

    await fleet.stop('elder_rowan');
    const later = await call('bram_smith', 'ask_agent', { to: 'elder_rowan', question: 'Who tends the river mill?', timeout_ms: 500 });
    assert.equal((later.structuredContent as { answered: boolean }).answered, false);
    assert.match(text(later), /It will answer when it wakes/);
    await fleet.start('elder_rowan');
    await eventually(
      async () =>
        /elder_rowan answered me: Hmm\. Let me think on that\./.test(await recall('bram_smith', 'elder_rowan answered me', 20))
          ? true
          : undefined,
      15_000,
      "the elder's late answer in Bram's memory",
    );

    const self = await call('bram_smith', 'send_message', { to: 'bram_smith', message: 'hello me' });
    assert.equal(self.isError, true);
    await fleet.reconcile({ agents: { ...running, mira_herbalist: { relevance: 0.5 } } });
    const passive = await call('mira_herbalist', 'send_message', { to: 'bram_smith', message: 'hi' });
    assert.match(text(passive), /AGENT_NOT_ACTIVE/);
  });

  test('event text carrying SurrealQL is stored as text and changes nothing else', async () => {
    const before = await memoryCount('tomas_innkeeper');
    const evil = "x'; DELETE memory; REMOVE TABLE memory; --";
    await fleet.publish({ type: 'tavern.rumour', location: 'tavern', tags: ["'; DROP"], payload: { summary: evil } });
    await eventually(async () => ((await memoryCount('tomas_innkeeper')) === before + 1 ? true : undefined), 10_000, 'the rumour');
    assert.match(await recall('tomas_innkeeper', 'DELETE memory REMOVE TABLE'), /DELETE memory; REMOVE TABLE memory/);
  });

  test('an invalid event is refused with INVALID_INPUT naming the field, from the library and the CLI (exit 2)', async () => {
    await assert.rejects(
      fleet.publish({ type: 'Tavern Brawl' }),
      (err: unknown) => isThymosError(err, 'INVALID_INPUT') && /type/.test(err.message),
    );
    await assert.rejects(
      fleet.publish({ type: 'x', tags: 'a' as unknown as string[] }),
      (err: unknown) => isThymosError(err, 'INVALID_INPUT') && /tags/.test(err.message),
    );
    const ok = await runThymos(
      ['publish', 'tavern.song', '{"summary":"A song about the old mill"}', '--location', 'tavern', '--json'],
      ws.dir,
    );
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /"seq":\d+/);
    const bad = await runThymos(['publish', 'tavern.song', '{not json'], ws.dir);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /USAGE: payload: expected a JSON object/);
    const badType = await runThymos(['publish', 'Bad Type'], ws.dir);
    assert.equal(badType.code, 2);
    assert.match(badType.stderr, /INVALID_INPUT: event: type:/);
  });
});
