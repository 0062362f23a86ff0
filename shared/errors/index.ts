/**
 * Errors: the ThymosError family with stable codes, and zod issues turned into messages that say what was expected and where.
 */
export { ErrorCode, type ErrorLocation, isThymosError, ThymosError, toThymosError, type WireError, WireErrorSchema } from './errors.js';
export { describeIssue, describeIssues, parseInput, preview } from './zod-issues.js';
