import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';

import { headers } from '@nats-io/transport-node';

import { HintHeaders, hintHeaders, moreFollows, readHints } from '../../../shared/protocol/heard-hints.js';

test('hints travel as headers and come back as sent, names with accents too', () => {
  const values = Float32Array.from({ length: 100 }, (_, i) => Math.sin(i));
  const h = hintHeaders({
    concepts: [
      { name: 'Zoë', type: 'person' },
      { name: 'Millbrook', type: 'place' },
    ],
    vector: { model: 'custom:glove-100d', values },
  });
  assert.ok(h);
  assert.match(h.get(HintHeaders.concepts), /^[\x20-\x7e]+$/, 'one line of ASCII');
  const back = readHints(h);
  assert.deepEqual(back.concepts, [
    { name: 'Zoë', type: 'person' },
    { name: 'Millbrook', type: 'place' },
  ]);
  assert.equal(back.vector?.model, 'custom:glove-100d');
  assert.deepEqual(Array.from(back.vector!.values), Array.from(values));
});

test('nothing to carry is no headers; an empty list of concepts is carried (the text names nobody)', () => {
  assert.equal(hintHeaders({}), undefined);
  assert.equal(hintHeaders({ vector: { model: 'bad model', values: Float32Array.of(1) } }), undefined);
  assert.deepEqual(readHints(hintHeaders({ concepts: [] })), { concepts: [] });
  assert.deepEqual(readHints(undefined), {});
});

test('a copy made in a burst says more follow, alone or beside hints; anything else in the header is not a burst', () => {
  assert.equal(moreFollows(hintHeaders({}, true)), true);
  assert.equal(moreFollows(hintHeaders({ concepts: [] }, true)), true);
  assert.equal(moreFollows(hintHeaders({ concepts: [] })), false);
  assert.equal(moreFollows(undefined), false);
  const h = headers();
  h.set(HintHeaders.more, 'yes');
  assert.equal(moreFollows(h), false);
});

test('malformed hints are dropped, never thrown: the hearer asks the services instead', () => {
  const bad: Array<[string, string][]> = [
    [[HintHeaders.concepts, '{nope']],
    [[HintHeaders.concepts, '[{"name":"","type":"person"}]']],
    [[HintHeaders.concepts, JSON.stringify(Array.from({ length: 257 }, () => ({ name: 'a', type: 'b' })))]],
    [[HintHeaders.concepts, '['.repeat(100) + ']'.repeat(100)]],
    [
      [HintHeaders.vectorModel, 'm'],
      [HintHeaders.vector, 'AAA'],
    ],
    [
      [HintHeaders.vectorModel, 'm'],
      [HintHeaders.vector, 'not base64!'],
    ],
    [
      [HintHeaders.vectorModel, 'm'],
      [HintHeaders.vector, Buffer.from(Float32Array.of(Number.NaN).buffer).toString('base64')],
    ],
    [
      [HintHeaders.vectorModel, 'm'],
      [HintHeaders.vector, Buffer.alloc(4 * 5000).toString('base64')],
    ],
    [[HintHeaders.vector, Buffer.alloc(8).toString('base64')]],
  ];
  for (const pairs of bad) {
    const h = headers();
    for (const [k, v] of pairs) h.set(k, v);
    assert.deepEqual(readHints(h), {}, JSON.stringify(pairs).slice(0, 120));
  }
  for (let i = 0; i < 500; i++) {
    const h = headers();
    h.set(
      HintHeaders.concepts,
      randomBytes(40)
        .toString('latin1')
        .replace(/[\r\n]/g, ' '),
    );
    h.set(HintHeaders.vectorModel, randomBytes(8).toString('base64'));
    h.set(HintHeaders.vector, randomBytes(1 + (i % 64)).toString(i % 2 ? 'base64' : 'hex'));
    const hints = readHints(h);
    assert.equal(hints.concepts, undefined);
    if (hints.vector) assert.ok(hints.vector.values.every(Number.isFinite));
  }
});
