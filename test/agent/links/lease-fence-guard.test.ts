import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';

import { connect, type NatsConnection } from '@nats-io/transport-node';

import { ExitCode } from '../../../shared/errors/exit-codes.js';
import { startNatsServer, type TestNatsServer } from '../../helpers/nats-server.js';
import { tempDir } from '../../helpers/temp-dir.js';
import { REPO_ROOT } from '../../helpers/workspace.js';

/**
 * The lease fence's guards, each in a process of its own whose event loop is held past the fence
 * (as a pause would hold it), so the fence's timer cannot run first: the next message in or out, or
 * the next write of an HTTP answer, finds the fence passed and the process exits 5 then and there.
 */
describe('LeaseFence guards', () => {
  let nats: TestNatsServer;
  let nc: NatsConnection;
  const dir = tempDir('thymos-fence-');
  const module = (path: string) => JSON.stringify(pathToFileURL(join(REPO_ROOT, path)).href);

  /** Runs `body` after a fence 300 ms away is armed, in a child process; its exit code and what it printed. */
  const run = (name: string, body: string, onOut?: (out: string) => void) => {
    const file = join(dir, `${name}.mts`);
    writeFileSync(
      file,
      `import { connect } from ${JSON.stringify(pathToFileURL(createRequire(import.meta.url).resolve('@nats-io/transport-node')).href)};
import { LeaseFence } from ${module('agent/links/lease-fence.ts')};
import { fenceAnswer } from ${module('agent/mcp/agent-http-server.ts')};
const logger = { error() {}, warn() {}, info() {}, flush() {} };
const fence = LeaseFence.arm({ ownershipToken: 1, fenceAt: Date.now() + 300 }, 10000, logger);
/** Holds the event loop past the fence, as a process paused (SIGSTOP) past it is held. */
const hold = () => { const until = fence.fenceAt + 200; while (Date.now() < until); };
const say = (line) => process.stdout.write(line + '\\n');
void connect; void fenceAnswer; void hold;
${body}
`,
    );
    const child = spawn(process.execPath, ['--import', 'tsx', file], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      onOut?.(out);
    });
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    return new Promise<{ code: number | null; out: string }>((resolve) => child.once('exit', (code) => resolve({ code, out })));
  };

  /** `run`, with `nc` in the child a connection to the test's server that the fence guards. */
  const runGuarded = (name: string, body: string, onOut?: (out: string) => void) =>
    run(name, `const nc = await connect({ servers: ${JSON.stringify(nats.url)} });\nfence.guard(nc);\n${body}`, onOut);

  /** Runs a child by `during`: its exit code and output, and the messages the test's connection received meanwhile on `subject`. */
  const receivedOn = async (subject: string, during: () => Promise<{ code: number | null; out: string }>) => {
    const seen: string[] = [];
    const sub = nc.subscribe(subject, { callback: (_e, m) => void seen.push(m.string()) });
    await nc.flush();
    try {
      const ran = await during();
      await nc.flush();
      return { ...ran, seen };
    } finally {
      sub.unsubscribe();
    }
  };

  before(async () => {
    nats = await startNatsServer();
    nc = await connect({ servers: nats.url });
  });
  after(async () => {
    await nc?.close();
    await nats?.stop();
  });

  test('a publish after the fence is not sent: the process exits as it is asked', async () => {
    const { code, out, seen } = await receivedOn('fence.out', () =>
      runGuarded(
        'publish',
        `nc.publish('fence.out', 'before');
await nc.flush();
hold();
say('held');
nc.publish('fence.out', 'after');
say('published after the fence');
await nc.flush();`,
      ),
    );
    assert.equal(code, ExitCode.FENCED, out);
    assert.match(out, /held/);
    assert.doesNotMatch(out, /published after the fence/);
    assert.deepEqual(seen, ['before']);
  });

  test('a message that arrives after the fence is not handed on: the process exits as it is read', async () => {
    let sent = false;
    const { code, out } = await runGuarded(
      'receive',
      `// The first message holds the loop past the fence; the second, read from the same packet, comes after it.
nc.subscribe('fence.in', { callback: (_e, m) => { if (m.string() === 'go') { hold(); say('held'); } else say('handled ' + m.string()); } });
await nc.flush();
say('subscribed');
await new Promise(() => undefined);`,
      (printed) => {
        if (sent || !printed.includes('subscribed')) return;
        sent = true;
        nc.publish('fence.in', 'go');
        nc.publish('fence.in', 'after');
        void nc.flush();
      },
    );
    assert.equal(code, ExitCode.FENCED, out);
    assert.match(out, /held/);
    assert.doesNotMatch(out, /handled/);
  });

  test('a publish queued before the fence is not written to the socket after it', async () => {
    const { code, out, seen } = await receivedOn('fence.queued', () =>
      runGuarded(
        'queued',
        `await nc.flush();
// Queued now, written once this turn of the loop ends: after the hold, past the fence.
nc.publish('fence.queued', 'queued before the fence');
hold();
say('held');`,
      ),
    );
    assert.equal(code, ExitCode.FENCED, out);
    assert.match(out, /held/);
    assert.deepEqual(seen, []);
  });

  test('an HTTP request after the fence is not made', async () => {
    let requests = 0;
    const server = createServer((_req, res) => {
      requests++;
      res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const { code, out } = await run(
        'fetch',
        `await fetch('http://127.0.0.1:${port}/before').then((r) => r.text());
say('fetched before');
hold();
await fetch('http://127.0.0.1:${port}/after').then(() => say('fetched after'), () => say('refused'));`,
      );
      assert.equal(code, ExitCode.FENCED, out);
      assert.match(out, /fetched before/);
      assert.doesNotMatch(out, /fetched after|refused/);
      assert.equal(requests, 1);
    } finally {
      server.close();
    }
  });

  test('an HTTP answer written after the fence is not sent', async () => {
    const { code, out } = await run(
      'answer',
      `import { createServer } from 'node:http';
const server = createServer((req, res) => { fenceAnswer(res, () => fence.check()); hold(); say('held'); res.end('late answer'); say('answered'); });
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const port = server.address().port;
const answer = await fetch('http://127.0.0.1:' + port + '/').then((r) => r.text(), () => 'no answer');
say('client: ' + answer);`,
    );
    assert.equal(code, ExitCode.FENCED, out);
    assert.match(out, /held/);
    assert.doesNotMatch(out, /answered|late answer/);
  });
});
