import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import type { NatsConnection } from '@nats-io/transport-node';

import { parseConfig } from '../../shared/config/thymos-config.js';
import { loadDomainSchema } from '../../shared/domain/domain-schema.js';
import { ErrorCode, isThymosError } from '../../shared/errors/errors.js';
import { isNoResponders } from '../../shared/nats/nats-connection.js';
import { parseJsonOrUndefined } from '../../shared/protocol/parse-json.js';
import { REPO_ROOT, VILLAGE_SCHEMA } from './workspace.js';

/**
 * A fuzz campaign against Thymos's boundaries. Every case must get an answer that is either
 * an acceptance or a refusal with a stable code (an ErrorCode, a JSON-RPC error code, an HTTP
 * 4xx); anything else — INTERNAL, an HTTP 5xx, no answer, an unclear error — throws. Whether
 * the processes survived is checked by the caller (same pids, /health, a working call).
 */
export interface Tally {
  boundary: string;
  cases: number;
  accepted: number;
  /** Refusals by their code. */
  refused: Record<string, number>;
}

export function tally(boundary: string): Tally {
  return { boundary, cases: 0, accepted: 0, refused: {} };
}

function refuse(t: Tally, code: string): void {
  t.refused[code] = (t.refused[code] ?? 0) + 1;
}

const CODES = new Set<string>(Object.values(ErrorCode));

