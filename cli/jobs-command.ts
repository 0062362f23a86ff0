import { connect } from '../client/fleet-client.js';
import { ErrorCode, ExitCode, ThymosError } from '../shared/errors/index.js';
import { parseJsonOrUndefined } from '../shared/protocol/index.js';
import { printable } from './approvals-command.js';
import { commandNamed, usageLine } from './command-book.js';
import { type FleetArgs, parseFleetArgs } from './fleet-args.js';
import { formatAge, renderTable } from './table.js';

const out = (text: string) => process.stdout.write(`${text}\n`);

/** `thymos jobs publish|ls|dead|requeue …`: the work queues, one function an action. */
export async function runJobsCommand(argv: string[]): Promise<number> {
  const spec = commandNamed('jobs')!;
  const usage = usageLine(spec);
  const args = parseFleetArgs(argv, spec, { min: 1, max: 4 });
  const [action, ...rest] = args.positionals as [string, ...string[]];
  switch (action) {
    case 'publish':
      return publishJob(args, rest, usage);
    case 'ls':
      return listQueues(args, rest, usage);
    case 'dead':
      return listDeadLetters(args, rest, usage);
    case 'requeue':
      return requeueDeadLetter(args, rest, usage);
    default:
      throw new ThymosError(ErrorCode.USAGE, `jobs: expected publish, ls, dead or requeue, got ${JSON.stringify(action)}\nusage: ${usage}`);
  }
}

/** `jobs publish QUEUE SKILL [JSON]`: one job for a skill, kept once per `--id`. */
async function publishJob(args: FleetArgs, rest: string[], usage: string): Promise<number> {
  if (rest.length < 2 || rest.length > 3)
    throw new ThymosError(ErrorCode.USAGE, `jobs publish: expected QUEUE SKILL and a JSON payload\nusage: ${usage}`);
  const [queue, skill, json = '{}'] = rest as [string, string, string?];
  const payload = parseJsonOrUndefined(json);
  if (payload === undefined)
    throw new ThymosError(ErrorCode.USAGE, `jobs publish: the payload is not JSON: ${JSON.stringify(json.slice(0, 60))}\nusage: ${usage}`);
  const id = typeof args.values.id === 'string' ? args.values.id : undefined;
  const fleet = await connect(args.config);
  try {
    const sent = await fleet.jobs.publish(queue, skill, payload, id === undefined ? {} : { id });
    if (args.json) out(JSON.stringify(sent));
    else
      out(
        sent.duplicate
          ? `job ${sent.id} was published before: it is the same job (nothing new queued)`
          : `job ${sent.id} queued for ${skill} on ${queue} (seq ${sent.seq})`,
      );
    return ExitCode.OK;
  } finally {
    await fleet.close();
  }
}

/** `jobs ls [QUEUE]`: each skill's backlog, and whether an agent has the skill. */
async function listQueues(args: FleetArgs, rest: string[], usage: string): Promise<number> {
  if (rest.length > 1) throw new ThymosError(ErrorCode.USAGE, `jobs ls: expected at most a QUEUE\nusage: ${usage}`);
  const fleet = await connect(args.config);
  try {
    const rows = await fleet.jobs.list(rest[0]);
    if (args.json) out(JSON.stringify(rows, null, 2));
    else if (rows.length === 0) out('no work queue has jobs or skills (declare queues in the domain, and skills on agents)');
    else
      out(
        renderTable(
          ['QUEUE', 'SKILL', 'WAITING', 'IN PROGRESS', 'OLDEST', 'SERVED'],
          rows.map((r) => [
            r.queue,
            r.skill,
            String(r.waiting),
            String(r.in_progress),
            r.oldest_ms > 0 ? formatAge(new Date(Date.now() - r.oldest_ms).toISOString()) : '-',
            r.served ? 'yes' : 'no agent has it',
          ]),
        ),
      );
    return ExitCode.OK;
  } finally {
    await fleet.close();
  }
}

/** `jobs dead [QUEUE] [--limit N]`: the jobs given up on, newest first. */
async function listDeadLetters(args: FleetArgs, rest: string[], usage: string): Promise<number> {
  if (rest.length > 1) throw new ThymosError(ErrorCode.USAGE, `jobs dead: expected at most a QUEUE\nusage: ${usage}`);
  const limit = typeof args.values.limit === 'string' ? Number(args.values.limit) : undefined;
  if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1 && limit <= 1000))
    throw new ThymosError(
      ErrorCode.USAGE,
      `--limit: expected a whole number from 1 to 1000, got ${JSON.stringify(args.values.limit)}\nusage: ${usage}`,
    );
  const fleet = await connect(args.config);
  try {
    const letters = await fleet.jobs.dead({
      ...(rest[0] !== undefined ? { queue: rest[0] } : {}),
      ...(limit !== undefined ? { limit } : {}),
    });
    if (args.json) out(JSON.stringify(letters, null, 2));
    else if (letters.length === 0) out('no dead letters');
    else
      out(
        renderTable(
          ['SEQ', 'QUEUE', 'SKILL', 'JOB', 'ATTEMPTS', 'CODE', 'REASON', 'BY', 'AT'],
          letters.map((l) => [
            String(l.seq),
            l.queue,
            l.skill,
            jobId(l.job),
            String(l.attempts),
            l.reason.code,
            printable(l.reason.message.slice(0, 80)),
            l.agent,
            l.at,
          ]),
        ),
      );
    return ExitCode.OK;
  } finally {
    await fleet.close();
  }
}

/** `jobs requeue SEQ`: one dead letter's job back on its queue. */
async function requeueDeadLetter(args: FleetArgs, rest: string[], usage: string): Promise<number> {
  const seq = Number(rest[0]);
  if (rest.length !== 1 || !(Number.isInteger(seq) && seq > 0))
    throw new ThymosError(
      ErrorCode.USAGE,
      `jobs requeue: expected the SEQ of one dead letter (thymos jobs dead lists them)\nusage: ${usage}`,
    );
  const fleet = await connect(args.config);
  try {
    const back = await fleet.jobs.requeue(seq);
    if (args.json) out(JSON.stringify(back));
    else out(`job ${back.id} is back on ${back.queue} for ${back.skill}`);
    return ExitCode.OK;
  } finally {
    await fleet.close();
  }
}

/** A dead letter's job id, or "-" when what was given up on was not a job. */
function jobId(job: unknown): string {
  const id = job !== null && typeof job === 'object' ? (job as { id?: unknown }).id : undefined;
  return typeof id === 'string' ? printable(id) : '-';
}
