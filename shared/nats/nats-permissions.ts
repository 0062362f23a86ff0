import type { DomainSchema } from '../domain/domain-schema.js';
import { workOf } from '../domain/queue-schema.js';
import type { FleetNames } from '../protocol/fleet-names.js';
import { natsAnswers, type NatsIdentity, natsInboxPrefix } from './nats-identity.js';

/** What nats-server lets one user publish and subscribe to, in its own configuration's terms. */
export interface NatsUserPermissions {
  publish: { allow: string[]; deny?: string[] };
  subscribe: { allow: string[] };
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
 * - An agent: subscribe under its own subjects (`<fleet>.agent.<id>.>`: its control and its
 *   questions); publish its status and decisions, and its calls to the supervisor and the world
 *   store on its own `<fleet>.agent.<id>.supervisor.<op>` and `.world.<op>` (the supervisor knows
 *   who asks by where it asks); write to other agents' inboxes (not its own) and ask them, on
 *   subjects that end in its own id (`agentInbox`, `agentAsk`: the addressee knows who by where);
 *   publish world events on its own `<fleet>.agent.<id>.events.<type>` (the router knows their
 *   source by where); call the embedding and concept services; on JetStream, only read its own
 *   two durable consumers (look up, pull, acknowledge) and the skill consumers of its work (and
 *   give a job up through the supervisor, which writes its dead letter). Replies come to `_INBOX.agent-<id>.>` only; it
 *   answers on others' inboxes.
 * - A spare of the warm pool: take its claim (and answer it, on the supervisor's inboxes that name `spare`) and call the concept and embedding services;
 *   nothing of any agent until its claim makes it one (it then connects as that agent).
 * - The client (library and CLI): the supervisor's and the world store's APIs (but deciding an
 *   approval), world events, jobs (not dead letters), live queries and agents' decisions; it
 *   answers no request.
 * - The approver: the supervisor's API as the approver (`<fleet>.approver.<op>`: list, approve and
 *   refuse what waits for a person), nothing else; it answers no request.
 */
export function natsPermissions(names: FleetNames, who: NatsIdentity, work: NatsWork): NatsUserPermissions | undefined {
  // The system identity is alone in the system account, whose subjects are the server's own.
  if (who === 'supervisor' || who === 'system') return undefined;
  const f = names.fleet;
  const inbox = `${natsInboxPrefix(who)}.>`;
  const services = [names.concepts, names.embed, names.embedInfo];
  if (who === 'spare')
    return { publish: { allow: [...services, natsAnswers('spare')] }, subscribe: { allow: [names.spareClaim('*'), inbox] } };
  if (who === 'client') {
    return {
      // Approving is the approver's: the supervisor serves it on the approver's subjects only, and the old ones are closed too.
      publish: {
        allow: [names.supervisor('*'), names.world('*'), names.allEvents, names.job('*', '*')],
        deny: [names.allDeadLetters, names.supervisor('approve'), names.supervisor('refuse')],
      },
      subscribe: { allow: [inbox, names.worldLive('*'), names.allAgentDecisions] },
    };
  }
  if (who === 'approver') return { publish: { allow: [names.approver('*')] }, subscribe: { allow: [inbox] } };
  const id = who.slice('agent-'.length);
  const own = `${f}.agent.${id}.>`;
  // The supervisor creates an agent's consumers (before its first start); the agent only reads them.
  const consumers: Array<[stream: string, consumer: string]> = [
    [names.heardStream, names.heardConsumer(id)],
    [names.inboxStream, names.inboxConsumer(id)],
    ...work(id).map(({ queue, skill }): [string, string] => [names.jobStream(queue), names.skillConsumer(skill)]),
  ];
  const jetstream = consumers.flatMap(([stream, consumer]) => [
    `$JS.API.CONSUMER.INFO.${stream}.${consumer}`,
    `$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer}`,
    `$JS.ACK.${stream}.${consumer}.>`,
  ]);
  return {
    publish: {
      allow: [
        names.agentStatus(id),
        names.agentDecision(id),
        names.agentSupervisor(id, '*'),
        names.agentWorld(id, '*'),
        // Messages and questions as itself only: the addressee takes the sender from the subject.
        names.agentInbox('*', id),
        names.agentAsk('*', id),
        names.agentEvent(id, '>'),
        ...services,
        natsAnswers(who),
        '$JS.API.INFO',
        ...jetstream,
      ],
      // Nothing into a stream it reads: JetStream delivers a pulled message to whatever reply
      // subject the pull names, so what an agent could write there it could send anywhere.
      deny: [names.agentInboxes(id)],
    },
    subscribe: { allow: [own, inbox, names.worldLive('*')] },
  };
}
