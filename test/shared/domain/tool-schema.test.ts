import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import { configFromObject } from '../../../shared/config/thymos-config.js';
import { grants, parseCapability } from '../../../shared/domain/capabilities.js';
import { loadDomainSchema, parseDomainSchema } from '../../../shared/domain/domain-schema.js';
import { fleetWarnings, toolGrants } from '../../../shared/domain/fleet-checks.js';
import { fillUrl, parseUrlTemplate, UrlInputError } from '../../../shared/domain/http-url.js';
import { grantedTools } from '../../../shared/domain/tool-schema.js';
import { isThymosError } from '../../../shared/errors/errors.js';
import { AgentStartContextSchema } from '../../../shared/protocol/agent-start-context.js';
import { Rng } from '../../helpers/fuzz.js';
import { tempDir } from '../../helpers/temp-dir.js';
import { REPO_ROOT } from '../../helpers/workspace.js';

function pkl(body: string): string {
  const dir = tempDir('thymos-tools-');
  const file = join(dir, 'world.pkl');
  writeFileSync(file, `amends ${JSON.stringify(join(REPO_ROOT, 'schemas/Thymos.pkl'))}\n${body}\n`);
  return file;
}

const http = (url: string) => ({ kind: 'http', url });
const tool = (extra: Record<string, unknown> = {}) => ({
  description: 'a tool',
  sideEffect: 'read_only',
  executor: http('http://127.0.0.1:8787/x'),
  ...extra,
});

function refused(raw: unknown, path: RegExp, message: RegExp): void {
  assert.throws(
    () => parseDomainSchema(raw, 'world.pkl'),
    (err: unknown) => isThymosError(err, 'SCHEMA_INVALID') && path.test(err.location?.path ?? '') && message.test(err.message),
    `expected SCHEMA_INVALID at ${path} saying ${message}`,
  );
}

describe('capabilities: [!][scope:]pattern, the last match deciding', () => {
  const tools = { lookup_order: ['orders'], refund: ['orders', 'refunds'], refund_over_limit: ['refunds'], post_quest: [] as string[] };
  const granted = (caps: string[]) =>
    Object.entries(tools)
      .filter(([name, tags]) =>
        grants(
          caps.map((c) => parseCapability(c)),
          { name, scopes: { tag: tags } },
        ),
      )
      .map(([n]) => n);

  test('names, globs, tags and negation', () => {
    assert.deepEqual(granted([]), [], 'no capabilities, no tools');
    assert.deepEqual(granted(['lookup_order']), ['lookup_order']);
    assert.deepEqual(granted(['refund*']), ['refund', 'refund_over_limit']);
    assert.deepEqual(granted(['tag:refunds', '!refund_over_limit']), ['refund']);
    assert.deepEqual(granted(['!refund_over_limit', 'tag:refunds']), ['refund', 'refund_over_limit'], 'order matters: the last match wins');
    assert.deepEqual(granted(['*', '!tag:orders']), ['refund_over_limit', 'post_quest']);
    assert.deepEqual(granted(['?ost_quest']), ['post_quest']);
  });

  test('a deny by tag takes away a tag that holds a slash: a star crosses it in every scope', () => {
    const tagged = { danger_tool: ['danger/high'], split: ['a/b'], calm: ['safe'] };
    const grantedOf = (caps: string[]) =>
      Object.entries(tagged)
        .filter(([name, tags]) =>
          grants(
            caps.map((c) => parseCapability(c)),
            { name, scopes: { tag: tags } },
          ),
        )
        .map(([n]) => n);
    assert.deepEqual(grantedOf(['*', '!tag:danger*']), ['split', 'calm']);
    assert.deepEqual(grantedOf(['*', '!tag:*']), [], 'every tag, a/b included');
    assert.deepEqual(grantedOf(['tag:*/high']), ['danger_tool']);
    const memory = parseCapability('memory:threads/*', ['memory']);
    assert.ok(memory.matches('threads/a/b'), 'a scope of its own reads its star the same way');
    assert.equal(parseCapability('{lookup,x}').literal, true, 'braces are not a wildcard');
  });

  test('a bad pattern or an unknown scope is an error naming what is expected', () => {
    assert.throws(() => parseCapability('!'), /expected \[!\]\[scope:\]pattern/);
    assert.throws(() => parseCapability('memory:x'), /unknown scope "memory:"; expected tag:/);
    assert.equal(parseCapability('memory:threads/*', ['memory']).scope, 'memory', 'another user of the grammar brings its own scopes');
  });
});

