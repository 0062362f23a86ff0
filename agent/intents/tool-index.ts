import type { Tools } from '../../shared/domain/index.js';
import { dot, type Embedder } from '../../shared/platform/index.js';
import { editDistance, intentStem, intentWords, rawWords } from './intent-words.js';
import { type English, englishBackground, ToolLikelihood } from './tool-likelihood.js';

/** BM25's term-frequency saturation and length normalisation, as Lucene sets them. */
const K1 = 1.2;
const B = 0.75;
/**
 * Word weights are counted as if the metadata had at least this many texts (the rest holding
 * none of its words): a few tools' texts would otherwise weigh every word alike, and a word a
 * catalogue of three tools uses once would count for little.
 */
const BACKGROUND_TEXTS = 500;

/** One text of a tool's metadata: an example, or what its name, description, tags and fields say. */
interface ToolText {
  tool: string;
  /** What its name, description, tags and fields say, rather than an example. */
  about: boolean;
  text: string;
  /** Stemmed words and how often each occurs. */
  words: Map<string, number>;
  length: number;
  vector?: Float32Array | undefined;
}

/** How well one tool matches an intent, and why. */
export interface ToolMatch {
  tool: string;
  /** BM25 over its best text, as a share of the most the intent's words could score (0..1). */
  words: number;
  /** The intent's words found in any of its texts, or near one in meaning, weighted as BM25 weighs them (0..1). */
  near: number;
  /** The cosine of the intent and its nearest text (0 without an embedder). */
  meaning: number;
  /** How likely it is the tool meant, from which tools' lines use the intent's words (`ToolLikelihood`), 0..1 over all tools. */
  likelihood: number;
  /** How much better its lines explain the intent's words than plain English does: the log-likelihood ratio, in nats (`ToolLikelihood`); -Infinity when no word is known, undefined without the offline model's word list. */
  ratio?: number | undefined;
  /** The text the words matched best. */
  byWords?: string | undefined;
  /** The intent's words it holds, and those near one of its words (`fix~repair`). */
  matched: string[];
}

/** A word of an intent as the index reads it. */
interface QueryWord {
  raw: string;
  word: string;
  weight: number;
  known: boolean;
}

/** What the index weighs. */
export interface IndexTuning {
  /** What a word the metadata never uses weighs, as a share of the highest weight. */
  unknownWeight: number;
  /** Least cosine of two words' vectors for one to stand for the other. */
  nearWords: number;
  /** Whether a word counts more for a tool the more of its texts use it (BM25's saturation over texts). */
  toolTf: boolean;
  /** What a match with an example counts, beside one with what the tool's name and description say. */
  exampleWeight: number;
  /** How many words of the background each tool's language model holds beside its own (Dirichlet's μ). */
  likelihoodPrior: number;
}

/** The words of a tool's metadata that are not an example: name, description, tags, field names and descriptions, enum values. Never executor details. */
function aboutText(name: string, tool: Tools[string]): string {
  const fields = Object.entries(tool.input).map(
    ([f, spec]) => `${f.replace(/[_-]/g, ' ')} ${spec.description ?? ''} ${(spec.values ?? []).join(' ')}`,
  );
  return [name.replace(/[_-]/g, ' '), tool.description, tool.tags.join(' '), ...fields].join('. ');
}

function counts(words: readonly string[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const w of words) m.set(w, (m.get(w) ?? 0) + 1);
  return m;
}

/**
 * The granted tools' metadata, indexed for intent resolution: BM25 over words (each example a
 * text of its own, and one text of what the tool's name, description, tags and fields say)
 * and, with an embedder, the vector of each text and of each word, so that an intent's word
 * the metadata does not use counts for a tool that uses a word near it in meaning. Built once
 * per set of tools.
 */
export class ToolIndex {
  readonly tools: Tools;
  readonly #texts: ToolText[];
  readonly #idf = new Map<string, number>();
  /** Raw words of the metadata (4 letters or more) and their stems, for typos. */
  readonly #surface = new Map<string, string>();
  readonly #avgLength: number;
  readonly #embedder: Embedder | undefined;
  readonly #t: IndexTuning;
  /** Each distinct raw word of the metadata (one with a stem); its vector is the row of the same index in `#matrix`. */
  readonly #vocab: string[];
  readonly #matrix: Float32Array;
  /** By word of the metadata (its index in the vocabulary), the tools whose texts use it. */
  readonly #holders: string[][];
  /** By word of an intent, the metadata's words near it in meaning: their index and cosine, at least `nearWords`. Remembered per word (at most 2,000). */
  readonly #nearSeen = new Map<string, ReadonlyArray<readonly [number, number]>>();
  readonly #nearestSeen = new Map<string, string | undefined>();
  /** By tool, each stem its texts use and how many of them use it. */
  readonly #stems = new Map<string, Map<string, number>>();
  readonly #likelihood: ToolLikelihood;