/** Deterministic random numbers (a linear congruential generator): a failing case can be replayed from its seed. */
export class Rng {
  #state: number;
  constructor(seed: number) {
    this.#state = seed >>> 0 || 1;
  }
  next(): number {
    this.#state = (Math.imul(this.#state, 1_103_515_245) + 12_345) >>> 0;
    return this.#state / 2 ** 32;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

const STRINGS = [
  '',
  ' ',
  'x',
  'elder_rowan',
  'nobody_here',
  '\u0000',
  '\ud800', // a lone surrogate: not valid UTF-16, becomes U+FFFD in UTF-8
  '\uffff\ufffe',
  '💥🔥',
  'a.b.*.>',
  '../../etc/passwd',
  "'; REMOVE TABLE memory; --",
  'SELECT * FROM memory WHERE 1=1',
  '$where',
  '<script>alert(1)</script>',
  '%s%n%x',
  '-1',
  '1e309',
  'NaN',
  'null',
  'true',
  '2026-13-45T99:99:99Z',
];

/** `n` hostile texts from seed `seed`: the strings above, their mixes with ordinary words, huge and odd ones. */
export function fuzzStrings(n: number, seed: number): string[] {
  const r = new Rng(seed);
  const words = [
    'refund',
    'order',
    'ORD-12345',
    'please',
    'ship',
    'kettle',
    '[TOOL:',
    ']',
    'reason',
    '{',
    '"',
    'tomorrow at 3pm',
    '-1',
    'ünïcödé',
    '🔥',
    'constructor',
    '__proto__',
    'toString',
  ];
  return Array.from({ length: n }, () => {
    const kind = r.int(4);
    if (kind === 0) return r.pick(STRINGS);
    if (kind === 1) return Array.from({ length: 1 + r.int(30) }, () => r.pick([...words, ...STRINGS])).join(r.pick([' ', '', '\n', ', ']));
    if (kind === 2) return r.pick(words).repeat(1 + r.int(3000));
    return String.fromCharCode(...Array.from({ length: r.int(200) }, () => r.int(0xffff)));
  });
}

/** A random JSON value: wrong types, odd numbers, hostile strings, big or deep structures. */
export function fuzzValue(r: Rng, depth = 0): unknown {
  const kind = r.int(depth > 3 ? 6 : 10);
  switch (kind) {
    case 0:
      return null;
    case 1:
      return r.chance(0.5);
    case 2:
      return r.pick([0, -1, 1, 0.5, -0.0001, 1e308, -1e308, 2 ** 53 + 1, 150, 1_000_000, 3.14159]);
    case 3:
      return r.pick(STRINGS);
    case 4:
      return r.pick(['x', '€', '💥', '\u0000', ' ']).repeat(r.pick([100, 5_000, 70_000, 300_000]));
    case 5:
      return Array.from({ length: r.int(4) }, () => r.pick(STRINGS));
    case 6:
      return Array.from({ length: r.int(5) }, () => fuzzValue(r, depth + 1));
    case 7: {
      const o: Record<string, unknown> = {};
      for (let i = r.int(5); i > 0; i--)
        o[r.pick([...STRINGS, '__proto__', 'constructor', 'op', 'id', 'table', 'agents', 'content'])] = fuzzValue(r, depth + 1);
      return o;
    }
    case 8:
      // Deeper than 2,000 levels cannot be serialised by the sender (JSON.stringify recurses);
      // deeper raw text goes in through `deepJsonText`.
      return nested(r.pick([50, 500, 1_500]), r.chance(0.5));
    default:
      return Array.from({ length: r.pick([1_000, 20_000]) }, (_, i) => i);
  }
}

/** JSON text nested `depth` levels deep (arrays or objects), optionally left unclosed. */
export function deepJsonText(r: Rng): string {
  const depth = r.pick([3_000, 30_000, 100_000]);
  const objects = r.chance(0.5);
  const close = r.chance(0.8);
  return `${(objects ? '{"a":' : '[').repeat(depth)}1${close ? (objects ? '}' : ']').repeat(depth) : ''}`;
}

/** `depth` arrays (or objects) inside one another. */
function nested(depth: number, objects: boolean): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = objects ? { a: v } : [v];
  return v;
}

/** Bytes that are not valid UTF-8 (overlong forms, lone continuation bytes, 0xff), some inside JSON. */
export function invalidUtf8(r: Rng): Buffer {
  const bad = r.pick([
    Buffer.from([0xff, 0xfe]),
    Buffer.from([0xc0, 0x80]),
    Buffer.from([0x80]),
    Buffer.from([0xed, 0xa0, 0x80]),
    Buffer.from([0xf8, 0x88, 0x80, 0x80, 0x80]),
  ]);
  const json = Buffer.from(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"remember","arguments":{"content":"`);
  return r.chance(0.5)
    ? Buffer.concat([json, bad, Buffer.from('"}}}')])
    : Buffer.concat([bad, Buffer.from(Array.from({ length: r.int(64) }, () => r.int(256)))]);
}

/** The code of a tool call's answer, or throws when the answer is not a clear one. */
function toolOutcome(result: { isError?: boolean; content?: unknown }): string | undefined {
  if (!Array.isArray(result.content)) throw new Error(`a tool answered without content: ${JSON.stringify(result).slice(0, 300)}`);
  if (!result.isError) return undefined;
  const text = (result.content[0] as { text?: string } | undefined)?.text ?? '';
  const coded = /^([A-Z_]+): \S/.exec(text);
  if (coded && CODES.has(coded[1]!)) {
    if (coded[1] === ErrorCode.INTERNAL) throw new Error(`INTERNAL error from a tool: ${text.slice(0, 300)}`);
    return coded[1]!;
  }
  const rpc = /^MCP error (-?\d+): \S/.exec(text);
  if (rpc) return `JSON-RPC ${rpc[1]}`;
  throw new Error(`an error without a stable code: ${text.slice(0, 300)}`);
}

/** Tool calls with random names and arguments through a real MCP client. */
export async function fuzzMcpTools(client: Client, n: number, r: Rng, t: Tally): Promise<void> {
  const tools = (await client.listTools()).tools;
  const keys = [...new Set(tools.flatMap((tool) => Object.keys((tool.inputSchema.properties ?? {}) as object)))];
  for (let i = 0; i < n; i++) {
    const tool = r.chance(0.95) ? r.pick(tools) : { name: r.pick(STRINGS), inputSchema: { properties: {} } };
    const own = Object.keys((tool.inputSchema.properties ?? {}) as object);
    const args: Record<string, unknown> = {};
    for (let j = r.int(4); j >= 0; j--) args[r.chance(0.8) && own.length ? r.pick(own) : r.pick(keys)] = fuzzValue(r);
    t.cases++;
    try {
      const code = toolOutcome(
        (await client.callTool({ name: tool.name, arguments: args }, undefined, { timeout: 30_000 })) as {
          isError?: boolean;
          content?: unknown;
        },
      );
      if (code) refuse(t, code);
      else t.accepted++;
    } catch (err) {
      if (err instanceof McpError) refuse(t, `JSON-RPC ${err.code}`);
      else {
        // Refused at the HTTP edge (a body over max_body_bytes): the SDK hands over the JSON-RPC error body.
        const edge = /Error POSTing to endpoint: (\{.*\})$/s.exec((err as Error).message);
        const code = edge
          ? (parseJsonOrUndefined(edge[1]!) as { error?: { data?: { code?: string } } } | undefined)?.error?.data?.code
          : undefined;
        if (code && CODES.has(code) && code !== ErrorCode.INTERNAL) refuse(t, code);
        else throw new Error(`${tool.name}(${JSON.stringify(args).slice(0, 200)}): ${(err as Error).message.slice(0, 500)}`);
      }
    }
  }
}

interface RawAnswer {
  status: number;
  body: string;
}

function rawHttp(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body: Buffer | undefined,
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      answered = true;
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      res.on('error', reject);
    });
    req.setTimeout(30_000, () => req.destroy(new Error('no answer within 30 s')));
    // A server that refuses an oversize body early may reset the rest of the upload: the answer already came.
    req.on('error', (err) => (answered ? undefined : reject(err)));
    if (body) req.write(body);
    req.end();
  });
}