describe('tools in the domain schema', () => {
  test('a Pkl domain declares tools and grants them; Script paths are taken from its folder', async () => {
    const file = pkl(`
agents { ["desk"] { persona { name = "Desk" }; capabilities { "tag:orders"; "!refund" } } }
tools {
  ["lookup_order"] { description = "Look up"; tags { "orders" }; input { ["order_id"] { pattern = #"[A-Z]{2}-\\d{4}"# } }; sideEffect = "read_only"; executor = new Http { url = "http://127.0.0.1:8787/orders/{order_id}" } }
  ["refund"] { description = "Refund"; tags { "orders" }; sideEffect = "irreversible"; permission = "confirm"; executor = new Script { path = "tools/refund.js" } }
  ["convert"] { description = "Convert"; input { ["src"] {} ["shift"] { type = "integer" } }; sideEffect = "writes_local"; executor = new Subprocess { command = "bin/convert"; args { "--from"; "{src}"; new Arg { field = "shift"; allowDash = true } }; cwd = "work"; env { "PATH" } } }
  ["git_log"] { description = "History"; sideEffect = "read_only"; executor = new Subprocess { command = "git"; args { "log" }; secrets { ["GH_TOKEN"] = new Secret { env = "DEPLOY_GH_TOKEN" } } } }
}`);
    const domain = await loadDomainSchema(file);
    assert.deepEqual(Object.keys(grantedTools(domain.tools, domain.agents.desk!.capabilities)), ['lookup_order']);
    const refund = domain.tools.refund!.executor;
    assert.equal(refund.kind === 'script' && refund.path, join(file, '..', 'tools', 'refund.js'));
    const convert = domain.tools.convert!.executor;
    assert.ok(convert.kind === 'subprocess');
    assert.deepEqual(
      [convert.command, convert.cwd, convert.args, convert.env],
      [join(file, '..', 'bin', 'convert'), join(file, '..', 'work'), ['--from', '{src}', { field: 'shift', allowDash: true }], ['PATH']],
    );
    const git = domain.tools.git_log!.executor;
    assert.deepEqual(
      git.kind === 'subprocess' && [git.command, git.cwd, git.secrets],
      ['git', join(file, '..'), { GH_TOKEN: { env: 'DEPLOY_GH_TOKEN', prefix: '' } }],
      "a bare name is looked up on PATH when called; the folder defaults to the file's",
    );
  });

  test("a tool name outside model APIs' rule, or one of Thymos's own, is refused", async () => {
    await assert.rejects(
      loadDomainSchema(
        pkl(`tools { ["look up"] { description = "x"; sideEffect = "read_only"; executor = new Http { url = "http://127.0.0.1/x" } } }`),
      ),
      (e: unknown) => isThymosError(e, 'SCHEMA_INVALID'),
    );
    for (const name of ['act', 'resolve_intent', 'get_call', 'recall', 'talk_to_anyone', 'get_x_state'])
      refused({ tools: { [name]: tool() } }, new RegExp(`^tools\\.${name}$`), /Thymos's own tools/);
  });

  test('a tool named __proto__, constructor or prototype is refused by name, never dropped', async () => {
    refused(
      JSON.parse(`{ "tools": { "__proto__": ${JSON.stringify(tool())} } }`) as object,
      /^tools\.__proto__$/,
      /expected tool names other than __proto__/,
    );
    for (const name of ['constructor', 'prototype'])
      refused(
        { tools: { [name]: tool() } },
        /^tools\./,
        new RegExp(`other than __proto__, constructor or prototype; got the key "${name}"`),
      );
    await assert.rejects(
      loadDomainSchema(
        pkl(`tools { ["__proto__"] { description = "x"; sideEffect = "read_only"; executor = new Http { url = "http://127.0.0.1/x" } } }`),
      ),
      (e: unknown) => isThymosError(e, 'SCHEMA_INVALID') && /tools\.__proto__: expected tool names other than __proto__/.test(e.message),
      'validate reads the Pkl file as an agent would, and says so',
    );
    assert.equal(
      AgentStartContextSchema.safeParse(JSON.parse(`{ "tools": { "__proto__": ${JSON.stringify(tool())} } }`)).success,
      false,
      "nor does an agent's start file drop it",
    );
  });

  test('fields, classes, keys and executors that do not hold together are refused where they are', () => {
    refused({ tools: { t: tool({ sideEffect: 'irreversible' }) } }, /tools\.t\.permission/, /irreversible tool needs permission "confirm"/);
    refused({ tools: { t: tool({ input: { kind: { type: 'enum' } } }) } }, /tools\.t\.input\.kind\.values/, /lists its values/);
    refused({ tools: { t: tool({ input: { n: { type: 'number', pattern: 'x' } } }) } }, /pattern/, /for strings/);
    refused({ tools: { t: tool({ input: { s: { pattern: '(' } } }) } }, /pattern/, /not a JavaScript regular expression/);
    refused({ tools: { t: tool({ input: { reason: {} } }) } }, /input\.reason/, /"reason" is the argument/);
    refused({ tools: { t: tool({ idempotencyKey: '{nope}' }) } }, /idempotencyKey/, /\{nope\} is not an input field/);
    refused(
      { tools: { t: tool({ keyExpiresAfterS: 60 }) } },
      /tools\.t\.keyExpiresAfterS/,
      /only a tool that writes outside the agent .* this one is read_only/,
    );
    refused({ tools: { t: tool({ idempotencyKey: '{toString}' }) } }, /idempotencyKey/, /\{toString\} is not an input field/);
    refused({ tools: { t: tool({ input: JSON.parse('{"__proto__": {}}') as object }) } }, /tools\.t\.input/, /other than __proto__/);
    refused({ tools: { t: tool({ input: { s: { min: -3, max: 2.5 } } }) } }, /tools\.t\.input\.s\.min/, /a whole number from 0/);
    refused({ tools: { t: tool({ executor: { kind: 'script', path: 'tools.ts' } }) } }, /executor\.path/, /compiled JavaScript/);
    refused(
      { tools: { t: tool({ executor: { kind: 'http', method: 'GET', url: 'http://127.0.0.1/x', body: ['a'] }, input: { a: {} } }) } },
      /executor\.body/,
      /GET request has no body/,
    );
    const run = (executor: Record<string, unknown>, input: Record<string, unknown> = { a: {} }) => ({
      tools: { t: tool({ input, executor: { kind: 'subprocess', command: '/bin/echo', ...executor } }) },
    });
    refused(run({ args: ['--out={a}'] }), /executor\.args\[0\]/, /input fills whole arguments only/);
    refused(run({ args: ['{nope}'] }), /executor\.args\[0\]/, /\{nope\} is not an input field \(a\)/);
    refused(
      run({ args: ['-o', '{out}'] }, { out: { required: false } }),
      /executor\.args\[1\]/,
      /\{out\} is optional, so it cannot follow the option "-o".*new Arg \{ option = "-o"; field = "out" \}/,
    );
    refused(run({ args: ['--exclude', { field: 'ex' }] }, { ex: { list: true } }), /executor\.args\[1\]/, /is a list/);
    refused(run({ args: [{ field: 'nope' }] }), /executor\.args\[0\]/, /\{nope\} is not an input field/);
    refused(run({ command: '{a}' }), /executor\.command/, /never filled from input/);
    refused(run({ stdin: ['b'] }), /executor\.stdin/, /b is not an input field/);
    refused(run({ env: ['THYMOS_SECRET'] }), /executor\.env/, /THYMOS_ variables are Thymos's own/);
    refused(run({ env: ['TOKEN'], secrets: { TOKEN: { env: 'X' } } }), /executor\.secrets\.TOKEN/, /passed through by env as well/);
    const mcp = (executor: Record<string, unknown>) => ({
      agents: { desk: { persona: { name: 'D' } } },
      tools: { t: tool({ executor: { kind: 'mcp', tool: 'x', ...executor } }) },
    });
    refused(mcp({}), /^tools\.t\.executor$/, /either url .* or agent/);
    refused(mcp({ url: 'http://127.0.0.1/mcp', agent: 'desk' }), /^tools\.t\.executor$/, /not both or neither/);
    refused(mcp({ agent: 'smith' }), /executor\.agent/, /no agent "smith" in the domain; expected one of desk/);
    refused(mcp({ url: 'http://127.0.0.1/{path}' }), /executor\.url/, /without user, password, fragment or placeholders/);
    refused(mcp({ url: 'file:///etc/passwd' }), /executor\.url/, /http\(s\) URL/);
    refused(mcp({ url: 'http://127.0.0.1/mcp', wake: true }), /executor\.wake/, /for another agent/);
    refused(mcp({ agent: 'desk', token: { env: 'T' } }), /executor\.token/, /comes from the supervisor/);
  });

  test('an Http URL keeps its origin fixed: placeholders only in path segments and query values', () => {
    const withUrl = (url: string, input: Record<string, unknown> = { id: {}, opt: { required: false } }) => ({
      tools: { t: tool({ executor: http(url), input }) },
    });
    for (const [url, message] of [
      ['http://{id}.example.test/x', /host and port are fixed/],
      ['http://127.0.0.1:{id}/x', /host and port are fixed/],
      ['http://user:{id}@127.0.0.1/x', /(host and port are fixed|no user or password)/],
      ['http://127.0.0.1/x?{id}=1', /query key is fixed/],
      ['http://127.0.0.1/x#{id}', /no fragment/],
      ['ftp://127.0.0.1/{id}', /expected http/],
      ['http://127.0.0.1/{missing}', /\{missing\} is not an input field/],
      ['http://127.0.0.1/{opt}', /must be one required value/],
      ['http://127.0.0.1/{id', /unmatched/],
    ] as const) {
      refused(withUrl(url), /executor\.url/, message);
    }
    parseDomainSchema(withUrl('https://127.0.0.1:8443/a/{id}/b?x={opt}&y=fixed'));
  });

  test('a capability that names no tool or tag is a likely typo, refused naming what exists', () => {
    refused(
      { agents: { desk: { persona: { name: 'D' }, capabilities: ['lookup_ordr'] } }, tools: { lookup_order: tool() } },
      /agents\.desk\.capabilities\[0\]/,
      /no tool is named "lookup_ordr"; expected one of lookup_order/,
    );
    refused(
      { agents: { desk: { persona: { name: 'D' }, capabilities: ['tag:billing'] } }, tools: { lookup_order: tool({ tags: ['orders'] }) } },
      /capabilities\[0\]/,
      /no tool has the tag "billing"/,
    );
    refused(
      { agents: { desk: { persona: { name: 'D' }, capabilities: ['billing_*'] } }, tools: { lookup_order: tool() } },
      /capabilities\[0\]/,
      /"billing_\*" matches no tool name/,
    );
    refused(
      { agents: { desk: { persona: { name: 'D' }, capabilities: ['{lookup_order,x}'] } }, tools: { lookup_order: tool() } },
      /capabilities\[0\]/,
      /no tool is named "\{lookup_order,x\}"/,
    );
    parseDomainSchema({ agents: { desk: { persona: { name: 'D' }, capabilities: ['lookup_*'] } }, tools: { lookup_order: tool() } });
  });

  test('a check made after evaluation names the Pkl file and the line the tool is declared on', async () => {
    const file = pkl(`
agents { ["desk"] { persona { name = "Desk" } } }
tools {
  ["lookup"] {
    description = "Look up"
    input { ["id"] {} }
    sideEffect = "read_only"
    executor = new Http {
      url = "http://{id}.example.test/x"
    }
  }
}`);
    await assert.rejects(
      loadDomainSchema(file),
      (e: unknown) =>
        isThymosError(e, 'SCHEMA_INVALID') &&
        e.location?.line === 10 &&
        e.message.startsWith(`domain schema ${file}:10: tools.lookup.executor.url:`),
    );
  });

  test('Pkl cannot read the environment: a secret never lands in the evaluated domain', async () => {
    process.env.THYMOS_TEST_SECRET = 'do-not-read';
    await assert.rejects(
      loadDomainSchema(pkl('prompts { ["persona"] = read("env:THYMOS_TEST_SECRET").text }')),
      (e: unknown) => isThymosError(e, 'SCHEMA_INVALID') && /env:THYMOS_TEST_SECRET/.test(e.message) && !e.message.includes('do-not-read'),
    );
    delete process.env.THYMOS_TEST_SECRET;
    for (const path of ['/proc/self/environ', 'file:///%70roc/self/environ', `/proc/${process.pid}/environ`]) {
      await assert.rejects(
        loadDomainSchema(pkl(`prompts { ["persona"] = read(${JSON.stringify(path)}).text }`)),
        (e: unknown) => isThymosError(e, 'SCHEMA_INVALID') && /resource allowlist/.test(e.message),
        path,
      );
    }
  });
});

describe('what validate and up warn about tools', () => {
  test("a tool granted to nobody, and the unset variable of a granted tool's secret", () => {
    const domain = parseDomainSchema({
      agents: { desk: { persona: { name: 'D' }, capabilities: ['lookup', 'deploy'] } },
      tools: {
        lookup: tool({
          executor: { kind: 'http', url: 'http://127.0.0.1/x', headers: { Authorization: { env: 'LOOKUP_TOKEN' }, Accept: 'text/plain' } },
        }),
        deploy: tool({ executor: { kind: 'subprocess', command: '/bin/true', secrets: { GH_TOKEN: { env: 'LOOKUP_TOKEN' } } } }),
        orphan: tool(),
      },
    });
    const config = configFromObject({});
    assert.deepEqual(toolGrants(domain), { lookup: ['desk'], deploy: ['desk'], orphan: [] });
    const warnings = fleetWarnings(config, domain, {});
    assert.deepEqual(warnings.map((w) => w.paths[0]).sort(), [
      'tools.deploy.executor.secrets.GH_TOKEN',
      'tools.lookup.executor.headers.Authorization',
      'tools.orphan',
    ]);
    assert.match(warnings.find((w) => w.paths[0] === 'tools.orphan')!.message, /no agent's capabilities grant it/);
    assert.deepEqual(
      fleetWarnings(config, domain, { LOOKUP_TOKEN: 'x' }).map((w) => w.paths[0]),
      ['tools.orphan'],
    );
  });
});

describe('Http URL filling', () => {
  const template = parseUrlTemplate('http://127.0.0.1:8787/orders/{id}/items?expand={expand}&v=2');

  test('values are percent-encoded into their place; dot segments are refused', () => {
    assert.equal(
      fillUrl(template, { id: 'AB 12:3', expand: 'a&b=c/d' }).href,
      'http://127.0.0.1:8787/orders/AB%2012%3A3/items?expand=a%26b%3Dc%2Fd&v=2',
    );
    assert.equal(
      fillUrl(template, { id: 'x' }).href,
      'http://127.0.0.1:8787/orders/x/items?v=2',
      'an absent optional query value drops its parameter',
    );
    assert.equal(fillUrl(template, { id: 'x', expand: ['a', 'b'] }).search, '?expand=a&expand=b&v=2');
    for (const id of [
      '.',
      '..',
      '%2e',
      '%2E%2e',
      '%252e%252e',
      '',
      '../admin',
      '..%2fadmin',
      'a/b',
      'a\\b',
      '..%5Cadmin',
      '%25252F',
      'a\u0000',
      '\ud800',
    ]) {
      assert.throws(() => fillUrl(template, { id }), UrlInputError, JSON.stringify(id));
    }
    assert.throws(() => fillUrl(template, { id: 'x', expand: '\udc00' }), UrlInputError, 'a lone surrogate in a query value');
  });

  test('two values in one path segment are checked together, as a server that decodes twice reads them', () => {
    const joined = parseUrlTemplate('http://127.0.0.1:8787/items/{a}{b}/x');
    for (const [a, b] of [
      ['.', '.'],
      ['%2', 'e%2e'],
      ['%2', 'E.'],
      ['%2', 'F'],
      ['%5', 'C'],
      ['%', '2e%2e'],
      ['%25', '2e.'],
    ]) {
      assert.throws(() => fillUrl(joined, { a, b }), UrlInputError, `${JSON.stringify(a)} then ${JSON.stringify(b)}`);
    }
    assert.throws(() => fillUrl(template, { id: '%2F%' }), UrlInputError, 'a decoder that leaves a stray % alone still reads %2F');
    assert.equal(fillUrl(joined, { a: 'v1.', b: '2' }).pathname, '/items/v1.2/x');
    assert.equal(
      fillUrl(joined, { a: '%2', b: '0' }).pathname,
      '/items/%2520/x',
      'what decodes to no separator and no dot segment is sent',
    );
  });

  test('fuzzed values never change the origin or the number of path segments', () => {
    const r = new Rng(43);
    const alphabet = [
      '/',
      '\\',
      '.',
      '..',
      '%',
      '%2f',
      '%2e',
      '@',
      ':',
      '?',
      '#',
      '&',
      '=',
      '\r',
      '\n',
      ' ',
      'evil.test',
      '\u0000',
      '\u202e',
      'é',
      'a',
      '{',
      '}',
    ];
    for (let i = 0; i < 2000; i++) {
      const id = Array.from({ length: 1 + r.int(6) }, () => alphabet[r.int(alphabet.length)]).join('');
      try {
        const url = fillUrl(template, { id, expand: id });
        assert.equal(url.origin, 'http://127.0.0.1:8787');
        assert.equal(url.pathname.split('/').length, 4, `${JSON.stringify(id)} → ${url.pathname}`);
        assert.equal([...url.searchParams.keys()].join(','), 'expand,v');
      } catch (err) {
        assert.ok(err instanceof UrlInputError, `${JSON.stringify(id)}: ${(err as Error).message}`);
      }
    }
  });

  test('fuzzed pairs of values in one segment never decode, however often, to a dot segment or a separator', () => {
    const r = new Rng(44);
    const joined = parseUrlTemplate('http://127.0.0.1:8787/items/{a}{b}/x');
    const bits = ['%', '%2', '%25', '2', 'e', 'E', 'F', 'f', '5', 'C', '.', 'a'];
    const word = () => Array.from({ length: 1 + r.int(4) }, () => r.pick(bits)).join('');
    let sent = 0;
    for (let i = 0; i < 3000; i++) {
      const [a, b] = [word(), word()];
      let segment: string;
      try {
        segment = fillUrl(joined, { a, b }).pathname.split('/')[2]!;
      } catch (err) {
        assert.ok(err instanceof UrlInputError, `${a} ${b}: ${(err as Error).message}`);
        continue;
      }
      sent++;
      // Decoded as a lenient server would, each valid escape at a time, until nothing changes.
      for (let seen = ''; seen !== segment;)
        [seen, segment] = [segment, segment.replace(/%([0-7][0-9A-Fa-f])/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)))];
      assert.ok(segment !== '.' && segment !== '..' && !/[/\\]/.test(segment), `${JSON.stringify(a)} ${JSON.stringify(b)} → ${segment}`);
    }
    assert.ok(sent > 100, 'most pairs are sent');
  });
});
