import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { connect, type NatsConnection } from '@nats-io/transport-node';

import { ExitCode } from '../../../shared/errors/exit-codes.js';
import { FleetNames } from '../../../shared/protocol/fleet-names.js';
import { killAllAgents, startAgent } from '../../helpers/agent-child.js';
import { eventually } from '../../helpers/fleet.js';
import { startNatsServer, type TestNatsServer } from '../../helpers/nats-server.js';
import { freePort } from '../../helpers/ports.js';
import { createWorkspace, type Workspace } from '../../helpers/workspace.js';

/**
 * An agent under a lease (placement by lease, `[cluster] enabled`), run as pm2 runs it: it stops
 * itself at its fence unless its supervisor extends it, exits 5 (which pm2 does not restart), and
 * after a pause past the fence answers nothing and publishes nothing before it exits.
 */
describe('an agent stops itself when its lease ends', () => {
  let nats: TestNatsServer;
  let ws: Workspace;
  let nc: NatsConnection;
  const names = new FleetNames();

  /** A start context under claim `token`, fenced `inMs` from now. */
  const context = (name: string, token: number, inMs: number) => {
    const file = join(ws.dir, `${name}.context.json`);
    writeFileSync(file, JSON.stringify({ ownershipToken: token, fenceAt: Date.now() + inMs, properties: {} }));
    return file;
  };
  const extend = (id: string, token: number, inMs: number) =>
    nc.publish(names.agentLease(id), JSON.stringify({ token, fence_at: Date.now() + inMs }));

  before(async () => {
    nats = await startNatsServer({ jetstream: true });
    ws = createWorkspace({ natsUrl: nats.url });
    nc = await connect({ servers: nats.url });
  });
  after(async () => {
    await killAllAgents();
    await nc?.close();
    await nats?.stop();
    ws?.dispose();
  });

  test('started after its fence, it refuses to start (LEASE_ENDED, exit 5)', async () => {
    const agent = await startAgent({
      id: 'elder_rowan',
      port: await freePort(),
      config: ws.configPath,
      context: context('late', 3, -1000),
      waitReady: false,
    });
    assert.equal(await agent.exited, ExitCode.FENCED);
    assert.match(agent.output(), /LEASE_ENDED: the lease this agent was started under \(token 3\) ended \d+ ms ago/);
  });

  test('extended for its own claim it runs on; extensions for another claim do not count; left alone it exits 5 at its fence', async () => {
    const agent = await startAgent({ id: 'bram_smith', port: await freePort(), config: ws.configPath, context: context('bram', 11, 2500) });
    const firstFence = Date.now() + 2500;
    // Its supervisor extends it, three times over its first fence.
    let fence = 0;
    while (Date.now() < firstFence + 1000) {
      fence = Date.now() + 1500;
      extend('bram_smith', 11, 1500);
      extend('bram_smith', 10, 60_000); // an older claim's: ignored
      await nc.flush();
      await eventually(() => (Date.now() > fence - 1000 ? true : undefined), 5000, 'the next renewal');
    }
    assert.equal(agent.child.exitCode, null, 'still running past its first fence');
    const code = await agent.exited;
    assert.equal(code, ExitCode.FENCED);
    assert.ok(Date.now() >= fence, 'not before the fence its supervisor gave it last');
    assert.match(agent.output(), /lease ended: the agent stops itself/);
  });

  test('paused past its fence (SIGSTOP), then resumed: it answers no MCP call and publishes nothing before it exits', async () => {
    const id = 'mira_herbalist';
    const fenceAt = Date.now() + 6000;
    const agent = await startAgent({ id, port: await freePort(), config: ws.configPath, context: context('mira', 21, 6000) });
    const published: string[] = [];
    const sub = nc.subscribe(`${names.fleet}.agent.${id}.>`, { callback: (_e, m) => void published.push(m.subject) });
    await eventually(() => (published.some((s) => s.endsWith('.status')) ? true : undefined), 10_000, 'a heartbeat');
    // Paused before its fence, it stays paused past it.
    process.kill(agent.pid, 'SIGSTOP');
    assert.ok(Date.now() < fenceAt, 'paused before its fence');
    await eventually(() => (Date.now() >= fenceAt + 1000 ? true : undefined), 10_000, 'the fence to pass while paused');
    published.length = 0;
    // What waits for it when it resumes: an MCP request on its socket and a control request on NATS.
    const answer = fetch(agent.url, {
      method: 'POST',
      headers: { ...agent.headers(), 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      }),
    }).then(
      (r) => `answered ${r.status}`,
      () => 'no answer',
    );
    const control = nc.request(names.agentControl(id), JSON.stringify({ op: 'get_state' }), { timeout: 3000 }).then(
      () => 'answered',
      () => 'no answer',
    );
    await nc.flush();
    process.kill(agent.pid, 'SIGCONT');
    assert.equal(await agent.exited, ExitCode.FENCED);
    assert.equal(await answer, 'no answer');
    assert.equal(await control, 'no answer');
    await nc.flush();
    sub.unsubscribe();
    assert.deepEqual(
      published.filter((s) => !s.endsWith('.control')),
      [],
      'nothing published after the fence',
    );
  });
});
