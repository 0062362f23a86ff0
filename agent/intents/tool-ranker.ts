import type { Tools } from '../../shared/domain/index.js';
import type { Embedder } from '../../shared/platform/index.js';
import type { IntentCandidate } from '../runtime/acting.js';
import { distinctivePatterns, type FieldPattern, valueFit } from './field-values.js';
import { ToolIndex, type ToolMatch } from './tool-index.js';

/** How the measures are weighed and where the resolver stops trusting them (docs/intents.md has what each lever gave). */
export interface ResolverTuning {
  /** Share of the fused score from words (BM25 over the best text); the rest from words near in meaning and the intent's meaning. */
  wordsShare: number;
  /** Of the rest, the share from the intent's words a tool holds or holds one near to (over all its texts); the rest from the meaning of the whole intent. */
  nearShare: number;
  /** The cosine two unrelated texts have under the model: meaning counts from there up. */
  meaningFloor: number;
  /** Share of the score from how well the values the intent holds (ids, emails, versions) fit the tool's fields, when it holds any. */
  valuesShare: number;
  /** Share of the score from how likely the tool is from which tools' lines use the intent's words (`ToolLikelihood`). */
  likelihoodShare: number;
  /** How many words of the background each tool's language model holds beside its own (Dirichlet's μ). */
  likelihoodPrior: number;
  /**
   * Least log-likelihood ratio (nats) of the intent's words under the best tool's language model
   * against plain English's: how much better its lines explain what the intent says than plain
   * words do. An intent about something else leaves words no tool's lines use; a line that says
   * little ("ok thanks") explains nothing. Without the offline model, whose word list is the
   * English, there is no ratio: a tool that reads then needs the bars of one that writes, and one
   * that writes is never called.
   */
  leastRatio: number;
  /** What a word the metadata never uses weighs, as a share of the highest weight. */
  unknownWeight: number;
  /** Least cosine of two words' vectors for one to stand for the other. */
  nearWords: number;
  /** Whether a word counts more for a tool the more of its texts use it. */
  toolTf: boolean;
  /** What a match with an example counts, beside one with what the tool's name and description say. */
  exampleWeight: number;
  /** Least fused score for the best tool to be taken. */
  least: number;
  /** Least lead of the best tool over the next, in score (0: a tool that only reads is taken on a tie, the first of the ranking). */
  margin: number;
  /**
   * For a tool that is not `read_only`, higher bars, since a wrong call changes something: the
   * least score, lead and ratio. The ratio's bar is raised most (how well the tool's lines explain
   * every word said); the score's least, since typos and indirect words lower it for the tool
   * meant as much as for another.
   */
  leastToWrite: number;
  marginToWrite: number;
  ratioToWrite: number;
}

export const DEFAULT_TUNING: ResolverTuning = {
  wordsShare: 0.5,
  nearShare: 0.7,
  meaningFloor: 0.45,
  valuesShare: 0.1,
  likelihoodShare: 0.1,
  likelihoodPrior: 200,
  leastRatio: 9,
  unknownWeight: 0.5,
  nearWords: 0.5,
  toolTf: false,
  exampleWeight: 1,
  least: 0.3,
  margin: 0,
  leastToWrite: 0.4,
  marginToWrite: 0.04,
  ratioToWrite: 12,
};

/** How the resolver ranked the tools for an intent: candidates best first, and whether the best is trusted. */
export interface Ranking {
  candidates: IntentCandidate[];
  /** 0..1: how sure the best candidate is the one meant; 0 when none fits. */
  confidence: number;
  /** The best candidate when it fits well enough and leads the next clearly; undefined: none of these, or too close to call. */
  chosen?: string | undefined;
  /** Without a chosen one, why: the best fits well enough but another nearly as well (`ambiguous`), or none fits (`none`). */
  refused?: 'ambiguous' | 'none' | undefined;
  /** What the best candidate's score is made of, and its lead over the next (a share of its score). */
  best?: (ToolMatch & { score: number; lead: number }) | undefined;
}

