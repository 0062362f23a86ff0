import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { checkExamples } from '../../../agent/intents/example-check.js';
import { parseDomainSchema } from '../../../shared/domain/domain-schema.js';
import { StaticEmbedder } from '../../../shared/platform/static-embedder.js';
import { ensureModel } from '../../helpers/embedding-model.js';

const executor = { kind: 'script', path: 'tools.mjs', export: 'act' };
/** A village's tools: the gate's examples name the wolves at the north gate, and so does one of the bell's. */
const TOOLS = {
  ring_alarm_bell: {
    description: 'Ring the alarm bell so the whole village takes shelter',
    sideEffect: 'writes_local',
    executor,
    examples: ['ring the alarm bell', 'sound the alarm, raiders on the road', 'wolves at the north gate, warn everyone'],
  },
  close_gate: {
    description: 'Close and bar one of the village gates',
    sideEffect: 'writes_local',
    executor,
    examples: [
      'shut the north gate, the wolves are coming',
      'close the north gate for the night',
      'bar the gate, wolves in the north field',
    ],
  },
  weather_report: {
    description: 'Say what the weather will be',
    sideEffect: 'read_only',
    executor,
    examples: ['will it rain tomorrow', 'how cold will the night be', 'is a storm coming'],
  },
  sweep_square: { description: 'Sweep the market square', sideEffect: 'writes_local', executor },
};

describe("checkExamples: a catalogue's examples, each against the others", () => {
  test("every example is read once; one whose words are another tool's is resolved to it, and the pair is named", async () => {
    const { tools } = parseDomainSchema({ tools: TOOLS }, '/tmp/village.pkl');
    const embedder = StaticEmbedder.load(ensureModel(), { maxLength: 256 });
    const check = await checkExamples(tools, { embedder, now: new Date('2026-06-10T09:00:00') });
    assert.equal(check.tools, 4);
    assert.equal(check.examples, 9);
    assert.equal(check.folds, 3, 'three examples a tool at most');
    // Each example is answered with its own tool, another, or none.
    assert.equal(check.ownTool + check.astray.length + check.noTool, check.examples, JSON.stringify(check));
    assert.ok(check.first <= check.examples && check.called <= check.ownTool, JSON.stringify(check));
    const astray = check.astray.find((x) => x.example === 'wolves at the north gate, warn everyone');
    assert.deepEqual(astray, {
      tool: 'ring_alarm_bell',
      example: 'wolves at the north gate, warn everyone',
      resolved: 'close_gate',
      call: true,
      writes: true,
    });
    assert.deepEqual(check.confusable[0]?.tools, ['close_gate', 'ring_alarm_bell']);
    assert.equal(
      check.confusable.reduce((n, p) => n + p.examples, 0),
      check.astray.length,
    );
    // The weather's examples share no words with the others: each goes to its own tool.
    assert.ok(!check.astray.some((x) => x.tool === 'weather_report' || x.resolved === 'weather_report'));
  });

  test('a catalogue without examples has nothing to check; folds are a whole number of at least 2, and no more than the longest list of examples', async () => {
    const { tools } = parseDomainSchema({ tools: { sweep_square: TOOLS.sweep_square } }, '/tmp/village.pkl');
    assert.deepEqual(await checkExamples(tools, { folds: 3 }), {
      tools: 1,
      examples: 0,
      folds: 2,
      first: 0,
      ownTool: 0,
      called: 0,
      astray: [],
      noTool: 0,
      confusable: [],
    });
    for (const folds of [1, 2.5, Number.NaN])
      await assert.rejects(checkExamples(tools, { folds }), /INVALID_INPUT|folds: expected a whole number of at least 2, got/);
    // Three examples a tool at most: three folds, each example held out once.
    const { tools: village } = parseDomainSchema({ tools: TOOLS }, '/tmp/village.pkl');
    const check = await checkExamples(village, { folds: 10 });
    assert.equal(check.folds, 3);
    assert.equal(check.examples, 9);
    assert.equal(check.ownTool + check.astray.length + check.noTool, 9);
  });
});
