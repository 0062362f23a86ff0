import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  type JetStreamManager,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
} from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';

import type { StreamReplicas } from '../config/cluster-settings.js';
import type { Queue } from '../domain/queue-schema.js';
import { ErrorCode, ThymosError } from '../errors/errors.js';
import { DEFAULT_FLEET_NAMES, type FleetNames } from '../protocol/fleet-names.js';
import type { Job, SkillBacklog } from '../protocol/job.js';
import { ApiErrorCode, isApiError } from './api-error.js';
import { placeStream, type PublishOptions, updateStream } from './stream-replicas.js';

const NS_PER_MS = 1_000_000;
/** How long a job id is remembered for deduplication. */
export const JOB_DEDUP_WINDOW_MS = 60 * 60 * 1000;
/** How long dead letters are kept. */
const DEAD_LETTERS_KEPT_MS = 30 * 24 * 60 * 60 * 1000;
/**
 * The most dead letters, and bytes of them, the stream keeps: past either the oldest go first.
 * Whatever is aimed into it (nats-server's answers to pulls an agent names it for) fills a
 * bounded stream, not the disk.
 */
export const DEAD_LETTERS_MAX = { max_msgs: 100_000, max_bytes: 512 * 1024 * 1024 } as const;

/**
 * One stream per declared queue (work-queue retention: a job is gone once acknowledged), one
 * durable consumer per skill that serves it (shared by the agents with the skill: each job goes
 * to one of them), and the dead-letter stream. A queue's `maxDeliver` and `ackWaitMs` are its
 * consumers'; a consumer whose settings changed is updated. Consumers of skills no agent has any
 * more are left: their jobs wait, and `jobs ls` shows them unserved. Every stream is kept on
 * `replicas` nodes (`[cluster] replicas`), one kept on another number brought to it, and its
 * consumers on as many as it.
 */
export async function ensureJobQueues(
  jsm: JetStreamManager,
  queues: Readonly<Record<string, Queue>>,
  skills: ReadonlyMap<string, readonly string[]>,
  names: FleetNames = DEFAULT_FLEET_NAMES,
  replicas: StreamReplicas = 1,
): Promise<void> {
  // A fleet without queues has no job streams, not even the dead letters'.
  if (Object.keys(queues).length === 0) return;
  type Limits = { max_age: number; max_msgs?: number; max_bytes?: number };
  const streams: Array<[string, string, RetentionPolicy, Limits]> = [
    ...Object.keys(queues).map((q): [string, string, RetentionPolicy, Limits] => [
      names.jobStream(q),
      names.queueJobs(q),
      RetentionPolicy.Workqueue,
      { max_age: 0 },
    ]),
    [names.deadStream, names.allDeadLetters, RetentionPolicy.Limits, { max_age: DEAD_LETTERS_KEPT_MS * NS_PER_MS, ...DEAD_LETTERS_MAX }],
  ];
  for (const [name, subject, retention, limits] of streams) {
    let c: StreamConfig;
    try {
      c = (await jsm.streams.info(name)).config;
    } catch (err) {
      if (!isApiError(err, ApiErrorCode.StreamNotFound))
        throw new ThymosError(ErrorCode.NATS_UNAVAILABLE, `JetStream: ${(err as Error).message}`, { cause: err });
      // Direct get: the oldest job of a skill is read by subject (jobBacklog).
      const made = jsm.streams.add({
        name,
        subjects: [subject],
        retention,
        storage: StorageType.File,
        ...limits,
        duplicate_window: JOB_DEDUP_WINDOW_MS * NS_PER_MS,
        allow_direct: true,
        num_replicas: replicas,
      });
      await placeStream(made, name, replicas);
      continue;
    }
    // A dead-letter stream made before it was bounded is bounded now.
    const bounds =
      limits.max_msgs !== undefined && (c.max_msgs !== limits.max_msgs || c.max_bytes !== limits.max_bytes)
        ? { max_msgs: limits.max_msgs, max_bytes: limits.max_bytes }
        : {};
    if (Object.keys(bounds).length > 0 || c.num_replicas !== replicas) await updateStream(jsm, name, c, replicas, bounds);
  }
  for (const [queue, settings] of Object.entries(queues)) {
    for (const skill of skills.get(queue) ?? []) {
      const config = { max_deliver: settings.maxDeliver, ack_wait: settings.ackWaitMs * NS_PER_MS };
      const stream = names.jobStream(queue);
      const durable = names.skillConsumer(skill);
      try {
        const c = (await jsm.consumers.info(stream, durable)).config;
        if (c.max_deliver !== config.max_deliver || c.ack_wait !== config.ack_wait) await jsm.consumers.update(stream, durable, config);
      } catch (err) {
        if (!isApiError(err, ApiErrorCode.ConsumerNotFound)) throw err;
        await jsm.consumers.add(stream, {
          durable_name: durable,
          filter_subject: names.job(queue, skill),
          ack_policy: AckPolicy.Explicit,
          deliver_policy: DeliverPolicy.All,
          ...config,
        });
      }
    }
  }
}

