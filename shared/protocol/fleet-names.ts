import { DEFAULT_FLEET_NAME, FleetNameSchema } from '../config/fleet-settings.js';

/** The header that says who sent a request (program#pid@host): on NATS requests to the supervisor, and on a Thymos client's MCP requests to an agent. */
export const REQUESTER_HEADER = 'Thymos-By';

/**
 * Every NATS name a fleet uses — subjects, JetStream streams and durable consumers — in
 * one place, each derived from the fleet's name (`[fleet] name`). Agent ids are validated
 * (`AgentIdSchema`) before they reach these functions, so they never carry `.`, `*` or `>`.
 * A new subject, stream, consumer or bucket is added here, never spelled out elsewhere.
 *
 * @example
 * const names = new FleetNames(config.fleet.name);
 * names.agentControl('elder_rowan'); // "thymos.agent.elder_rowan.control"
 */
export class FleetNames {
  /** The fleet's name, e.g. `thymos`. */
  readonly fleet: string;
  /** JetStream stream that carries every world event, e.g. `THYMOS_EVENTS`. */
  readonly eventStream: string;
  /** Every event subject of the client (game loop, job system, CLI): `<fleet>.events.>`. */
  readonly allEvents: string;
  /** Every event subject of an agent: `<fleet>.agent.*.events.>` (see `agentEvent`). */
  readonly allAgentEvents: string;
  /** JetStream stream of the events each agent hears, routed by the supervisor, e.g. `THYMOS_HEARD`. */
  readonly heardStream: string;
  /** Every agent's heard subject: `<fleet>.agent.*.heard`. */
  readonly allHeard: string;
  /** The supervisor's durable consumer on the event stream, which routes each event to its hearers. */
  readonly routerConsumer = 'events_router';
  /** JetStream stream that keeps agent-to-agent messages until the addressee takes them, e.g. `THYMOS_INBOX`. */
  readonly inboxStream: string;
  /** Every inbox subject: `<fleet>.agent.*.inbox.*` (addressee, then sender). */
  readonly allInboxes: string;
  /** Every agent's status, for the supervisor. */
  readonly allAgentStatus: string;
  /** Every agent's decisions. */
  readonly allAgentDecisions: string;
  /** The fleet's embedding service: texts in, vectors out. */
  readonly embed: string;
  /** Which model the embedding service runs. */
  readonly embedInfo: string;
  /** The fleet's concept service: texts in, the people, places and organisations each names out. */
  readonly concepts: string;
  /** KV bucket of a fleet on several hosts: each host's lease and which host holds which agent, e.g. `THYMOS_PLACEMENT`. */
  readonly placementBucket: string;
  /** KV bucket of a fleet on several hosts: each agent's NATS key, sealed, for the host that starts it, e.g. `THYMOS_KEYS`. */
  readonly keysBucket: string;

  constructor(fleet: string = DEFAULT_FLEET_NAME) {
    this.fleet = FleetNameSchema.parse(fleet);
    const streamPrefix = fleet.toUpperCase();
    this.eventStream = `${streamPrefix}_EVENTS`;
    this.allEvents = `${fleet}.events.>`;
    this.allAgentEvents = `${fleet}.agent.*.events.>`;
    this.heardStream = `${streamPrefix}_HEARD`;
    this.allHeard = `${fleet}.agent.*.heard`;
    this.inboxStream = `${streamPrefix}_INBOX`;
    this.allInboxes = `${fleet}.agent.*.inbox.*`;
    this.allAgentStatus = `${fleet}.agent.*.status`;
    this.allAgentDecisions = `${fleet}.agent.*.decision`;
    this.embed = `${fleet}.embed`;
    this.embedInfo = `${fleet}.embed.info`;
    this.concepts = `${fleet}.concepts`;
    this.placementBucket = `${streamPrefix}_PLACEMENT`;
    this.keysBucket = `${streamPrefix}_KEYS`;
    Object.freeze(this);
  }

  /** Request/reply control of one agent: get_state, set_mode, snapshot, shutdown, evaluate. */
  agentControl(id: string): string {
    return `${this.fleet}.agent.${id}.control`;
  }

  /** Heartbeats and lifecycle notices of one agent. */
  agentStatus(id: string): string {
    return `${this.fleet}.agent.${id}.status`;
  }

  /**
   * A message to agent `to` from agent `from`, kept in the inbox stream:
   * `<fleet>.agent.<to>.inbox.<from>`. Only `from` may publish there (`natsPermissions`), so
   * the addressee takes the sender from the subject (`senderOf`), not from the payload.
   */
  agentInbox(to: string, from: string): string {
    return `${this.fleet}.agent.${to}.inbox.${from}`;
  }

  /** Every message to one agent, whoever sent it: `<fleet>.agent.<id>.inbox.*` (its consumer's filter). */
  agentInboxes(id: string): string {
    return this.agentInbox(id, '*');
  }

  /** Where a running agent `to` answers a question from agent `from` live (coded request/reply): `<fleet>.agent.<to>.ask.<from>`. */
  agentAsk(to: string, from: string): string {
    return `${this.fleet}.agent.${to}.ask.${from}`;
  }

  /**
   * The sender a message or question subject names (`agentInbox`, `agentAsk`): its last token,
   * when `subject` is `<fleet>.agent.<to>.<kind>.<sender>`; otherwise undefined.
   */
  senderOf(subject: string, to: string, kind: 'inbox' | 'ask'): string | undefined {
    const prefix = `${this.fleet}.agent.${to}.${kind}.`;
    if (!subject.startsWith(prefix)) return undefined;
    const sender = subject.slice(prefix.length);
    return sender.length > 0 && !/[.*>\s]/.test(sender) ? sender : undefined;
  }