/** HTTP requests to an agent's MCP port: random methods, paths, headers and bodies. */
export async function fuzzMcpHttp(port: number, token: string | undefined, maxBody: number, n: number, r: Rng, t: Tally): Promise<void> {
  const allowed = new Set([200, 202, 400, 401, 403, 404, 405, 406, 413, 415]);
  for (let i = 0; i < n; i++) {
    const method = r.pick(['POST', 'POST', 'POST', 'GET', 'DELETE', 'PUT', 'PATCH', 'OPTIONS', 'HEAD']);
    const path = r.pick([
      '/mcp',
      '/mcp',
      '/mcp',
      '/mcp',
      '/mcp',
      '/mcp',
      '/mcp?x=1',
      '/',
      '/health',
      '/mcp/../mcp',
      `/${'a'.repeat(2000)}`,
      '/%00',
      '/mcp#frag',
    ]);
    const headers: Record<string, string> = {};
    if (r.chance(0.8))
      headers['content-type'] = r.pick(['application/json', 'application/json', 'text/plain', 'application/json; charset=latin1', '']);
    if (r.chance(0.8)) headers.accept = r.pick(['application/json, text/event-stream', 'application/json', 'text/event-stream', '*/*']);
    if (r.chance(0.15)) headers['mcp-session-id'] = r.pick(['', 'nope', '00000000-0000-0000-0000-000000000000', 'x'.repeat(500)]);
    if (r.chance(0.1)) headers.host = r.pick(['evil.example:80', `localhost:${port}`, '127.0.0.1', '[::1]', '']);
    if (r.chance(0.1)) headers.origin = r.pick(['http://evil.example', `http://127.0.0.1:${port}`, 'null', '']);
    if (token && r.chance(0.7))
      headers.authorization = r.chance(0.9)
        ? `Bearer ${token}`
        : r.pick(['Bearer', `Bearer ${token}x`, 'Basic Zm9vOmJhcg==', `bearer ${token}`]);
    if (r.chance(0.1)) headers['mcp-protocol-version'] = r.pick(['1999-01-01', 'x', '2025-06-18']);
    let body: Buffer | undefined;
    switch (r.int(6)) {
      case 0:
        body = invalidUtf8(r);
        break;
      case 1:
        body = Buffer.from(JSON.stringify(fuzzValue(r)) ?? 'undefined');
        break;
      case 2:
        body = Buffer.from(
          JSON.stringify({
            jsonrpc: '2.0',
            id: fuzzValue(r),
            method: r.pick(['initialize', 'tools/call', 'tools/list', 'resources/read', 'x']),
            params: fuzzValue(r),
          }),
        );
        break;
      case 3:
        body = Buffer.from('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{'.slice(0, 10 + r.int(40)));
        break;
      case 4:
        body = Buffer.from(
          r.chance(0.5)
            ? deepJsonText(r).slice(0, maxBody)
            : `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"remember","arguments":{"content":"x","tags":${deepJsonText(r)}}}}`.slice(
                0,
                maxBody,
              ),
        );
        break;
      default:
        body = Buffer.alloc(maxBody + 1 + r.int(1000), 0x20);
    }
    if (body) headers['content-length'] = String(body.length);
    t.cases++;
    const answer = await rawHttp(port, method, path, headers, body);
    if (!allowed.has(answer.status))
      throw new Error(
        `${method} ${path.slice(0, 40)} (${JSON.stringify(headers).slice(0, 200)}) → HTTP ${answer.status}: ${answer.body.slice(0, 300)}`,
      );
    if (answer.status >= 400 && method !== 'HEAD' && answer.body.length === 0)
      throw new Error(`${method} ${path.slice(0, 40)} → HTTP ${answer.status} without a body that says why`);
    if (answer.status < 300) t.accepted++;
    else refuse(t, `HTTP ${answer.status}`);
  }
}

