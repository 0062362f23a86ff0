import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';

import { memoryToolCaller } from '../../helpers/tool-caller.js';

const dir = mkdtempSync(join(tmpdir(), 'thymos-tool-caller-'));
writeFileSync(join(dir, 'tools.mjs'), 'export function shout(input) { return input.word.toUpperCase(); }\n');

const tools = {
  shout: {
    description: 'Shouts a word',
    input: { word: {} },
    sideEffect: 'read_only',
    executor: { kind: 'script', path: 'tools.mjs', export: 'shout' },
  },
};

describe('the governed path as a model calls it', () => {
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('a name an object inherits (constructor, toString) is no tool: NOT_FOUND', async () => {
    const { tools: caller } = memoryToolCaller(tools, dir);
    for (const name of ['constructor', 'toString', '__proto__']) {
      await assert.rejects(caller.call(name, {}, { caller: 'model:dialogue' }), (e: { code?: string }) => e.code === 'NOT_FOUND', name);
    }
  });

  test('an argument the tool does not declare is INVALID_INPUT naming it', async () => {
    const { tools: caller } = memoryToolCaller(tools, dir);
    await assert.rejects(
      caller.call('shout', { word: 'hi', wrod: 'typo' }, { caller: 'model:dialogue' }),
      (e: { code?: string; message?: string }) => e.code === 'INVALID_INPUT' && /"wrod"/.test(e.message ?? ''),
    );
  });
});
