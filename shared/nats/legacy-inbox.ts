import { DeliverPolicy, type JetStreamManager } from '@nats-io/jetstream';

import type { EventsSettings } from '../config/fleet-settings.js';
import { AgentMessageSchema } from '../protocol/agent-message.js';
import { DEFAULT_FLEET_NAMES, type FleetNames } from '../protocol/fleet-names.js';
import { parseJsonOrUndefined } from '../protocol/parse-json.js';
import { ensureAgentConsumer } from './event-stream.js';

const BATCH = 64;

/**
 * Moves what still waits in the inboxes of earlier versions — consumers `inbox_<id>` on
 * `<fleet>.agent.<id>.inbox`, where only the payload's `from` said who sent a message — onto
 * today's subjects (`<fleet>.agent.<id>.inbox.<from>`) and the agents' consumers of today, then
 * deletes the old consumers and stops the stream keeping the old subjects. The supervisor runs
 * it at start, after `ensureEventStream`. Returns, for each agent, how many messages it stored
 * anew on today's subjects and how many it left behind (they do not parse, or are not for that
 * agent; nobody reads them after this). Finds nothing to do, in one listing of the stream's
 * consumers, once done. The `from` of a moved message is what its sender wrote, as it was before
 * senders joined the subject: only messages of an earlier version are moved.
 *
 * Safe to run twice, or again after a crash half way: a message moved twice has the same
 * JetStream id both times (`movedMsgId`), so the stream keeps one copy within its duplicate
 * window, and the agent remembers it once after that (a message's memory id is its id).
 * Messages acknowledged out of order above an old consumer's floor are moved again, and
 * remembered once, for the same reason.
 */
export async function moveLegacyInboxes(
  jsm: JetStreamManager,
  settings: Pick<EventsSettings, 'ack_wait_s'>,
  names: FleetNames = DEFAULT_FLEET_NAMES,
): Promise<Array<{ agent: string; moved: number; skipped: number }>> {
  const prefix = names.legacyInboxConsumer('');
  const legacy: string[] = [];
  for await (const c of jsm.consumers.list(names.inboxStream)) if (c.name.startsWith(prefix)) legacy.push(c.name.slice(prefix.length));
  if (legacy.length === 0) return [];
  // A consumer may be made only on what the stream keeps: the old subjects come back while the messages move.
  const oldSubjects = names.legacyInbox('*');
  await jsm.streams.update(names.inboxStream, { subjects: [names.allInboxes, oldSubjects] });
  const moves: Array<{ agent: string; moved: number; skipped: number }> = [];
  for (const agent of legacy) {
    await ensureAgentConsumer(jsm, agent, settings, names);
    moves.push({ agent, ...(await moveOne(jsm, agent, names)) });
    await jsm.consumers.delete(names.inboxStream, names.legacyInboxConsumer(agent));
  }
  await jsm.streams.update(names.inboxStream, { subjects: [names.allInboxes] });
  return moves;
}

/**
 * The JetStream message id of a moved message: not its own id, which JetStream may still hold
 * from the message's first sending (its duplicate window) and would drop the copy for.
 */
export const movedMsgId = (id: string): string => `${id}:moved`;

async function moveOne(jsm: JetStreamManager, id: string, names: FleetNames): Promise<{ moved: number; skipped: number }> {
  const legacy = await jsm.consumers.info(names.inboxStream, names.legacyInboxConsumer(id));
  if (legacy.num_pending + legacy.num_ack_pending === 0) return { moved: 0, skipped: 0 };
  const js = jsm.jetstream();
  const reader = await js.consumers.get(names.inboxStream, {
    filter_subjects: names.legacyInbox(id),
    deliver_policy: DeliverPolicy.StartSequence,
    opt_start_seq: legacy.ack_floor.stream_seq + 1,
  });
  let moved = 0;
  let skipped = 0;
  for (let more = true; more;) {
    more = false;
    for await (const m of await reader.fetch({ max_messages: BATCH, expires: 2000 })) {
      const message = AgentMessageSchema.safeParse(parseJsonOrUndefined(m.string()));
      if (message.success && message.data.to === id) {
        const ack = await js.publish(names.agentInbox(id, message.data.from), m.data, { msgID: movedMsgId(message.data.id) });
        if (!ack.duplicate) moved++;
      } else skipped++;
      more = m.info.pending > 0;
    }
  }
  return { moved, skipped };
}
