import type { Bm25Matches } from './bm25-index.js';
import { episodeOf } from './episode-index.js';
import { type MemoryRecord, occurredAt } from './memory-record.js';
import { type TimeConstraint, timeConstraint } from './time-constraint.js';

/**
 * The few parameters of the cascade, named. Fitted once on the LoCoMo dev split at round
 * values (docs/benchmarks.md, "LoCoMo": each with its figure), never per conversation.
 */
export const CASCADE = {
  /** A memory said or done by the one agent or speaker the query names scores this much more (× 1 + it). */
  structuralBoost: 1,
  /** A memory of what happened within the time the query names scores this much more (× 1 + it). */
  temporalBoost: 1,
  /**
   * Share of its episode's score (the query's BM25 score in all the turns of one thread on one
   * day, normalised to the best episode among the matches) that every memory of it gains.
   */
  episodeWeight: 1,
  /** Score a cause lends to the memory it caused, per hop back (≤ 5 hops). */
  causalDecay: 0.5,
  causalHops: 5,
  /**
   * Weight of meaning among what the exact stages kept: each of the first `pool` adds this ×
   * its cosine to the query (min–max normalised among them) to its score normalised to the best.
   */
  semanticWeight: 0.3,
  /** Score of a memory only the semantic stage found, against the weakest lexical one it joins. */
  semanticShare: 0.5,
};

/** The cascade's parameters; a recall may change some (benchmarks and ablations do). */
export type CascadeTuning = typeof CASCADE;

export type CascadeStage = 'structural' | 'temporal' | 'lexical' | 'causal' | 'semantic';

/** What the cascade reads of an agent's memory. */
export interface CascadeSources {
  /** BM25 matches (with conversational context), best first, and the query's terms each memory holds. */
  lexical(query: string, limit: number, keep?: (id: string) => boolean): Bm25Matches;
  /**
   * Cosine to the query of each memory given (those with a vector), for ranking by meaning
   * within what the exact stages kept; undefined when no vector came in time.
   */
  meaning?: ((query: string, ids: readonly string[]) => Promise<ReadonlyMap<string, number> | undefined>) | undefined;
  /** Vector matches, best first; undefined without an embedder. */
  semantic?: ((query: string, limit: number, keep?: (id: string) => boolean) => Promise<Array<{ id: string; score: number }>>) | undefined;
  get(id: string): MemoryRecord | undefined;
  /** BM25 score of each episode given, its turns taken as one document (EpisodeIndex), from a search's matches. */
  episodes(episodes: ReadonlySet<string>, termsOf: Bm25Matches['termsOf']): ReadonlyMap<string, number>;
  /** Who memories are by (speakers, agents, event sources), lower-cased → as written. */
  speakers(): ReadonlyMap<string, string>;
  /** The causes of a memory, walked back up to `hops` links. */
  causes?: ((id: string, hops: number) => ReadonlyArray<{ memory: string; hops: number }>) | undefined;
}

export interface CascadeHit {
  id: string;
  /** 0..1, normalised to the best hit. */
  relevance: number;
  /** BM25 relevance, normalised to the best lexical match. */
  bm25: number;
  /** The stages that found or lifted it. */
  stages: CascadeStage[];
  /** Found only by meaning: a guess, not a match. */
  fuzzy: boolean;
  /** Cosine to the query, when meaning ranked it. */
  vector?: number;
}

interface Entry {
  score: number;
  bm25: number;
  stages: Set<CascadeStage>;
  vector?: number;
}

/**
 * Recall by precision, most exact first (RUM): structural (the agents and speakers the query
 * names), temporal (the time it names), lexical (BM25 with conversational context, lifted by
 * the score of its whole episode), causal (the causes of what was found, ≤ 5 hops), then
 * meaning within what those kept, and semantic alone only to fill what the others left, flagged fuzzy.
 */
