/**
 * How likely each tool is to be the one meant, and whether any is, from the words alone: each
 * tool is a language model learned from its own metadata (what its name, description and
 * fields say, and each example, a word counted once per line that uses it), smoothed towards a
 * background (Dirichlet smoothing, as query-likelihood retrieval does).
 *
 * - Which tool: the posterior over the tools, equal priors, each model smoothed towards half
 *   plain English and half the catalogue's own words (all of it the catalogue's without a word
 *   list). Where BM25 asks how well the words match a text, this asks whose lines use them: a
 *   word many of one tool's examples use and few of another's tells the two apart, which a word
 *   common to both never does.
 * - Whether any: the log-likelihood ratio of the intent's words under a tool's model smoothed
 *   towards plain English alone, against plain English. A word the tool's lines use and English
 *   seldom does counts for it; a word its lines never use counts against it. An intent about
 *   something else ("what time is it in Tokyo") shares a word or two with some tool and leaves
 *   the rest unexplained. Against plain English and not the catalogue, so that it says the same
 *   of an agent granted one tool as of one granted two hundred; without a word list of English
 *   there is no ratio.
 *
 * Learned when the index is built, in one pass over the words; nothing is fitted to any intent.
 */
export class ToolLikelihood {
  readonly #tools: readonly string[];
  /** By word, each tool's log-likelihood ratio for it against the mixed background: what the posterior is made of. */
  readonly #which = new Map<string, Float64Array>();
  /** By word, each tool's log-likelihood ratio for it against plain English; empty without English. */
  readonly #any = new Map<string, Float64Array>();
  /** Each tool's log-likelihood ratio for a word its lines never use, against either background. */
  readonly #unexplained: Float64Array;

  /**
   * @param lines each tool's lines, as their (stemmed) words
   * @param options.prior Dirichlet's μ: how many words of the background each tool's model holds beside its own
   * @param options.english each stem's probability in plain English (`englishBackground`)
   */
  constructor(lines: ReadonlyArray<{ tool: string; words: Iterable<string> }>, options: { prior: number; english?: English | undefined }) {
    const tools = [...new Set(lines.map((l) => l.tool))];
    this.#tools = tools;
    const at = new Map(tools.map((t, i) => [t, i]));
    const counts = new Map<string, Float64Array>();
    const totals = new Float64Array(tools.length);
    for (const line of lines) {
      const i = at.get(line.tool)!;
      for (const w of new Set(line.words)) {
        const c = counts.get(w) ?? new Float64Array(tools.length);
        c[i]! += 1;
        counts.set(w, c);
        totals[i]! += 1;
      }
    }
    const mu = options.prior;
    const all = totals.reduce((a, b) => a + b, 0);
    const english = options.english;
    // log( P(w | tool) / P(w | background) ), P(w | tool) = (count + μ · background) / (total + μ).
    const ratios = (c: Float64Array, background: number) =>
      c.map((n, i) => Math.log((n + mu * background) / ((totals[i]! + mu) * background)));
    this.#unexplained = totals.map((n) => Math.log(mu / (n + mu)));
    for (const [w, c] of counts) {
      const own = c.reduce((a, b) => a + b, 0) / all;
      const plain = english ? (english.probability.get(w) ?? english.unlisted) : undefined;
      this.#which.set(w, ratios(c, plain === undefined ? own : 0.5 * plain + 0.5 * own));
      if (plain !== undefined) this.#any.set(w, ratios(c, plain));
    }
  }

  /**
   * Each tool's posterior for the words (summing to 1) and its log-likelihood ratio against
   * plain English, in nats; empty maps when no word is known to any tool's lines, and no ratio
   * at all without English.
   */
  score(words: readonly string[]): { posterior: Map<string, number>; ratio?: Map<string, number> } {
    const english = this.#any.size > 0;
    if (this.#tools.length === 0 || !words.some((w) => this.#which.has(w)))
      return { posterior: new Map(), ...(english ? { ratio: new Map() } : {}) };
    const sum = (table: Map<string, Float64Array>) => {
      const log = new Float64Array(this.#tools.length);
      for (const w of words) {
        const r = table.get(w) ?? this.#unexplained;
        for (let i = 0; i < log.length; i++) log[i]! += r[i]!;
      }
      return log;
    };
    const which = sum(this.#which);
    const top = Math.max(...which);
    const e = which.map((x) => Math.exp(x - top));
    const total = e.reduce((a, b) => a + b, 0);
    const posterior = new Map(this.#tools.map((t, i) => [t, e[i]! / total]));
    if (!english) return { posterior };
    const any = sum(this.#any);
    return { posterior, ratio: new Map(this.#tools.map((t, i) => [t, any[i]!])) };
  }
}

/** Plain English's word probabilities, for the stems asked about: what a tool's lines are weighed against. */
export interface English {
  /** Each stem's probability (summed over the words that share it). */
  probability: ReadonlyMap<string, number>;
  /** The probability of a word the list does not hold: that of its last, rarest word. */
  unlisted: number;
}

/**
 * Plain English from a list of words most frequent first (Zipf: the word of rank r has
 * probability 1 / (r × H), H the list's harmonic number), kept for the stems in `wanted` only:
 * an agent keeps a few hundred numbers, not the model's fifty thousand.
 */
export function englishBackground(
  wordsByFrequency: readonly string[],
  stem: (word: string) => string | undefined,
  wanted: ReadonlySet<string>,
): English {
  const harmonic = Math.log(Math.max(wordsByFrequency.length, 1)) + 0.5772;
  const probability = new Map<string, number>();
  wordsByFrequency.forEach((w, rank) => {
    const s = stem(w);
    if (s !== undefined && wanted.has(s)) probability.set(s, (probability.get(s) ?? 0) + 1 / ((rank + 1) * harmonic));
  });
  return { probability, unlisted: 1 / (Math.max(wordsByFrequency.length, 1) * harmonic) };
}
