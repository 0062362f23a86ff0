import assert from 'node:assert/strict';
import { test } from 'node:test';

import { renderReport } from '../../cli/fleet-commands.js';

test("reconcile's report names the agents of every list, unchanged ones too, and leaves out empty lists", () => {
  const text = renderReport({
    started: ['bram_smith', 'elder_rowan'],
    stopped: [],
    upgraded: [],
    downgraded: [],
    archived: ['old_fenn'],
    restored: [],
    unchanged: ['captain_lysa', 'tomas_innkeeper'],
    failed: [{ id: 'mira_herbalist', code: 'AGENT_START_FAILED', message: 'exited at start' }],
    dry_run: false,
    duration_ms: 1203,
  } as Parameters<typeof renderReport>[0]);
  assert.equal(
    text,
    [
      'started    bram_smith, elder_rowan',
      'archived   old_fenn',
      'unchanged  captain_lysa, tomas_innkeeper',
      'FAILED     mira_herbalist: AGENT_START_FAILED: exited at start',
      '1203 ms',
    ].join('\n'),
  );
});

test('a report that answered before its stops names them, and the next one says how they ended, a failed stop included', () => {
  const empty = {
    started: [],
    stopped: [],
    upgraded: [],
    downgraded: [],
    archived: [],
    restored: [],
    unchanged: [],
    failed: [],
    dry_run: false,
  };
  assert.equal(
    renderReport({ ...empty, started: ['bram_smith'], pending: ['elder_rowan'], duration_ms: 310 }),
    ['started    bram_smith', 'stopping   elder_rowan (still moving down when this answered)', '310 ms'].join('\n'),
  );
  const next = renderReport({
    ...empty,
    unchanged: ['bram_smith'],
    settled: {
      stopped: ['elder_rowan'],
      downgraded: [],
      archived: [],
      failed: [{ id: 'mira_herbalist', code: 'SNAPSHOT_FAILED', message: 'not acknowledged' }],
    },
    duration_ms: 12,
  });
  assert.equal(
    next,
    [
      'unchanged  bram_smith',
      'since the last answer, stopped: elder_rowan',
      'since the last answer, FAILED mira_herbalist: SNAPSHOT_FAILED: not acknowledged',
      '12 ms',
    ].join('\n'),
  );
});
