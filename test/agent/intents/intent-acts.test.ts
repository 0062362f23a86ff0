import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import { IntentActs } from '../../../agent/intents/intent-acts.js';
import { customWordsModel, readWords } from '../../../agent/intents/words-model.js';
import { parseConfig } from '../../../shared/config/thymos-config.js';
import { offlineModelDir } from '../../../shared/config/thymos-root.js';
import { createLogger } from '../../../shared/engines/pino-logger.js';
import { ensureModel } from '../../helpers/embedding-model.js';
import { eventually } from '../../helpers/fleet.js';
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
};

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

describe('the model plain words are read with ([embedding] model_dir)', () => {
  test('only a custom model is a candidate: model = "custom" with model_dir set', () => {
    assert.equal(customWordsModel(parseConfig('[embedding]\nmodel_dir = "mine"\n', '/srv/game/thymos.toml')), '/srv/game/mine');
    assert.equal(
      customWordsModel(parseConfig('[embedding]\nmodel = "fast-bge-small-en-v1.5"\nmodel_dir = "mine"\n', '/srv/game/thymos.toml')),
      undefined,
    );
    assert.equal(customWordsModel(parseConfig('', '/srv/game/thymos.toml')), undefined);
  });

  test('a static model in model_dir is read, and nothing is said', () => {
    ensureModel();
    const dir = linkedModel();
    const words = readWords({ custom: dir, resident: false });
    assert.equal(words.modelDir, dir);
    assert.ok(words.embedder);
    assert.deepEqual(words.warnings, []);
  });

  test('one that cannot be read leaves the model Thymos ships in use, and says which folder failed and why', () => {
    const dir = linkedModel(true);
    const words = readWords({ custom: dir, resident: false });
    assert.equal(words.modelDir, offlineModelDir());
    assert.ok(words.embedder);
    assert.equal(words.warnings.length, 1);
    assert.ok(
      words.warnings[0]!.startsWith(
        `plain words are read with the model Thymos ships: the model of [embedding] model_dir at ${dir} could not be read (`,
      ),
      words.warnings[0],
    );
  });

  test('a folder that holds no static model (a sentence model for fastembed) leaves the model Thymos ships in use, unsaid', () => {
    const dir = tempDir('thymos-onnx-');
    writeFileSync(join(dir, 'model.onnx'), 'not read here');
    const words = readWords({ custom: dir, resident: false });
    assert.equal(words.modelDir, offlineModelDir());
    assert.deepEqual(words.warnings, []);
  });

  test("an agent's intent acts read the model they are given, and log what could not be read", async () => {
    const dir = tempDir('thymos-acts-');
    const log = join(dir, 'agent.log');
    const logger = createLogger({ level: 'warn', file: log });
    const intents = new IntentActs({
      caller: memoryToolCaller(TOOLS, dir).tools,
      known: [],
      remember: async () => undefined,
      logger,
      loop: () => undefined,
      modelDir: linkedModel(true),
    });
    const a = await intents.resolve('has my order ORD-20231 shipped?');
    assert.deepEqual(a.call, { tool: 'lookup_order', arguments: { order_id: 'ORD-20231' } });
    // With a model's word list there is a ratio, and a confidence above a half: the model Thymos ships was read.
    assert.ok(a.confidence > 0.5, JSON.stringify(a));
    // The log is written as pino writes it, a moment later.
    const said = /"level":40.*plain words are read with the model Thymos ships: the model of \[embedding\] model_dir at .*thymos-model-/;
    await eventually(() => (existsSync(log) && said.test(readFileSync(log, 'utf8')) ? true : undefined), 10_000, 'the warning in the log');
  });
});
