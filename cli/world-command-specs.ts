import { type CommandSpec, fleetOptions } from './command-spec.js';

/** What the agents share: world events, the work queues and the world tables. */
export const WORLD_COMMANDS: readonly CommandSpec[] = [
  {
    name: 'publish',
    args: 'TYPE [\'{"summary":"…"}\']',
    summary: 'Publish a world event; agents whose event filters match remember it (Dormant ones on waking)',
    options: {
      tags: { type: 'string', value: 'a,b', help: 'tags the event carries' },
      location: { type: 'string', value: 'L', help: 'where it happened' },
      mentions: { type: 'string', value: 'a,b', help: 'agents it names' },
      source: { type: 'string', value: 'S', help: 'who published it (default: game)' },
      id: { type: 'string', value: 'ID', help: 'its id: an event published twice with one id is kept once' },
      ...fleetOptions,
    },
    examples: [
      `thymos publish tavern.brawl '{"summary":"A brawl broke out at the Drowned Lantern"}' --location tavern --mentions bram_smith`,
    ],
  },
  {
    name: 'jobs',
    args: 'publish QUEUE SKILL [\'{"order_id":"…"}\'] | ls [QUEUE] | dead [QUEUE] | requeue SEQ',
    summary: "The work queues: publish a job for a skill, see each skill's backlog, the dead letters, and put one back",
    details:
      "A job published twice with one --id within an hour is one job. ls shows what waits, what is being worked, the oldest job's age and whether an agent has the skill.",
    options: {
      id: { type: 'string', value: 'ID', help: "publish only: the job's id (letters, digits, _ . : -); made up when left out" },
      limit: { type: 'string', value: 'N', help: 'dead only: the newest N letters (default 50)' },
      ...fleetOptions,
    },
    examples: [
      `thymos jobs publish support billing '{"ticket":"T-1001","text":"I was charged twice"}' --id T-1001`,
      'thymos jobs ls',
      'thymos jobs dead support',
      'thymos jobs requeue 12',
    ],
  },
  {
    name: 'world',
    args: 'tables | get TABLE ID | set TABLE ID JSON | patch TABLE ID JSON | delete TABLE ID | query TABLE',
    summary: 'Read and write the shared world tables the Pkl schema declares (worldTables)',
    details:
      'query takes --where FIELD OP VALUE with OP one of = != < <= > >= ~ (~ is contains), or a JSON condition\n' +
      'such as \'{"field":"status","op":"in","value":["open","taken"]}\'; --order FIELD[:desc]; --limit N.',
    options: {
      where: { type: 'string', multiple: true, value: 'FIELD=VALUE', help: 'query only: a condition, repeatable' },
      order: { type: 'string', value: 'FIELD[:desc]', help: 'query only: the order of the rows' },
      limit: { type: 'string', value: 'N', help: 'query only: rows at most' },
      ...fleetOptions,
    },
    examples: [
      'thymos world tables',
      `thymos world set quest wolves '{"title":"Wolves at the mill","status":"open"}'`,
      'thymos world query quest --where status=open --order title',
    ],
  },
];
