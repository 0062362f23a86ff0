import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { connect, type NatsConnection } from '@nats-io/transport-node';

import type { Logger } from '../../../shared/platform/logger.js';
import { logRefusedConnections } from '../../../supervisor/process/refused-connections.js';
import { eventually } from '../../helpers/fleet.js';
import { startNatsServer, type TestNatsServer } from '../../helpers/nats-server.js';

/** What nats-server says of a refused connection, as its system account publishes it. */
const advisory = (name: string) =>
  JSON.stringify({
    type: 'io.nats.server.advisory.v1.client_disconnect',
    client: { host: '127.0.0.1', name, lang: 'nats.js' },
    reason: 'Authentication Failure',
  });

describe('the log of refused connections', () => {
  let nats: TestNatsServer;
  let nc: NatsConnection;
  const lines: string[] = [];
  const logger = { warn: (_fields: unknown, line: string) => void lines.push(line) } as unknown as Logger;

  before(async () => {
    nats = await startNatsServer();
    nc = await connect({ servers: nats.url });
  });
  after(async () => {
    await nc?.close();
    await nats?.stop();
  });

  test('what a stranger named itself is logged without control characters, cut short, and a flood is counted rather than logged line by line', async () => {
    const sub = logRefusedConnections(nc, logger);
    await nc.flush();
    nc.publish('$SYS.SERVER.X.CLIENT.AUTH.ERR', advisory(`\u001b[2J\u001b[31mthymos-agent-elder_rowan\n[fake] all good${'x'.repeat(300)}`));
    nc.publish('$SYS.SERVER.X.CLIENT.AUTH.ERR', 'not an advisory');
    for (let i = 0; i < 30; i++) nc.publish('$SYS.SERVER.X.CLIENT.AUTH.ERR', advisory(`flood-${i}`));
    nc.publish('$SYS.SERVER.X.CLIENT.AUTH.ERR', advisory('last'));
    await nc.flush();
    // The 20 of the window: the first, then flood-0 … flood-18; the rest counted for the next window.
    await eventually(() => (lines.length >= 20 ? true : undefined), 10_000, 'twenty lines');
    await nc.flush();
    assert.equal(lines.length, 20);
    assert.match(
      lines[0]!,
      /^nats-server refused a connection named \?\[2J\?\[31mthymos-agent-elder_rowan\?\[fake\] all goodx+ from 127\.0\.0\.1 with no identity: Authentication Failure$/,
    );
    assert.equal(lines[0]!.includes('\u001b'), false);
    assert.ok(lines[0]!.length < 128 + 120, 'the name is cut to 128 characters');
    assert.match(lines[19]!, /named flood-18 /);
    sub.unsubscribe();
  });
});
