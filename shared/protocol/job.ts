import { randomUUID } from 'node:crypto';

import { z } from 'zod';

import { QueueNameSchema, SkillNameSchema } from '../domain/queue-schema.js';
import { parseInput } from '../errors/zod-issues.js';

/** The most a job's payload may weigh, as JSON. */
export const JOB_PAYLOAD_MAX_BYTES = 65_536;

/** A job's id: also the stream's deduplication id, so a job published twice under one id is one job. */
export const JobIdSchema = z.string().regex(/^[A-Za-z0-9_.:-]{1,128}$/, 'letters, digits, _ . : or -, at most 128');

/** What a job loop publishes: the queue, the skill it needs, what to do, and its id (made up when left out). */
export const JobInputSchema = z
  .object({
    queue: QueueNameSchema,
    skill: SkillNameSchema,
    payload: z
      .unknown()
      .refine((p) => p !== undefined, 'expected a payload (any JSON value)')
      .refine((p) => Buffer.byteLength(JSON.stringify(p) ?? '') <= JOB_PAYLOAD_MAX_BYTES, `at most ${JOB_PAYLOAD_MAX_BYTES} bytes as JSON`),
    id: JobIdSchema.optional(),
  })
  .strict();

/** A job as it travels on `<fleet>.jobs.<queue>.<skill>`. */
export const JobSchema = z.object({
  id: JobIdSchema,
  queue: QueueNameSchema,
  skill: SkillNameSchema,
  payload: z
    .unknown()
    .refine((p) => Buffer.byteLength(JSON.stringify(p) ?? '') <= JOB_PAYLOAD_MAX_BYTES, `at most ${JOB_PAYLOAD_MAX_BYTES} bytes as JSON`),
  /** ISO 8601 time it was published. */
  published_at: z.iso.datetime({ offset: true }),
});
export type Job = z.infer<typeof JobSchema>;

/** Validates a job at the edge and fills in its id and time; the error names the field and what came. */
export function parseJob(raw: unknown, where = 'job'): Job {
  const j = parseInput(JobInputSchema, raw, where);
  return { id: j.id ?? randomUUID(), queue: j.queue, skill: j.skill, payload: j.payload, published_at: new Date().toISOString() };
}

/** The backlog of one skill of one queue, as `jobs ls` shows it. */
export const SkillBacklogSchema = z.object({
  queue: z.string(),
  skill: z.string(),
  /** Jobs not yet handed to a worker. */
  waiting: z.number().int().nonnegative(),
  /** Jobs delivered and not acknowledged: held by a worker, or handed back and waiting to be delivered again (after a back-off). */
  in_progress: z.number().int().nonnegative(),
  /** How long the oldest job not yet done has waited, in ms; 0 when none. */
  oldest_ms: z.number().nonnegative(),
  /** Deliveries the skill's consumer has made so far, redeliveries included: between two reads, whether any job was taken, however quickly it was done. */
  delivered: z.number().int().nonnegative(),
  /** Whether an agent of the domain has the skill for this queue. */
  served: z.boolean(),
});
export type SkillBacklog = z.infer<typeof SkillBacklogSchema>;

/** A job given up on, as it is kept on `<fleet>.jobs.dead.<queue>`: the job, why, after how many deliveries, who gave up. */
export const DeadLetterSchema = z.object({
  /** The job as it was published, or what came when it was not a job. */
  job: z.unknown(),
  queue: z.string(),
  skill: z.string(),
  reason: z.object({ code: z.string(), message: z.string() }),
  attempts: z.number().int().nonnegative(),
  /** The agent that gave up on it, or `supervisor` for a worker that died on its last delivery. */
  agent: z.string(),
  at: z.iso.datetime({ offset: true }),
});
export type DeadLetter = z.infer<typeof DeadLetterSchema>;

/**
 * What a worker says when it gives a job up (`<fleet>.agent.<id>.supervisor.job_give_up`): which
 * delivery (the queue, the skill, the job's place in the queue's stream) and why. The supervisor
 * takes the job itself from the stream and who gave up from the subject, never from this.
 */
export const JobGiveUpSchema = z
  .object({
    queue: QueueNameSchema,
    skill: SkillNameSchema,
    seq: z.number().int().positive(),
    attempts: z.number().int().positive(),
    reason: z.object({ code: z.string().min(1).max(64), message: z.string().max(2000) }).strict(),
  })
  .strict();
export type JobGiveUp = z.infer<typeof JobGiveUpSchema>;

/** A dead letter as `jobs dead` lists it: with its place in the dead-letter stream, which `requeue` takes. */
export const ListedDeadLetterSchema = DeadLetterSchema.extend({ seq: z.number().int().positive() });
export type ListedDeadLetter = z.infer<typeof ListedDeadLetterSchema>;

/**
 * The deduplication id of a job's dead letter: its queue, its id and its place in the queue's
 * stream, so a worker and the supervisor (from the advisory) write one letter between them, and
 * two queues' jobs of one id are two letters.
 */
export function deadLetterId(queue: string, jobId: string, streamSeq: number): string {
  return `${queue}:${jobId}:dead:${streamSeq}`;
}
