import { z } from 'zod';

/** A queue's or a skill's name: a NATS subject token. */
const TOKEN = /^[a-z][a-z0-9_]{0,31}$/;

export const SkillNameSchema = z
  .string()
  .regex(TOKEN, 'expected lower-case letters, digits and underscores, starting with a letter (at most 32)');
/** `dead` is not a queue's name: the dead letters of every queue live under `<fleet>.jobs.dead`. */
export const QueueNameSchema = SkillNameSchema.refine(
  (name) => name !== 'dead',
  '"dead" names where dead letters live; choose another queue name',
);

/** A work queue: how often a job is delivered, how long between deliveries after a failure, how long a worker has to answer, how long one delivery may be worked. */
export const QueueSchema = z
  .object({
    maxDeliver: z.number().int().min(1).max(100).default(5),
    /** Empty (as Pkl leaves it unless set): 1 s, 5 s, 30 s. */
    backoffMs: z
      .array(z.number().int().min(0).max(86_400_000))
      .default([])
      .transform((ms) => (ms.length > 0 ? ms : [1000, 5000, 30_000])),
    ackWaitMs: z.number().int().min(1000).max(3_600_000).default(60_000),
    maxWorkMs: z.number().int().min(1000).max(86_400_000).default(600_000),
  })
  .strict();
export type Queue = z.infer<typeof QueueSchema>;

/** What is wrong with a domain's queues and its agents' skills, as [path, message]: a queue an agent serves that is not declared, queues served with no skill. */
export function queueProblems(domain: {
  agents: Record<string, { skills: string[]; queues: string[] }>;
  queues: Record<string, Queue>;
}): Array<[string, string]> {
  const declared = Object.keys(domain.queues);
  const problems: Array<[string, string]> = [];
  for (const [id, agent] of Object.entries(domain.agents)) {
    for (const q of agent.queues)
      if (!Object.hasOwn(domain.queues, q))
        problems.push([`agents.${id}.queues`, `no queue "${q}"; expected one of ${declared.join(', ') || '(none declared in queues)'}`]);
    if (agent.queues.length > 0 && agent.skills.length === 0)
      problems.push([`agents.${id}.skills`, 'it serves queues but has no skills: name the kinds of job it takes']);
  }
  return problems;
}

/** The skills each queue's jobs go to, by queue: the skills of the agents that serve it (sorted, once each). */
export function queueSkills(domain: {
  agents: Record<string, { skills: string[]; queues: string[] }>;
  queues: Record<string, Queue>;
}): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const queue of Object.keys(domain.queues)) {
    const skills = new Set<string>();
    for (const agent of Object.values(domain.agents))
      if (agent.queues.length === 0 || agent.queues.includes(queue)) for (const s of agent.skills) skills.add(s);
    out.set(queue, [...skills].sort());
  }
  return out;
}

/** One queue and skill an agent takes jobs of, with the queue's settings. */
export interface Work {
  queue: string;
  skill: string;
  settings: Queue;
}

/** What an agent takes jobs of: each skill of it on each queue it serves (every declared queue when it names none). */
export function workOf(agent: { skills: string[]; queues: string[] }, queues: Readonly<Record<string, Queue>>): Work[] {
  const served = agent.queues.length > 0 ? agent.queues : Object.keys(queues);
  return served.flatMap((queue) => (queues[queue] ? agent.skills.map((skill) => ({ queue, skill, settings: queues[queue]! })) : []));
}

/** The wait before delivery `attempt + 1` after a failure of delivery `attempt` (1-based): the back-off's entry, the last repeating. */
export function backoffAfter(settings: Queue, attempt: number): number {
  return settings.backoffMs[Math.min(Math.max(attempt - 1, 0), settings.backoffMs.length - 1)] ?? 0;
}

/**
 * Relevance from the work waiting: each agent with skills is scored from its skills' backlog,
 * which the supervisor reads from JetStream every `everyMs` and reconciles the workers by.
 */
export const WorkRelevanceSchema = z
  .object({
    /** This many jobs of one of its skills waiting or in hand make an agent fully relevant. */
    fullBacklog: z.number().int().min(1).default(10),
    /** A job waiting this long makes it fully relevant, however few wait. */
    urgentAfterMs: z.number().int().min(1).default(30_000),
    /** After a skill's last job (waiting, in hand, or taken and done between two reads), its workers stay Active this long, taking the next job at once. */
    keepActiveMs: z.number().int().min(0).default(10_000),
    /** Past `keepActiveMs` without a job, the score halves every this long, from `threshold_active` down: Listening, then Dormant. */
    lullHalfLifeMs: z.number().int().min(1).default(60_000),
    /** How often the backlog is read and the workers reconciled. */
    everyMs: z.number().int().min(250).max(600_000).default(2000),
  })
  .strict();
export type WorkRelevance = z.infer<typeof WorkRelevanceSchema>;