/** The payload, cut to the server's max_payload (the client refuses larger ones before sending). */
function fitted(nc: NatsConnection, data: Buffer): Buffer {
  const max = nc.info?.max_payload ?? 1024 * 1024;
  return data.length > max ? data.subarray(0, max) : data;
}

/**
 * A reply inbox naming who answers `subject` (an agent for its control and questions, else the
 * supervisor): an identity may answer only on inboxes that name it (`natsAnswers`).
 */
export function inboxAsking(subject: string): string {
  const agent = /^[^.]+\.agent\.([^.]+)\.(?:control|ask\.)/.exec(subject)?.[1];
  return `_INBOX.test.${agent ? `agent-${agent}` : 'supervisor'}.${randomBytes(8).toString('hex')}`;
}

/** Random payloads as NATS requests to subjects answered with `{ok, result | error}`. */
export async function fuzzNatsRequests(
  nc: NatsConnection,
  subjects: Array<{ subject: string; payload: (r: Rng) => unknown }>,
  n: number,
  r: Rng,
  t: Tally,
): Promise<void> {
  for (let i = 0; i < n; i++) {
    const { subject, payload } = r.pick(subjects);
    // An empty body reads as {} — for stop_all a valid request that would stop the fleet for real.
    const emptyOk = !subject.endsWith('.stop_all');
    const data = fitted(
      nc,
      r.chance(0.1)
        ? invalidUtf8(r)
        : emptyOk && r.chance(0.05)
          ? Buffer.alloc(0)
          : r.chance(0.05)
            ? Buffer.from(deepJsonText(r))
            : Buffer.from(JSON.stringify(payload(r)) ?? 'null'),
    );
    t.cases++;
    let text: string;
    try {
      text = (await nc.request(subject, data, { timeout: 20_000, noMux: true, reply: inboxAsking(subject) })).string();
    } catch (err) {
      // An op nobody serves: NATS itself answers that no one listens there.
      if (isNoResponders(err)) {
        refuse(t, 'NATS no responders');
        continue;
      }
      throw new Error(`${subject} ← ${data.toString('utf8').slice(0, 200)}: no answer (${(err as Error).message})`);
    }
    let reply: { ok?: boolean; error?: { code?: string } };
    try {
      reply = JSON.parse(text) as typeof reply;
    } catch {
      throw new Error(`${subject} answered with something that is not JSON: ${text.slice(0, 200)}`);
    }
    if (reply.ok === true) t.accepted++;
    else if (reply.ok === false && reply.error?.code && CODES.has(reply.error.code) && reply.error.code !== ErrorCode.INTERNAL)
      refuse(t, reply.error.code);
    else throw new Error(`${subject} ← ${data.toString('utf8').slice(0, 200)}: unclear answer ${text.slice(0, 300)}`);
  }
}

