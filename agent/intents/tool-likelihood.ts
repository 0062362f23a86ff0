/**
 * How likely each tool is to be the one meant, from the words alone, as a multinomial naive
 * Bayes classifier learned from the tools' own metadata: each tool's texts (what its name,
 * description and fields say, and each example) are its training lines, and a word counts once
 * per line that uses it. Where BM25 asks how well the intent's words match a text, this asks
 * which tool's lines use them: a word many of one tool's examples use and few of another's
 * tells the two apart, which a word common to both never does. Learned when the index is built,
 * in one pass over the words; nothing is fitted to any intent.
 */
export class ToolLikelihood {
  readonly #tools: readonly string[];
  /** By word, each tool's log-probability of it. */
  readonly #logP = new Map<string, Float64Array>();

  /**
   * @param lines each tool's lines, as their (stemmed) words
   * @param smoothing Lidstone's α: what every word is counted as having been seen, in every tool's lines
   */
  constructor(lines: ReadonlyArray<{ tool: string; words: Iterable<string> }>, smoothing = 0.5) {
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
    const vocabulary = counts.size;
    const denominators = totals.map((n) => Math.log(n + smoothing * vocabulary));
    for (const [w, c] of counts) this.#logP.set(w, c.map((n, i) => Math.log(n + smoothing) - denominators[i]!));
  }

  /**
   * Each tool's posterior for the words (equal priors; a word no tool's lines use says nothing
   * and is passed over), summing to 1; an empty map when no word is known.
   */
  posterior(words: readonly string[]): Map<string, number> {
    const known = words.filter((w) => this.#logP.has(w));
    if (known.length === 0 || this.#tools.length === 0) return new Map();
    const log = new Float64Array(this.#tools.length);
    for (const w of known) {
      const p = this.#logP.get(w)!;
      for (let i = 0; i < log.length; i++) log[i]! += p[i]!;
    }
    const top = Math.max(...log);
    let sum = 0;
    const e = log.map((x) => {
      const v = Math.exp(x - top);
      sum += v;
      return v;
    });
    return new Map(this.#tools.map((t, i) => [t, e[i]! / sum]));
  }
}