  /**
   * Where its supervisor extends one agent's lease (`LeaseExtension`), in a fleet whose placement is
   * by lease (`[cluster] enabled`): `<fleet>.agent.<id>.lease`. Only a supervisor may publish there.
   */
  agentLease(id: string): string {
    return `${this.fleet}.agent.${id}.lease`;
  }

  /** What one agent decided about a world event it heard (`[agent] reason_on_events`). */
  agentDecision(id: string): string {
    return `${this.fleet}.agent.${id}.decision`;
  }

  /** Where one spare of the warm pool takes its claim: `<fleet>.pool.<slot>.claim`. */
  spareClaim(slot: string): string {
    return `${this.fleet}.pool.${slot}.claim`;
  }

  /** World events: `<fleet>.events.<type>`. */
  event(type: string): string {
    return `${this.fleet}.events.${type}`;
  }

  /**
   * World events an agent publishes: `<fleet>.agent.<id>.events.<type>`, kept in the same stream.
   * Only that agent may publish there, so the router takes the event's source from the subject
   * (`eventPublisher`).
   */
  agentEvent(id: string, type: string): string {
    return `${this.fleet}.agent.${id}.events.${type}`;
  }

  /** The agent whose event subject (`agentEvent`) `subject` is, or undefined for another subject. */
  eventPublisher(subject: string): string | undefined {
    const prefix = `${this.fleet}.agent.`;
    if (!subject.startsWith(prefix)) return undefined;
    const [id, kind] = subject.slice(prefix.length).split('.', 2);
    return kind === 'events' && id ? id : undefined;
  }

  /** The supervisor's control API: `<fleet>.supervisor.<op>`. */
  supervisor(op: string): string {
    return `${this.fleet}.supervisor.${op}`;
  }

  /**
   * The supervisor's API as the approver calls it: `<fleet>.approver.<op>` (`approve`, `refuse`,
   * `approvals`, `ping`). Only the approver identity may publish there, so a decision made there is
   * the approver's, whatever the request says of itself.
   */
  approver(op: string): string {
    return `${this.fleet}.approver.${op}`;
  }

  /**
   * The supervisor's API as agent `id` calls it: `<fleet>.agent.<id>.supervisor.<op>`. Only that
   * agent may publish under `<fleet>.agent.<id>.`, so the supervisor takes who asks from here.
   */
  agentSupervisor(id: string, op: string): string {
    return `${this.fleet}.agent.${id}.supervisor.${op}`;
  }

  /** The world store's API as agent `id` calls it: `<fleet>.agent.<id>.world.<op>` (writes are its own, see `agentSupervisor`). */
  agentWorld(id: string, op: string): string {
    return `${this.fleet}.agent.${id}.world.${op}`;
  }

  /** The world store's API (get, set, query, subscribe…), answered by the supervisor. */
  world(op: string): string {
    return `${this.fleet}.world.${op}`;
  }

  /** Notifications of one live query. */
  worldLive(sub: string): string {
    return `${this.fleet}.world.live.${sub}`;
  }

  /** The events routed to one agent, the ones its filters let it hear (kept in the heard stream). */
  agentHeard(id: string): string {
    return `${this.fleet}.agent.${id}.heard`;
  }

  /** An agent's durable consumer on the heard stream. */
  heardConsumer(id: string): string {
    return `heard_${id}`;
  }

  /** An agent's durable consumer on the inbox stream (filter `agentInboxes`). */
  inboxConsumer(id: string): string {
    return `messages_${id}`;
  }

  /** JetStream stream of one work queue (work-queue retention), e.g. `THYMOS_JOBS_SUPPORT`. Queue names are validated (`QueueNameSchema`). */
  jobStream(queue: string): string {
    return `${this.fleet.toUpperCase()}_JOBS_${queue.toUpperCase()}`;
  }

  /** Every job of one queue: `<fleet>.jobs.<queue>.*`. */
  queueJobs(queue: string): string {
    return `${this.fleet}.jobs.${queue}.*`;
  }

  /** Where a job for one skill of one queue is published: `<fleet>.jobs.<queue>.<skill>`. */
  job(queue: string, skill: string): string {
    return `${this.fleet}.jobs.${queue}.${skill}`;
  }

  /** The durable consumer of one skill on its queue's stream, shared by every agent with the skill. */
  skillConsumer(skill: string): string {
    return `skill_${skill}`;
  }

  /** JetStream stream of every queue's dead letters, e.g. `THYMOS_JOBS_DEAD`. */
  get deadStream(): string {
    return `${this.fleet.toUpperCase()}_JOBS_DEAD`;
  }

  /** Where one queue's dead letters go: `<fleet>.jobs.dead.<queue>` (no queue is named `dead`). */
  deadLetters(queue: string): string {
    return `${this.fleet}.jobs.dead.${queue}`;
  }

  /** Every queue's dead letters. */
  get allDeadLetters(): string {
    return `${this.fleet}.jobs.dead.*`;
  }
}

/**
 * Whether `subject` is an inbox (`_INBOX.…`, as every Thymos process and nats.js name theirs):
 * the only kind of subject a responder answers on or sends progress to. A request that names a
 * fleet subject or JetStream's API as its reply, or a message JetStream delivers (its reply is
 * `$JS.ACK.…`), is not answered, so nobody can make a responder publish where they may not.
 */
export function isInboxSubject(subject: string | undefined): subject is string {
  return subject !== undefined && subject.startsWith('_INBOX.') && !/[\s*>]/.test(subject);
}

/** The names of a fleet that leaves `[fleet] name` unset. */
export const DEFAULT_FLEET_NAMES = new FleetNames();
