/**
 * Errors: the ThymosError family with stable codes, the exit status each code ends a program with, and zod issues turned into messages that say what was expected and where.
 */
export {
  ErrorCode,
  type ErrorLocation,
  isThymosError,
  knownCode,
  ThymosError,
  toThymosError,
  type WireError,
  WireErrorSchema,
} from './errors.js';
export { ExitCode, exitCodeFor } from './exit-codes.js';
export { exitWithError } from './exit-with-error.js';
export { describeIssue, describeIssues, parseInput, preview } from './zod-issues.js';
