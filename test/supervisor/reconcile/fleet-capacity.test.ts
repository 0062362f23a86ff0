import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import type { Fleet } from '../../../client/fleet-client.js';
import type { FleetStatus } from '../../../shared/protocol/supervisor-protocol.js';
import { runThymos, startTestFleet, type TestFleet } from '../../helpers/fleet.js';
import type { Workspace } from '../../helpers/workspace.js';

let ws: Workspace;
let fleet: Fleet;
let testFleet: TestFleet | undefined;
const states = (s: FleetStatus) => Object.fromEntries(s.agents.map((a) => [a.id, a.state]));

describe('capacity limits and pins on a real fleet', () => {
  before(async () => {
    testFleet = await startTestFleet([
      '[lifecycle]',
      'min_dwell_ms = 0',
      'max_running = 3',
      'max_active = 2',
      'pins = { old_fenn = "active" }',
    ]);
    ({ ws, fleet } = testFleet);
  });

  after(async () => {
    await testFleet?.dispose();
  });

  test('more agents qualifying than the limits allow: the pin holds, then the highest scores, the rest one step down', async () => {
    const report = await fleet.reconcile({
      agents: {
        elder_rowan: { relevance: 0.95 },
        bram_smith: { relevance: 0.9 },
        mira_herbalist: { relevance: 0.85 },
        tomas_innkeeper: { relevance: 0.8 },
        captain_lysa: { relevance: 0.05 },
      },
    });
    assert.deepEqual(report.failed, []);
    assert.deepEqual(states(await fleet.status()), {
      bram_smith: 'listening', // active by score; max_active 2 is taken by the pin and elder_rowan
      captain_lysa: 'archived',
      elder_rowan: 'active',
      mira_herbalist: 'dormant', // max_running 3: the pin, elder_rowan, bram_smith
      old_fenn: 'active',
      tomas_innkeeper: 'dormant',
    });
    const status = await fleet.status();
    assert.equal(status.agents.find((a) => a.id === 'old_fenn')!.pinned, 'active');
  });

  test('a command against a pin is refused with AGENT_PINNED (exit 3); one past capacity is refused too', async () => {
    const stop = await runThymos(['stop', 'old_fenn'], ws.dir);
    assert.equal(stop.code, 3);
    assert.match(stop.stderr, /AGENT_PINNED: old_fenn is pinned to active/);
    const start = await runThymos(['start', 'tomas_innkeeper'], ws.dir);
    assert.equal(start.code, 3);
    assert.match(start.stderr, /CAPACITY_EXCEEDED: cannot start tomas_innkeeper: 3 agents already run and \[lifecycle\] max_running is 3/);
    assert.equal(states(await fleet.status()).old_fenn, 'active');
  });

  test('the audit log has every control action with who asked, when and how it ended; reads are not in it', async () => {
    const lines = readFileSync(join(ws.dir, 'data', 'logs', 'audit.jsonl'), 'utf8')
      .trim()
      .split('\n');
    const entries = lines.map(
      (l) =>
        JSON.parse(l) as {
          at: string;
          op: string;
          by: string;
          via?: string;
          id?: string;
          result: string;
          duration_ms: number;
          details?: Record<string, unknown>;
        },
    );
    const reconcile = entries.find((e) => e.op === 'reconcile' && e.result === 'ok');
    assert.ok(reconcile, lines.join('\n'));
    assert.equal(reconcile.by, 'client', 'the identity, from the subject it came on');
    assert.match(reconcile.via ?? '', /^fleet-capacity\.test\.ts#\d+@/, 'the process, as it says');
    assert.ok(!Number.isNaN(Date.parse(reconcile.at)) && reconcile.duration_ms >= 0);
    assert.ok(Array.isArray(reconcile.details?.started), JSON.stringify(reconcile));
    const refused = entries.filter((e) => e.via?.startsWith('thymos.js#'));
    assert.deepEqual(
      refused.map((e) => [e.op, e.id, e.result]),
      [
        ['stop', 'old_fenn', 'AGENT_PINNED'],
        ['start', 'tomas_innkeeper', 'CAPACITY_EXCEEDED'],
      ],
    );
    assert.ok(!entries.some((e) => e.op === 'status' || e.op === 'history'));
    assert.equal(statSync(join(ws.dir, 'data', 'logs', 'audit.jsonl')).mode & 0o777, 0o600);
  });
});
