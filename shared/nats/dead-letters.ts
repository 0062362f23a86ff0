import { randomUUID } from 'node:crypto';

import { jetstream, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';

import { ErrorCode, ThymosError } from '../errors/errors.js';
import { DEFAULT_FLEET_NAMES, type FleetNames } from '../protocol/fleet-names.js';
import {
  type DeadLetter,
  deadLetterId,
  DeadLetterSchema,
  JOB_PAYLOAD_MAX_BYTES,
  type JobGiveUp,
  JobSchema,
  type ListedDeadLetter,
} from '../protocol/job.js';
import { parseJsonOrUndefined } from '../protocol/parse-json.js';
import { ApiErrorCode, isApiError } from './api-error.js';
import type { NatsWork } from './nats-permissions.js';
import { published } from './published-mark.js';

/** How many messages past `limit` a listing of dead letters reads at most, looking for letters among what is not. */
const SCAN_SLACK = 10_000;

/** One delivery given up: where the job is, why, after how many deliveries, and who gave up. */
export interface GivenUp {
  queue: string;
  /** The skill the job was published for; the job's own subject in the stream must name it. */
  skill: string;
  seq: number;
  attempts: number;
  reason: DeadLetter['reason'];
  /** An agent's id, taken from the subject it asked on, or `supervisor`. */
  agent: string;
}

/**
 * Writes the dead letter of the job at `seq` in its queue's stream and takes the job off the
 * queue. Only the supervisor writes dead letters (no other identity may publish on
 * `<fleet>.jobs.dead.>`), and what a letter says of the job, its queue and its skill comes from the
 * queue's stream, never from what a worker sent.
 *
 * Safe to repeat: the letter is deduplicated by the job and its delivery (`deadLetterId`), so a
 * worker and the supervisor (from the max-deliveries advisory), or one retried after a crash,
 * write one letter between them; a job already off the queue is NOT_FOUND and nothing is written.
 */
export async function writeDeadLetter(
  jsm: JetStreamManager,
  nc: NatsConnection,
  given: GivenUp,
  names: FleetNames = DEFAULT_FLEET_NAMES,
): Promise<{ seq: number; duplicate: boolean }> {
  const stream = names.jobStream(given.queue);
  const m = await jsm.streams.getMessage(stream, { seq: given.seq }).catch(() => null);
  if (!m)
    throw new ThymosError(ErrorCode.NOT_FOUND, `no job ${given.seq} in ${given.queue}: it was done, or given up already`, {
      location: { path: 'seq' },
    });
  // A stream keeps what JetStream delivers to a subject it listens on under the message's first
  // subject: only a job published for this skill is this skill's.
  if (m.subject !== names.job(given.queue, given.skill)) {
    throw new ThymosError(ErrorCode.UNAUTHORIZED, `job ${given.seq} of ${given.queue} is not a job for skill ${given.skill}`, {
      location: { path: 'skill' },
    });
  }
  // nats-server's answer to a pull that named the queue's subject is no job: dropped, and no letter written.
  if (!published(m.header)) {
    await deleteIfThere(jsm, stream, given.seq);
    throw new ThymosError(ErrorCode.NOT_FOUND, `${given.seq} of ${given.queue} is no job anyone published: dropped, with no dead letter`, {
      location: { path: 'seq' },
    });
  }
  const raw = parseJsonOrUndefined(m.string());
  const job = JobSchema.safeParse(raw);
  const letter: DeadLetter = {
    // What is not a job is kept as it came while it is no bigger than a job may be, else its start.
    job: job.success ? job.data : raw !== undefined && m.data.length <= JOB_PAYLOAD_MAX_BYTES ? raw : m.string().slice(0, 2000),
    queue: given.queue,
    skill: given.skill,
    reason: given.reason,
    attempts: given.attempts,
    agent: given.agent,
    at: new Date().toISOString(),
  };
  const ack = await publishOwn(
    jsm,
    nc,
    names.deadStream,
    names.deadLetters(given.queue),
    JSON.stringify(letter),
    deadLetterId(given.queue, job.success ? job.data.id : `seq-${given.seq}`, given.seq),
  );
  // Off the queue once its letter holds it; a crash between the two writes the same letter again.
  await deleteIfThere(jsm, stream, given.seq);
  return { seq: ack.seq, duplicate: ack.duplicate };
}

async function deleteIfThere(jsm: JetStreamManager, stream: string, seq: number): Promise<void> {
  await jsm.streams.deleteMessage(stream, seq, false).catch((err: unknown) => {
    if (!/not found|no message/i.test((err as Error).message)) throw err;
  });
}

/**
 * A worker gives up the job it holds. The agent is the one whose subject the request came on; it
 * may give up only a job of a queue and skill it works (`work`), and only one its skill's consumer
 * has delivered and nobody has acknowledged (in a work queue, an acknowledged job is gone). Among
 * the workers that share a skill, which one holds the job is not proven: any of them may give it up.
 */
export async function giveUpJob(
  jsm: JetStreamManager,
  nc: NatsConnection,
  agent: string,
  request: JobGiveUp,
  work: NatsWork,
  names: FleetNames = DEFAULT_FLEET_NAMES,
): Promise<{ seq: number; duplicate: boolean }> {
  const { queue, skill, seq } = request;
  if (!work(agent).some((w) => w.queue === queue && w.skill === skill)) {
    throw new ThymosError(ErrorCode.UNAUTHORIZED, `queue: ${agent} does not work ${queue}/${skill}, so it may not give up its jobs`, {
      location: { path: 'queue' },
    });
  }
  const consumer = await jsm.consumers.info(names.jobStream(queue), names.skillConsumer(skill)).catch((err: unknown) => {
    if (isApiError(err, ApiErrorCode.ConsumerNotFound) || isApiError(err, ApiErrorCode.StreamNotFound))
      throw new ThymosError(ErrorCode.NOT_FOUND, `no consumer of ${queue}/${skill}`, { cause: err });
    throw err;
  });
  if (seq > consumer.delivered.stream_seq) {
    throw new ThymosError(
      ErrorCode.UNAUTHORIZED,
      `seq: job ${seq} of ${queue}/${skill} was never delivered, so nobody holds it to give up`,
      { location: { path: 'seq' } },
    );
  }
  return writeDeadLetter(jsm, nc, { ...request, agent }, names);
}

/**
 * Publishes `data` on `subject` under the deduplication id `msgID`, and makes sure that a
 * duplicate is one: a message another agent's pull aimed into the stream keeps its headers (its
 * `Nats-Msg-Id` with them) under its first subject, so the id may be taken by something else. A
 * duplicate whose stored message is not on `subject` is published again under a fresh id.
 */
async function publishOwn(
  jsm: JetStreamManager,
  nc: NatsConnection,
  stream: string,
  subject: string,
  data: string,
  msgID: string,
): Promise<{ seq: number; duplicate: boolean }> {
  const js = jetstream(nc);
  const ack = await js.publish(subject, data, { msgID });
  if (!ack.duplicate) return { seq: ack.seq, duplicate: false };
  const held = await jsm.streams.getMessage(stream, { seq: ack.seq }).catch(() => null);
  if (held?.subject === subject) return { seq: ack.seq, duplicate: true };
  const again = await js.publish(subject, data, { msgID: `${msgID}~${randomUUID()}` });
  return { seq: again.seq, duplicate: false };
}

/**
 * The newest dead letters (of one queue with `queue`), newest first, at most `limit`. Only what
 * the supervisor published under a dead-letter subject is a letter: a message JetStream delivered
 * there for a pull that named it keeps its first subject, and nats-server's own answer to such a
 * pull lacks the mark every letter is published with (`published`); neither is listed.
 */
export async function deadLetters(
  jsm: JetStreamManager,
  limit: number,
  queue?: string,
  names: FleetNames = DEFAULT_FLEET_NAMES,
): Promise<ListedDeadLetter[]> {
  const info = await jsm.streams.info(names.deadStream).catch((err: unknown) => {
    if (isApiError(err, ApiErrorCode.StreamNotFound)) return undefined;
    throw err;
  });
  const out: ListedDeadLetter[] = [];
  if (!info || info.state.messages === 0) return out;
  // Bounded: what others aimed into the stream is skipped, but never read without end.
  const floor = Math.max(info.state.first_seq, info.state.last_seq - limit - SCAN_SLACK);
  for (let seq = info.state.last_seq; seq >= floor && out.length < limit; seq--) {
    const m = await jsm.streams.getMessage(names.deadStream, { seq }).catch(() => null);
    if (!m || !published(m.header) || (queue !== undefined && m.subject !== names.deadLetters(queue))) continue;
    const letter = DeadLetterSchema.safeParse(parseJsonOrUndefined(m.string()));
    if (letter.success && m.subject === names.deadLetters(letter.data.queue)) out.push({ ...letter.data, seq });
  }
  return out;
}

/**
 * Puts a dead letter's job back on the queue and skill the letter names (those of the stream the
 * job was taken from), under the same job id (so its calls keep their idempotency key), and
 * removes the letter. A letter whose job is not a job of that queue and skill cannot be requeued
 * (INVALID_INPUT); one that is not there is NOT_FOUND.
 *
 * Run twice (a crash between the publish and the removal): the job is published again under the
 * same deduplication id, which the queue takes once within its window.
 */
export async function requeueDeadLetter(
  jsm: JetStreamManager,
  nc: NatsConnection,
  seq: number,
  names: FleetNames = DEFAULT_FLEET_NAMES,
): Promise<{ id: string; queue: string; skill: string; seq: number }> {
  const m = await jsm.streams.getMessage(names.deadStream, { seq }).catch(() => null);
  const letter = m ? DeadLetterSchema.safeParse(parseJsonOrUndefined(m.string())) : undefined;
  if (!m || !published(m.header) || !letter?.success || m.subject !== names.deadLetters(letter.data.queue))
    throw new ThymosError(ErrorCode.NOT_FOUND, `no dead letter ${seq} (thymos jobs dead lists them)`);
  const { queue, skill } = letter.data;
  const job = JobSchema.safeParse(letter.data.job);
  if (!job.success)
    throw new ThymosError(ErrorCode.INVALID_INPUT, `dead letter ${seq} holds no job to requeue (${letter.data.reason.message})`);
  if (job.data.queue !== queue || job.data.skill !== skill) {
    throw new ThymosError(
      ErrorCode.INVALID_INPUT,
      `dead letter ${seq} holds a job that says ${job.data.queue}/${job.data.skill} but was taken from ${queue}/${skill}: its workers would give it up again`,
    );
  }
  // A requeued job keeps its id; the stream deduplicates by another, so it is not taken for the first publish.
  const ack = await publishOwn(
    jsm,
    nc,
    names.jobStream(queue),
    names.job(queue, skill),
    JSON.stringify(job.data),
    `${job.data.id}~requeued-${seq}`,
  );
  await jsm.streams.deleteMessage(names.deadStream, seq, false);
  return { id: job.data.id, queue, skill, seq: ack.seq };
}
