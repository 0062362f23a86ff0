import { type ConsumerMessages, jetstream, type JsMsg } from '@nats-io/jetstream';
import { createInbox, type NatsConnection } from '@nats-io/transport-node';

import { ErrorCode, ThymosError } from '../../shared/errors/errors.js';
import { sendAgentMessage } from '../../shared/nats/event-stream.js';
import { withDeadline } from '../../shared/platform/deadline.js';
import type { Logger } from '../../shared/platform/logger.js';
import { type AgentMessage, AgentMessageSchema, newMessage } from '../../shared/protocol/agent-message.js';
import type { FleetNames } from '../../shared/protocol/fleet-names.js';
import { parseJsonOrUndefined } from '../../shared/protocol/parse-json.js';
import { QUESTION_TAG } from '../consolidation/claims.js';
import { onlyAsks } from '../runtime/dialogue-behavior.js';
import type { Conversing, Messenger } from '../runtime/runtime-ports.js';
import { readForever, readPending } from './durable-consumer.js';

/**
 * An agent's inbox: its durable consumer on `<fleet>.agent.<id>.inbox`. Messages wait there
 * while the agent is stopped and are taken in order when it wakes. A `tell` and an `answer`
 * become memories; an `ask` is answered in character when the agent is active (the answer
 * goes to the asker's inbox, and live to an asker still waiting). A message's memory id comes
 * from the message id, so a redelivery is remembered once.
 */
const BATCH = 64;

export class AgentInbox implements Messenger {
  readonly #runtime: Conversing;
  readonly #names: FleetNames;
  readonly #logger: Logger;
  #nc: NatsConnection | undefined;
  #messages: ConsumerMessages | undefined;
  #closed = false;

  constructor(runtime: Conversing, names: FleetNames, logger: Logger) {
    this.#runtime = runtime;
    this.#names = names;
    this.#logger = logger;
  }

  /** Takes every waiting message, then listens. The consumer must exist (the event listener creates both). */
  async open(nc: NatsConnection): Promise<number> {
    this.#nc = nc;
    const consumer = await jetstream(nc).consumers.get(this.#names.inboxStream, this.#names.inboxConsumer(this.#runtime.id));
    const taken = await readPending(consumer, BATCH, async (msgs) => {
      for (const m of msgs) await this.#take(m);
    }, () => this.#closed);
    // Live, each message is on its own: one that fails is redelivered without holding back the rest.
    const takeEach = async (msgs: JsMsg[]) => {
      for (const m of msgs) await this.#take(m).catch((err: unknown) => this.#logger.error({ err, seq: m.seq }, 'inbox message not handled; it will be redelivered'));
    };
    this.#messages = await readForever(consumer, BATCH, takeEach, this.#logger, 'inbox message');
    if (this.#closed) await this.#messages.close().catch(() => undefined);
    return taken;
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#messages?.close().catch(() => undefined);
  }

  async tell(to: string, text: string): Promise<AgentMessage> {
    const message = newMessage({ from: this.#runtime.id, to, kind: 'tell', text });
    await sendAgentMessage(this.#connection(), message, this.#names);
    return message;
  }

  async ask(to: string, question: string, timeoutMs: number): Promise<AgentMessage | undefined> {
    const nc = this.#connection();
    const replySubject = createInbox();
    const sub = nc.subscribe(replySubject, { max: 1 });
    const first = (async () => {
      for await (const m of sub) return m.string();
      return undefined;
    })();
    try {
      await sendAgentMessage(nc, newMessage({ from: this.#runtime.id, to, kind: 'ask', text: question, reply_subject: replySubject }), this.#names);
      const text = await withDeadline(first, timeoutMs, () => undefined);
      if (text === undefined) return undefined;
      const raw = parseJsonOrUndefined(text) as { error?: { code: ErrorCode; message: string } } | undefined;
      if (raw?.error) throw new ThymosError(raw.error.code, raw.error.message);
      return AgentMessageSchema.parse(raw);
    } finally {
      sub.unsubscribe();
    }
  }

  #connection(): NatsConnection {
    if (!this.#nc || this.#nc.isClosed()) throw new ThymosError(ErrorCode.NATS_UNAVAILABLE, `${this.#runtime.id} has no NATS link for messages right now`);
    return this.#nc;
  }

  async #take(m: JsMsg): Promise<void> {
    const parsed = AgentMessageSchema.safeParse(parseJsonOrUndefined(m.string()));
    if (!parsed.success || parsed.data.to !== this.#runtime.id) {
      this.#logger.warn({ seq: m.seq }, 'malformed inbox message ignored');
      m.ack();
      return;
    }
    const msg = parsed.data;
    const memoryId = `msg-${msg.id}`;
    const source = { kind: 'message', by: msg.from, thread: msg.from };
    if (msg.kind === 'ask' && !this.#runtime.hasMemory(memoryId)) await this.#answer(msg);
    const content =
      msg.kind === 'tell' ? `${msg.from} told me: ${msg.text}` : msg.kind === 'answer' ? `${msg.from} answered me: ${msg.text}` : `${msg.from} asked me: ${msg.text}`;
    const tags = ['message', msg.kind, ...(msg.kind === 'ask' && onlyAsks(msg.text) ? [QUESTION_TAG] : [])];
    await this.#runtime.hear([{ id: memoryId, content, tags, importance: 0.5, source }]);
    m.ack();
  }

  async #answer(msg: AgentMessage): Promise<void> {
    const nc = this.#connection();
    if (this.#runtime.getState().mode !== 'active') {
      if (msg.reply_subject) {
        nc.publish(msg.reply_subject, JSON.stringify({ error: { code: ErrorCode.AGENT_NOT_ACTIVE, message: `${this.#runtime.id} is listening and does not answer now` } }));
      }
      return;
    }
    const { reply } = await this.#runtime.talk({ message: msg.text, speaker: msg.from });
    const answer = newMessage({ id: `ans-${msg.id}`.slice(0, 80), from: this.#runtime.id, to: msg.from, kind: 'answer', text: reply, in_reply_to: msg.id });
    await sendAgentMessage(nc, answer, this.#names);
    if (msg.reply_subject) nc.publish(msg.reply_subject, JSON.stringify(answer));
  }
}
