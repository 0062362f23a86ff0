import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import { AgentMemory } from '../../../agent/memory/agent-memory.js';
import { MemoryStore } from '../../../agent/memory/memory-store.js';
import { WriteBehind } from '../../../agent/memory/write-behind.js';
import { ThymosConfigSchema } from '../../../shared/config/thymos-config.js';
import { reopen } from '../../helpers/reopen.js';
import { tempDir } from '../../helpers/temp-dir.js';

const settings = ThymosConfigSchema.parse({}).memory;
const dbDir = () => join(tempDir('thymos-later-'), 'db');

/** A write function that records each call and fails while `failing` is set. */
function recorder() {
  const calls: number[][] = [];
  const state = { failing: false };
  const write = async (items: number[]) => {
    if (state.failing) throw new Error('disk full');
    calls.push(items);
  };
  return { calls, state, write };
}

describe('write-behind queue', () => {
  test('items added within the delay go in one write, and each add resolves once it is written', async () => {
    const r = recorder();
    const queue = new WriteBehind<number>(r.write, { maxItems: 100 });
    const added = [1, 2, 3].map((i) => queue.add(i, 50));
    assert.deepEqual(r.calls, [], 'nothing written before the delay');
    await Promise.all(added);
    assert.deepEqual(r.calls, [[1, 2, 3]]);
    await queue.settled();
    assert.equal(queue.size, 0);
  });

  test('an item due sooner brings forward the write of those already waiting', async () => {
    const r = recorder();
    const queue = new WriteBehind<number>(r.write, { maxItems: 100 });
    const slow = queue.add(1, 60_000);
    const soon = queue.add(2, 20);
    const deadline = new Promise<string>((resolve) => setTimeout(() => resolve('still waiting after 10 s'), 10_000).unref());
    assert.equal(await Promise.race([soon.then(() => 'written'), deadline]), 'written');
    await slow;
    assert.deepEqual(r.calls, [[1, 2]], 'one write holds both');
    await queue.close();
  });

  test('maxItems writes at once without waiting for the delay', async () => {
    const r = recorder();
    const queue = new WriteBehind<number>(r.write, { maxItems: 3 });
    const t = performance.now();
    await Promise.all([1, 2, 3].map((i) => queue.add(i, 60_000)));
    assert.ok(performance.now() - t < 30_000, 'the 60 s delay was not waited for');
    assert.deepEqual(r.calls, [[1, 2, 3]]);
  });

  test('a failed write keeps its items first in line: flush rejects, the next write holds them and those added since', async () => {
    const r = recorder();
    const errors: number[] = [];
    const queue = new WriteBehind<number>(r.write, { maxItems: 100, onError: (_err, n) => errors.push(n) });
    r.state.failing = true;
    const first = queue.add(1, 60_000);
    await assert.rejects(queue.flush(), /disk full/);
    assert.deepEqual(errors, [1]);
    r.state.failing = false;
    const second = queue.add(2, 60_000);
    await queue.flush();
    await Promise.all([first, second]);
    assert.deepEqual(r.calls, [[1, 2]], 'one write, in the order added');
  });

  test('a failed write is tried again by itself after the delay', async () => {
    const r = recorder();
    const queue = new WriteBehind<number>(r.write, { maxItems: 100 });
    r.state.failing = true;
    const added = queue.add(7, 10);
    await new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (queue.size > 0 && r.calls.length === 0) {
          r.state.failing = false;
          clearInterval(check);
          resolve();
        }
      }, 5);
    });
    await added;
    assert.deepEqual(r.calls, [[7]]);
  });

  test('close writes what waits; a close whose write fails rejects those waiting; later adds are refused', async () => {
    const r = recorder();
    const queue = new WriteBehind<number>(r.write, { maxItems: 100 });
    const waiting = queue.add(1, 60_000);
    await queue.close();
    await waiting;
    assert.deepEqual(r.calls, [[1]]);
    assert.throws(() => queue.add(2, 10), /closed/, 'refused at once, so the caller keeps its item (a heard event stays unacknowledged)');

    const failing = recorder();
    failing.state.failing = true;
    const broken = new WriteBehind<number>(failing.write, { maxItems: 100 });
    const lost = broken.add(1, 60_000);
    await broken.close();
    await assert.rejects(lost, /disk full/);
  });
});

describe('memories stored within a delay', () => {
  test('recallable at once, in the database once stored() resolves, and every other query sees them first', async () => {
    const dir = dbDir();
    const store = await MemoryStore.open(dir, { timeoutMs: 10_000 });
    const memory = await AgentMemory.load(store, settings);
    const records = await memory.rememberMany(
      [{ id: 'ev-1', content: 'Wolves were seen at the mill', source: { kind: 'event', by: 'game', event: '1' } }],
      Date.now(),
      60_000,
    );
    assert.equal(records.length, 1);
    const [hit] = await memory.recall('wolves mill', { k: 1, reinforce: false });
    assert.equal(hit?.memory.id, 'ev-1', 'recallable before it is stored');
    // A query of the store writes what waits before it runs: the count sees the memory although the delay is a minute.
    assert.equal(await store.count(), 1);
    await memory.stored();
    await store.close();
    const again = await reopen((timeoutMs) => MemoryStore.open(dir, { timeoutMs }));
    assert.deepEqual(
      (await again.all()).map((m) => m.id),
      ['ev-1'],
    );
    await again.close();
  });

  test('hearing after the store closed fails at once and leaves nothing recallable that is not stored', async () => {
    const store = await MemoryStore.open(dbDir(), { timeoutMs: 10_000 });
    const memory = await AgentMemory.load(store, settings);
    await store.close();
    await assert.rejects(
      memory.rememberMany(
        [{ id: 'ev-late', content: 'A late bell rang', source: { kind: 'event', by: 'game', event: 'late' } }],
        Date.now(),
        1000,
      ),
      /closed/,
    );
    assert.equal(memory.get('ev-late'), undefined);
  });

  test('memories heard close together wait together; a redelivered one stays one memory; close stores what waits', async () => {
    const dir = dbDir();
    const store = await MemoryStore.open(dir, { timeoutMs: 10_000 });
    const memory = await AgentMemory.load(store, settings);
    for (let i = 0; i < 20; i++)
      await memory.rememberMany(
        [{ id: `ev-${i}`, content: `Song ${i} is sung`, source: { kind: 'event', by: 'game', event: String(i) } }],
        Date.now(),
        60_000,
      );
    await memory.rememberMany(
      [{ id: 'ev-3', content: 'Song 3 is sung', source: { kind: 'event', by: 'game', event: '3' } }],
      Date.now(),
      60_000,
    );
    assert.equal(memory.count, 20);
    await store.close();
    const again = await reopen((timeoutMs) => MemoryStore.open(dir, { timeoutMs }));
    assert.equal(await again.count(), 20, 'stored at close, none doubled');
    await again.close();
  });
});
