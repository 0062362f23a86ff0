import { type z } from 'zod';

import type { Tools } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { Embedder } from '../../shared/platform/index.js';
import type { IntentAnswer, IntentCandidate, IntentOutcome, ReadRequest } from '../runtime/acting.js';
import { inputShape } from '../tools/tool-shapes.js';
import { fillArguments, type Filled, type KnownName } from './argument-filler.js';
import { COMMON_WORDS, type Glossary } from './glossary.js';
import { asksWhetherDone, INTENT_MAX_CHARS, negatesAction, rawWords } from './intent-words.js';
import type { ModelReader, ModelReading } from './model-reader.js';
import { type ResolverTuning, ToolRanker } from './tool-ranker.js';

/** Words other languages use most, that English does not: a line made of them is not read as English. */
const FOREIGN = new Set(Object.values(COMMON_WORDS).flatMap((words) => [...words]));
/** How much of a gloss an answer's note shows. */
const NOTE_GLOSS = 300;
/** How many tools a model is offered to choose among. */
const OFFERED = 5;
const ENGLISH = new Set('the a an is are to of for my me i you your it this that and or with on in at be can please what how'.split(' '));

/** Whether a line is in a language the offline resolver does not read: another script, or more of other languages' common words than of English's. */
export function foreignLanguage(text: string): boolean {
  const letters = text.match(/\p{L}/gu) ?? [];
  if (letters.length >= 4 && letters.filter((c) => /[a-zA-ZÀ-ÿ]/.test(c)).length / letters.length < 0.5) return true;
  const words = text.toLowerCase().match(/\p{L}+/gu) ?? [];
  if (words.length < 4) return false;
  const foreign = words.filter((w) => FOREIGN.has(w)).length;
  const english = words.filter((w) => ENGLISH.has(w)).length;
  return foreign >= 2 && foreign > english * 2;
}

/**
 * Plain words to a call of one of the agent's granted tools, or to candidates and what is
 * missing: the tools ranked by their metadata only (`ToolRanker`), then the best one's input
 * filled — by a model's structured output when one is configured, else deterministically —
 * and validated against the tool's schema. It never guesses a call: an intent that fits no tool
 * well, fits two alike, or leaves a required field out, gets candidates and no call.
 */
export class IntentResolver {
  readonly #ranker: ToolRanker;
  readonly #known: readonly KnownName[];
  readonly #model: ModelReader | undefined;
  readonly #glossary: Glossary | undefined;

  private constructor(ranker: ToolRanker, known: readonly KnownName[], model: ModelReader | undefined, glossary: Glossary | undefined) {
    this.#ranker = ranker;
    this.#known = known;
    this.#model = model;
    this.#glossary = glossary;
  }

  static async build(
    tools: Tools,
    options: {
      embedder?: Embedder | undefined;
      known?: readonly KnownName[];
      model?: ModelReader;
      glossary?: Glossary | undefined;
      tuning?: Partial<ResolverTuning>;
    } = {},
  ): Promise<IntentResolver> {
    return new IntentResolver(await ToolRanker.build(tools, options), options.known ?? [], options.model, options.glossary);
  }

  get tools(): Tools {
    return this.#ranker.tools;
  }

