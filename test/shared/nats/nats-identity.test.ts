import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';

import { createAccount, fromSeed } from '@nats-io/nkeys';
import { nkeyAuthenticator } from '@nats-io/transport-node';

import { writeFleetInfo } from '../../../shared/config/fleet-runtime.js';
import { configFromObject } from '../../../shared/config/thymos-config.js';
import {
  ensureNatsIdentity,
  fleetNatsSeed,
  listNatsIdentities,
  natsIdentityFile,
  natsSecretsDir,
  nkeySigner,
  readNatsSeed,
  removeNatsIdentity,
} from '../../../shared/nats/nats-identity.js';

const dirs: string[] = [];
const dataDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'thymos-identity-'));
  dirs.push(d);
  return d;
};
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test('an identity is made once, as a user nkey in a file of mode 0600 in a folder of mode 0700, and read back as the same key', () => {
  const data = dataDir();
  assert.equal(readNatsSeed(data, 'agent-elder_rowan'), undefined);
  const made = ensureNatsIdentity(data, 'agent-elder_rowan');
  assert.equal(made.created, true);
  assert.match(made.publicKey, /^U[A-Z0-9]{55}$/);
  assert.equal(statSync(natsSecretsDir(data)).mode & 0o777, 0o700);
  assert.equal(statSync(natsIdentityFile(data, 'agent-elder_rowan')).mode & 0o777, 0o600);
  assert.equal(fromSeed(readNatsSeed(data, 'agent-elder_rowan')!).getPublicKey(), made.publicKey);
  const again = ensureNatsIdentity(data, 'agent-elder_rowan');
  assert.deepEqual(again, { publicKey: made.publicKey, created: false });
  assert.deepEqual(readdirSync(natsSecretsDir(data)), ['agent-elder_rowan.nk'], 'no temporary file left');
});

test('the identities listed are those whose files hold a seed; a removed one is gone from the list', () => {
  const data = dataDir();
  const keys = Object.fromEntries((['supervisor', 'client', 'agent-a'] as const).map((w) => [w, ensureNatsIdentity(data, w).publicKey]));
  assert.deepEqual(
    listNatsIdentities(data),
    Object.entries(keys)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([who, publicKey]) => ({ who, publicKey })),
  );
  assert.equal(removeNatsIdentity(data, 'agent-a'), true);
  assert.equal(removeNatsIdentity(data, 'agent-a'), false);
  assert.deepEqual(
    listNatsIdentities(data).map((i) => i.who),
    ['client', 'supervisor'],
  );
});

test('a file that holds no user seed is a coded error naming it and what to do, and nothing is overwritten', () => {
  const data = dataDir();
  mkdirSync(natsSecretsDir(data), { recursive: true });
  const accountSeed = new TextDecoder().decode(createAccount().getSeed());
  for (const junk of ['', 'not a seed', 'SAAJUNK', accountSeed]) {
    writeFileSync(natsIdentityFile(data, 'client'), junk);
    assert.throws(
      () => readNatsSeed(data, 'client'),
      (err: Error & { code?: string }) =>
        err.code === 'CONFIG_INVALID' && err.message.includes(natsIdentityFile(data, 'client')) && /thymos up/.test(err.message),
    );
    assert.throws(() => ensureNatsIdentity(data, 'client'), /does not hold a user nkey seed/);
    assert.equal(readFileSync(natsIdentityFile(data, 'client'), 'utf8'), junk, 'the file is left as it was');
    const skipped: string[] = [];
    assert.deepEqual(
      listNatsIdentities(data, (file) => skipped.push(file)),
      [],
      'the server admits the others, not this one',
    );
    assert.deepEqual(skipped, [natsIdentityFile(data, 'client')]);
  }
});

test('a key file or folder with a wider mode than its owner’s is narrowed when next used', () => {
  const data = dataDir();
  ensureNatsIdentity(data, 'spare');
  chmodSync(natsSecretsDir(data), 0o755);
  chmodSync(natsIdentityFile(data, 'spare'), 0o644);
  ensureNatsIdentity(data, 'spare');
  assert.equal(statSync(natsSecretsDir(data)).mode & 0o777, 0o700);
  assert.equal(statSync(natsIdentityFile(data, 'spare')).mode & 0o777, 0o600);
});

test('a key signs in only to the server the fleet recorded: its own, or the user’s with [nats] identities; never another', () => {
  const data = dataDir();
  ensureNatsIdentity(data, 'client');
  const own = 'nats://127.0.0.1:4222';
  const config = configFromObject({ data_dir: data });
  assert.equal(fleetNatsSeed(config, 'client', own), undefined, 'no fleet started yet');
  writeFleetInfo(config, { nats_url: own, managed_nats: false, nats_port: null });
  assert.equal(fleetNatsSeed(config, 'client', own), undefined, 'a server the user runs, without [nats] identities');
  const withIdentities = configFromObject({ data_dir: data, nats: { url: own, identities: true } });
  assert.deepEqual(fleetNatsSeed(withIdentities, 'client', own), readNatsSeed(data, 'client'), 'the user’s server, with [nats] identities');
  assert.equal(
    fleetNatsSeed(withIdentities, 'client', 'nats://127.0.0.1:5222'),
    undefined,
    'with [nats] identities, still not another server (thymos agent --nats-url by hand)',
  );
  writeFleetInfo(config, { nats_url: own, managed_nats: true, nats_port: 4222 });
  assert.deepEqual(fleetNatsSeed(config, 'client', own), readNatsSeed(data, 'client'));
  assert.deepEqual(
    fleetNatsSeed(configFromObject({ data_dir: data, nats: { url: own } }), 'client', own),
    readNatsSeed(data, 'client'),
    'an agent told the managed server’s URL',
  );
  assert.equal(
    fleetNatsSeed(configFromObject({ data_dir: data, nats: { url: 'nats://127.0.0.1:5222' } }), 'client', 'nats://127.0.0.1:5222'),
    undefined,
    'another server, whatever a stale fleet.json says',
  );
});

test('signing in with Node’s Ed25519 gives what nats.js’s own nkey authenticator gives', () => {
  const data = dataDir();
  ensureNatsIdentity(data, 'client');
  const seed = readNatsSeed(data, 'client')!;
  for (const nonce of ['nonce-1', 'x'.repeat(64), undefined]) assert.deepEqual(nkeySigner(seed)(nonce), nkeyAuthenticator(seed)(nonce));
  assert.equal((nkeySigner(seed)('n') as { nkey: string }).nkey, fromSeed(seed).getPublicKey());
  assert.throws(() => nkeySigner(createAccount().getSeed()), /user nkey seed/);
});