/**
 * Publishes a job to `<fleet>.jobs.<queue>.<skill>`, its id the stream's deduplication id: a job
 * published again under the same id within an hour is the same job (`duplicate`). Tried
 * `options.attempts` times while no stream answers, under the job's id each time. A queue the
 * fleet does not have is NOT_FOUND (on a cluster, once the tries are spent: a stream electing a
 * leader answers no one either).
 */
export async function publishJob(
  nc: NatsConnection,
  job: Job,
  names: FleetNames = DEFAULT_FLEET_NAMES,
  options: PublishOptions = {},
): Promise<{ seq: number; duplicate: boolean }> {
  const attempts = options.attempts ?? 1;
  try {
    const ack = await jetstream(nc).publish(names.job(job.queue, job.skill), JSON.stringify(job), { msgID: job.id, retries: attempts });
    return { seq: ack.seq, duplicate: ack.duplicate };
  } catch (err) {
    // No stream takes the subject: nats.js says "jetstream is not enabled" (no responders).
    if (/no responders|not enabled/i.test(`${(err as Error).message} ${((err as Error).cause as Error | undefined)?.message ?? ''}`)) {
      const restart = "declare it in the domain's queues and restart the fleet (thymos down, thymos up)";
      throw new ThymosError(
        ErrorCode.NOT_FOUND,
        attempts === 1
          ? `no queue "${job.queue}" in this fleet: ${restart}`
          : `no stream of queue "${job.queue}" answered in ${attempts} tries: the fleet has no such queue (${restart}), or its stream has no leader (nodes of the nats-server cluster down)`,
        { cause: err },
      );
    }
    throw new ThymosError(ErrorCode.NATS_UNAVAILABLE, `publishing job ${job.id}: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * The backlog of every skill of every queue the fleet has: what waits, what is being worked, how
 * old the oldest job not yet done is. Skills nobody serves but that have jobs are listed too.
 */
export async function jobBacklog(
  jsm: JetStreamManager,
  queues: readonly string[],
  served: ReadonlyMap<string, readonly string[]>,
  names: FleetNames = DEFAULT_FLEET_NAMES,
): Promise<SkillBacklog[]> {
  // Every queue, and every skill of each, asked at once: a round costs about one round trip, not one per skill.
  const perQueue = await Promise.all(
    queues.map(async (queue) => {
      const stream = names.jobStream(queue);
      const info = await jsm.streams.info(stream, { subjects_filter: names.queueJobs(queue) }).catch((err: unknown) => {
        if (isApiError(err, ApiErrorCode.StreamNotFound)) return undefined;
        throw err;
      });
      if (!info) return [];
      const counts = info.state.subjects ?? {};
      const skills = new Set([...(served.get(queue) ?? []), ...Object.keys(counts).map((s) => s.slice(s.lastIndexOf('.') + 1))]);
      return Promise.all(
        [...skills].sort().map(async (skill): Promise<SkillBacklog> => {
          const total = counts[names.job(queue, skill)] ?? 0;
          const [consumer, oldest] = await Promise.all([
            jsm.consumers.info(stream, names.skillConsumer(skill)).catch(() => undefined),
            total > 0 ? oldestAge(jsm, stream, names.job(queue, skill)) : 0,
          ]);
          const inProgress = consumer?.num_ack_pending ?? 0;
          return {
            queue,
            skill,
            waiting: Math.max(total - inProgress, 0),
            in_progress: inProgress,
            oldest_ms: oldest,
            delivered: consumer?.delivered.consumer_seq ?? 0,
            served: (served.get(queue) ?? []).includes(skill),
          };
        }),
      );
    }),
  );
  return perQueue.flat();
}

/** How long ago the oldest message on `subject` still in the stream was published (in a work queue: the oldest job not yet done). */
async function oldestAge(jsm: JetStreamManager, stream: string, subject: string): Promise<number> {
  try {
    const m = await jsm.direct.getMessage(stream, { next_by_subj: subject, seq: 1 });
    return m ? Math.max(Date.now() - m.time.getTime(), 0) : 0;
  } catch (err) {
    if (isApiError(err, ApiErrorCode.NoMessage)) return 0;
    throw err;
  }
}
