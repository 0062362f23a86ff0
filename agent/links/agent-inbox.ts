import { type ConsumerMessages, jetstream, type JsMsg } from '@nats-io/jetstream';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';

import { ErrorCode, isThymosError, ThymosError } from '../../shared/errors/index.js';
import { agentIdentity, codedRequest, ownDelivery, sendAgentMessage, serveCoded } from '../../shared/nats/index.js';
import type { Logger } from '../../shared/platform/index.js';
import {
  type AgentMessage,
  AgentMessageSchema,
  AskReplySchema,
  type FleetNames,
  newMessage,
  parseJsonOrUndefined,
} from '../../shared/protocol/index.js';
import { QUESTION_TAG } from '../consolidation/claims.js';
import { onlyAsks } from '../runtime/dialogue-behavior.js';
import type { Conversing, Messenger } from '../runtime/runtime-ports.js';
import { readForever, readPending } from './durable-consumer.js';

/**
 * An agent's inbox: its durable consumer on `<fleet>.agent.<id>.inbox.*`. Messages wait there
 * while the agent is stopped and are taken in order when it wakes. The last token of a
 * message's subject is its sender, the one agent nats-server lets publish there: a message
 * whose `from` says otherwise is dropped, and a question refused (UNAUTHORIZED). A `tell` and an `answer`
 * become memories; an `ask` is answered in character when the agent is active, into the
 * asker's inbox.
 *
 * A question to a running agent goes live too: a coded request on `<fleet>.agent.<id>.ask.<asker>`,
 * answered with the answer or at once with the code of what stopped it (AGENT_NOT_ACTIVE, the
 * talk's own error). Nobody answering there means the agent is not running: the question then
 * waits in its inbox. A message's memory id comes from the message id, and an answer's id from
 * the question's, so a question heard twice (live, then redelivered) is remembered once and
 * its answer stored once by the asker.
 */
const BATCH = 64;

export class AgentInbox implements Messenger {
  readonly #runtime: Conversing;
  readonly #names: FleetNames;
  readonly #logger: Logger;
  #nc: NatsConnection | undefined;
  #messages: ConsumerMessages | undefined;
  #asks: Subscription | undefined;
  #closed = false;

  constructor(runtime: Conversing, names: FleetNames, logger: Logger) {
    this.#runtime = runtime;
    this.#names = names;
    this.#logger = logger;
  }

