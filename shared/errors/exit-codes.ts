import { ErrorCode } from './errors.js';

/**
 * Process exit codes of the `thymos` command, of the examples and of a game loop that ends
 * with `exitWithError`: the same code means the same thing wherever a Thymos program stops.
 */
export const ExitCode = {
  OK: 0,
  /** A failure while running. */
  FAILURE: 1,
  /** Bad arguments, configuration or domain schema: fix the input and retry. */
  BAD_INPUT: 2,
  /** Something else holds what was asked for: the agent's data or its port. */
  CONFLICT: 3,
  /** A program Thymos runs is not installed (nats-server, pkl): the message names the command that installs it. */
  MISSING_PROGRAM: 4,
  /**
   * An agent stopped itself because its lease ended (placement by lease, `[cluster] enabled`), or was
   * started without a live one. pm2 does not restart an agent that exits with it (`stop_exit_codes`):
   * only its supervisor starts it again, under a new claim.
   */
  FENCED: 5,
} as const;

export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** The exit status a program ends with when an error of this code stops it. */
export function exitCodeFor(code: ErrorCode): ExitCode {
  switch (code) {
    case ErrorCode.USAGE:
    case ErrorCode.CONFIG_INVALID:
    case ErrorCode.SCHEMA_INVALID:
    case ErrorCode.SCHEMA_READ_REFUSED:
    case ErrorCode.INVALID_INPUT:
    case ErrorCode.INVALID_CONTEXT:
    case ErrorCode.AGENT_NOT_FOUND:
    case ErrorCode.NOT_FOUND:
      return ExitCode.BAD_INPUT;
    case ErrorCode.AGENT_ALREADY_RUNNING:
    case ErrorCode.PORT_IN_USE:
    case ErrorCode.SUPERVISOR_ALREADY_RUNNING:
    case ErrorCode.NOT_OWNER:
    case ErrorCode.AGENT_PINNED:
    case ErrorCode.CAPACITY_EXCEEDED:
    case ErrorCode.FILE_EXISTS:
      return ExitCode.CONFLICT;
    case ErrorCode.LEASE_ENDED:
      return ExitCode.FENCED;
    case ErrorCode.NATS_SERVER_MISSING:
    case ErrorCode.PKL_UNAVAILABLE:
      return ExitCode.MISSING_PROGRAM;
    default:
      return ExitCode.FAILURE;
  }
}
