import type { JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';

import type { ThymosConfig } from '../../shared/config/index.js';
import { type DomainSchema, queueSkills } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import {
  deadLetters,
  domainWork,
  ensureJobQueues,
  giveUpJob,
  jobBacklog,
  requeueDeadLetter,
  watchLastDeliveries,
} from '../../shared/nats/index.js';
import { type CleanupStack, type Logger } from '../../shared/platform/index.js';
import { type FleetNames, type JobGiveUp, type ListedDeadLetter, type SkillBacklog } from '../../shared/protocol/index.js';
import { fleetPins } from '../reconcile/pins.js';
import { type WorkerState, WorkScores } from '../relevance/work-scores.js';

/** What the supervisor answers about the work queues, and the work relevance when the domain declares it. */
export interface JobQueues {
  work: WorkScores | undefined;
  backlog(queue?: string): Promise<SkillBacklog[]>;
  dead(limit: number, queue?: string): Promise<ListedDeadLetter[]>;
  requeue(seq: number): Promise<{ id: string; queue: string; skill: string; seq: number }>;
  giveUp(agent: string, request: JobGiveUp): Promise<{ seq: number; duplicate: boolean }>;
}

/** The work queues: a stream per queue, a consumer per skill that serves it (shared/nats/job-queue.ts); their backlog and dead letters. */
export async function openJobQueues(
  jsm: JetStreamManager | undefined,
  nc: NatsConnection,
  domain: DomainSchema,
  names: FleetNames,
  config: ThymosConfig,
  logger: Logger,
  cleanup: CleanupStack,
  entry: (id: string) => WorkerState | undefined,
): Promise<JobQueues> {
  const skills = queueSkills(domain);
  if (jsm) await ensureJobQueues(jsm, domain.queues, skills, names, config.cluster.replicas);
  // A worker that died on a job's last delivery: the job is caught from the advisory.
  const watch = jsm ? watchLastDeliveries(nc, jsm, Object.keys(domain.queues), names, logger) : undefined;
  cleanup.push(() => watch?.unsubscribe());
  const js = () => {
    if (!jsm) throw new ThymosError(ErrorCode.NATS_UNAVAILABLE, 'the NATS server has no JetStream: there are no work queues');
    return jsm;
  };
  const backlog = async (queue?: string) =>
    jsm ? jobBacklog(jsm, queue === undefined ? Object.keys(domain.queues) : [queue], skills, names) : [];
  return {
    work:
      domain.workRelevance && jsm
        ? new WorkScores({
            domain,
            settings: domain.workRelevance,
            lifecycle: config.lifecycle,
            backlog,
            logger,
            concurrency: config.jobs.concurrency,
            entry,
            pins: fleetPins(domain, config),
          })
        : undefined,
    backlog,
    dead: async (limit, queue) => (jsm ? deadLetters(jsm, limit, queue, names) : []),
    requeue: (seq) => requeueDeadLetter(js(), nc, seq, names),
    giveUp: (agent, request) => giveUpJob(js(), nc, agent, request, domainWork(domain), names),
  };
}
