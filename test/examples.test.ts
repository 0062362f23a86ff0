import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';

import { killFleet } from './helpers/fleet.js';
import { createWorkspace, REPO_ROOT } from './helpers/workspace.js';

async function runExample(file: string, args: string[] = []): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, file), ...args], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  assert.equal(code, 0, out);
  return out;
}

test('the village game loop walks the player through Ashford, passes its own checks and stops its fleet', async () => {
  // Its own data directory, so a fleet a developer runs in examples/village is not touched.
  const ws = createWorkspace({ extra: '[lifecycle]\nmin_dwell_ms = 0' });
  try {
    const out = await runExample('examples/village/game-loop.ts', [ws.configPath]);
    assert.match(out, /all checks passed/);
    assert.doesNotMatch(out, /FAIL/);
    assert.match(out, /tick 6: the player is at village_square/);
  } finally {
    await killFleet(join(ws.dir, 'data'));
    ws.dispose();
  }
});

test('the village passes the same checks with its NPCs talking through an OpenAI-compatible endpoint, set in thymos.toml only', async () => {
  // Stands in for the model server: it answers with the memories the prompt gave it (the lines of
  // the system prompt's context, then the conversation's earlier turns), so what an NPC says comes
  // from what Thymos recalled and put in the prompt.
  let calls = 0;
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString()));
    req.on('end', () => {
      calls++;
      const chat = JSON.parse(raw) as { model: string; messages: Array<{ role: string; content: string }> };
      const lines = (chat.messages[0]?.content ?? '').split('\n').filter((l) => l.startsWith('- ')).map((l) => l.slice(2).replace(/ \(strength [\d.]+\)$/, ''));
      const earlier = chat.messages.slice(1, -1).filter((m) => m.role === 'user').map((m) => m.content);
      const remembered = [...lines, ...earlier];
      const message = remembered.length > 0 ? `I remember: ${remembered.join(' ')}` : 'I do not know.';
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({ model: chat.model, choices: [{ index: 0, message: { role: 'assistant', content: JSON.stringify({ message, emotional_tone: 'calm' }) }, finish_reason: 'stop' }], usage: { prompt_tokens: 100, completion_tokens: 20 } }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const ws = createWorkspace({ extra: `[lifecycle]\nmin_dwell_ms = 0\n[llm.dialogue]\nprovider = "openai-compatible"\nbase_url = "http://127.0.0.1:${port}/v1"\nmodel = "stand-in"` });
  try {
    const out = await runExample('examples/village/game-loop.ts', [ws.configPath]);
    assert.match(out, /all checks passed/);
    assert.match(out, /elder_rowan: I remember: .*axle is cracked/);
    assert.ok(calls >= 6, `the model answered ${calls} lines`);
  } finally {
    await killFleet(join(ws.dir, 'data'));
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    ws.dispose();
  }
});

test('meet-the-elder runs one agent by hand and passes its own checks', async () => {
  const out = await runExample('examples/village/meet-the-elder.ts');
  assert.match(out, /all checks passed/);
  assert.doesNotMatch(out, /FAIL/);
});

test('the support desk works a day of tickets — bursts, a lull, malformed jobs, a customer who writes twice — passes its own checks and stops its fleet', async () => {
  // Its own data directory; the desk's domain and behaviour from examples/support.
  const support = join(REPO_ROOT, 'examples', 'support');
  const ws = createWorkspace({ schema: join(support, 'desk.pkl'), agent: [`behavior = ${JSON.stringify(join(support, 'desk-behavior.mjs'))}`], extra: '[supervisor]\npool_size = 2\n[lifecycle]\nmin_dwell_ms = 5000' });
  try {
    const out = await runExample('examples/support/day.ts', [ws.configPath]);
    assert.match(out, /all checks passed/);
    assert.doesNotMatch(out, /FAIL/);
    assert.match(out, /no refund was made twice/);
  } finally {
    await killFleet(join(ws.dir, 'data'));
    ws.dispose();
  }
});