/** Random payloads published where nobody answers (events, inboxes, heartbeats): the listeners must shrug them off. */
export async function fuzzNatsPublishes(nc: NatsConnection, subjects: string[], n: number, r: Rng, t: Tally): Promise<void> {
  for (let i = 0; i < n; i++) {
    const data = fitted(
      nc,
      r.chance(0.2) ? invalidUtf8(r) : r.chance(0.05) ? Buffer.from(deepJsonText(r)) : Buffer.from(JSON.stringify(fuzzValue(r)) ?? 'null'),
    );
    nc.publish(r.pick(subjects), data);
    t.cases++;
    t.accepted++; // delivered; whether its listener survived is checked afterwards
  }
  await nc.flush();
}

/** thymos.toml texts put together from pieces of real and broken TOML. */
export function fuzzToml(n: number, r: Rng, t: Tally): void {
  const pieces = [
    '[agent]',
    '[nats]',
    '[memory]',
    '[lifecycle]',
    '[llm.dialogue]',
    '[mcp]',
    'url = ',
    'host = ',
    'port = ',
    'provider = ',
    'require_token = ',
    'pins = ',
    'max_active = ',
    '"x"',
    '"0.0.0.0"',
    '1',
    '-1',
    '1e999',
    '0x7fffffffffffffff',
    'true',
    '[[a]]',
    '=',
    '"',
    '\n',
    '{a=1}',
    '[1,2]',
    '\u0000',
    '# c',
    '"""',
    "'''",
    'recall_max_k = 0',
    'data_dir = "/dev/null"',
    '\ud800',
  ];
  for (let i = 0; i < n; i++) {
    const text = Array.from({ length: 1 + r.int(12) }, () => r.pick(pieces)).join(r.pick([' ', '\n', '']));
    t.cases++;
    try {
      parseConfig(text, 'fuzz.toml');
      t.accepted++;
    } catch (err) {
      if (!isThymosError(err, ErrorCode.CONFIG_INVALID)) throw new Error(`thymos.toml ${JSON.stringify(text)} → ${String(err)}`);
      refuse(t, ErrorCode.CONFIG_INVALID);
    }
  }
}

