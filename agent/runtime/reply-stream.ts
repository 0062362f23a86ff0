import { JSONParser } from '@streamparser/json';

import { StringControls } from '../llm/json-text.js';
import { REPLY_MARKER, spoken, withoutMarkers } from './acting.js';
import type { TalkReply } from './agent-behavior.js';

const OPENING = '[TOOL:';
/** How many words a marker may hold (`REPLY_MARKER`'s `{1,500}`). */
const MARKER_WORDS = 500;

/**
 * Whether a `[` at `at` may still start a `[TOOL: …]` as `raw` grows (`open`), or never will
 * (`closed`: it is not one, or it is one and complete). A candidate found `closed` stays so: text is only ever added at the end.
 */
function markerAt(raw: string, at: number): 'open' | 'closed' {
  if (raw.length - at < OPENING.length) return OPENING.startsWith(raw.slice(at)) ? 'open' : 'closed';
  if (!raw.startsWith(OPENING, at)) return 'closed';
  let i = at + OPENING.length;
  const far = i + 2 * MARKER_WORDS;
  while (i < raw.length && /\s/.test(raw[i]!)) if (++i > far) return 'closed';
  const words = raw.indexOf(']', i);
  const line = raw.indexOf('\n', i);
  if (words >= 0 || line >= 0) return 'closed';
  // Counted as REPLY_MARKER counts (code points), and only as far as needed.
  let points = 0;
  for (const _ of raw.slice(i, i + 2 * MARKER_WORDS + 2)) if (++points > MARKER_WORDS) return 'closed';
  return 'open';
}

/** The first `[` at or after `from` that may still start a `[TOOL: …]`, or the end of `raw`. */
function firstOpenMarker(raw: string, from: number): number {
  let at = raw.indexOf('[', from);
  while (at >= 0 && markerAt(raw, at) === 'closed') at = raw.indexOf('[', at + 1);
  return at < 0 ? raw.length : at;
}

/**
 * Where `text` (with no `[TOOL: …]` still being written in it) can be cut so that nothing before
 * the cut changes how the rest is heard: after its last letter outside every complete marker, or
 * after its last complete marker, whichever is later; 0 when neither is in it.
 */
function safeCut(text: string): number {
  let lastMarkerEnd = 0;
  for (const m of text.matchAll(REPLY_MARKER)) lastMarkerEnd = m.index + m[0].length;
  const letters = text.slice(lastMarkerEnd).trimEnd();
  return letters === '' ? lastMarkerEnd : lastMarkerEnd + letters.length;
}

/** How much of one answer is read as it streams: far beyond a dialogue's `max_tokens`; past it, the rest is passed on when the answer is done. */
const STREAM_LIMIT = 16_384;

/**
 * A reply's text as the model writes it, passed on in pieces as the speaker will hear it.
 *
 * The model answers a dialogue in JSON (`{"message": …, "emotional_tone": …}`): the `message`
 * string is read out of the JSON as it grows (escapes decoded, a `\u` split between pieces
 * joined, line breaks a model left in it as they are taken as meant), and nothing else of the
 * JSON is passed on. A model that answers in prose instead (its first letter is not `{` or a
 * code fence) is passed on as it is. Either way `[TOOL: …]` is never passed on: it is acted on,
 * not said.
 *
 * `begin()` starts each answer of the model (a round of its tool loop). An answer that follows
 * one that was heard in part goes on from what was heard, on a new line: what the speaker heard
 * is the reply. Only the last answer's `[TOOL: …]` are kept for acting on, as when nothing
 * streams.
 */
export class ReplyStream {
  readonly #onText: (piece: string) => void;
  /** What was heard of earlier answers. */
  #before = '';
  #current = '';
  #sent = '';
  #mode: 'waiting' | 'json' | 'prose' = 'waiting';
  #lead = '';
  #letter: string | undefined;
  /** How much of this answer was read. */
  #read = 0;
  #parser: JSONParser | undefined;
  #controls = new StringControls();
  /** In this answer's text: where the first `[` that may still start a marker is, or the end. */
  #scanned = 0;
  /** In this answer's text: how far what is heard can no longer change, and the whitespace there, held back until words follow it. */
  #settledAt = 0;
  #trail = '';
  /** The answer's `message` was read whole: a second `message` key is not read. */
  #messageRead = false;
  /** In this answer's text: where its last letter ends, as far as it was read. */
  #letterEnd = 0;

  constructor(onText: (piece: string) => void) {
    this.#onText = onText;
  }

