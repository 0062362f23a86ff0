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
  assert.equal(text, ['started    bram_smith, elder_rowan', 'archived   old_fenn', 'unchanged  captain_lysa, tomas_innkeeper', 'FAILED     mira_herbalist: AGENT_START_FAILED: exited at start', '1203 ms'].join('\n'));
});
