import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { loadConfig } from '../../../shared/config/thymos-config.js';
import { isThymosError } from '../../../shared/errors/errors.js';
import { ensureNatsIdentity, natsPublicKey, readNatsSeed } from '../../../shared/nats/nats-identity.js';
import { fleetKeySecret, openSeed, sealSeed } from '../../../supervisor/nats-server/fleet-keys.js';
import { createWorkspace } from '../../helpers/workspace.js';

test('a sealed seed opens only under the same secret, for the same identity and public key', () => {
  const dir = mkdtempSync(join(tmpdir(), 'thymos-keys-'));
  try {
    ensureNatsIdentity(dir, 'agent-a');
    ensureNatsIdentity(dir, 'agent-b');
    const seed = readNatsSeed(dir, 'agent-a')!;
    const secret = Buffer.alloc(32, 7);
    const sealed = sealSeed(secret, 'agent-a', seed);
    assert.equal(sealed.public_key, natsPublicKey(seed));
    assert.doesNotMatch(JSON.stringify(sealed), new RegExp(new TextDecoder().decode(seed).slice(0, 20)));
    assert.deepEqual(openSeed(secret, 'agent-a', sealed, 'here'), seed);
    const refused = (err: unknown) => isThymosError(err, 'CONFIG_INVALID');
    assert.throws(() => openSeed(Buffer.alloc(32, 8), 'agent-a', sealed, 'here'), refused, 'another secret');
    assert.throws(() => openSeed(secret, 'agent-b', { ...sealed, who: 'agent-b' }, 'here'), refused, 'moved to another agent');
    const other = natsPublicKey(readNatsSeed(dir, 'agent-b')!)!;
    assert.throws(() => openSeed(secret, 'agent-a', { ...sealed, public_key: other }, 'here'), refused, 'under another public key');
    assert.throws(() => openSeed(secret, 'agent-a', { ...sealed, sealed: 'AAAA' }, 'here'), refused, 'cut short');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the fleet secret comes from [cluster] key_env: unset or short is CONFIG_INVALID naming the variable; two fleets get two keys', () => {
  const ws = createWorkspace({ extra: '[cluster]\nkey_env = "THYMOS_TEST_FLEET_SECRET"' });
  try {
    const config = loadConfig(ws.configPath);
    delete process.env.THYMOS_TEST_FLEET_SECRET;
    assert.throws(
      () => fleetKeySecret(config),
      (err: unknown) => isThymosError(err, 'CONFIG_INVALID') && /THYMOS_TEST_FLEET_SECRET is not set/.test(err.message),
    );
    process.env.THYMOS_TEST_FLEET_SECRET = 'x'.repeat(31);
    assert.throws(() => fleetKeySecret(config), /holds 31 characters, expected at least 32/);
    process.env.THYMOS_TEST_FLEET_SECRET = 'x'.repeat(32);
    const one = fleetKeySecret(config);
    assert.equal(one.length, 32);
    const other = fleetKeySecret({ ...config, fleet: { ...config.fleet, name: 'other' } });
    assert.notDeepEqual(one, other);
  } finally {
    delete process.env.THYMOS_TEST_FLEET_SECRET;
    ws.dispose();
  }
});
