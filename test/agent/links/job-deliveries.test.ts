import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import type { JsMsg } from '@nats-io/jetstream';

import { JobDeliveries } from '../../../agent/links/job-deliveries.js';
import { MemoryStore } from '../../../agent/memory/memory-store.js';
import { createLogger } from '../../../shared/engines/pino-logger.js';
import { reopen } from '../../helpers/reopen.js';
import { tempDir } from '../../helpers/temp-dir.js';

const logger = createLogger({ level: 'silent' });
/** The delivery info of a job message, as JetStream hands it: only what the notes read. */
const delivery = (seq: number, deliveryCount: number, timestampNanos = 1_700_000_000_000_000_000 + seq) =>
  ({ info: { stream: 'THYMOS_JOBS_support', streamSequence: seq, deliveryCount, timestampNanos } }) as unknown as JsMsg;

describe("an agent's notes of the job deliveries it was handed, in its own database", () => {
  test('a delivery after one that went elsewhere says so, and so does every later one; deliveries that all came here do not', async () => {
    const store = await MemoryStore.open(join(tempDir('thymos-deliveries-'), 'db'), { timeoutMs: 10_000 });
    const notes = new JobDeliveries(store, logger);
    try {
      assert.equal(await notes.arrived(delivery(1, 1)), false, 'a first delivery');
      assert.equal(await notes.arrived(delivery(1, 2)), false, 'the second, after the first came here');
      assert.equal(await notes.arrived(delivery(1, 2)), false, 'noted twice, it counts once');
      assert.equal(await notes.arrived(delivery(2, 2)), true, 'a second delivery whose first went elsewhere');
      assert.equal(await notes.arrived(delivery(2, 3)), true, 'and every one after it');
      assert.equal(
        await notes.arrived(delivery(1, 3, 42)),
        true,
        'another message at the same place (a stream made again) is not this one',
      );
    } finally {
      await store.close();
    }
  });

  test('the notes outlast a restart of the agent; forgotten once the job ends here, or after a week, a later delivery asks as one that went elsewhere', async () => {
    const dir = join(tempDir('thymos-deliveries-'), 'db');
    const store = await MemoryStore.open(dir, { timeoutMs: 10_000 });
    await new JobDeliveries(store, logger).arrived(delivery(5, 1));
    await new JobDeliveries(store, logger).arrived(delivery(6, 1));
    await store.close();
    const reopened = await reopen((timeoutMs) => MemoryStore.open(dir, { timeoutMs }));
    const notes = new JobDeliveries(reopened, logger);
    try {
      assert.equal(await notes.arrived(delivery(5, 2)), false, 'its first delivery was here, before the restart');
      await notes.ended(delivery(5, 2));
      await notes.ended(delivery(5, 2));
      assert.equal(await notes.arrived(delivery(5, 3)), true, 'forgotten when the job ended here (twice: nothing more)');
      await notes.sweep(Date.now() + 8 * 86_400_000);
      assert.equal(await notes.arrived(delivery(6, 2)), true, 'forgotten after a week');
    } finally {
      await reopened.close();
    }
  });
});
