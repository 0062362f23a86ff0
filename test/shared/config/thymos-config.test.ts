import assert from 'node:assert/strict';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import { defaultHostName } from '../../../shared/config/host-settings.js';
import { agentMcpUrl, loadConfig, parseConfig, ThymosConfigSchema } from '../../../shared/config/thymos-config.js';
import { isThymosError, type ThymosError } from '../../../shared/errors/errors.js';
import { tempDir } from '../../helpers/temp-dir.js';
import { REPO_ROOT } from '../../helpers/workspace.js';

function configError(source: string): ThymosError {
  try {
    parseConfig(source, '/etc/thymos/thymos.toml');
  } catch (err) {
    assert.ok(isThymosError(err, 'CONFIG_INVALID'), String(err));
    return err;
  }
  assert.fail('expected CONFIG_INVALID');
}

describe('thymos.toml', () => {
  test('an empty file gives every default, with paths resolved against its folder', () => {
    const config = parseConfig('', '/srv/game/thymos.toml');
    assert.equal(config.dataPath, '/srv/game/data');
    assert.equal(config.agent.host, '127.0.0.1');
    assert.equal(config.lifecycle.threshold_active, 0.7);
    assert.equal(config.lifecycle.threshold_listening, 0.4);
    assert.equal(config.lifecycle.threshold_dormant, 0.1);
    assert.equal(config.memory.recall_default_k, 5);
    assert.equal(config.nats.url, undefined);
    assert.ok(Object.isFrozen(config));
  });

  test("[host] name defaults to the first label of the machine's hostname, made a NATS token; a bad one is refused naming the key", () => {
    assert.equal(defaultHostName('Mill-2.example.org'), 'mill-2');
    assert.equal(defaultHostName('WEIRD host'), 'weird_host');
    assert.equal(defaultHostName('-edge'), 'h-edge');
    assert.equal(parseConfig('', '/srv/game/thymos.toml').host.name, defaultHostName(hostname()));
    assert.equal(parseConfig('[host]\nname = "mill_2"', '/srv/game/thymos.toml').host.name, 'mill_2');
    for (const bad of ['"mill.2"', '"Mill"', '""', '"a*b"']) assert.match(configError(`[host]\nname = ${bad}`).message, /host\.name/);
  });

  test('a fleet reachable from other machines: 0.0.0.0 needs an address to advertise, off loopback the MCP token stays on, and NATS off loopback needs identities', () => {
    const at = (toml: string) => parseConfig(toml, '/srv/game/thymos.toml');
    assert.match(configError('[agent]\nhost = "0.0.0.0"').message, /host\.advertise[\s\S]*every interface/);
    const advertised = at('[agent]\nhost = "0.0.0.0"\n[host]\nadvertise = "10.0.0.12"\n');
    assert.equal(agentMcpUrl(advertised, 4101), 'http://10.0.0.12:4101/mcp');
    assert.equal(agentMcpUrl(at(''), 4101), 'http://127.0.0.1:4101/mcp', 'the bind address when nothing is advertised');
    assert.match(configError('[agent]\nhost = "10.0.0.12"\n[mcp]\nrequire_token = false').message, /mcp\.require_token/);
    at('[agent]\nhost = "127.0.0.2"\n[mcp]\nrequire_token = false'); // loopback: the user's choice
    assert.match(configError('[nats]\nurl = "nats://10.0.0.5:4222"').message, /nats\.identities[\s\S]*10\.0\.0\.5/);
    assert.match(
      configError('[nats]\nurl = ["nats://127.0.0.1:4222", "nats://10.0.0.6:4222"]').message,
      /nats\.identities[\s\S]*10\.0\.0\.6/,
    );
    assert.match(configError('[nats]\nurl = "nats://127.0.0.1:4222"\n[host]\nadvertise = "10.0.0.12"').message, /advertise "10\.0\.0\.12"/);
    at('[nats]\nurl = "nats://10.0.0.5:4222"\nidentities = true\n[host]\nadvertise = "10.0.0.12"'); // identities: allowed
    assert.match(configError('[host]\nadvertise = "10.0.0.12/mcp"').message, /host\.advertise/);
    for (const every of ['0', '::', '0:0:0:0:0:0:0:0', '[::]'])
      assert.match(configError(`[agent]\nhost = "${every}"`).message, /host\.advertise/, `${every} listens on every interface`);
    assert.match(configError('[host]\nadvertise = "0.0.0.0"').message, /host\.advertise: expected an address others reach/);
    assert.match(configError('[host]\nadvertise = "mill-2.lan"\n[mcp]\nrequire_token = false').message, /mcp\.require_token/);
    assert.equal(at('[host]\nadvertise = "Mill-2.LAN"').host.advertise, 'mill-2.lan', 'as a client sends it in its Host header');
    assert.equal(agentMcpUrl(at('[host]\nadvertise = "fd00::12"'), 4101), 'http://[fd00::12]:4101/mcp');
    for (const url of ['"nats://evil.example\\\\@127.0.0.1:4222"', '"nats://user:pass@127.0.0.1:4222"'])
      assert.match(configError(`[nats]\nurl = ${url}`).message, /nats\.url: expected servers as nats:\/\/host:port, without a user/);
  });

  test('[nats] url takes an array of servers as well as one string, comma-separated or not', () => {
    const many = parseConfig('[nats]\nurl = ["nats://127.0.0.2:4222", "nats://127.0.0.3:4222"]', '/srv/game/thymos.toml');
    assert.equal(many.nats.url, 'nats://127.0.0.2:4222,nats://127.0.0.3:4222');
    assert.equal(
      parseConfig('[nats]\nurl = "nats://127.0.0.2:1,nats://127.0.0.3:2"', '/srv/game/thymos.toml').nats.url,
      'nats://127.0.0.2:1,nats://127.0.0.3:2',
    );
    assert.match(configError('[nats]\nurl = []').message, /nats\.url/);
    assert.match(configError('[nats]\nurl = ["nats://127.0.0.2:1,nats://127.0.0.3:2"]').message, /one server per entry/);
  });

  test('[cluster] replicas is 1 by default, 1 or 3, and 3 only with [nats] url: the nats-server thymos up runs is one node', () => {
    const at = (toml: string) => parseConfig(toml, '/srv/game/thymos.toml');
    assert.equal(at('').cluster.replicas, 1);
    assert.equal(at('[nats]\nurl = "nats://127.0.0.1:4222,nats://127.0.0.1:4223"\n[cluster]\nreplicas = 3').cluster.replicas, 3);
    assert.equal(at('[cluster]\nreplicas = 1').cluster.replicas, 1);
    for (const bad of ['2', '0', '5', '3.5', '"3"']) {
      const err = configError(`[nats]\nurl = "nats://127.0.0.1:4222"\n[cluster]\nreplicas = ${bad}`);
      assert.match(err.message, /^\/etc\/thymos\/thymos\.toml:4: cluster\.replicas: expected 1 .* or 3 .*; got /, bad);
      assert.equal(err.location?.path, 'cluster.replicas');
    }
    const lone = configError('[cluster]\nreplicas = 3\n');
    assert.match(
      lone.message,
      /thymos\.toml:2: cluster\.replicas: expected \[nats\] url, .* thymos up runs a nats-server of one node; got 3$/,
    );
    assert.equal(lone.location?.path, 'cluster.replicas');
  });

  test('[cluster] lease: off by default; lease_ms, renew_ms and fence_margin_ms in range, with two renewals before agents stop themselves', () => {
    const at = (toml: string) => parseConfig(toml, '/srv/game/thymos.toml');
    assert.deepEqual(
      (({ enabled, lease_ms, renew_ms, fence_margin_ms }) => ({ enabled, lease_ms, renew_ms, fence_margin_ms }))(at('').cluster),
      { enabled: false, lease_ms: 10_000, renew_ms: 2000, fence_margin_ms: 2000 },
    );
    assert.equal(at('[cluster]\nenabled = true\nlease_ms = 3000\nrenew_ms = 400\nfence_margin_ms = 1000').cluster.lease_ms, 3000);
    const slow = configError('[cluster]\nenabled = true\nlease_ms = 5000\nrenew_ms = 2000\nfence_margin_ms = 2000');
    assert.match(
      slow.message,
      /cluster\.renew_ms: expected renew_ms at most \(lease_ms - fence_margin_ms\) \/ 2 = 1500, .*got 2000 with lease_ms 5000/,
    );
    assert.equal(slow.location?.path, 'cluster.renew_ms');
    for (const [key, bad] of [
      ['lease_ms', '500'],
      ['renew_ms', '0'],
      ['fence_margin_ms', '-1'],
      ['enabled', '"yes"'],
    ] as const) {
      const err = configError(`[cluster]\n${key} = ${bad}`);
      assert.match(err.message, new RegExp(`thymos\\.toml:2: cluster\\.${key}: `), key);
      assert.equal(err.location?.path, `cluster.${key}`);
    }
  });

  test('the repository thymos.toml states every default and names every key', () => {
    const text = readFileSync(join(REPO_ROOT, 'thymos.toml'), 'utf8');
    const repo = loadConfig(join(REPO_ROOT, 'thymos.toml'));
    const defaults = ThymosConfigSchema.parse({});
    for (const section of ['agent', 'lifecycle', 'supervisor', 'nats', 'cluster', 'events', 'memory', 'mcp', 'log'] as const) {
      assert.deepEqual(repo[section], defaults[section], section);
      const keys = Object.keys(
        (ThymosConfigSchema.shape[section] as unknown as { def: { innerType: { shape: object } } }).def.innerType.shape,
      );
      assert.ok(keys.length > 0, `keys of ${section}`);
      for (const key of keys) assert.match(text, new RegExp(`^#? ?${key} = `, 'm'), `${section}.${key} is in thymos.toml`);
    }
  });

  test('the repository default parses and names the village schema', () => {
    const config = loadConfig(join(REPO_ROOT, 'thymos.toml'));
    assert.equal(config.domainSchemaPath, join(REPO_ROOT, 'examples/village/world.pkl'));
  });

  test('a wrong type names the key, what was expected, what came, and the line', () => {
    const err = configError('data_dir = "d"\n\n[agent]\nhost = "127.0.0.1"\nshutdown_timeout_ms = "soon"\n');
    assert.equal(err.message, '/etc/thymos/thymos.toml:5: agent.shutdown_timeout_ms: expected number, received string; got "soon"');
    assert.deepEqual(err.location, { file: '/etc/thymos/thymos.toml', line: 5, path: 'agent.shutdown_timeout_ms' });
  });

  test('an unknown key is named with its line, so typos do not pass silently', () => {
    const err = configError('[lifecycle]\nthreshold_actve = 0.8\n');
    assert.match(err.message, /^\/etc\/thymos\/thymos\.toml:2: lifecycle: unknown key "threshold_actve"$/);
  });

  test('an out-of-range value says the range', () => {
    const err = configError('[lifecycle]\nthreshold_active = 1.5\n');
    assert.match(err.message, /:2: lifecycle\.threshold_active: Too big: expected number to be <=1; got 1\.5$/);
  });

  test("[embedding] model_dir and cache_dir: relative to the config file, or absolute as they are; unset, the install's model and <data_dir>/models", () => {
    const unset = parseConfig('data_dir = "state"\n', '/srv/game/thymos.toml');
    assert.equal(unset.embeddingModelPath, undefined);
    assert.equal(unset.embeddingCachePath, '/srv/game/state/models');
    const relative = parseConfig('[embedding]\nmodel_dir = "models/mine"\ncache_dir = "cache"\n', '/srv/game/thymos.toml');
    assert.equal(relative.embeddingModelPath, '/srv/game/models/mine');
    assert.equal(relative.embeddingCachePath, '/srv/game/cache');
    const absolute = parseConfig('[embedding]\nmodel_dir = "/opt/models/mine"\ncache_dir = "/var/cache/thymos"\n', '/srv/game/thymos.toml');
    assert.equal(absolute.embeddingModelPath, '/opt/models/mine');
    assert.equal(absolute.embeddingCachePath, '/var/cache/thymos');
  });

  test("[tools] glossary_dir: unset by default (the install's models/glossary), else relative to the config file, or absolute as it is", () => {
    assert.equal(parseConfig('', '/srv/game/thymos.toml').glossaryPath, undefined);
    assert.equal(
      parseConfig('[tools]\nglossary_dir = "words/glossary"\n', '/srv/game/thymos.toml').glossaryPath,
      '/srv/game/words/glossary',
    );
    assert.equal(
      parseConfig('[tools]\nglossary_dir = "/var/lib/thymos/glossary"\n', '/srv/game/thymos.toml').glossaryPath,
      '/var/lib/thymos/glossary',
    );
    assert.match(configError('[tools]\nglossary_dir = 3\n').message, /:2: tools\.glossary_dir: /);
  });

  test('[tools] record_reads_within_ms: 1000 by default, 0 allowed, a negative or fractional value refused with its line', () => {
    assert.equal(parseConfig('', '/srv/game/thymos.toml').tools.record_reads_within_ms, 1000);
    assert.equal(parseConfig('[tools]\nrecord_reads_within_ms = 0\n', '/srv/game/thymos.toml').tools.record_reads_within_ms, 0);
    assert.match(
      configError('[tools]\nrecord_reads_within_ms = -1\n').message,
      /:2: tools\.record_reads_within_ms: Too small: expected number to be >=0; got -1$/,
    );
    assert.match(configError('[tools]\nrecord_reads_within_ms = 2.5\n').message, /:2: tools\.record_reads_within_ms: .*int/i);
  });

  test('thresholds out of order are refused', () => {
    const err = configError('[lifecycle]\nthreshold_active = 0.3\nthreshold_listening = 0.5\n');
    assert.match(err.message, /expected threshold_active >= threshold_listening >= threshold_dormant/);
  });

  test('a store delay at or over the acknowledgement wait is refused: the events would come again before they are stored', () => {
    const err = configError('[events]\nack_wait_s = 2\nstore_delay_ms = 2000\n');
    assert.match(err.message, /events\.store_delay_ms: store_delay_ms must be under ack_wait_s/);
    assert.equal(ThymosConfigSchema.parse({ events: { ack_wait_s: 2, store_delay_ms: 1999 } }).events.store_delay_ms, 1999);
  });

  test('a duplicate window longer than events are kept is refused before nats-server refuses the stream', () => {
    const err = configError('[events]\nmax_age_s = 60\n');
    assert.match(err.message, /events\.duplicate_window_s: duplicate_window_s must be at most max_age_s/);
    assert.equal(ThymosConfigSchema.parse({ events: { max_age_s: 60, duplicate_window_s: 60 } }).events.duplicate_window_s, 60);
  });

  test('[nats] TLS files: only with url, a certificate with its key, each a readable file named with its line; resolved against the file’s folder', () => {
    assert.match(configError('[nats]\ntls_ca = "ca.pem"\n').message, /nats\.tls_ca: expected tls_ca, tls_cert and tls_key only with url/);
    assert.match(
      configError('[nats]\nurl = "nats://nats.example:4222"\nidentities = true\ntls_cert = "c.pem"\n').message,
      /nats\.tls_cert: expected tls_cert and tls_key together/,
    );
    const dir = tempDir('thymos-cfg-');
    writeFileSync(join(dir, 'ca.pem'), '-----BEGIN CERTIFICATE-----\n');
    writeFileSync(
      join(dir, 'thymos.toml'),
      '[nats]\nurl = "nats://nats.example:4222"\nidentities = true\ntls_ca = "ca.pem"\ntls_cert = "client.pem"\ntls_key = "client.key"\n',
    );
    assert.throws(
      () => loadConfig(join(dir, 'thymos.toml')),
      (err: unknown) =>
        isThymosError(err, 'CONFIG_INVALID') &&
        err.location?.line === 5 &&
        /thymos\.toml:5: nats\.tls_cert: expected a readable PEM file, got .*client\.pem/.test(err.message),
    );
    writeFileSync(join(dir, 'client.pem'), '-----BEGIN CERTIFICATE-----\n');
    writeFileSync(join(dir, 'client.key'), '-----BEGIN PRIVATE KEY-----\n', { mode: 0o644 });
    chmodSync(join(dir, 'client.key'), 0o644);
    assert.throws(
      () => loadConfig(join(dir, 'thymos.toml')),
      (err: unknown) =>
        isThymosError(err, 'CONFIG_INVALID') &&
        /thymos\.toml:6: nats\.tls_key: .*any user may read it \(mode 644\): chmod o-r it/.test(err.message),
    );
    chmodSync(join(dir, 'client.key'), 0o640);
    assert.deepEqual(loadConfig(join(dir, 'thymos.toml')).natsTls, {
      caFile: join(dir, 'ca.pem'),
      certFile: join(dir, 'client.pem'),
      keyFile: join(dir, 'client.key'),
    });
    writeFileSync(join(dir, 'thymos.toml'), '[nats]\nurl = "nats://nats.example:4222"\nidentities = true\ntls_ca = "ca.pem"\n');
    assert.deepEqual(loadConfig(join(dir, 'thymos.toml')).natsTls, { caFile: join(dir, 'ca.pem') });
    assert.equal(parseConfig('[nats]\nurl = "nats://nats.example:4222"\nidentities = true\n').natsTls, undefined);
  });

  test('text that is not TOML gives the line and column of the fault', () => {
    const err = configError('data_dir = "x"\n[agent\nhost = 1\n');
    assert.match(err.message, /^\/etc\/thymos\/thymos\.toml:2:\d+: not valid TOML: /);
    assert.equal(err.location?.line, 2);
  });

  test('a missing file is a CONFIG_INVALID error that names the path', () => {
    const dir = tempDir('thymos-cfg-');
    assert.throws(
      () => loadConfig(join(dir, 'nope.toml')),
      (err: unknown) => isThymosError(err, 'CONFIG_INVALID') && /cannot read config file .*nope\.toml/.test(err.message),
    );
    writeFileSync(join(dir, 'ok.toml'), 'data_dir = "/var/lib/thymos"\n');
    assert.equal(loadConfig(join(dir, 'ok.toml')).dataPath, '/var/lib/thymos');
  });

  test('fuzzed configuration text never escapes as anything but CONFIG_INVALID', () => {
    const pieces = [
      '[agent]',
      '[nats]',
      'url = ',
      'host = ',
      '"x"',
      '1',
      '-1',
      '1e999',
      'true',
      '[[a]]',
      '=',
      '"',
      '\n',
      '[memory]',
      'recall_max_k = 0',
      '{a=1}',
      '[1,2]',
      '\u0000',
      '# c',
    ];
    let seed = 42;
    const rand = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    let refused = 0;
    for (let i = 0; i < 500; i++) {
      const text = Array.from({ length: 1 + Math.floor(rand() * 8) }, () => pieces[Math.floor(rand() * pieces.length)]).join(
        rand() < 0.5 ? ' ' : '\n',
      );
      try {
        parseConfig(text, 'fuzz.toml');
      } catch (err) {
        assert.ok(isThymosError(err, 'CONFIG_INVALID'), `input ${JSON.stringify(text)} threw ${String(err)}`);
        refused++;
      }
    }
    assert.ok(refused > 100, `most garbage is refused (${refused}/500)`);
  });
});
