import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { rehearseAgent } from '../../../agent/process/spare-rehearsal.js';
import { loadConfig } from '../../../shared/config/thymos-config.js';
import { createLogger } from '../../../shared/engines/pino-logger.js';
import { eventually } from '../../helpers/fleet.js';
import { createWorkspace } from '../../helpers/workspace.js';

const quiet = createLogger({ level: 'silent' });

test('a rehearsal runs an MCP session against a made-up agent and leaves nothing behind', async () => {
  const ws = createWorkspace({ schema: null });
  try {
    const dir = join(ws.dir, 'warm');
    const { steps, ms } = await rehearseAgent(loadConfig(ws.configPath), dir, quiet);
    assert.deepEqual(steps, ['initialize', 'remember', 'recall', 'talk', 'end'], 'offline dialogue is rehearsed too');
    assert.ok(ms > 0);
    // The engine may write a closed database's files for a moment (surrealdb.js#592): removed soon after.
    await eventually(() => (existsSync(dir) ? undefined : true), 15_000, 'the throwaway database to be removed');
  } finally {
    ws.dispose();
  }
});

test('a rehearsal never talks to a configured dialogue model', async () => {
  const ws = createWorkspace({
    schema: null,
    extra: ['[llm.dialogue]', 'provider = "openai-compatible"', 'base_url = "http://127.0.0.1:9/v1"', 'model = "m"'].join('\n'),
  });
  try {
    const { steps } = await rehearseAgent(loadConfig(ws.configPath), join(ws.dir, 'warm'), quiet);
    assert.deepEqual(steps, ['initialize', 'remember', 'recall', 'end']);
  } finally {
    ws.dispose();
  }
});

test('a rehearsal that cannot open its database fails naming the path', async () => {
  const ws = createWorkspace({ schema: null });
  try {
    // A file where the database folder's parent should be.
    const blocked = join(ws.configPath, 'warm');
    await assert.rejects(rehearseAgent(loadConfig(ws.configPath), blocked, quiet), (err: Error) => err.message.includes(blocked));
  } finally {
    ws.dispose();
  }
});
