import { z } from 'zod';

/** A queue's or a skill's name: a NATS subject token. */
const TOKEN = /^[a-z][a-z0-9_]{0,31}$/;

export const SkillNameSchema = z.string().regex(TOKEN, 'expected lower-case letters, digits and underscores, starting with a letter (at most 32)');
/** `dead` is not a queue's name: the dead letters of every queue live under `<fleet>.jobs.dead`. */
export const QueueNameSchema = SkillNameSchema.refine((name) => name !== 'dead', '"dead" names where dead letters live; choose another queue name');

/** A work queue: how often a job is delivered, how long a worker has to answer. */
export const QueueSchema = z
  .object({
    maxDeliver: z.number().int().min(1).max(100).default(5),
    ackWaitMs: z.number().int().min(1000).max(3_600_000).default(60_000),
  })
  .strict();
export type Queue = z.infer<typeof QueueSchema>;

/** What is wrong with a domain's queues and its agents' skills, as [path, message]: a queue an agent serves that is not declared, queues served with no skill. */
export function queueProblems(domain: { agents: Record<string, { skills: string[]; queues: string[] }>; queues: Record<string, Queue> }): Array<[string, string]> {
  const declared = Object.keys(domain.queues);
  const problems: Array<[string, string]> = [];
  for (const [id, agent] of Object.entries(domain.agents)) {
    for (const q of agent.queues) if (!Object.hasOwn(domain.queues, q)) problems.push([`agents.${id}.queues`, `no queue "${q}"; expected one of ${declared.join(', ') || '(none declared in queues)'}`]);
    if (agent.queues.length > 0 && agent.skills.length === 0) problems.push([`agents.${id}.skills`, 'it serves queues but has no skills: name the kinds of job it takes']);
  }
  return problems;
}

/** The skills each queue's jobs go to, by queue: the skills of the agents that serve it (sorted, once each). */
export function queueSkills(domain: { agents: Record<string, { skills: string[]; queues: string[] }>; queues: Record<string, Queue> }): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const queue of Object.keys(domain.queues)) {
    const skills = new Set<string>();
    for (const agent of Object.values(domain.agents)) if (agent.queues.length === 0 || agent.queues.includes(queue)) for (const s of agent.skills) skills.add(s);
    out.set(queue, [...skills].sort());
  }
  return out;
}
