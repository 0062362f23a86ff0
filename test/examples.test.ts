import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';

import { type ChatRequest, ChatStandIn, completion } from './helpers/chat-stand-in.js';
import { killFleet, natsViolations } from './helpers/fleet.js';
import { createWorkspace, REPO_ROOT } from './helpers/workspace.js';

async function runExample(file: string, args: string[] = []): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, file), ...args], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  assert.equal(code, 0, out);
  return out;
}

test('the village game loop walks the player through Ashford, passes its own checks and stops its fleet, and does so again on the same data', async () => {
  // Its own data directory, so a fleet a developer runs in examples/village is not touched.
  const ws = createWorkspace({ extra: '[lifecycle]\nmin_dwell_ms = 0' });
  try {
    const out = await runExample('examples/village/game-loop.ts', [ws.configPath]);
    assert.match(out, /all checks passed/);
    assert.doesNotMatch(out, /FAIL/);
    assert.deepEqual(natsViolations(join(ws.dir, 'data')), [], "nats-server refused none of the fleet's own processes");
    assert.match(out, /tick 6: the player is at village_square/);
    // Played again on the same data: the same checks pass, and the quest is not posted twice.
    const again = await runExample('examples/village/game-loop.ts', [ws.configPath]);
    assert.match(again, /all checks passed/);
    assert.match(again, /ok {3}the wolves quest, on the board from a game played before in .*, was not posted twice/);
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
      const lines = (chat.messages[0]?.content ?? '')
        .split('\n')
        .filter((l) => l.startsWith('- '))
        .map((l) => l.slice(2).replace(/ \(strength [\d.]+\)$/, ''));
      const earlier = chat.messages
        .slice(1, -1)
        .filter((m) => m.role === 'user')
        .map((m) => m.content);
      const remembered = [...lines, ...earlier];
      const message = remembered.length > 0 ? `I remember: ${remembered.join(' ')}` : 'I do not know.';
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          model: chat.model,
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: JSON.stringify({ message, emotional_tone: 'calm' }) },
              finish_reason: 'stop',
            },
          ],
          usage: { prompt_tokens: 100, completion_tokens: 20 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const ws = createWorkspace({
    extra: `[lifecycle]\nmin_dwell_ms = 0\n[llm.dialogue]\nprovider = "openai-compatible"\nbase_url = "http://127.0.0.1:${port}/v1"\nmodel = "stand-in"`,
  });
  try {
    const out = await runExample('examples/village/game-loop.ts', [ws.configPath]);
    assert.match(out, /all checks passed/);
    assert.match(out, /elder_rowan: I remember: .*axle is cracked/);
    assert.deepEqual(natsViolations(join(ws.dir, 'data')), [], "nats-server refused none of the fleet's own processes");
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
  const ws = createWorkspace({
    schema: join(support, 'desk.pkl'),
    agent: [`behavior = ${JSON.stringify(join(support, 'desk-behavior.mjs'))}`],
    extra: '[supervisor]\npool_size = 2\n[lifecycle]\nmin_dwell_ms = 5000',
  });
  try {
    const out = await runExample('examples/support/day.ts', [ws.configPath]);
    assert.match(out, /all checks passed/);
    assert.doesNotMatch(out, /FAIL/);
    assert.deepEqual(natsViolations(join(ws.dir, 'data')), [], "nats-server refused none of the fleet's own processes");
    assert.match(out, /no refund was made twice/);
  } finally {
    await killFleet(join(ws.dir, 'data'));
    ws.dispose();
  }
});

/**
 * Plays the desk's model: reads the job and the tools it is offered, and answers as a model
 * would — the calls its role makes for the ticket, in one round, then how the job ended.
 */