/** The village schema with random lines deleted, doubled, cut or replaced, evaluated by pkl. */
export async function fuzzPkl(n: number, r: Rng, t: Tally): Promise<void> {
  const lines = readFileSync(VILLAGE_SCHEMA, 'utf8')
    .replace('amends "../../schemas/Thymos.pkl"', `amends ${JSON.stringify(join(REPO_ROOT, 'schemas', 'Thymos.pkl'))}`)
    .split('\n');
  const dir = mkdtempSync(join(tmpdir(), 'thymos-fuzz-pkl-'));
  try {
    for (let i = 0; i < n; i++) {
      const mutated = [...lines];
      for (let m = 1 + r.int(3); m > 0; m--) {
        const at = 2 + r.int(mutated.length - 2); // keep the amends line
        switch (r.int(5)) {
          case 0:
            mutated.splice(at, 1);
            break;
          case 1:
            mutated.splice(at, 0, mutated[at]!);
            break;
          case 2:
            mutated[at] = mutated[at]!.slice(0, r.int(mutated[at]!.length + 1));
            break;
          case 3:
            mutated[at] = mutated[at]!.replace(/"[^"]*"|\d+(\.\d+)?|true|false/, () =>
              r.pick(['"💥"', '-1', '1e309', '""', 'null', 'true', '"a.b"', '999999999999']),
            );
            break;
          default:
            mutated.splice(
              at,
              0,
              r.pick([
                '}',
                '{',
                'agents { ["x y"] {} }',
                'relevanceRules { new { score = 7 } }',
                'eventFilters { new { bogus = 1 } }',
                '"unterminated',
              ]),
            );
        }
      }
      const file = join(dir, `world-${i}.pkl`);
      writeFileSync(file, mutated.join('\n'));
      t.cases++;
      try {
        await loadDomainSchema(file);
        t.accepted++;
      } catch (err) {
        if (!isThymosError(err, ErrorCode.SCHEMA_INVALID)) throw new Error(`mutated world.pkl (${file}) → ${String(err)}`);
        refuse(t, ErrorCode.SCHEMA_INVALID);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One line per boundary: cases, accepted, refused by code. */
export function describeTally(t: Tally): string {
  const refused = Object.entries(t.refused)
    .sort((a, b) => b[1] - a[1])
    .map(([code, k]) => `${code} ${k}`)
    .join(', ');
  return `${t.boundary}: ${t.cases} cases, ${t.accepted} accepted, refused: ${refused || 'none'}`;
}

/** A random subset of `fields`, each with its own generator or a random value instead. */
function someOf(r: Rng, fields: Record<string, (r: Rng) => unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, gen] of Object.entries(fields)) if (r.chance(0.7)) out[k] = r.chance(0.75) ? gen(r) : fuzzValue(r);
  if (r.chance(0.15)) out[r.pick(STRINGS)] = fuzzValue(r);
  return out;
}

/** Ids that name no agent (valid in form or not): fuzzing never starts or stops a real one. */
const NO_AGENT = ['nobody_here', '', 'A', 'a.b', 'x'.repeat(200), '__proto__', 'elder rowan', '*', '>'];

/**
 * The request/reply subjects of a running fleet with generators of plausible-to-hostile
 * payloads. Nothing generated can change the fleet for real: reconciles are dry runs (or
 * invalid), agent commands name no agent, `stop_all` always carries an unknown field, and an
 * agent is never told to shut down or to become passive.
 */
export function fleetRequestSubjects(agentIds: string[]): Array<{ subject: string; payload: (r: Rng) => unknown }> {
  const id = (r: Rng) => r.pick(NO_AGENT);
  const context = (r: Rng) => ({
    agents: Object.fromEntries(
      Array.from({ length: r.int(4) }, () => [
        r.pick([...agentIds, ...NO_AGENT]),
        r.chance(0.5) ? { relevance: r.chance(0.5) ? r.next() : fuzzValue(r), properties: fuzzValue(r) } : fuzzValue(r),
      ]),
    ),
    ...(r.chance(0.3) ? { globals: fuzzValue(r) } : {}),
  });
  const supervisor: Array<{ subject: string; payload: (r: Rng) => unknown }> = [
    {
      subject: 'thymos.supervisor.reconcile',
      payload: (r) => ({
        context: r.chance(0.8) ? context(r) : fuzzValue(r),
        dry_run: r.chance(0.9) ? true : r.pick(['yes', 1, null, 'false']),
      }),
    },
    { subject: 'thymos.supervisor.status', payload: (r) => (r.chance(0.5) ? {} : fuzzValue(r)) },
    { subject: 'thymos.supervisor.ping', payload: (r) => (r.chance(0.5) ? {} : fuzzValue(r)) },
    { subject: 'thymos.supervisor.history', payload: (r) => someOf(r, { id, limit: (x) => x.pick([0, 1, 1001, -5, 1.5]) }) },
    ...['start', 'stop', 'archive', 'restore'].map((op) => ({
      subject: `thymos.supervisor.${op}`,
      payload: (r: Rng) => someOf(r, { id, mode: (x) => x.pick(['active', 'passive', 'sleepy']) }),
    })),
    { subject: 'thymos.supervisor.stop_all', payload: (r) => ({ [r.pick(['bogus', 'force', 'id'])]: fuzzValue(r) }) },
    { subject: 'thymos.supervisor.nonsense', payload: (r) => fuzzValue(r) },
  ];
  const table = (r: Rng) => r.pick(['quest', 'quest', 'nope', '', 'memory', 'quest; DELETE quest', 'x'.repeat(65)]);
  const rowId = (r: Rng) => r.pick(['q1', 'fuzz_row', '', '⟨x⟩', 'a:b', 'x'.repeat(300)]);
  const world = [
    { subject: 'thymos.world.tables', payload: (r: Rng) => (r.chance(0.5) ? {} : fuzzValue(r)) },
    ...['get', 'delete'].map((op) => ({ subject: `thymos.world.${op}`, payload: (r: Rng) => someOf(r, { table, id: rowId }) })),
    ...['set', 'patch'].map((op) => ({
      subject: `thymos.world.${op}`,
      payload: (r: Rng) =>
        someOf(r, {
          table,
          id: rowId,
          fields: (x) => (x.chance(0.5) ? { title: x.pick(STRINGS), status: fuzzValue(x) } : fuzzValue(x)),
          by: (x) => x.pick(['app', 'elder_rowan', '', 'Evil One']),
        }),
    })),
    {
      subject: 'thymos.world.query',
      payload: (r: Rng) =>
        someOf(r, {
          table,
          where: (x) => (x.chance(0.5) ? { status: x.pick(STRINGS) } : fuzzValue(x)),
          order_by: (x) => ({ field: x.pick(['title', 'title; REMOVE TABLE quest', '']), direction: x.pick(['asc', 'up']) }),
          limit: (x) => x.pick([0, 1, 1000, 1001]),
        }),
    },
    {
      subject: 'thymos.world.subscribe',
      payload: (r: Rng) =>
        someOf(r, { table, where: (x) => fuzzValue(x), owner: (x) => x.pick(['fuzzer', 'Fuzzer!', '']), key: (x) => x.pick(['k', '']) }),
    },
    {
      subject: 'thymos.world.renew',
      payload: (r: Rng) => someOf(r, { subs: (x) => [x.pick(['00000000-0000-4000-8000-000000000000', 'nope'])] }),
    },
    {
      subject: 'thymos.world.unsubscribe',
      payload: (r: Rng) => someOf(r, { sub: (x) => x.pick(['00000000-0000-4000-8000-000000000000', 'nope']) }),
    },
  ];
  const agents = agentIds.map((a) => ({
    subject: `thymos.agent.${a}.control`,
    payload: (r: Rng) =>
      r.chance(0.7)
        ? {
            op: r.pick(['get_state', 'snapshot', 'evaluate', 'set_mode', 'SHUTDOWN', 'nope']),
            ...someOf(r, { mode: (x) => x.pick(['active', 'sleepy']), input: (x) => fuzzValue(x) }),
          }
        : fuzzValue(r),
  }));
  const embed = [
    { subject: 'thymos.embed', payload: (r: Rng) => someOf(r, { texts: (x) => (x.chance(0.5) ? [x.pick(STRINGS)] : fuzzValue(x)) }) },
  ];
  return [...supervisor, ...world, ...agents, ...embed];
}

/** Subjects where a fleet listens without answering: world events, agents' inboxes and heartbeats. */
export function fleetPublishSubjects(agentIds: string[]): string[] {
  return [
    'thymos.events.fuzz',
    'thymos.events.fuzz.deep',
    ...agentIds.flatMap((a) => [`thymos.agent.${a}.inbox.${agentIds[0]}`, `thymos.agent.${a}.status`]),
  ];
}
