import { ErrorCode } from '../shared/errors/errors.js';

/** Process exit codes of the `thymos` command. */
export const ExitCode = {
  OK: 0,
  /** A failure while running. */
  FAILURE: 1,
  /** Bad arguments, configuration or domain schema: fix the input and retry. */
  BAD_INPUT: 2,
  /** Something else holds what was asked for: the agent's data or its port. */
  CONFLICT: 3,
} as const;

export function exitCodeFor(code: ErrorCode): number {
  switch (code) {
    case ErrorCode.USAGE:
    case ErrorCode.CONFIG_INVALID:
    case ErrorCode.SCHEMA_INVALID:
    case ErrorCode.INVALID_INPUT:
    case ErrorCode.INVALID_CONTEXT:
    case ErrorCode.AGENT_NOT_FOUND:
    case ErrorCode.NOT_FOUND:
      return ExitCode.BAD_INPUT;
    case ErrorCode.AGENT_ALREADY_RUNNING:
    case ErrorCode.PORT_IN_USE:
    case ErrorCode.SUPERVISOR_ALREADY_RUNNING:
    case ErrorCode.AGENT_PINNED:
    case ErrorCode.CAPACITY_EXCEEDED:
    case ErrorCode.FILE_EXISTS:
      return ExitCode.CONFLICT;
    default:
      return ExitCode.FAILURE;
  }
}