  /** Answers questions live, takes every waiting message, then listens. The consumer must exist (the event listener creates both). */
  async open(nc: NatsConnection): Promise<number> {
    this.#nc = nc;
    const asks = this.#names.agentAsk(this.#runtime.id, '*');
    this.#asks = serveCoded(
      nc,
      { subject: asks, schema: AgentMessageSchema, handle: async (msg, raw) => ({ answer: await this.#answerLive(msg, raw.subject) }) },
      this.#logger,
    );
    const consumer = await jetstream(nc).consumers.get(this.#names.inboxStream, this.#names.inboxConsumer(this.#runtime.id));
    const taken = await readPending(
      consumer,
      BATCH,
      async (msgs) => {
        for (const m of msgs) await this.#take(m);
      },
      () => this.#closed,
    );
    // Live, each message is on its own: one that fails is redelivered without holding back the rest.
    const takeEach = async (msgs: JsMsg[]) => {
      for (const m of msgs)
        await this.#take(m).catch((err: unknown) =>
          this.#logger.error({ err, seq: m.seq }, 'inbox message not handled; it will be redelivered'),
        );
    };
    this.#messages = await readForever(consumer, BATCH, takeEach, this.#logger, 'inbox message');
    if (this.#closed) await this.close();
    return taken;
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#asks?.unsubscribe();
    await this.#messages?.close().catch(() => undefined);
  }

  async tell(to: string, text: string): Promise<AgentMessage> {
    const message = newMessage({ from: this.#runtime.id, to, kind: 'tell', text });
    await sendAgentMessage(this.#connection(), message, this.#names);
    return message;
  }

  async ask(to: string, question: string, timeoutMs: number): Promise<AgentMessage | undefined> {
    const nc = this.#connection();
    const message = newMessage({ from: this.#runtime.id, to, kind: 'ask', text: question });
    try {
      const { answer } = await codedRequest(nc, this.#names.agentAsk(to, this.#runtime.id), message, AskReplySchema, {
        timeoutMs,
        asked: agentIdentity(to),
        errorPrefix: `${to}: `,
        unanswered: (why, err) =>
          new ThymosError(ErrorCode.TIMEOUT, `${to} did not answer within ${timeoutMs} ms`, { cause: err, details: { unanswered: why } }),
      });
      return answer;
    } catch (err) {
      const why = isThymosError(err, ErrorCode.TIMEOUT) ? err.details?.unanswered : undefined;
      // Not running: the question waits in its inbox and is answered when the agent wakes.
      if (why === 'no-responders') await sendAgentMessage(nc, message, this.#names);
      // Running but slow: it still answers, into this agent's inbox.
      if (why !== undefined) return undefined;
      throw err;
    }
  }

  #connection(): NatsConnection {
    if (!this.#nc || this.#nc.isClosed())
      throw new ThymosError(ErrorCode.NATS_UNAVAILABLE, `${this.#runtime.id} has no NATS link for messages right now`);
    return this.#nc;
  }

  async #take(m: JsMsg): Promise<void> {
    // Delivered by its own inbox consumer, not aimed here by another agent's pull (`ownDelivery`): dropped unacknowledged otherwise.
    if (
      !ownDelivery(
        m,
        this.#names.inboxStream,
        this.#names.inboxConsumer(this.#runtime.id),
        (subject) => this.#names.senderOf(subject, this.#runtime.id, 'inbox') !== undefined,
      )
    ) {
      this.#logger.warn({ subject: m.subject }, "a message not delivered by this agent's inbox consumer dropped");
      return;
    }
    const parsed = AgentMessageSchema.safeParse(parseJsonOrUndefined(m.string()));
    if (!parsed.success || parsed.data.to !== this.#runtime.id) {
      this.#logger.warn({ seq: m.seq }, 'malformed inbox message ignored');
      m.ack();
      return;
    }
    const sender = this.#names.senderOf(m.subject, this.#runtime.id, 'inbox');
    if (parsed.data.from !== sender) {
      this.#logger.warn(
        { seq: m.seq, from: parsed.data.from, subject: m.subject },
        'inbox message ignored: its from is not the agent whose subject it came on',
      );
      m.ack();
      return;
    }
    const msg = parsed.data;
    if (msg.kind === 'ask' && !this.#runtime.hasMemory(memoryIdOf(msg)) && this.#runtime.getState().mode === 'active')
      await this.#answer(msg);
    await this.#hear(msg);
    m.ack();
  }

  /** A question asked live: remembered, then answered, or refused with the code of what stopped it. */
  async #answerLive(msg: AgentMessage, subject: string): Promise<AgentMessage> {
    if (msg.kind !== 'ask' || msg.to !== this.#runtime.id) {
      throw new ThymosError(ErrorCode.INVALID_INPUT, `${subject}: expected a question (kind "ask") to ${this.#runtime.id}`);
    }
    const sender = this.#names.senderOf(subject, this.#runtime.id, 'ask');
    if (msg.from !== sender) {
      throw new ThymosError(
        ErrorCode.UNAUTHORIZED,
        `${subject}: a question from ${msg.from} must come on ${this.#names.agentAsk(this.#runtime.id, msg.from)}`,
        { location: { path: 'from' } },
      );
    }
    const answered = this.#runtime.hasMemory(memoryIdOf(msg));
    await this.#hear(msg);
    if (this.#runtime.getState().mode !== 'active')
      throw new ThymosError(ErrorCode.AGENT_NOT_ACTIVE, `${this.#runtime.id} is listening and does not answer now`);
    if (answered)
      throw new ThymosError(
        ErrorCode.INVALID_INPUT,
        `${this.#runtime.id} was asked this question (${msg.id}) before; its answer went to ${msg.from}'s inbox`,
      );
    return this.#answer(msg);
  }

  /** Answers in character, into the asker's inbox. */
  async #answer(msg: AgentMessage): Promise<AgentMessage> {
    const { reply } = await this.#runtime.talk({ message: msg.text, speaker: msg.from });
    const answer = newMessage({
      id: `ans-${msg.id}`.slice(0, 80),
      from: this.#runtime.id,
      to: msg.from,
      kind: 'answer',
      text: reply,
      in_reply_to: msg.id,
    });
    await sendAgentMessage(this.#connection(), answer, this.#names);
    return answer;
  }

  async #hear(msg: AgentMessage): Promise<void> {
    const content =
      msg.kind === 'tell'
        ? `${msg.from} told me: ${msg.text}`
        : msg.kind === 'answer'
          ? `${msg.from} answered me: ${msg.text}`
          : `${msg.from} asked me: ${msg.text}`;
    const tags = ['message', msg.kind, ...(msg.kind === 'ask' && onlyAsks(msg.text) ? [QUESTION_TAG] : [])];
    await this.#runtime.hear([
      { id: memoryIdOf(msg), content, tags, importance: 0.5, source: { kind: 'message', by: msg.from, thread: msg.from } },
    ]);
  }
}

/** The memory a message becomes: one per message id, however often it is delivered. */
function memoryIdOf(msg: AgentMessage): string {
  return `msg-${msg.id}`;
}
