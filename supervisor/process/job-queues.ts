import type { JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';

import type { ThymosConfig } from '../../shared/config/thymos-config.js';
import { type DomainSchema } from '../../shared/domain/domain-schema.js';
import { queueSkills } from '../../shared/domain/queue-schema.js';
import { ErrorCode, ThymosError } from '../../shared/errors/errors.js';
import { watchLastDeliveries } from '../../shared/nats/dead-letter-watch.js';
import { deadLetters, giveUpJob, requeueDeadLetter } from '../../shared/nats/dead-letters.js';
import { ensureJobQueues, jobBacklog } from '../../shared/nats/job-queue.js';
import { domainWork } from '../../shared/nats/nats-permissions.js';
import { type CleanupStack } from '../../shared/platform/cleanup-stack.js';
import { type Logger } from '../../shared/platform/logger.js';
import { type FleetNames } from '../../shared/protocol/fleet-names.js';
import type { JobGiveUp, ListedDeadLetter, SkillBacklog } from '../../shared/protocol/job.js';
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
  if (jsm) await ensureJobQueues(jsm, domain.queues, skills, names);
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
