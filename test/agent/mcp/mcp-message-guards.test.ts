import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import {
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  JSONRPCErrorResponseSchema,
  JSONRPCNotificationSchema,
  JSONRPCRequestSchema,
  JSONRPCResultResponseSchema,
} from '@modelcontextprotocol/sdk/types.js';

import { Rng } from '../../helpers/fuzz.js';
import { REPO_ROOT } from '../../helpers/workspace.js';

/**
 * patches/@modelcontextprotocol+sdk+*.patch (applied by `npm install`'s prepare step): the SDK
 * asks these guards what each message it sends or receives is, and before the patch every guard
 * was a zod parse, so a notification an agent sends failed four parses first (issues built,
 * an error made) — a good share of what a heard event costs its hearer. Patched, a guard first
 * checks a field its schema requires; these tests hold it to the schema's answer.
 */
const GUARDS = [
  { name: 'isJSONRPCRequest', guard: isJSONRPCRequest, schema: JSONRPCRequestSchema },
  { name: 'isJSONRPCNotification', guard: isJSONRPCNotification, schema: JSONRPCNotificationSchema },
  { name: 'isJSONRPCResultResponse', guard: isJSONRPCResultResponse, schema: JSONRPCResultResponseSchema },
  { name: 'isJSONRPCErrorResponse', guard: isJSONRPCErrorResponse, schema: JSONRPCErrorResponseSchema },
] as const;

const VALUES: unknown[] = [
  undefined,
  null,
  0,
  7,
  1.5,
  -1,
  '',
  'x',
  '2.0',
  'notifications/resources/updated',
  true,
  [],
  [1],
  {},
  { code: -32601, message: 'no' },
  { code: 1.5, message: 'no' },
  { uri: 'agent://a/memories' },
  { _meta: { progressToken: 1 } },
];
const KEYS = ['jsonrpc', 'id', 'method', 'params', 'result', 'error', 'extra'];

/** Messages of every kind and many malformed ones: each key absent or given one of VALUES. */
function messages(count: number): unknown[] {
  const r = new Rng(19);
  const out: unknown[] = [
    { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'agent://a/memories' } },
    { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x', arguments: {} } },
    { jsonrpc: '2.0', id: 'a', result: {} },
    { jsonrpc: '2.0', id: 1, error: { code: -32601, message: 'Method not found' } },
    { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error' } },
    null,
    'text',
    [],
  ];
  while (out.length < count) {
    const m: Record<string, unknown> = {};
    for (const key of KEYS) {
      if (r.chance(0.45)) continue;
      m[key] = key === 'jsonrpc' && r.chance(0.8) ? '2.0' : r.pick(VALUES);
    }
    out.push(m);
  }
  return out;
}

describe('the MCP SDK message guards (patched)', () => {
  test('each guard answers as its schema does, for 20,000 messages of every kind and malformed ones', () => {
    const all = messages(20_000);
    for (const { name, guard, schema } of GUARDS) {
      let accepted = 0;
      for (const m of all) {
        const expected = schema.safeParse(m).success;
        assert.equal(guard(m), expected, `${name}(${JSON.stringify(m)})`);
        if (expected) accepted++;
      }
      // Not vacuous: every guard meets messages of its kind as well as others.
      assert.ok(accepted > 0 && accepted < all.length, `${name} accepted ${accepted} of ${all.length}`);
    }
  });

  test('a notification is told from responses and requests without parsing it as one', () => {
    const notification = { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'agent://a/memories' } };
    const parses = new Map<string, number>();
    const originals = GUARDS.map(({ name, schema }) => {
      const original = schema.safeParse.bind(schema);
      schema.safeParse = ((data: unknown, params?: never) => {
        parses.set(name, (parses.get(name) ?? 0) + 1);
        return original(data, params);
      }) as typeof schema.safeParse;
      return () => {
        schema.safeParse = original as typeof schema.safeParse;
      };
    });
    try {
      assert.equal(isJSONRPCResultResponse(notification), false);
      assert.equal(isJSONRPCErrorResponse(notification), false);
      assert.equal(isJSONRPCRequest(notification), false);
      assert.equal(isJSONRPCNotification(notification), true);
    } finally {
      for (const restore of originals) restore();
    }
    assert.deepEqual(Object.fromEntries(parses), { isJSONRPCNotification: 1 });
  });

  test('the bundle agents run from carries the patched guards', () => {
    const bin = join(REPO_ROOT, 'dist', 'bin');
    const chunks = readdirSync(bin).filter((f) => f.endsWith('.js'));
    const patched = chunks.filter((f) => readFileSync(join(bin, f), 'utf8').match(/hasField\(value, ["']result["'], ["']object["']\)/));
    assert.equal(patched.length, 1, `chunks holding the patched guards: ${patched.join(', ') || 'none'}`);
  });
});