export async function cascadeRecall(
  query: string,
  sources: CascadeSources,
  options: {
    k: number;
    now: number;
    keep?: ((id: string) => boolean) | undefined;
    pool: number;
    tuning?: Partial<CascadeTuning> | undefined;
  },
): Promise<CascadeHit[]> {
  const { k, keep, pool } = options;
  const t: CascadeTuning = { ...CASCADE, ...options.tuning };
  const scores = new Map<string, Entry>();
  const entryOf = (id: string) => {
    let e = scores.get(id);
    if (!e) scores.set(id, (e = { score: 0, bm25: 0, stages: new Set() }));
    return e;
  };
  // As many matches as the recall ranks again by strength: a longer list found no more (LoCoMo) and cost most at 100k.
  const { hits: lexical, termsOf } = sources.lexical(query, pool, keep);
  const best = lexical[0]?.score ?? 0;
  for (const h of lexical) {
    const e = entryOf(h.id);
    e.bm25 = best > 0 ? h.score / best : 0;
    e.score = e.bm25;
    e.stages.add('lexical');
  }
  if (t.episodeWeight > 0) episodes(scores, sources, termsOf, t.episodeWeight);
  if (t.structuralBoost > 0) structural(query, scores, sources, t.structuralBoost);

  const time = timeConstraint(query, options.now, (phrase) => {
    const top = sources.lexical(phrase, 1, keep).hits[0];
    const m = top && sources.get(top.id);
    return m ? occurredAt(m) : undefined;
  });
  if (time && t.temporalBoost > 0) temporal(time, scores, sources, t.temporalBoost);

  if (sources.causes && t.causalDecay > 0) causal(scores, sources.causes, entryOf, { k, keep, decay: t.causalDecay, hops: t.causalHops });

  const ranked = await byMeaning(
    query,
    [...scores].filter(([, e]) => e.score > 0).sort((a, b) => b[1].score - a[1].score),
    sources,
    pool,
    t.semanticWeight,
  );
  const fuzzy =
    ranked.length < k && sources.semantic && t.semanticShare > 0
      ? await fill(query, ranked, scores, sources.semantic, k, keep, t.semanticShare)
      : new Set<string>();
  if (fuzzy.size > 0) ranked.sort((a, b) => b[1].score - a[1].score);
  const top = ranked[0]?.[1].score ?? 0;
  return ranked.slice(0, Math.max(k, pool)).map(([id, e]) => ({
    id,
    relevance: top > 0 ? e.score / top : 0,
    bm25: e.bm25,
    stages: [...e.stages],
    fuzzy: fuzzy.has(id),
    ...(e.vector !== undefined ? { vector: e.vector } : {}),
  }));
}

/** The last resort: meaning alone, below every match the exact stages found, flagged fuzzy. Adds to `ranked`; returns what it added. */
async function fill(
  query: string,
  ranked: Array<[string, Entry]>,
  scores: ReadonlyMap<string, Entry>,
  semantic: NonNullable<CascadeSources['semantic']>,
  k: number,
  keep: ((id: string) => boolean) | undefined,
  share: number,
): Promise<Set<string>> {
  const fuzzy = new Set<string>();
  const floor = (ranked.at(-1)?.[1].score ?? 1) * share;
  for (const h of await semantic(query, k, keep)) {
    if (scores.has(h.id) || h.score <= 0) continue;
    fuzzy.add(h.id);
    ranked.push([h.id, { score: floor * h.score, bm25: 0, stages: new Set(['semantic']), vector: h.score }]);
  }
  return fuzzy;
}

/**
 * Meaning within what the exact stages kept: scores normalised to the best, and each of the
 * first `pool` gains `weight` × its cosine to the query, min–max normalised among them (a
 * memory with no vector yet takes their median). A memory meaning moved up is marked
 * `semantic`. Without vectors in time, the ranking stays as the exact stages left it.
 */
async function byMeaning(
  query: string,
  ranked: Array<[string, Entry]>,
  sources: CascadeSources,
  pool: number,
  weight: number,
): Promise<Array<[string, Entry]>> {
  const top = ranked[0]?.[1].score ?? 0;
  for (const [, e] of ranked) e.score = top > 0 ? e.score / top : 0;
  const kept = ranked.slice(0, pool);
  if (!sources.meaning || weight <= 0 || kept.length < 2) return ranked;
  const cosines = await sources.meaning(
    query,
    kept.map(([id]) => id),
  );
  if (!cosines) return ranked;
  const values = [...cosines.values()].sort((a, b) => a - b);
  const lo = values[0] ?? 0;
  const span = (values.at(-1) ?? 0) - lo;
  if (span <= 0) return ranked;
  const median = values[Math.floor(values.length / 2)]!;
  for (const [id, e] of kept) {
    const c = cosines.get(id);
    if (c !== undefined) e.vector = c;
    e.score += (weight * ((c ?? median) - lo)) / span;
  }
  const before = new Map(kept.map(([id], rank) => [id, rank]));
  const reranked = [...kept].sort((a, b) => b[1].score - a[1].score);
  reranked.forEach(([id, e], rank) => {
    if (rank < before.get(id)!) e.stages.add('semantic');
  });
  return [...reranked, ...ranked.slice(pool)];
}

