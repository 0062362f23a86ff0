import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { loadConfig } from '../../../shared/config/thymos-config.js';
import { loadDomainSchema } from '../../../shared/domain/domain-schema.js';
import { checkFleet } from '../../../shared/domain/fleet-checks.js';
import { pklBinaryPath } from '../../../shared/domain/pkl-eval.js';
import { isThymosError } from '../../../shared/errors/errors.js';
import { tempDir } from '../../helpers/temp-dir.js';
import { REPO_ROOT } from '../../helpers/workspace.js';

const TOKEN = 'thymos-token-7f3a9c';
const SCHEMA = join(REPO_ROOT, 'schemas', 'Thymos.pkl');

/** An application's folder with a world.pkl whose persona prompt is `expr`, and the files given (a string is a file, `{ link }` a symbolic link). */
function app(expr: string, files: Record<string, string | { link: string }> = {}, amends = SCHEMA): { dir: string; file: string } {
  const dir = tempDir('thymos-reads-');
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    if (typeof content === 'string') writeFileSync(join(dir, name), content);
    else symlinkSync(content.link, join(dir, name));
  }
  const file = join(dir, 'world.pkl');
  writeFileSync(file, `amends ${JSON.stringify(amends)}\nprompts { ["persona"] = ${expr} }\n`);
  return { dir, file };
}

async function persona(file: string): Promise<string | undefined> {
  return (await loadDomainSchema(file)).prompts.persona;
}

/** A SCHEMA_READ_REFUSED error naming the link and its target, and carrying none of `secret`. */
function refusedLink(link: string, target: RegExp, secret = TOKEN) {
  return (err: unknown) => {
    assert.ok(isThymosError(err, 'SCHEMA_READ_REFUSED'), String(err));
    assert.equal(err.details?.link, link);
    assert.match(String(err.details?.target), target);
    assert.ok(err.message.includes(link), err.message);
    assert.ok(!err.message.includes(secret) && !JSON.stringify(err.details).includes(secret));
    return true;
  };
}

async function until<T>(what: string, probe: () => T | undefined, deadlineMs = 5000): Promise<T> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setImmediate(r));
  }
}

