import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { connect } from '../../../client/fleet-client.js';
import { loadConfig } from '../../../shared/config/thymos-config.js';
import { isThymosError } from '../../../shared/errors/errors.js';
import { downFleet, upFleet } from '../../../supervisor/launch/fleet-launcher.js';
import { fleetPids, killFleet, runThymos } from '../../helpers/fleet.js';
import { startNatsServer, type TestNatsServer } from '../../helpers/nats-server.js';
import { createWorkspace, type Workspace } from '../../helpers/workspace.js';

/** Fleets started from several data directories on one nats-server, as several hosts would. */
describe('one supervisor per fleet on a NATS, whichever host or data directory it starts from', () => {
  let nats: TestNatsServer;
  const spaces: Workspace[] = [];
  const host = (name: string, fleet = 'thymos') => {
    const ws = createWorkspace({
      natsUrl: nats.url,
      schema: null,
      extra: `[fleet]\nname = "${fleet}"\n[host]\nname = "${name}"\n[supervisor]\npool_size = 0`,
    });
    spaces.push(ws);
    return ws;
  };

  before(async () => {
    nats = await startNatsServer({ jetstream: true });
  });

  after(async () => {
    for (const ws of spaces) {
      await downFleet(loadConfig(ws.configPath)).catch(() => undefined);
      await killFleet(join(ws.dir, 'data'));
      ws.dispose();
    }
    await nats?.stop();
  });

  test('a second supervisor of the fleet is refused, by thymos up before it starts anything and by the supervisor itself, naming the host that holds it', async () => {
    const first = host('mill_a');
    await upFleet(loadConfig(first.configPath));
    const second = host('mill_b');
    await assert.rejects(
      upFleet(loadConfig(second.configPath)),
      (err: unknown) => isThymosError(err, 'SUPERVISOR_ALREADY_RUNNING') && /on host mill_a/.test(err.message),
    );
    assert.equal(fleetPids(join(second.dir, 'data')).apps.size, 0, 'nothing started for the second');
    // Started directly, as pm2 would run it, the supervisor refuses too (exit 3, conflict).
    const direct = await runThymos(['supervisor', '--nats-url', nats.url, '--config', second.configPath], second.dir);
    assert.equal(direct.code, 3, direct.stderr);
    assert.match(direct.stderr, /SUPERVISOR_ALREADY_RUNNING[\s\S]*on host mill_a/);
    // A second host given the first one's [host] name is refused the same way, and told the names clash.
    const twin = host('mill_a');
    await assert.rejects(
      upFleet(loadConfig(twin.configPath)),
      (err: unknown) =>
        isThymosError(err, 'SUPERVISOR_ALREADY_RUNNING') && /on host mill_a \(the \[host\] name of this host too/.test(err.message),
    );
    assert.equal(fleetPids(join(twin.dir, 'data')).apps.size, 0, 'nothing started for the twin');
    // The first one still answers for the fleet, and says where it runs.
    const fleet = await connect(first.configPath);
    try {
      assert.equal((await fleet.status()).supervisor.host, 'mill_a');
    } finally {
      await fleet.close();
    }
  });

  test('a fleet of another name on the same NATS starts beside it', async () => {
    const other = host('mill_b', 'harbour');
    const up = await upFleet(loadConfig(other.configPath));
    assert.equal(up.alreadyRunning, false);
    const fleet = await connect(other.configPath);
    try {
      assert.equal((await fleet.status()).supervisor.host, 'mill_b');
    } finally {
      await fleet.close();
    }
  });
});