/**
 * Every memory gains a share of its episode's score: the BM25 score of the query in the whole
 * episode (the turns of one conversation thread on one day, as one document), normalised to the
 * best episode among the matches, so the turns of a session that holds the query's words
 * between them rise together. A memory of no thread (a heard event, a note) is an episode of its
 * own and gains its own normalised score: the events one game loop publishes in a day share a
 * source, not a subject.
 */
function episodes(scores: Map<string, { score: number }>, sources: CascadeSources, termsOf: Bm25Matches['termsOf'], weight: number): void {
  const episodeOfId = new Map<string, string | undefined>();
  for (const id of scores.keys()) {
    const m = sources.get(id);
    episodeOfId.set(id, m && episodeOf(m));
  }
  const texts = sources.episodes(new Set([...episodeOfId.values()].filter((ep) => ep !== undefined)), termsOf);
  const top = Math.max(0, ...texts.values());
  for (const [id, e] of scores) {
    const ep = episodeOfId.get(id);
    e.score += weight * (ep === undefined ? e.score : top > 0 ? (texts.get(ep) ?? 0) / top : 0);
  }
}

/** Lifts what happened within the window; "first"/"last" lifts the earliest or latest of the matches. */
function temporal(
  time: TimeConstraint,
  scores: Map<string, { score: number; stages: Set<CascadeStage> }>,
  sources: CascadeSources,
  boost: number,
): void {
  const within = (at: number) => (time.from === undefined || at >= time.from) && (time.to === undefined || at < time.to);
  const dated = [...scores].flatMap(([id, e]) => {
    const m = sources.get(id);
    return m && e.score > 0 ? [{ id, e, at: occurredAt(m) }] : [];
  });
  if (time.from !== undefined || time.to !== undefined) {
    for (const d of dated) {
      if (!within(d.at)) continue;
      d.e.score *= 1 + boost;
      d.e.stages.add('temporal');
    }
  }
  if (time.order) {
    // Among the strongest matches (within half the best score), the earliest or latest.
    const best = Math.max(0, ...dated.map((d) => d.e.score));
    const strong = dated.filter((d) => d.e.score >= best / 2).sort((a, b) => (time.order === 'earliest' ? a.at - b.at : b.at - a.at));
    const pick = strong[0];
    if (pick) {
      pick.e.score = best * (1 + boost);
      pick.e.stages.add('temporal');
    }
  }
}

/** Lifts what was said or done by the one agent or speaker the query names (none when it names several). */
function structural(
  query: string,
  scores: Map<string, { score: number; stages: Set<CascadeStage> }>,
  sources: CascadeSources,
  boost: number,
): void {
  const named = [...sources.speakers()].filter(([lower]) => new RegExp(`\\b${escape(lower)}\\b`, 'i').test(query)).map(([, name]) => name);
  if (named.length !== 1) return;
  for (const [id, e] of scores) {
    if (sources.get(id)?.source.by === named[0]) {
      e.score *= 1 + boost;
      e.stages.add('structural');
    }
  }
}

/** The causes of the best `k` so far, each lent the score of what it caused, less by `decay` for every hop back. */
function causal(
  scores: Map<string, Entry>,
  causes: NonNullable<CascadeSources['causes']>,
  entryOf: (id: string) => Entry,
  options: { k: number; keep: ((id: string) => boolean) | undefined; decay: number; hops: number },
): void {
  const top = [...scores].sort((a, b) => b[1].score - a[1].score).slice(0, options.k);
  for (const [id, e] of top) {
    for (const c of causes(id, options.hops)) {
      if (options.keep && !options.keep(c.memory)) continue;
      const lent = e.score * options.decay ** c.hops;
      const cause = entryOf(c.memory);
      if (lent > cause.score) cause.score = lent;
      cause.stages.add('causal');
    }
  }
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
