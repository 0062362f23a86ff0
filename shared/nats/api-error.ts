import { JetStreamApiError } from '@nats-io/jetstream';

/** The codes of nats-server's JetStream refusals that Thymos tells apart. */
export const ApiErrorCode = {
  /** The consumer asked for does not exist. */
  ConsumerNotFound: 10014,
  /** A direct get found no message at that sequence or subject. */
  NoMessage: 10037,
  /** The stream asked for does not exist. */
  StreamNotFound: 10059,
  /** A write whose expected last revision is not the key's: another writer came first. */
  WrongLastSequence: 10071,
} as const;

export type ApiErrorCode = (typeof ApiErrorCode)[keyof typeof ApiErrorCode];

/** Whether `err` is JetStream's refusal with `code`. */
export function isApiError(err: unknown, code: ApiErrorCode): boolean {
  return err instanceof JetStreamApiError && err.code === code;
}

/**
 * Whether `err` is the refusal of a compare-and-set write whose expected last revision is not the
 * key's: another writer came first. Matched on the message too, for the refusals that reach the
 * caller as a plain error.
 */
export function lostRace(err: unknown): boolean {
  return isApiError(err, ApiErrorCode.WrongLastSequence) || /wrong last sequence/i.test((err as Error)?.message ?? '');
}
