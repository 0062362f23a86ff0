import assert from 'node:assert/strict';
import { readdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import { IntentActs } from '../../../agent/intents/intent-acts.js';
import { createLogger } from '../../../shared/platform/logger.js';
import { ensureModel } from '../../helpers/embedding-model.js';
import { tempDir } from '../../helpers/temp-dir.js';
import { memoryToolCaller } from '../../helpers/tool-caller.js';

const TOOLS = {
  lookup_order: {
    description: 'Look up an order: where it is and whether it has shipped',
    input: { order_id: { pattern: 'ORD-[0-9]{5}', description: 'The order id' } },
    sideEffect: 'read_only',
    executor: { kind: 'script', path: 'tools.mjs', export: 'look' },
    examples: ['where is my order ORD-12345', 'has ORD-55120 shipped yet?', 'track order ORD-48213'],
  },
  rename_pet: {
    description: 'Give a pet in the stable a new name',
    input: { pet: { description: 'The pet' }, name: { description: 'Its new name' } },
    sideEffect: 'writes_local',
    executor: { kind: 'script', path: 'tools.mjs', export: 'rename' },
    examples: ['call my horse Clover from now on', 'rename the pony to Biscuit'],
  },
};

/** Intent acts over TOOLS reading plain words with the model in `modelDir`, and what they warned of. */
function acts(modelDir: string | undefined) {
  const dir = tempDir('thymos-acts-');
  const { tools } = memoryToolCaller(TOOLS, dir);
  const warned: string[] = [];
  const logger = createLogger({ level: 'silent' });
  logger.warn = ((obj: unknown, msg?: string) => void warned.push(`${msg ?? ''} ${JSON.stringify(obj)}`)) as typeof logger.warn;
  const intents = new IntentActs({ caller: tools, known: [], remember: async () => undefined, logger, loop: () => undefined, ...(modelDir ? { modelDir } : {}) });
  return { intents, warned };
}

/** A folder holding the project's offline model's files, linked: a static model of the user's own; with its vectors cut short when `cut`. */
function linkedModel(cut = false): string {
  const dir = tempDir('thymos-model-');
  for (const f of readdirSync(ensureModel())) symlinkSync(join(ensureModel(), f), join(dir, f));
  if (cut) {
    writeFileSync(join(dir, 'vectors.f32.cut'), Buffer.alloc(400));
    renameSync(join(dir, 'vectors.f32.cut'), join(dir, 'vectors.f32'));
  }
  return dir;
}

describe('intent acts: the model plain words are read with ([embedding] model_dir)', () => {
  test('a static model in modelDir is read: a confident call, no warning', async () => {
    const { intents, warned } = acts(linkedModel());
    const a = await intents.resolve('has my order ORD-20231 shipped?');
    assert.deepEqual(a.call, { tool: 'lookup_order', arguments: { order_id: 'ORD-20231' } });
    // Only with the model's word list is there a ratio, and a confidence above a half.
    assert.ok(a.confidence > 0.5, JSON.stringify(a));
    assert.deepEqual(warned, []);
  });

  test('the static model of modelDir is the one read: one that cannot be read leaves words alone, said in the log', async () => {
    // The same model, its vectors cut short: read from this folder, it fails.
    const { intents, warned } = acts(linkedModel(true));
    const a = await intents.resolve('has my order ORD-20231 shipped?');
    assert.equal(warned.length, 1);
    assert.match(warned[0]!, /intent resolution runs on words only/);
    assert.ok(a.confidence <= 0.5, JSON.stringify(a));
    assert.equal(a.candidates[0]?.tool, 'lookup_order');
  });

  test('a folder that holds no static model (a sentence model for fastembed) leaves the install\'s offline model in use', async () => {
    const dir = tempDir('thymos-onnx-');
    writeFileSync(join(dir, 'model.onnx'), 'not read here');
    const { intents, warned } = acts(dir);
    const a = await intents.resolve('has my order ORD-20231 shipped?');
    assert.ok(a.confidence > 0.5, JSON.stringify(a));
    assert.deepEqual(warned, []);
  });

  test('a tool that writes is not called on words alone, with no model to weigh them', async () => {
    const { intents } = acts(linkedModel(true));
    const a = await intents.resolve('rename the pony Biscuit to Clover');
    assert.equal(a.call, undefined);
    assert.equal(a.candidates[0]?.tool, 'rename_pet');
  });
});
