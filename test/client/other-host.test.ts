import assert from 'node:assert/strict';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { connect } from '../../client/fleet-client.js';
import { readAgentToken } from '../../shared/platform/agent-token.js';
import { runThymos, startTestFleet, type TestFleet } from '../helpers/fleet.js';
import { createWorkspace, type Workspace } from '../helpers/workspace.js';

/**
 * A client on another host: its own folder, with only the client's NATS identity copied in, and
 * the fleet's NATS as its `[nats] url`. It reads nothing of the agents' folders.
 */
describe("a client on another host reaches an agent through the supervisor, reading no file of the agent's", () => {
  let tf: TestFleet;
  let other: Workspace;

  before(async () => {
    tf = await startTestFleet(['[lifecycle]', 'min_dwell_ms = 0', '[supervisor]', 'pool_size = 0'], { agent: ['host = "127.0.0.2"'] });
    await tf.fleet.start('elder_rowan', { mode: 'active' });
    const data = join(tf.ws.dir, 'data');
    const natsUrl = (JSON.parse(readFileSync(join(data, 'run', 'fleet.json'), 'utf8')) as { nats_url: string }).nats_url;
    other = createWorkspace({ natsUrl, schema: null, extra: '[host]\nname = "mill_b"' });
    other.writeConfig(
      readFileSync(other.configPath, 'utf8').replace(
        `url = ${JSON.stringify(natsUrl)}`,
        `url = ${JSON.stringify(natsUrl)}\nidentities = true`,
      ),
    );
    const keys = join(other.dir, 'data', 'secrets', 'nats');
    mkdirSync(keys, { recursive: true, mode: 0o700 });
    copyFileSync(join(data, 'secrets', 'nats', 'client.nk'), join(keys, 'client.nk'));
    chmodSync(join(keys, 'client.nk'), 0o600);
  });

  after(async () => {
    other?.dispose();
    await tf?.dispose();
  });

  test('thymos url prints the address the agent’s host advertises, and --header its token, from the supervisor over NATS', async () => {
    const url = await runThymos(['url', 'elder_rowan'], other.dir);
    assert.equal(url.code, 0, url.stderr);
    assert.match(url.stdout.trim(), /^http:\/\/127\.0\.0\.2:\d+\/mcp$/);
    const header = await runThymos(['url', 'elder_rowan', '--header'], other.dir);
    assert.equal(header.code, 0, header.stderr);
    const token = readAgentToken(join(tf.ws.dir, 'data'), 'elder_rowan');
    assert.equal(header.stdout.trim(), `Authorization: Bearer ${token}`);
    assert.equal(existsSync(join(other.dir, 'data', 'agents')), false, 'no agent folder on this host');
  });

  test('fleet.agent(id) connects with the token the supervisor hands over, and the agent answers', async () => {
    const fleet = await connect(other.configPath);
    try {
      const agent = await fleet.agent('elder_rowan');
      const tools = await agent.listTools();
      assert.ok(tools.tools.some((t) => t.name === 'talk_to_elder_rowan'));
    } finally {
      await fleet.close();
    }
  });
});
