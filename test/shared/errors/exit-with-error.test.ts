import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';

import { isThymosError } from '../../../shared/errors/errors.js';
import { REPO_ROOT } from '../../helpers/workspace.js';

/** A program that throws `make()` into exitWithError, as a game loop's `main().catch(exitWithError)` does. */
function endWith(make: string) {
  const script = `import { ThymosError, ErrorCode } from './shared/errors/errors.ts'; import { exitWithError } from './shared/errors/exit-with-error.ts';
    Promise.reject(${make}).catch(exitWithError);`;
  return spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: REPO_ROOT, encoding: 'utf8' });
}

const TRACE = /^\s+at /m;

describe('ending a program on an error', () => {
  test('a ThymosError is one line, thymos: CODE: message, and the exit status of its code', () => {
    const bad = endWith("new ThymosError(ErrorCode.CONFIG_INVALID, 'thymos.toml:3: lifecycle.threshold_active: expected a number')");
    assert.equal(bad.status, 2);
    assert.equal(bad.stderr, 'thymos: CONFIG_INVALID: thymos.toml:3: lifecycle.threshold_active: expected a number\n');
    const missing = endWith("new ThymosError(ErrorCode.NATS_SERVER_MISSING, 'nats-server is not installed')");
    assert.deepEqual([missing.status, missing.stderr], [4, 'thymos: NATS_SERVER_MISSING: nats-server is not installed\n']);
    const held = endWith("new ThymosError(ErrorCode.PORT_IN_USE, 'port 4222 is taken')");
    assert.equal(held.status, 3);
  });

  test('one from another copy of Thymos (its name and a code, another prototype) is the same line', () => {
    const foreign = Object.assign(new Error('busy'), { name: 'ThymosError', code: 'CAPACITY_EXCEEDED' });
    assert.ok(isThymosError(foreign, 'CAPACITY_EXCEEDED'));
    assert.ok(!isThymosError(Object.assign(new Error('x'), { name: 'ThymosError', code: 'NOT_A_CODE' })), 'an unknown code is not ours');
    assert.ok(!isThymosError(Object.assign(new Error('x'), { code: 'CONFIG_INVALID' })), 'nor another error that has a code');
    const run = endWith("Object.assign(new Error('busy'), { name: 'ThymosError', code: 'CAPACITY_EXCEEDED' })");
    assert.deepEqual([run.status, run.stderr], [3, 'thymos: CAPACITY_EXCEEDED: busy\n']);
  });

  test('a bug keeps its stack: INTERNAL with what was thrown, and anything that is not a ThymosError', () => {
    const internal = endWith("new ThymosError(ErrorCode.INTERNAL, 'boom', { cause: new TypeError('x is undefined') })");
    assert.equal(internal.status, 1);
    assert.match(internal.stderr, /^thymos: INTERNAL: boom\nTypeError: x is undefined\n/);
    assert.match(internal.stderr, TRACE);
    const plain = endWith("new RangeError('off the end')");
    assert.equal(plain.status, 1);
    assert.match(plain.stderr, /^RangeError: off the end\n/);
    assert.match(plain.stderr, TRACE);
  });
});