  private constructor(
    tools: Tools,
    texts: ToolText[],
    embedder: Embedder | undefined,
    tuning: IndexTuning,
    vocab: string[],
    wordVectors: readonly Float32Array[],
    toolWords: Map<string, number[]>,
    english: English | undefined,
  ) {
    this.tools = tools;
    this.#texts = texts;
    this.#embedder = embedder;
    this.#t = tuning;
    this.#vocab = vocab;
    // The metadata's word vectors in one block, row after row: what every intent's words are compared with.
    const dims = wordVectors[0]?.length ?? 0;
    this.#matrix = new Float32Array(wordVectors.length * dims);
    wordVectors.forEach((v, i) => this.#matrix.set(v, i * dims));
    this.#holders = vocab.map(() => []);
    for (const [tool, indices] of toolWords) for (const i of indices) this.#holders[i]!.push(tool);
    const df = new Map<string, number>();
    for (const t of texts) for (const w of t.words.keys()) df.set(w, (df.get(w) ?? 0) + 1);
    for (const [w, n] of df) this.#idf.set(w, Math.log(1 + (Math.max(texts.length, BACKGROUND_TEXTS) - n + 0.5) / (n + 0.5)));
    this.#avgLength = texts.reduce((n, t) => n + t.length, 0) / Math.max(texts.length, 1);
    for (const t of texts) {
      const own = this.#stems.get(t.tool) ?? new Map<string, number>();
      for (const w of t.words.keys()) own.set(w, (own.get(w) ?? 0) + 1);
      this.#stems.set(t.tool, own);
    }
    for (const t of texts)
      for (const raw of rawWords(t.text))
        if (raw.length >= 4 && !this.#surface.has(raw)) this.#surface.set(raw, intentWords(raw)[0] ?? raw);
    this.#likelihood = new ToolLikelihood(
      texts.map((t) => ({ tool: t.tool, words: t.words.keys() })),
      { prior: tuning.likelihoodPrior, english },
    );
  }

  static async build(tools: Tools, options: { embedder?: Embedder | undefined; tuning: IndexTuning }): Promise<ToolIndex> {
    const texts: ToolText[] = [];
    for (const [name, tool] of Object.entries(tools)) {
      for (const [i, text] of [aboutText(name, tool), ...tool.examples].entries()) {
        const words = intentWords(text);
        texts.push({ tool: name, about: i === 0, text, words: counts(words), length: words.length });
      }
    }
    const embedder = options.embedder;
    const vocab: string[] = [];
    const toolWords = new Map<string, number[]>();
    let wordVectors: Float32Array[] = [];
    if (embedder && texts.length > 0) {
      const vectors = await embedder.embed(texts.map((t) => t.text));
      texts.forEach((t, i) => (t.vector = vectors[i]));
      const at = new Map<string, number>();
      for (const t of texts) {
        for (const raw of rawWords(t.text)) {
          if (intentWords(raw)[0] === undefined) continue;
          if (!at.has(raw)) {
            at.set(raw, vocab.length);
            vocab.push(raw);
          }
          const list = toolWords.get(t.tool) ?? [];
          if (!list.includes(at.get(raw)!)) list.push(at.get(raw)!);
          toolWords.set(t.tool, list);
        }
      }
      wordVectors = await embedder.embed(vocab);
    }
    // Plain English, from the offline model's word list, for the words the tools' lines use: read once, when the index is built.
    const wanted = new Set(texts.flatMap((t) => [...t.words.keys()]));
    const list = embedder?.wordsByFrequency?.() ?? [];
    const english = list.length > 0 ? englishBackground(list, intentStem, wanted) : undefined;
    return new ToolIndex(tools, texts, embedder, options.tuning, vocab, wordVectors, toolWords, english);
  }

  get #unknownIdf(): number {
    return Math.log(1 + (Math.max(this.#texts.length, BACKGROUND_TEXTS) + 0.5) / 0.5);
  }

  /**
   * The intent's words as the index knows them: a word it does not hold is read as the word of
   * the metadata a typo away (one edit for 4 to 7 letters, two from 8), when there is one.
   */
  #queryWords(intent: string): QueryWord[] {
    const out: QueryWord[] = [];
    for (const raw of rawWords(intent)) {
      const [word] = intentWords(raw);
      if (word === undefined) continue;
      // A word the offline model holds is a word, not a typo: "cave" is not "came" misspelled.
      const read = this.#idf.has(word) ? word : raw.length < 4 || this.#embedder?.hasWord?.(raw) ? undefined : this.#nearest(raw);
      out.push(
        read
          ? { raw, word: read, weight: this.#idf.get(read)!, known: true }
          : { raw, word, weight: this.#unknownIdf * this.#t.unknownWeight, known: false },
      );
    }
    return out;
  }

  /** The nearest word by edits; between words as near, the one that starts alike, then the more common (the likelier meant). Remembered per word (at most 10,000). */
  #nearest(raw: string): string | undefined {
    if (this.#nearestSeen.has(raw)) return this.#nearestSeen.get(raw);
    const found = this.#nearestNow(raw);
    if (this.#nearestSeen.size >= 10_000) this.#nearestSeen.clear();
    this.#nearestSeen.set(raw, found);
    return found;
  }

  #nearestNow(raw: string): string | undefined {
    if (raw.length > 40) return undefined;
    const max = raw.length >= 8 ? 2 : 1;
    let best: { stem: string; rank: number } | undefined;
    for (const [surface, stem] of this.#surface) {
      if (!this.#idf.has(stem)) continue;
      const d = editDistance(raw, surface, max);
      if (d > max) continue;
      const rank = d * 100 + (surface[0] === raw[0] ? 0 : 50) + this.#idf.get(stem)!;
      if (!best || rank < best.rank) best = { stem, rank };
    }
    return best?.stem;
  }

  /** Every tool's match for an intent. */
  async match(intent: string): Promise<ToolMatch[]> {
    const query = this.#queryWords(intent);
    const total = query.reduce((n, q) => n + q.weight, 0);
    const vector = this.#embedder ? (await this.#embedder.embed([intent]))[0] : undefined;
    const byTool = new Map<string, ToolMatch>();
    const near = this.#embedder && this.#vocab.length > 0 && total > 0 ? await this.#nearInMeaning(query.map((q) => q.raw)) : undefined;
    // Each word once: saying a tool's word again does not explain the intent any better.
    const likely = this.#likelihood.score([...new Set(query.map((q) => q.word))]);
    for (const t of this.#texts) {
      let score = 0;
      const lengthNorm = K1 * (1 - B + (B * t.length) / this.#avgLength);
      for (const q of query) {
        const tf = t.words.get(q.word);
        if (tf) score += q.weight * ((tf * (K1 + 1)) / (tf + lengthNorm));
      }
      const words = (total > 0 ? Math.min(1, score / total) : 0) * (t.about ? 1 : this.#t.exampleWeight);
      const meaning = vector && t.vector ? Math.max(0, dot(vector, t.vector)) : 0;
      const m = byTool.get(t.tool) ?? {
        tool: t.tool,
        words: 0,
        near: 0,
        meaning: 0,
        likelihood: likely.posterior.get(t.tool) ?? 0,
        ratio: likely.ratio && (likely.ratio.get(t.tool) ?? -Infinity),
        matched: [],
      };
      if (words > m.words) [m.words, m.byWords] = [words, t.text];
      m.meaning = Math.max(m.meaning, meaning);
      byTool.set(t.tool, m);
    }
    this.#nearWords(query, total, byTool, near);
    return [...byTool.values()];
  }

  /** Each tool's share of the intent's words that it uses, or uses a word near in meaning to (that one counted by how near). */
  #nearWords(
    query: QueryWord[],
    total: number,
    byTool: Map<string, ToolMatch>,
    near: ReadonlyArray<ReadonlyArray<readonly [number, number]>> | undefined,
  ): void {
    if (total <= 0) return;
    // By query word, each tool's nearest word in meaning among those near enough.
    const nearest = query.map((_, qi) => {
      const best = new Map<string, readonly [number, number]>();
      for (const hit of near?.[qi] ?? [])
        for (const tool of this.#holders[hit[0]]!) if (hit[1] > (best.get(tool)?.[1] ?? 0)) best.set(tool, hit);
      return best;
    });
    for (const [tool, m] of byTool) {
      const own = this.#stems.get(tool)!;
      let credit = 0;
      query.forEach((q, qi) => {
        if (own.has(q.word)) {
          const tf = own.get(q.word)!;
          credit += q.weight * (this.#t.toolTf ? (tf * (K1 + 1)) / (tf + K1) / (K1 + 1) : 1);
          if (!m.matched.includes(q.word)) m.matched.push(q.word);
          return;
        }
        const hit = nearest[qi]!.get(tool);
        if (!hit) return;
        credit += q.weight * ((hit[1] - this.#t.nearWords) / (1 - this.#t.nearWords));
        m.matched.push(`${q.raw}~${this.#vocab[hit[0]]!}`);
      });
      m.near = Math.min(1, credit / total);
    }
  }

  /** By query word, the metadata's words whose cosine with it is at least `nearWords`: their index and cosine. */
  async #nearInMeaning(raws: readonly string[]): Promise<Array<ReadonlyArray<readonly [number, number]>>> {
    const found = new Map<string, ReadonlyArray<readonly [number, number]>>();
    for (const r of raws) {
      const seen = this.#nearSeen.get(r);
      if (seen) found.set(r, seen);
    }
    const missing = [...new Set(raws.filter((r) => !found.has(r)))];
    const vectors = missing.length > 0 ? await this.#embedder!.embed(missing) : [];
    const words = this.#vocab.length;
    const matrix = this.#matrix;
    const floor = this.#t.nearWords;
    vectors.forEach((v, k) => {
      const hits: Array<readonly [number, number]> = [];
      const dims = v.length;
      if (v.some((x) => x !== 0)) {
        for (let i = 0, at = 0; i < words; i++, at += dims) {
          let s = 0;
          for (let d = 0; d < dims; d++) s += v[d]! * matrix[at + d]!;
          if (s >= floor) hits.push([i, s]);
        }
      }
      found.set(missing[k]!, hits);
      if (this.#nearSeen.size >= 2_000) this.#nearSeen.clear();
      this.#nearSeen.set(missing[k]!, hits);
    });
    return raws.map((r) => found.get(r)!);
  }
}
