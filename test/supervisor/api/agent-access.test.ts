import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { loadConfig } from '../../../shared/config/thymos-config.js';
import { EMPTY_DOMAIN } from '../../../shared/domain/domain-schema.js';
import { isThymosError } from '../../../shared/errors/errors.js';
import { agentTokenPath, ensureAgentToken } from '../../../shared/platform/agent-token.js';
import { AgentEndpoints } from '../../../supervisor/api/agent-endpoints.js';
import { tempDir } from '../../helpers/temp-dir.js';

/** The agent-access answers of a supervisor configured by `toml`, with mira running on port 4101. */
function endpoints(toml: string, files: Record<string, string> = {}, livePid?: (id: string) => Promise<number | null>) {
  const dir = tempDir('thymos-access-');
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  writeFileSync(join(dir, 'thymos.toml'), toml);
  const config = loadConfig(join(dir, 'thymos.toml'));
  mkdirSync(join(config.dataPath, 'agents', 'mira'), { recursive: true });
  const token = ensureAgentToken(agentTokenPath(config.dataPath, 'mira'));
  const states: Record<string, { state: string; port: number | null; pid: number | null }> = {
    mira: { state: 'active', port: 4101, pid: 4242 },
    bram: { state: 'dormant', port: null, pid: null },
  };
  const api = new AgentEndpoints({
    domain: EMPTY_DOMAIN,
    config,
    natsUrl: config.nats.url ?? 'nats://127.0.0.1:4222',
    livePid,
    entry: (id) => states[id],
    stopping: () => false,
    wake: () => Promise.reject(new Error('not here')),
  });
  return { api, token };
}

test("a running agent's address and token go to the client over a NATS link on loopback or with TLS, and over no other", async () => {
  const local = endpoints('[host]\nadvertise = "127.0.0.2"\n');
  assert.deepEqual(await local.api.access('mira'), {
    url: 'http://127.0.0.2:4101/mcp',
    port: 4101,
    pid: 4242,
    token: local.token,
    withheld: false,
  });
  assert.equal((await local.api.access('mira', false)).token, null, 'not asked for: not handed over');
  await assert.rejects(local.api.access('bram'), (err) => isThymosError(err, 'AGENT_NOT_ACTIVE'));
  await assert.rejects(local.api.access('fenn'), (err) => isThymosError(err, 'AGENT_NOT_FOUND'));
  // The pid pm2 runs it as now, which a restart by pm2 changes without the registry knowing.
  const restarted = endpoints('', {}, async () => 5151);
  assert.equal((await restarted.api.access('mira')).pid, 5151);
  const open = endpoints('[nats]\nurl = "nats://10.0.0.5:4222"\nidentities = true\n');
  assert.deepEqual(await open.api.access('mira'), { url: 'http://127.0.0.1:4101/mcp', port: 4101, pid: 4242, token: null, withheld: true });
  const tls = endpoints('[nats]\nurl = "nats://10.0.0.5:4222"\nidentities = true\ntls_ca = "ca.pem"\n', {
    'ca.pem': '-----BEGIN CERTIFICATE-----\n',
  });
  assert.equal((await tls.api.access('mira')).token, tls.token);
  const tokenless = endpoints('[nats]\nurl = "nats://10.0.0.5:4222"\nidentities = true\n[mcp]\nrequire_token = false\n');
  assert.deepEqual(await tokenless.api.access('mira'), {
    url: 'http://127.0.0.1:4101/mcp',
    port: 4101,
    pid: 4242,
    token: null,
    withheld: false,
  });
});
