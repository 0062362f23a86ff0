import { ErrorCode, isThymosError } from './errors.js';
import { ExitCode, exitCodeFor } from './exit-codes.js';

/**
 * Ends a program the way the `thymos` command does: a `ThymosError` is one line on stderr,
 * `thymos: CODE: message`, and the exit status its code maps to (`exitCodeFor`), with no
 * stack trace, since the message already says what was expected and where. Anything else, and
 * an INTERNAL error's cause, is a bug and keeps its stack (exit 1).
 *
 * @example
 * import { connect, exitWithError } from 'thymos/client';
 * main().catch(exitWithError);
 */
export function exitWithError(err: unknown): never {
  if (isThymosError(err)) {
    // INTERNAL is a bug: what was thrown keeps its stack, for the report.
    const cause = err.code === ErrorCode.INTERNAL && err.cause instanceof Error && err.cause.stack ? `\n${err.cause.stack}` : '';
    process.stderr.write(`thymos: ${err.code}: ${err.message}${cause}\n`);
    process.exit(exitCodeFor(err.code));
  }
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(ExitCode.FAILURE);
}
