import type { DomainSchema } from '../domain/domain-schema.js';
import { workOf } from '../domain/queue-schema.js';
import type { FleetNames } from '../protocol/fleet-names.js';
import { type NatsIdentity, natsInboxPrefix } from './nats-identity.js';

/** What nats-server lets one user publish and subscribe to, in its own configuration's terms. */
export interface NatsUserPermissions {
  publish: { allow: string[]; deny?: string[] };
  subscribe: { allow: string[] };
  /** May publish once to the reply subject of each request it receives (to answer it), and nowhere else in `_INBOX…`. */
  allow_responses?: boolean;
}

/** The queues and skills each agent of the domain takes jobs of, which its NATS user may pull from. */
export type NatsWork = (agentId: string) => ReadonlyArray<{ queue: string; skill: string }>;

/** Each agent's work as the domain declares it; an agent the domain does not name takes none. */
export function domainWork(domain: Pick<DomainSchema, 'agents' | 'queues'>): NatsWork {
  return (id) => {
    const agent = Object.hasOwn(domain.agents, id) ? domain.agents[id] : undefined;
    return agent ? workOf(agent, domain.queues).map(({ queue, skill }) => ({ queue, skill })) : [];
  };
}

/**
 * What identity `who` may do on the fleet's NATS, or undefined for everything (the supervisor,
 * which routes events, answers every service and creates the streams).
 *
 * - An agent: publish and subscribe under its own subjects (`<fleet>.agent.<id>.>`), which
 *   include its calls to the supervisor and the world store (`<fleet>.agent.<id>.supervisor.<op>`,
 *   `.world.<op>`: the supervisor knows who asks by where it asks); write to other agents'
 *   inboxes and ask them; publish world events; call the embedding and concept services; on JetStream, only its own two durable consumers (look
 *   up, create with its own filter, pull, acknowledge) and the skill consumers of its work
 *   (pull, acknowledge, dead letters of those queues). Replies come to `_INBOX_agent-<id>.>`
 *   only, and it answers requests through `allow_responses`.
 * - A spare of the warm pool: take its claim and call the concept and embedding services;
 *   nothing of any agent until its claim makes it one (it then connects as that agent).
 * - The client (library and CLI): the supervisor's and the world store's APIs, world events,
 *   jobs (not dead letters), live queries and agents' decisions; it answers no request.
 */
export function natsPermissions(names: FleetNames, who: NatsIdentity, work: NatsWork): NatsUserPermissions | undefined {
  if (who === 'supervisor') return undefined;
  const f = names.fleet;
  const inbox = `${natsInboxPrefix(who)}.>`;
  const services = [names.concepts, names.embed, names.embedInfo];
  if (who === 'spare') return { publish: { allow: services }, subscribe: { allow: [names.spareClaim('*'), inbox] }, allow_responses: true };
  if (who === 'client') {
    return {
      publish: { allow: [names.supervisor('*'), names.world('*'), names.allEvents, names.job('*', '*')], deny: [names.allDeadLetters] },
      subscribe: { allow: [inbox, names.worldLive('*'), names.allAgentDecisions] },
    };
  }
  const id = who.slice('agent-'.length);
  const own = `${f}.agent.${id}.>`;
  const consumers: Array<[stream: string, consumer: string, filter?: string]> = [
    [names.heardStream, names.heardConsumer(id), names.agentHeard(id)],
    [names.inboxStream, names.inboxConsumer(id), names.agentInbox(id)],
    ...work(id).map(({ queue, skill }): [string, string] => [names.jobStream(queue), names.skillConsumer(skill)]),
  ];
  const jetstream = consumers.flatMap(([stream, consumer, filter]) => [
    `$JS.API.CONSUMER.INFO.${stream}.${consumer}`,
    `$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer}`,
    `$JS.ACK.${stream}.${consumer}.>`,
    // Its own consumers it may create, and only with its own subject as their filter.
    ...(filter ? [`$JS.API.CONSUMER.CREATE.${stream}.${consumer}.${filter}`] : []),
  ]);
  const deadLetters = [...new Set(work(id).map(({ queue }) => names.deadLetters(queue)))];
  return {
    publish: {
      allow: [own, names.allInboxes, names.agentAsk('*'), names.allEvents, ...services, '$JS.API.INFO', ...jetstream, ...deadLetters],
    },
    subscribe: { allow: [own, inbox, names.worldLive('*')] },
    allow_responses: true,
  };
}
