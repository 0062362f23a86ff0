import assert from 'node:assert/strict';
import { existsSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { isThymosError } from '../../../shared/errors/errors.js';
import { LocalOwnership } from '../../../supervisor/ownership/local-ownership.js';
import { tempDir } from '../../helpers/temp-dir.js';

test('a claim on one host is granted, repeats return the token held, and a later claim gets a greater token', async () => {
  const dir = tempDir('thymos-own-');
  const own = LocalOwnership.open(dir);
  try {
    assert.equal(own.holds('mira'), undefined);
    const first = await own.claim('mira');
    assert.equal(await own.claim('mira'), first, 'claiming again returns the claim held');
    assert.equal(own.holds('mira'), first);
    const other = await own.claim('bram');
    assert.ok(other > first, `${other} > ${first}`);
    await own.release('mira');
    assert.equal(own.holds('mira'), undefined);
    const again = await own.claim('mira');
    assert.ok(again > other, 'a claim after a release is a new one, with a greater token');
    await own.renew();
    assert.equal(own.holds('mira'), again, 'renewing keeps the claims');
  } finally {
    await own.close();
  }
});

test('the local ownership is the fleet data lock: refused while another live supervisor holds it, and a closed one lets the next in', async () => {
  const dir = tempDir('thymos-own-');
  // Another live process (this one's parent) holds the directory.
  writeFileSync(join(dir, 'supervisor.pid'), String(process.ppid));
  assert.throws(
    () => LocalOwnership.open(dir),
    (err) => isThymosError(err, 'SUPERVISOR_ALREADY_RUNNING') && err.message.includes(String(process.ppid)),
  );
  unlinkSync(join(dir, 'supervisor.pid'));
  const first = LocalOwnership.open(dir);
  assert.equal(readFileSync(join(dir, 'supervisor.pid'), 'utf8'), String(process.pid));
  const token = await first.claim('mira');
  await first.close();
  assert.equal(first.holds('mira'), undefined, 'closing gives up every claim');
  assert.equal(existsSync(join(dir, 'supervisor.pid')), false);
  const next = LocalOwnership.open(dir);
  try {
    assert.ok((await next.claim('mira')) > token, 'the next supervisor issues greater tokens than the one before it');
  } finally {
    await next.close();
  }
});