/**
 * Ranks the granted tools for plain words by their metadata only (words by BM25, meaning by
 * the offline model's vectors), and says when none fits well enough, or when two fit too
 * nearly alike to choose, rather than guess.
 */
export class ToolRanker {
  readonly #index: ToolIndex;
  readonly #t: ResolverTuning;
  readonly #patterns: Map<string, FieldPattern[]>;

  private constructor(index: ToolIndex, tuning: ResolverTuning) {
    this.#index = index;
    this.#t = tuning;
    this.#patterns = new Map(Object.entries(index.tools).map(([name, tool]) => [name, distinctivePatterns(tool)]));
  }

  static async build(
    tools: Tools,
    options: { embedder?: Embedder | undefined; tuning?: Partial<ResolverTuning> } = {},
  ): Promise<ToolRanker> {
    const tuning = { ...DEFAULT_TUNING, ...options.tuning };
    return new ToolRanker(await ToolIndex.build(tools, { embedder: options.embedder, tuning }), tuning);
  }

  get tools(): Tools {
    return this.#index.tools;
  }

  async rank(intent: string, k = 5): Promise<Ranking> {
    const t = this.#t;
    const meaning = (m: ToolMatch) => Math.max(0, (m.meaning - t.meaningFloor) / (1 - t.meaningFloor));
    const fit = valueFit(intent, this.#index.tools, this.#patterns);
    const scored = (await this.#index.match(intent))
      .map((m) => {
        const said = t.wordsShare * m.words + (1 - t.wordsShare) * (t.nearShare * m.near + (1 - t.nearShare) * meaning(m));
        const text = (1 - t.likelihoodShare) * said + t.likelihoodShare * m.likelihood;
        return { m, score: fit ? (1 - t.valuesShare) * text + t.valuesShare * fit.get(m.tool)! : text };
      })
      .sort((a, b) => b.score - a.score);
    const candidates = scored
      .slice(0, k)
      .filter((c) => c.score > 0)
      .map(({ m, score }) => ({ tool: m.tool, score: round(score), why: why(m) }));
    const [first, second] = scored;
    if (!first || first.score <= 0) return { candidates, confidence: 0, refused: 'none' };
    const lead = first.score - (second?.score ?? 0);
    const writes = this.#index.tools[first.m.tool]!.sideEffect !== 'read_only';
    // Without the offline model there is no ratio, and the words alone decide less: a tool that
    // only reads needs the bars of one that writes, and one that writes is never called.
    const wordsOnly = first.m.ratio === undefined;
    const [least, margin, leastRatio] =
      writes || wordsOnly ? [t.leastToWrite, t.marginToWrite, t.ratioToWrite] : [t.least, t.margin, t.leastRatio];
    // Each measure's share of the way to where it is trusted, the weakest deciding: 0.5 on every threshold, 1 at twice each; at most 0.5 without a ratio.
    const share = (x: number, bar: number) => (bar > 0 ? Math.max(0, x / (2 * bar)) : 1);
    const confidence = round(
      Math.min(1, share(first.score, least), share(lead, margin), wordsOnly ? 0.5 : share(first.m.ratio!, leastRatio)),
    );
    const fits = first.score >= least && (wordsOnly ? !writes : first.m.ratio! >= leastRatio);
    const best = { ...first.m, score: first.score, lead };
    if (fits && lead >= margin) return { candidates, confidence, chosen: first.m.tool, best };
    return { candidates, confidence, refused: fits ? 'ambiguous' : 'none', best };
  }
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}

function why(m: ToolMatch): string {
  const parts: string[] = [];
  if (m.words > 0) parts.push(`words ${round(m.words)} (${m.matched.slice(0, 5).join(', ')}) in "${(m.byWords ?? '').slice(0, 80)}"`);
  if (m.near > 0) parts.push(`near ${round(m.near)}`);
  if (m.meaning > 0) parts.push(`meaning ${round(m.meaning)}`);
  return parts.join('; ');
}
