import assert from 'node:assert/strict';
import { test } from 'node:test';

import { HintBook } from '../../../agent/links/hint-book.js';

const vector = (x: number) => ({ model: 'm', values: Float32Array.of(x, x) });

test('a hint is taken once, each kind on its own', () => {
  const book = new HintBook();
  book.put('wolves at the gate', { concepts: [{ name: 'Gate', type: 'place' }], vector: vector(1) });
  assert.deepEqual(book.takeConcepts('wolves at the gate'), [{ name: 'Gate', type: 'place' }]);
  assert.equal(book.takeConcepts('wolves at the gate'), undefined);
  assert.equal(book.size, 1, 'the vector is still there');
  assert.deepEqual(Array.from(book.takeVector('wolves at the gate', 'm', 2)!), [1, 1]);
  assert.equal(book.size, 0);
  assert.equal(book.takeVector('wolves at the gate', 'm', 2), undefined);
});

test('a vector of another model or length is not used', () => {
  const book = new HintBook();
  book.put('a', { vector: vector(1) });
  assert.equal(book.takeVector('a', 'other', 2), undefined);
  book.put('b', { vector: vector(1) });
  assert.equal(book.takeVector('b', 'm', 3), undefined);
  assert.equal(book.size, 0);
});

test('the book keeps the latest 1,024 texts; nothing is kept for no hints', () => {
  const book = new HintBook();
  book.put('none', {});
  assert.equal(book.size, 0);
  for (let i = 0; i < 1100; i++) book.put(`text ${i}`, { vector: vector(i) });
  assert.equal(book.size, 1024);
  assert.equal(book.takeVector('text 0', 'm', 2), undefined);
  assert.deepEqual(Array.from(book.takeVector('text 1099', 'm', 2)!), [1099, 1099]);
});

test('taking a hint does not keep its text longer; hearing the text again does', () => {
  const book = new HintBook();
  book.put('first', { concepts: [{ name: 'Gate', type: 'place' }], vector: vector(0) });
  book.put('second', { vector: vector(0) });
  assert.ok(book.takeConcepts('first'), 'first still holds its vector');
  for (let i = 0; i < 1023; i++) book.put(`text ${i}`, { vector: vector(i) });
  assert.equal(book.takeVector('first', 'm', 2), undefined, 'first, put first, went first though a hint of it was taken last');
  book.put('second', { vector: vector(2) });
  book.put('text 1023', { vector: vector(1023) });
  assert.deepEqual(Array.from(book.takeVector('second', 'm', 2)!), [2, 2], 'heard again, second is newer than text 0');
  assert.equal(book.takeVector('text 0', 'm', 2), undefined);
});
