import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import { AgentMemory } from '../../../agent/memory/agent-memory.js';
import { MemoryStore } from '../../../agent/memory/memory-store.js';
import { memoryStrength } from '../../../agent/memory/memory-strength.js';
import { ThymosConfigSchema } from '../../../shared/config/thymos-config.js';
import { isThymosError } from '../../../shared/errors/errors.js';
import { DataLock } from '../../../shared/platform/data-lock.js';
import { reopen } from '../../helpers/reopen.js';
import { tempDir } from '../../helpers/temp-dir.js';

const AGENT_A = { file: 'agent.pid', name: 'agent a', code: 'AGENT_ALREADY_RUNNING' } as const;

const settings = ThymosConfigSchema.parse({}).memory;
const HOUR = 3_600_000;

describe('agent memory', () => {
  test('a batch of 400 memories written, closed and reopened comes back whole (no HNSW on surrealkv)', async () => {
    const dir = join(tempDir('thymos-mem-'), 'db');
    const store = await MemoryStore.open(dir, { timeoutMs: 10_000 });
    const memory = await AgentMemory.load(store, settings);
    await memory.rememberMany(
      Array.from({ length: 400 }, (_, i) => ({ content: `ledger line ${i}`, source: { kind: 'told', by: 'test' } })),
    );
    await store.close();
    const reopened = await reopen((timeoutMs) => MemoryStore.open(dir, { timeoutMs }));
    assert.equal(await reopened.count(), 400);
    const again = await AgentMemory.load(reopened, settings);
    assert.equal(again.count, 400);
    const [hit] = await again.recall('ledger 399', { k: 1 });
    assert.equal(hit?.memory.content, 'ledger line 399');
    await reopened.close();
  });

  test('concurrent writes to one memory that conflict in surrealkv are retried: none fails, none lands twice', async () => {
    const store = await MemoryStore.open(join(tempDir('thymos-mem-'), 'db'), { timeoutMs: 10_000 });
    const memory = await AgentMemory.load(store, settings);
    const [record] = await memory.rememberMany([{ content: 'The well rope frays', source: { kind: 'told', by: 'test' } }]);
    const results = await Promise.allSettled(
      Array.from({ length: 60 }, (_, i) => store.reinforce([{ id: record!.id, access_count: i + 1, last_accessed: 1_000 + i }], 0)),
    );
    assert.deepEqual(
      results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason)),
      [],
    );
    const [row] = (await store.all()).filter((m) => m.id === record!.id);
    // One of the 60 writes landed last, whole: its count and its time belong together.
    assert.ok(row!.access_count >= 1 && row!.access_count <= 60, `access_count ${row!.access_count}`);
    assert.equal(row!.last_accessed, 1_000 + row!.access_count - 1);
    await store.close();
  });

  test('recall ranks by BM25 relevance times strength, and reinforces what it returns', async () => {
    const store = await MemoryStore.open(join(tempDir('thymos-mem-'), 'db'), { timeoutMs: 10_000 });
    const memory = await AgentMemory.load(store, settings);
    const t0 = Date.UTC(2026, 0, 1);
    const old = await memory.remember(
      { content: 'The wolves came down from the north road', importance: 0, source: { kind: 'told', by: 't' } },
      t0,
    );
    const fresh = await memory.remember(
      { content: 'The wolves came down from the north road again', importance: 0, source: { kind: 'told', by: 't' } },
      t0 + 500 * HOUR,
    );
    await memory.remember({ content: 'Bread is baked at dawn', source: { kind: 'told', by: 't' } }, t0);
    const hits = await memory.recall('wolves north road', { k: 5, now: t0 + 500 * HOUR });
    assert.deepEqual(
      hits.map((h) => h.memory.id),
      [fresh.id, old.id],
      'unrelated memories are not returned',
    );
    assert.ok(hits[1]!.score.strength < 0.1, `a memory unused for 500 h has faded: ${hits[1]!.score.strength}`);
    assert.equal(hits[0]!.score.strength, 1);
    assert.equal(memory.get(old.id)!.access_count, 1, 'recall reinforces');
    assert.equal(memory.get(old.id)!.last_accessed, t0 + 500 * HOUR);
    const reloaded = await AgentMemory.load(store, settings);
    assert.equal(reloaded.get(old.id)!.access_count, 1, 'reinforcement is durable');
    const peek = await memory.recall('wolves', { k: 5, reinforce: false });
    assert.equal(peek.length, 2);
    assert.equal(memory.get(old.id)!.access_count, 1, 'a read-only query does not reinforce');
    assert.deepEqual(await memory.recall('the of and', { k: 5 }), [], 'stop words alone match nothing');
    await store.close();
  });

  test('a recall writes its reinforcement behind: recalls at once each count, and the counts reach the database by close', async () => {
    const dir = join(tempDir('thymos-mem-'), 'db');
    const store = await MemoryStore.open(dir, { timeoutMs: 10_000 });
    const memory = await AgentMemory.load(store, { ...settings, reinforce_write_ms: 60_000 });
    const well = await memory.remember({ content: 'The well rope frays in the frost', source: { kind: 'told', by: 't' } });
    const hits = await Promise.all(Array.from({ length: 3 }, () => memory.recall('well rope', { k: 1 })));
    assert.deepEqual(
      hits.map((h) => h[0]?.memory.id),
      [well.id, well.id, well.id],
    );
    assert.equal(memory.get(well.id)!.access_count, 3, 'three recalls at once count three times');
    await store.close();
    const reopened = await reopen((timeoutMs) => MemoryStore.open(dir, { timeoutMs }));
    const again = await AgentMemory.load(reopened, { ...settings, reinforce_write_ms: 0 });
    assert.equal(again.get(well.id)!.access_count, 3, 'a minute-long write delay still writes at close');
    await again.recall('frost', { k: 1 });
    assert.equal((await reopened.all()).find((m) => m.id === well.id)!.access_count, 4);
    await reopened.close();
    assert.throws(() => reopened.reinforce([{ id: well.id, access_count: 5, last_accessed: 1 }], 0), /memory database is closed/);
  });

  test('recall matches word forms: painted finds painting, wolf finds wolves', async () => {
    const store = await MemoryStore.open(join(tempDir('thymos-mem-'), 'db'), { timeoutMs: 10_000 });
    const memory = await AgentMemory.load(store, settings);
    const painting = await memory.remember({ content: 'Mira is painting the chapel doors', source: { kind: 'told', by: 't' } });
    const wolves = await memory.remember({ content: 'Wolves were howling near the pasture', source: { kind: 'told', by: 't' } });
    await memory.remember({ content: 'Bread is baked at dawn', source: { kind: 'told', by: 't' } });
    assert.deepEqual(
      (await memory.recall('who painted the doors', { k: 5, reinforce: false })).map((h) => h.memory.id),
      [painting.id],
    );
    assert.deepEqual(
      (await memory.recall('a wolf howled', { k: 5, reinforce: false })).map((h) => h.memory.id),
      [wolves.id],
    );
    await store.close();
  });

  test('a reply is found by the words of the turn before and after it in its conversation, live and after a reload', async () => {
    const store = await MemoryStore.open(join(tempDir('thymos-mem-'), 'db'), { timeoutMs: 10_000 });
    const memory = await AgentMemory.load(store, settings);
    const turn = (content: string, thread: string) => ({ content, source: { kind: 'dialogue', by: thread, thread } });
    const t0 = Date.now() - HOUR;
    await memory.remember(turn('Did you ever climb the old lighthouse?', 'mira'), t0);
    const reply = await memory.remember(turn('Yes! Twice, last summer.', 'mira'), t0 + 1000);
    await memory.remember(turn('The view from the top was lovely', 'mira'), t0 + 2000);
    const elsewhere = await memory.remember(turn('Yes, twice.', 'tomas'), t0 + 3000);
    const ids = async (m: AgentMemory, q: string) => (await m.recall(q, { k: 5, reinforce: false })).map((h) => h.memory.id);
    for (const m of [memory, await AgentMemory.load(store, settings)]) {
      const found = await ids(m, 'climb lighthouse');
      assert.ok(found.includes(reply.id), 'the reply is found through the question before it');
      assert.ok(!found.includes(elsewhere.id), 'a turn of another conversation is not');
      assert.ok((await ids(m, 'view from the top')).includes(reply.id), 'and through the turn after it');
      const own = await m.recall('lighthouse', { k: 5, reinforce: false });
      assert.ok(own[0]!.memory.content.includes('lighthouse'), 'a memory’s own words weigh more than its context');
    }
    await store.close();
  });

  test('stability grows with accesses, importance and emotional weight', () => {
    const base = { last_accessed: 0, access_count: 0, importance: 0, emotional_weight: 0 };
    const now = 100 * HOUR;
    const plain = memoryStrength(base, now, settings);
    assert.ok(Math.abs(plain - Math.exp(-100 / 168)) < 1e-12);
    assert.ok(memoryStrength({ ...base, access_count: 3 }, now, settings) > plain);
    assert.ok(memoryStrength({ ...base, importance: 1 }, now, settings) > plain);
    assert.ok(memoryStrength({ ...base, emotional_weight: 1 }, now, settings) > plain);
    assert.equal(memoryStrength(base, 0, settings), 1);
  });

  test('the data lock refuses a live holder and takes over a dead one', async () => {
    const dir = tempDir('thymos-mem-');
    const lockFile = join(dir, 'agent.pid');
    const live = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)']);
    try {
      writeFileSync(lockFile, String(live.pid));
      assert.throws(
        () => DataLock.acquire(dir, AGENT_A),
        (err: unknown) => isThymosError(err, 'AGENT_ALREADY_RUNNING') && err.details?.pid === live.pid,
      );
    } finally {
      live.kill('SIGKILL');
      await new Promise((r) => live.once('exit', r));
    }
    // The holder is dead now: its lock is stale and taken over.
    const taken = DataLock.acquire(dir, AGENT_A);
    assert.equal(readFileSync(lockFile, 'utf8'), String(process.pid));
    taken.release();
    assert.equal(existsSync(lockFile), false);
  });

  test('opening a database another process holds fails within the deadline instead of hanging', async () => {
    const dir = join(tempDir('thymos-mem-'), 'db');
    const holder = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { Surreal } from 'surrealdb'; import { createNodeEngines } from '@surrealdb/node';
        const db = new Surreal({ engines: createNodeEngines() }); await db.connect('surrealkv://${dir}'); process.stdout.write('open\\n'); setInterval(() => {}, 1000);`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'], cwd: process.cwd() },
    );
    try {
      await new Promise<void>((resolve) => holder.stdout!.on('data', (d: Buffer) => d.toString().includes('open') && resolve()));
      const started = Date.now();
      await assert.rejects(MemoryStore.open(dir, { timeoutMs: 1500 }), (err: unknown) => isThymosError(err, 'DATABASE_ERROR'));
      assert.ok(Date.now() - started < 5000);
    } finally {
      holder.kill('SIGKILL');
    }
  });
});