  /** A new answer of the model begins. */
  begin(): void {
    if (this.#current !== '') this.#before = this.#sent;
    this.#current = '';
    this.#scanned = 0;
    this.#settledAt = 0;
    // An answer after one that was heard goes on from it on a new line.
    this.#trail = this.#sent === '' ? '' : '\n';
    this.#messageRead = false;
    this.#letterEnd = 0;
    this.#mode = 'waiting';
    this.#lead = '';
    this.#letter = undefined;
    this.#read = 0;
    this.#parser = undefined;
    this.#controls = new StringControls();
  }

  /** A piece of the model's output as it arrived. */
  write(piece: string): void {
    if (this.#read >= STREAM_LIMIT) return;
    this.#read += piece.length;
    if (this.#mode === 'waiting') {
      // Until the first letter: whitespace is kept for prose; JSON (perhaps in a code fence) is read from its opening brace.
      this.#letter ??= /\S/.exec(piece)?.[0];
      if (this.#letter === undefined) return void (this.#lead += piece);
      if (this.#letter === '{' || this.#letter === '`') {
        const brace = piece.indexOf('{');
        if (brace < 0) return;
        this.#mode = 'json';
        this.#parser = this.#jsonParser();
        piece = piece.slice(brace);
      } else {
        this.#mode = 'prose';
        piece = this.#lead + piece;
      }
    }
    if (this.#mode === 'prose') this.#grow(this.#current + piece);
    else this.#feed(piece);
  }

  /** What has been passed on. */
  get sent(): string {
    return this.#sent;
  }

  /** What was heard, as the model wrote it: the last answer's complete `[TOOL: …]` kept (for acting on), one still being written left out. */
  get said(): string {
    const said = this.#current.slice(0, this.#scanned);
    return this.#before === '' ? said : said.trim() === '' ? this.#before : `${this.#before}\n${said}`;
  }

  /**
   * The reply's message once the model has answered: its own when what was passed on is the
   * beginning of it (the rest goes on later), else what was heard (`said`): the speaker heard that.
   */
  settle(message: string): string {
    return this.#sent === '' || withoutMarkers(message).startsWith(this.#sent) ? message : this.said;
  }

  /**
   * This answer's text is now `current` (it only ever grows at the end). What may still change
   * (a marker being written, the whitespace at the end) is held back; the words before it are
   * settled once, so a long reply costs its length, not its square.
   */
  #grow(current: string): void {
    const added = current.slice(this.#current.length).trimEnd();
    if (added !== '') this.#letterEnd = this.#current.length + added.length;
    this.#current = current;
    this.#scanned = firstOpenMarker(current, this.#scanned);
    const open = current.slice(this.#settledAt, Math.min(this.#scanned, this.#letterEnd));
    const cut = safeCut(open);
    if (cut === 0) return;
    this.#settledAt += cut;
    // Whitespace at a cut waits for what follows (runs of spaces are one; at the very end, none); the reply's first words lose their leading whitespace.
    const text = (this.#trail + spoken(open.slice(0, cut))).replace(/[ \t]{2,}/g, ' ');
    const words = this.#sent === '' ? text.trimStart() : text;
    const piece = words.trimEnd();
    this.#trail = words.slice(piece.length);
    if (piece === '') return;
    this.#sent += piece;
    this.#onText(piece);
  }

  #feed(piece: string): void {
    const parser = this.#parser;
    if (!parser || parser.isEnded) return;
    try {
      parser.write(this.#controls.feed(piece));
    } catch {
      // JSON that breaks off is the structured output's to judge; what was read of it stands.
      this.#parser = undefined;
    }
  }

  /** Reads `$.message` as it grows: each partial value is the whole string so far (a second `message` key is not read). */
  #jsonParser(): JSONParser {
    const parser = new JSONParser({ paths: ['$.message'], emitPartialTokens: true, emitPartialValues: true, keepStack: false });
    parser.onValue = ({ value, partial }) => {
      if (typeof value !== 'string' || this.#messageRead) return;
      if (value.length > this.#current.length) this.#grow(value);
      if (partial !== true) this.#messageRead = true;
    };
    parser.onError = () => undefined;
    return parser;
  }
}

/**
 * What a talk has passed on to its speaker, whichever behaviour wrote it: `settle` passes on the
 * rest of the reply when the behaviour passed on only a beginning of it (or nothing: one piece,
 * the whole), so the pieces always add up to the greeting, a line break and the reply.
 */
export class SpokenText {
  readonly #onText: (piece: string) => void;
  #sent = '';

  constructor(onText: (piece: string) => void) {
    this.#onText = onText;
  }

  readonly write = (piece: string): void => {
    if (piece === '') return;
    this.#sent += piece;
    this.#onText(piece);
  };

  /** The reply as it was heard: its own when what was passed on begins it, else what was passed on. */
  settle(reply: TalkReply): TalkReply {
    const opening = reply.greeting !== undefined ? `${reply.greeting}\n` : '';
    const whole = `${opening}${reply.reply}`;
    if (whole.startsWith(this.#sent)) {
      this.write(whole.slice(this.#sent.length));
      return reply;
    }
    return { ...reply, reply: this.#sent.startsWith(opening) ? this.#sent.slice(opening.length) : this.#sent };
  }
}
