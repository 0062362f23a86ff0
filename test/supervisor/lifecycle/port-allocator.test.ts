import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { test } from 'node:test';

import { parseConfig } from '../../../shared/config/thymos-config.js';
import type { DomainSchema } from '../../../shared/domain/domain-schema.js';
import { PortAllocator } from '../../../supervisor/lifecycle/port-allocator.js';
import { fleetPorts } from '../../../supervisor/reconcile/pins.js';

/** The first of `n` consecutive ports free on 127.0.0.1 a moment ago. */
async function freeRange(n: number): Promise<number> {
  for (;;) {
    const base = 20_000 + Math.floor(Math.random() * 40_000);
    const held: Server[] = [];
    try {
      for (let i = 0; i < n; i++) held.push(await occupy(base + i));
      return base;
    } catch {
      // one was taken: try another base
    } finally {
      for (const s of held) s.close();
    }
  }
}

function occupy(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

test('an agent keeps its last port, others get it only when nothing else is free, and a pin is exact', async () => {
  const min = await freeRange(4);
  const max = min + 2;
  const pinnedPort = min + 3;
  const ports = new PortAllocator({ min, max, host: '127.0.0.1', pinned: new Map([['pinned', pinnedPort]]) });

  const a = await ports.allocate('a');
  const b = await ports.allocate('b');
  ports.release(a, 'a');
  assert.equal(await ports.allocate('a', a), a, 'a wakes on its last port');
  ports.release(a, 'a');
  const c = await ports.allocate('c');
  assert.notEqual(c, a, 'a port another agent had last is avoided while others are free');
  assert.notEqual(c, b);
  assert.equal(await ports.allocate('d'), a, 'and given when nothing else is free');
  await assert.rejects(ports.allocate('e'), /PORT_IN_USE|no free agent port/);

  assert.equal(await ports.allocate('pinned'), pinnedPort, 'a pin outside the range is honoured');
  await assert.rejects(
    ports.allocate('pinned'),
    (err: Error & { code?: string }) => err.code === 'PORT_IN_USE' && /pinned for pinned/.test(err.message),
  );
  ports.release(pinnedPort, 'pinned');
  const squatter = await occupy(pinnedPort);
  try {
    await assert.rejects(ports.allocate('pinned'), /port \d+ pinned for pinned .* is in use/);
  } finally {
    squatter.close();
  }
});

test('a preferred port something else holds is passed over for a free one', async () => {
  const min = await freeRange(3);
  const ports = new PortAllocator({ min, max: min + 2, host: '127.0.0.1' });
  const squatter = await occupy(min);
  try {
    const got = await ports.allocate('a', min);
    assert.notEqual(got, min);
  } finally {
    squatter.close();
  }
});

test('pins must name defined agents and give each its own port', () => {
  const domain = { agents: { a: { port: 7450 }, b: {} } } as unknown as DomainSchema;
  const config = (toml: string) => parseConfig(toml, '/tmp/thymos.toml');
  assert.deepEqual([...fleetPorts(domain, config('')).entries()], [['a', 7450]]);
  assert.deepEqual(
    [...fleetPorts(domain, config('[supervisor]\nagent_ports = { a = 7460, b = 7461 }')).entries()],
    [
      ['a', 7460],
      ['b', 7461],
    ],
    'thymos.toml wins over Pkl',
  );
  assert.throws(() => fleetPorts(domain, config('[supervisor]\nagent_ports = { b = 7450 }')), /a and b are both pinned to port 7450/);
  assert.throws(() => fleetPorts(domain, config('[supervisor]\nagent_ports = { zed = 7470 }')), /supervisor\.agent_ports: no agent "zed"/);
  assert.throws(() => config('[supervisor]\nagent_ports = { a = 7470, b = 7470 }'), /agent_ports.*a port of its own/s);
});
