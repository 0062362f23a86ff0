import type { JsMsg } from '@nats-io/jetstream';

import type { Logger } from '../../shared/platform/index.js';
import type { DeliveryNote } from '../memory/memory-store.js';

/** Where an agent keeps its notes of the job messages it was handed: its own database (`MemoryStore`). */
export interface DeliveryNotes {
  deliveryNote(stream: string, seq: number): Promise<DeliveryNote | undefined>;
  noteDelivery(stream: string, seq: number, note: DeliveryNote): Promise<void>;
  forgetDelivery(stream: string, seq: number): Promise<void>;
  forgetDeliveriesBefore(at: number): Promise<void>;
}

/** How long a note is kept at most: a job delivered here again after that is taken as worked elsewhere (a person is asked, nothing runs twice). */
const NOTE_KEPT_MS = 7 * 86_400_000;

/**
 * Which deliveries of a job came to this agent, so that it knows when an earlier one may have
 * gone to another worker. Each job message the skill's consumer hands it is noted in the
 * agent's database before anything is done with it: how many of its deliveries, from the first,
 * came here one after another. When delivery n finds n − 1 noted, every earlier one came here,
 * and a call with side effects this agent has no record of under its key was never made (a call
 * is saved `running` before it starts). Otherwise another worker may have made it (one killed
 * after its request left, and not back within the queue's `ackWaitMs`), and the delivery says so
 * (`JobDelivery.elsewhere`): its calls with side effects whose service does not honour their key
 * wait for a person as interrupted rather than run (see `ToolCaller.call`).
 *
 * A note is forgotten when its job is acknowledged or given up here, and every note after a week.
 * Noting is safe to repeat: a delivery noted twice counts once, and a note lost (never written,
 * forgotten, or unreadable) only makes a later delivery count as worked elsewhere, so a person is
 * asked where none needed to be; nothing runs twice.
 */
export class JobDeliveries {
  readonly #notes: DeliveryNotes;
  readonly #logger: Logger;

  constructor(notes: DeliveryNotes, logger: Logger) {
    this.#notes = notes;
    this.#logger = logger;
  }

  /** Notes a delivery as it arrives, before it is worked; answers whether an earlier delivery of its job may have gone to another worker. */
  async arrived(m: JsMsg): Promise<boolean> {
    const n = m.info.deliveryCount;
    const { stream, streamSequence: seq } = m.info;
    const stamp = String(m.info.timestampNanos);
    let here: number;
    try {
      const note = await this.#notes.deliveryNote(stream, seq);
      here = note?.stamp === stamp ? note.here : 0;
    } catch (err) {
      this.#logger.warn(
        { seq, err: (err as Error).message },
        'the notes of earlier deliveries were not read: the job counts as worked elsewhere',
      );
      return n > 1;
    }
    // Delivered before to another worker (or before this agent noted it): the gap stays, so later deliveries know of it too.
    if (here < n - 1) return true;
    await this.#notes
      .noteDelivery(stream, seq, { here: Math.max(here, n), stamp, at: Date.now() })
      .catch((err: unknown) =>
        this.#logger.warn({ seq, err: (err as Error).message }, 'the delivery was not noted: a later one counts as worked elsewhere'),
      );
    return false;
  }

  /** Forgets the note of a job acknowledged or given up here; forgotten already, nothing happens. */
  async ended(m: JsMsg): Promise<void> {
    await this.#notes
      .forgetDelivery(m.info.stream, m.info.streamSequence)
      .catch((err: unknown) => this.#logger.debug({ seq: m.info.streamSequence, err: (err as Error).message }, 'a delivery note was kept'));
  }

  /** Forgets the notes older than a week. */
  async sweep(now = Date.now()): Promise<void> {
    await this.#notes
      .forgetDeliveriesBefore(now - NOTE_KEPT_MS)
      .catch((err: unknown) => this.#logger.warn({ err: (err as Error).message }, 'old delivery notes were not forgotten'));
  }
}