  /** `request`: the MCP client that asked, when it can sample (a model of `mcp-sampling` is its), and what cancels a model's reading. */
  async resolve(intent: string, context?: string, now = new Date(), request?: ReadRequest): Promise<IntentAnswer> {
    const said = intent.trim();
    const none = (outcome: IntentOutcome, note: string): IntentAnswer => ({ candidates: [], missing: [], confidence: 0, outcome, note });
    if (said.length === 0 || rawWords(said).length === 0) return none('empty', 'the intent says nothing to resolve');
    if (said.length > INTENT_MAX_CHARS)
      return none('too_long', `the intent is ${said.length} characters; at most ${INTENT_MAX_CHARS} are read`);
    // Another language is read word by word into English where a glossary for it was built; else no call, but the candidates its ids, numbers and shared words point to.
    const foreign = foreignLanguage(said);
    const gloss =
      foreign || this.#glossary?.outreadsEnglish(said) ? (this.#glossary?.read(said) ?? (foreign ? null : undefined)) : undefined;
    const read = gloss?.text ?? said;
    const ranking = await this.#ranker.rank(read);
    // The context is read as far as an intent is: what is past 2,000 characters is not.
    const given = context?.slice(0, INTENT_MAX_CHARS);
    // With a model, it reads the words as said (in any language) and chooses among the candidates, or none; a model that fails leaves it to the offline decision, said in the note.
    const reading = await this.#read(ranking.candidates, said, given, request);
    const unread = 'the intent is not in English, and no glossary read it';
    if (gloss === null && typeof reading !== 'object') {
      return {
        candidates: ranking.candidates,
        missing: [],
        confidence: 0,
        outcome: 'unsupported_language',
        note: joined(`${unread}: no call, only the candidates its values and words suggest`, reading)!,
      };
    }
    const glossNote = gloss
      ? `read through the ${gloss.language} glossary as: ${gloss.text.length > NOTE_GLOSS ? `${gloss.text.slice(0, NOTE_GLOSS)}…` : gloss.text}`
      : undefined;
    const base = { candidates: ranking.candidates, confidence: ranking.confidence };
    if (typeof reading === 'object') {
      const note = joined(glossNote, `the model read it as ${reading.tool ?? 'none of the candidates'}`)!;
      if (!reading.tool) return { ...base, missing: [], outcome: 'none', note, by: 'model' };
      // The words that refuse an action are read in English (or through a glossary): in words neither reads, a tool that changes something is not called on the model's word alone.
      if (gloss === null && this.#ranker.tools[reading.tool]!.sideEffect !== 'read_only') {
        return {
          ...base,
          missing: [],
          outcome: 'unsupported_language',
          note: `${note}, which changes something; ${unread}, so whether they refuse its action is not read: no call`,
          by: 'model',
        };
      }
      return { ...this.#answer(base, reading.tool, reading, read, note), by: 'model' };
    }
    const note = joined(glossNote, reading);
    if (!ranking.chosen) return { ...base, missing: [], outcome: ranking.refused ?? 'none', ...(note ? { note } : {}) };
    const filled = fillArguments(this.#ranker.tools[ranking.chosen]!, given ? `${read}\n${given}` : read, { known: this.#known, now });
    return this.#answer(base, ranking.chosen, filled, read, note);
  }

  /** What the model is offered: the ranking's candidates, or every granted tool when there are at most five (an agent of a few tools is read whatever words its ranking found). */
  #offered(candidates: readonly IntentCandidate[]): string[] {
    const names = Object.keys(this.#ranker.tools);
    const ranked = candidates.map((c) => c.tool);
    return names.length <= OFFERED ? [...ranked, ...names.filter((n) => !ranked.includes(n))] : ranked.slice(0, OFFERED);
  }

  /** The model's reading of the words, or why it could not be had (a note); undefined without a model. */
  async #read(
    candidates: readonly IntentCandidate[],
    said: string,
    given: string | undefined,
    request: ReadRequest | undefined,
  ): Promise<ModelReading | string | undefined> {
    if (!this.#model) return undefined;
    const offered = this.#offered(candidates);
    if (offered.length === 0) return undefined;
    try {
      return await this.#model(offered, said, given, request);
    } catch (err) {
      // A reading its asker cancelled ends the resolution: nothing is decided for a request that is gone.
      if (request?.signal?.aborted) throw err;
      // The code only: what the model wrote is not passed on in an answer that is remembered.
      return `the model could not read it (${err instanceof ThymosError ? err.code : ErrorCode.LLM_UNAVAILABLE}): decided offline`;
    }
  }

  /** The answer for a chosen tool and its filled arguments: none on words that refuse what a tool that changes something does; else checked field by field, a call when every required one is there. */
  #answer(
    base: Pick<IntentAnswer, 'candidates' | 'confidence'>,
    chosen: string,
    filled: Filled,
    read: string,
    said: string | undefined,
  ): IntentAnswer {
    const tool = this.#ranker.tools[chosen]!;
    // "Don't cancel my order" names cancel_order as well as "cancel my order" does: a tool that changes something is not called on words that refuse its action.
    // Nor on a question whether it was done: "why was ORD-12345 cancelled?" asks to look, not to cancel.
    const refusal =
      tool.sideEffect === 'read_only'
        ? undefined
        : negatesAction(read, chosen)
          ? 'say not to do'
          : asksWhetherDone(read, chosen)
            ? 'ask whether someone did'
            : undefined;
    if (refusal) return { ...base, missing: [], outcome: 'none', note: joined(said, `the words ${refusal} what ${chosen} does: no call`)! };
    const { valid, refused } = validArguments(tool, filled.arguments);
    const missing = [...new Set([...filled.missing, ...refused.filter((f) => tool.input[f]?.required)])];
    const note = joined(said, refused.length > 0 ? `left out what its field refuses: ${refused.join(', ')}` : undefined);
    if (missing.length > 0) return { ...base, missing, outcome: 'incomplete', tool: chosen, arguments: valid, ...(note ? { note } : {}) };
    return { ...base, missing: [], outcome: 'call', call: { tool: chosen, arguments: valid }, ...(note ? { note } : {}) };
  }
}

/** Notes joined with "; ", undefined when there are none. */
function joined(...notes: Array<string | undefined>): string | undefined {
  return notes.filter(Boolean).join('; ') || undefined;
}

/** The filled arguments each field's own schema takes, and the fields whose value it refuses. */
function validArguments(tool: Tools[string], args: Record<string, unknown>): { valid: Record<string, unknown>; refused: string[] } {
  const shape = inputShape(tool);
  const valid: Record<string, unknown> = {};
  const refused: string[] = [];
  for (const [field, value] of Object.entries(args)) {
    if (!Object.hasOwn(shape, field) || field === 'reason') continue;
    const schema = shape[field];
    const checked = (schema as z.ZodType).safeParse(value);
    if (checked.success) valid[field] = checked.data;
    else refused.push(field);
  }
  return { valid, refused };
}