function deskModel(chat: ChatRequest): { content: string; tool_calls?: unknown[] } {
  const offered = new Set((chat.tools ?? []).map((t) => t.function.name));
  const job = chat.messages.find((m) => m.role === 'user')?.content ?? '';
  const payload = JSON.parse(job.slice(job.indexOf('\n') + 1)) as { ticket_id: string; text: string; customer_id: string };
  const text = payload.text;
  const ticket_id = payload.ticket_id;
  const call = (name: string, args: Record<string, unknown>) => ({
    id: `call_${name}`,
    type: 'function',
    function: { name, arguments: JSON.stringify({ ...args, reason: `ticket ${ticket_id}` }) },
  });
  const reply = (message: string, status_after: string) => call('reply_to_customer', { ticket_id, message, status_after });
  const results = chat.messages.filter((m) => m.role === 'tool');
  // A refund's outcome read before the customer is answered: waiting for a person, or made (also when a job is worked again once its approval came).
  if (
    results.length === 1 &&
    chat.tool_choice === 'auto' &&
    /refund/i.test(text) &&
    offered.has('refund_order') &&
    !chat.messages.some((m) => JSON.stringify(m).includes('reply_to_customer'))
  ) {
    const waits = (JSON.parse(String(results[0]!.content)) as { status?: string }).status === 'pending';
    return {
      content: '',
      tool_calls: [
        waits
          ? reply("Your refund waits for a colleague's approval.", 'pending_customer')
          : reply('Done: refund made; it shows on your statement within days.', 'solved'),
      ],
    };
  }
  if (results.length > 0 || chat.tool_choice !== 'auto')
    return { content: JSON.stringify({ status: 'done', summary: `worked ${ticket_id}` }) };
  const order = /ORD-\d{5}/.exec(text)?.[0];
  const escalate = call('escalate_ticket', { ticket_id, tier: 'tier2', summary: `Nothing I can settle here: ${text.slice(0, 200)}` });
  let calls: unknown[];
  if (!offered.has('reply_to_customer')) {
    const team = /charged|refund|invoice/i.test(text)
      ? 'billing'
      : /return|parcel|deliver/i.test(text)
        ? 'shipping'
        : /device|wifi|sign/i.test(text)
          ? 'technical'
          : undefined;
    calls = [team ? call('update_ticket', { ticket_id, team }) : escalate];
  } else if (!offered.has('escalate_ticket')) {
    calls = [
      call('add_ticket_note', { ticket_id, note: `Taken over by the senior desk: ${text.slice(0, 200)}` }),
      reply('A senior colleague has your ticket now.', 'open'),
      call('update_ticket', { ticket_id, status: 'on_hold' }),
    ];
  } else if (offered.has('refund_order') && /refund.* (\d+\.\d\d)/.test(text) && order) {
    calls = [call('refund_order', { order_id: order, amount: Number(/(\d+\.\d\d)/.exec(text)![1]), reason_code: 'duplicate_charge' })];
  } else if (offered.has('resend_invoice') && /INV-\d{6}/.test(text)) {
    calls = [call('resend_invoice', { invoice_id: /INV-\d{6}/.exec(text)![0] }), reply('The invoice is on its way again.', 'solved')];
  } else if (offered.has('create_return') && /SKU-[A-Z0-9]+/.test(text) && order) {
    calls = [
      call('create_return', {
        order_id: order,
        sku: /SKU-[A-Z0-9]+/.exec(text)![0],
        quantity: Number(/, (\d+) of them/.exec(text)?.[1] ?? 1),
        reason_code: /wrong/.test(text) ? 'wrong_item' : 'damaged',
      }),
      reply('Your return label is on its way.', 'solved'),
    ];
  } else if (offered.has('run_diagnostics') && /SN-[A-Z0-9]{8}/.test(text)) {
    calls = [
      call('run_diagnostics', { customer_id: payload.customer_id, serial_number: /SN-[A-Z0-9]{8}/.exec(text)![0], check: 'connectivity' }),
      reply('We checked your device: a firmware update fixes it.', 'solved'),
    ];
  } else {
    calls = [escalate];
  }
  return { content: '', tool_calls: calls };
}

test("the support desk passes the same checks with its agents working tickets by a model's tool calls, set in thymos.toml only", async () => {
  const model = await ChatStandIn.start();
  let asked = 0;
  model.answer = (chat, res) => {
    asked++;
    const { content, tool_calls } = deskModel(chat);
    completion(res, content, tool_calls ? { tool_calls } : {});
  };
  const support = join(REPO_ROOT, 'examples', 'support');
  const ws = createWorkspace({
    schema: join(support, 'desk.pkl'),
    agent: [`behavior = ${JSON.stringify(join(support, 'desk-behavior.mjs'))}`],
    extra: [
      '[supervisor]',
      'pool_size = 2',
      '[lifecycle]',
      'min_dwell_ms = 5000',
      '[llm.reasoning]',
      'provider = "openai-compatible"',
      `base_url = "${model.baseUrl}"`,
      'model = "stand-in-1"',
      'timeout_ms = 20000',
    ].join('\n'),
  });
  try {
    const out = await runExample('examples/support/day.ts', [ws.configPath]);
    assert.match(out, /all checks passed/);
    assert.doesNotMatch(out, /FAIL/);
    assert.deepEqual(natsViolations(join(ws.dir, 'data')), [], "nats-server refused none of the fleet's own processes");
    assert.match(out, /supervisor refused refund_order ORD-10008 180/);
    assert.ok(asked >= 20, `the model was asked ${asked} times`);
  } finally {
    await killFleet(join(ws.dir, 'data'));
    await model.stop();
    ws.dispose();
  }
});