describe('what evaluating the domain may read', () => {
  let holder: ChildProcess;
  let environ: string;

  before(async () => {
    // Another process with a token in its environment, as the issue's `ln -s /proc/<pid>/environ` found one.
    holder = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], { env: { THYMOS_TEST_TOKEN: TOKEN }, stdio: 'ignore' });
    environ = `/proc/${holder.pid}/environ`;
    await until('the holder to start', () => (readFileSync(environ, 'utf8').includes(TOKEN) ? true : undefined));
  });

  after(() => {
    holder.kill();
  });

  test("a link to another process's /proc/<pid>/environ is refused before pkl runs, and the token comes through nowhere", async () => {
    const { dir, file } = app('read("secrets.txt").text', { 'secrets.txt': { link: environ } });
    // The hole: pkl allows reads by the path it is given, so an allow-list of paths lets the link through.
    const raw = execFileSync(pklBinaryPath(), ['eval', '-f', 'json', '--allowed-resources', `^prop:,^file:(?://)?${dir}/`, file], {
      encoding: 'utf8',
      env: {},
    });
    assert.ok(raw.includes(TOKEN), 'pkl alone reads the token through the link');
    await assert.rejects(persona(file), refusedLink(join(dir, 'secrets.txt'), /^\/proc\/\d+\/environ$/));
  });

  test("a link to pkl's own /proc/self/environ, imported as a module, is refused too", async () => {
    const { dir, file } = app('env.text', { 'env.pkl': { link: '/proc/self/environ' } });
    writeFileSync(file, `amends ${JSON.stringify(SCHEMA)}\nimport "env.pkl" as env\n`);
    await assert.rejects(persona(file), refusedLink(join(dir, 'env.pkl'), /^\/proc\//));
  });

  test('a link to a file outside the folder is refused, as is a link to a folder outside it and a link that leads nowhere', async () => {
    const outside = join(tempDir('thymos-outside-'), 'token.txt');
    writeFileSync(outside, TOKEN);
    const file = app('read("notes.txt").text', { 'notes.txt': { link: outside } });
    await assert.rejects(persona(file.file), refusedLink(join(file.dir, 'notes.txt'), /token\.txt$/));
    const folder = app('read("shared/token.txt").text', { shared: { link: join(outside, '..') } });
    await assert.rejects(persona(folder.file), refusedLink(join(folder.dir, 'shared'), /thymos-outside-/));
    const dangling = app('"x"', { 'later.txt': { link: join(outside, '..', 'not-yet.txt') } });
    await assert.rejects(persona(dangling.file), refusedLink(join(dangling.dir, 'later.txt'), /not-yet\.txt$/));
  });

  test('a plain file of the folder reads, in a subfolder too, and so does a link that stays inside the folder', async () => {
    assert.equal(await persona(app('read("places.txt").text', { 'places.txt': 'the square' }).file), 'the square');
    assert.equal(await persona(app('read("lore/mill.txt").text', { 'lore/mill.txt': 'the mill' }).file), 'the mill');
    assert.equal(
      await persona(app('read("alias.txt").text', { 'places.txt': 'the gate', 'alias.txt': { link: 'places.txt' } }).file),
      'the gate',
    );
  });

  test('a hidden file (.env), node_modules and a path out of the folder are refused by pkl with the line that reads them', async () => {
    for (const [expr, files] of [
      ['read(".env").text', { '.env': `TOKEN=${TOKEN}` }],
      ['read("lore/.secret").text', { 'lore/.secret': TOKEN }],
      ['read("node_modules/pkg/token.txt").text', { 'node_modules/pkg/token.txt': TOKEN }],
      ['read("../token.txt").text', {}],
      ['read("/etc/hostname").text', {}],
      ['read("file:///%2e%2e/etc/hostname").text', {}],
    ] as const) {
      const { file } = app(expr, files);
      await assert.rejects(
        persona(file),
        (err: unknown) =>
          isThymosError(err, 'SCHEMA_INVALID') &&
          /Refusing to read resource/.test(err.message) &&
          err.location?.line === 2 &&
          !err.message.includes(TOKEN),
        expr,
      );
    }
    // A link to the hidden file is refused before pkl runs: it would read .env by another name.
    const linked = app('read("config.txt").text', { '.env': TOKEN, 'config.txt': { link: '.env' } });
    await assert.rejects(persona(linked.file), refusedLink(join(linked.dir, 'config.txt'), /\.env$/));
  });

  test("the supervisor's environment is out of reach: env: is refused and prop: holds only pkl's own", async () => {
    process.env.THYMOS_TEST_SECRET = TOKEN;
    try {
      await assert.rejects(
        persona(app('read("env:THYMOS_TEST_SECRET").text').file),
        (err: unknown) =>
          isThymosError(err, 'SCHEMA_INVALID') && /env:THYMOS_TEST_SECRET/.test(err.message) && !err.message.includes(TOKEN),
      );
      assert.equal(await persona(app('read?("prop:THYMOS_TEST_SECRET")?.text ?? "none"').file), 'none');
      assert.equal(await persona(app('read?("prop:user.home")?.text ?? "none"').file), 'none');
    } finally {
      delete process.env.THYMOS_TEST_SECRET;
    }
  });

  test('the schemas amended through node_modules/thymos, a link to the package as npm link and pnpm make, are read; a linked node_modules is let be', async () => {
    const { file } = app('"through the link"', { 'node_modules/thymos': { link: REPO_ROOT } }, 'node_modules/thymos/schemas/Thymos.pkl');
    assert.equal(await persona(file), 'through the link');
    // node_modules linked elsewhere (a worktree sharing its packages) is never read, so it is never followed either.
    assert.equal(await persona(app('"x"', { node_modules: { link: tempDir('thymos-packages-') } }).file), 'x');
  });

  test("the data directory inside the application's folder (data/ beside thymos.toml) is not read: its keys come through nowhere", async () => {
    const key = { 'data/nats/keys/supervisor.nk': TOKEN, 'data-notes.txt': 'beside the data' };
    const fleet = (expr: string, files: Record<string, string | { link: string }> = {}) => {
      const { dir } = app(expr, { ...key, ...files });
      writeFileSync(join(dir, 'thymos.toml'), '[domain]\nschema = "world.pkl"\n');
      return checkFleet(loadConfig(join(dir, 'thymos.toml')));
    };
    for (const expr of ['read("data/nats/keys/supervisor.nk").text', 'read("data//nats/keys/supervisor.nk").text']) {
      await assert.rejects(
        fleet(expr),
        (err: unknown) =>
          isThymosError(err, 'SCHEMA_INVALID') && /Refusing to read resource/.test(err.message) && !err.message.includes(TOKEN),
        expr,
      );
    }
    const linked = fleet('read("config.txt").text', { 'config.txt': { link: 'data/nats/keys/supervisor.nk' } });
    await assert.rejects(linked, (err: unknown) => isThymosError(err, 'SCHEMA_READ_REFUSED') && /in the data directory/.test(err.message));
    assert.equal((await fleet('read("data-notes.txt").text')).domain.prompts.persona, 'beside the data', 'a file named like it reads');
  });

  test('nor through a link to a folder above it, by another case, by the other spelling of the folder, nor the NATS credentials and TLS key', async () => {
    const secrets = {
      'data/nats/keys/supervisor.nk': TOKEN,
      'creds/supervisor.creds': TOKEN,
      'certs/client.key': TOKEN,
      'certs/client.pem': 'a certificate',
    };
    const fleet = (expr: string, files: Record<string, string | { link: string }> = {}, toml = '') => {
      const { dir } = app(expr, { ...secrets, ...files });
      chmodSync(join(dir, 'certs', 'client.key'), 0o600);
      writeFileSync(join(dir, 'thymos.toml'), `[domain]\nschema = "world.pkl"\n${toml}`);
      return { dir, checked: () => checkFleet(loadConfig(join(dir, 'thymos.toml'))) };
    };
    const refusedRead = (err: unknown) =>
      isThymosError(err, 'SCHEMA_INVALID') && /Refusing to read resource/.test(err.message) && !err.message.includes(TOKEN);
    // `loop -> .` would name data/ as loop/data/, past the patterns that shut data/.
    const loop = fleet('read("loop/data/nats/keys/supervisor.nk").text', { loop: { link: '.' } });
    await assert.rejects(
      loop.checked(),
      (err: unknown) => isThymosError(err, 'SCHEMA_READ_REFUSED') && /holds the data directory/.test(err.message),
    );
    // A file system that ignores case would open data/ for Data/: refused before it is looked for.
    await assert.rejects(fleet('read("Data/nats/keys/supervisor.nk").text').checked(), refusedRead);
    const nats = '[nats]\nurl = "nats://127.0.0.1:4222"\n';
    await assert.rejects(fleet('read("creds/supervisor.creds").text', {}, `${nats}credentials = "creds"\n`).checked(), refusedRead);
    const tls = `${nats}tls_cert = "certs/client.pem"\ntls_key = "certs/client.key"\n`;
    await assert.rejects(fleet('read("certs/client.key").text', {}, tls).checked(), refusedRead);
    assert.equal((await fleet('read("certs/client.pem").text', {}, tls).checked()).domain.prompts.persona, 'a certificate');
    // The application's folder reached through a link, data_dir named by the real path: both spellings are shut.
    const real = fleet('read("data/nats/keys/supervisor.nk").text');
    const through = join(tempDir('thymos-through-'), 'app');
    symlinkSync(real.dir, through);
    writeFileSync(
      join(real.dir, 'thymos.toml'),
      `data_dir = ${JSON.stringify(join(realpathSync(real.dir), 'data'))}\n[domain]\nschema = "world.pkl"\n`,
    );
    await assert.rejects(checkFleet(loadConfig(join(through, 'thymos.toml'))), refusedRead);
  });

  test('a folder too large to check is refused rather than read unchecked', async () => {
    const { file } = app('"x"', { 'a.txt': 'a', 'b.txt': 'b', 'c.txt': 'c' });
    await assert.rejects(
      loadDomainSchema(file, { linkCheck: { maxEntries: 2 } }),
      (err: unknown) => isThymosError(err, 'SCHEMA_READ_REFUSED') && /too large to check/.test(err.message),
    );
  });
});
