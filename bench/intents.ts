import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { checkExamples } from '../agent/intents/example-check.js';
import { Glossary } from '../agent/intents/glossary.js';
import { foreignLanguage, IntentResolver } from '../agent/intents/intent-resolver.js';
import { modelReader } from '../agent/intents/model-reader.js';
import type { ResolverTuning } from '../agent/intents/tool-ranker.js';
import { OpenAiCompatibleProvider } from '../agent/llm/openai-compatible-provider.js';
import { glossaryDir, offlineModelDir } from '../shared/config/thymos-root.js';
import { loadDomainSchema } from '../shared/domain/domain-schema.js';
import type { Tool, Tools } from '../shared/domain/tool-schema.js';
import { StaticEmbedder } from '../shared/platform/static-embedder.js';
import { REPO_ROOT } from '../test/helpers/workspace.js';
import { readingOverhead, toolLoopOverhead } from './intent-model-time.js';
import type { Figure, Scenario } from './scenario.js';
import { quantile, round } from './stats.js';

/** One labelled intent of bench/intents (README there). */
export interface LabelledIntent {
  intent: string;
  tool: string | null;
  arguments?: Record<string, unknown>;
  kind: string;
}

/** What a set of intents measured. */
export interface IntentFigures {
  intents: number;
  inScope: number;
  outOfScope: number;
  /** In scope: the first candidate is the tool meant. */
  top1: number;
  /** In scope: answered with a call or with the missing fields of one tool (the tool meant or not). */
  answered: number;
  /** In scope: answered, and the tool is the one meant. */
  answeredRight: number;
  /** In scope: a call (complete), among those that state every required value. */
  calledWhenComplete: number;
  /** Out of scope: answered with no call and no tool. */
  outOfScopeNone: number;
  /** Calls to a tool that is not the one meant (out of scope included), and of those, to tools that are not read_only. */
  wrongCalls: number;
  wrongWriteCalls: number;
  /** Stated argument values filled as stated, among answers with the right tool (a call, or an incomplete answer's values). */
  argumentsRight: number;
  argumentsStated: number;
  /** In scope and written in another language (`foreignLanguage`), which the offline model does not read: those intents are answered `unsupported_language`. */
  inOtherLanguage: number;
  /** `top1` and `answered` among the in-scope intents in English only. */
  top1English: number;
  answeredEnglish: number;
}

const same = (a: unknown, b: unknown) => (typeof a === 'string' && typeof b === 'string' ? a.toLowerCase() === b.toLowerCase() : a === b);

/** Resolves every intent of `set` and counts what the figures need. */
export async function measure(
  resolver: Pick<IntentResolver, 'tools' | 'resolve'>,
  set: readonly LabelledIntent[],
  now: Date,
): Promise<IntentFigures & { ms: number[] }> {
  const f: IntentFigures & { ms: number[] } = {
    intents: set.length,
    inScope: 0,
    outOfScope: 0,
    top1: 0,
    answered: 0,
    answeredRight: 0,
    calledWhenComplete: 0,
    outOfScopeNone: 0,
    wrongCalls: 0,
    wrongWriteCalls: 0,
    argumentsRight: 0,
    argumentsStated: 0,
    inOtherLanguage: 0,
    top1English: 0,
    answeredEnglish: 0,
    ms: [],
  };
  let complete = 0;
  for (const x of set) {
    const started = performance.now();
    const a = await resolver.resolve(x.intent, undefined, now);
    f.ms.push(performance.now() - started);
    const named = a.call?.tool ?? a.tool;
    if (a.call && a.call.tool !== x.tool) {
      f.wrongCalls++;
      if (resolver.tools[a.call.tool]!.sideEffect !== 'read_only') f.wrongWriteCalls++;
    }
    if (x.tool === null) {
      f.outOfScope++;
      if (!named) f.outOfScopeNone++;
      continue;
    }
    f.inScope++;
    const english = !foreignLanguage(x.intent);
    if (!english) f.inOtherLanguage++;
    // Read by a model, its choice is its first; offline, the ranking's first candidate.
    if ((a.by === 'model' ? named : a.candidates[0]?.tool) === x.tool) {
      f.top1++;
      if (english) f.top1English++;
    }
    if (named) {
      f.answered++;
      if (english) f.answeredEnglish++;
    }
    if (named === x.tool) {
      f.answeredRight++;
      // A call's arguments, or the values an incomplete answer found.
      const given = a.call?.arguments ?? a.arguments ?? {};
      for (const [k, v] of Object.entries(x.arguments ?? {})) {
        f.argumentsStated++;
        if (same(given[k], v)) f.argumentsRight++;
      }
    }
    const tool = resolver.tools[x.tool]!;
    const required = Object.entries(tool.input)
      .filter(([, s]) => s.required)
      .map(([k]) => k);
    if (required.every((k) => x.arguments?.[k] !== undefined)) {
      complete++;
      if (a.call?.tool === x.tool) f.calledWhenComplete++;
    }
  }
  f.calledWhenComplete = complete > 0 ? f.calledWhenComplete / complete : 0;
  return f;
}

export function readSet(file: string): LabelledIntent[] {
  return JSON.parse(readFileSync(join(REPO_ROOT, 'bench', 'intents', file), 'utf8')) as LabelledIntent[];
}

/** The figures of one half, as lines of the report. */
function figuresOf(half: string, f: IntentFigures): Figure[] {
  const pct = (a: number, b: number) => round((100 * a) / Math.max(b, 1), 1);
  return [
    { metric: `${half}: top-1 in scope (${f.inScope} intents)`, value: pct(f.top1, f.inScope), unit: '%', goal: '≥ 90 %' },
    {
      metric: `${half}: out of scope answered with no call and no tool (${f.outOfScope})`,
      value: pct(f.outOfScopeNone, f.outOfScope),
      unit: '%',
      goal: '≥ 75 %',
    },
    {
      metric: `${half}: in scope answered with a call or the missing fields of one tool`,
      value: pct(f.answered, f.inScope),
      unit: '%',
      goal: '≥ 90 %',
    },
    {
      metric: `${half}: top-1 / answered, in scope in English only (${f.inScope - f.inOtherLanguage}; ${f.inOtherLanguage} more are in another language)`,
      value: `${pct(f.top1English, f.inScope - f.inOtherLanguage)} / ${pct(f.answeredEnglish, f.inScope - f.inOtherLanguage)}`,
      unit: '%',
    },
    { metric: `${half}: in scope answered with the right tool`, value: pct(f.answeredRight, f.inScope), unit: '%' },
    {
      metric: `${half}: in scope with every required value stated, answered with the right call`,
      value: round(100 * f.calledWhenComplete, 1),
      unit: '%',
    },
    {
      metric: `${half}: wrong calls (to a tool not meant) / of them to tools that are not read_only`,
      value: `${f.wrongCalls} / ${f.wrongWriteCalls}`,
      unit: 'calls',
      goal: '0 to tools that are not read_only',
    },
    {
      metric: `${half}: stated arguments filled as stated, when the tool is right`,
      value: pct(f.argumentsRight, f.argumentsStated),
      unit: '%',
    },
  ];
}

/**
 * Both halves as an agent with an `[llm.extraction]` model reads them, when `THYMOS_BENCH_LLM_URL`
 * names an OpenAI-compatible endpoint (`THYMOS_BENCH_LLM_MODEL` its model, `THYMOS_BENCH_LLM_KEY`
 * its key, if it takes one); none without it. A reading that fails is counted in `failed`, its
 * intent answered offline as an agent's would be.
 */
async function modelFigures(
  tools: Tools,
  embedder: StaticEmbedder,
  glossary: Glossary | undefined,
  now: Date,
): Promise<{ figures: Figure[]; notes: string[] }> {
  const url = process.env.THYMOS_BENCH_LLM_URL;
  if (!url)
    return {
      figures: [],
      notes: [
        "No model was read with (THYMOS_BENCH_LLM_URL unset): the figures are the offline resolver's. Set it to an OpenAI-compatible endpoint (THYMOS_BENCH_LLM_MODEL, THYMOS_BENCH_LLM_KEY) to measure both halves as read by that [llm.extraction] model too.",
      ],
    };
  const model = process.env.THYMOS_BENCH_LLM_MODEL ?? 'default';
  const provider = new OpenAiCompatibleProvider({
    baseUrl: url,
    model,
    apiKey: process.env.THYMOS_BENCH_LLM_KEY,
    temperature: 0,
    maxTokens: 400,
    timeoutMs: 60_000,
    maxRetries: 1,
  });
  let spent = 0;
  let failed = 0;
  const reader = modelReader(
    tools,
    () => provider,
    (_p, r) => (spent += r.usage.input_tokens + r.usage.output_tokens),
  );
  const resolver = await IntentResolver.build(tools, { embedder, glossary, model: reader });
  const counted = {
    tools: resolver.tools,
    resolve: async (...args: Parameters<IntentResolver['resolve']>) => {
      const a = await resolver.resolve(...args);
      if (a.note?.includes('the model could not read it')) failed++;
      return a;
    },
  };
  const dev = await measure(counted, readSet('dev.json'), now);
  const held = await measure(counted, readSet('held.json'), now);
  const by = `read by ${model}`;
  return {
    figures: [
      ...figuresOf(`development half, ${by}`, dev),
      ...figuresOf(`held-aside half, ${by}`, held),
      { metric: `${by}: readings that failed (answered offline) / tokens spent`, value: `${failed} / ${spent}`, unit: '' },
    ],
    notes: [
      `Read by ${model} at ${new URL(url).host} as an agent's [llm.extraction] model reads plain words (docs/tools-and-intents.md: "Plain words", "With a model"); p50 resolution with it: ${round(quantile([...dev.ms, ...held.ms], 0.5), 0)} ms.`,
    ],
  };
}

/** The catalogue three times over, renamed: 189 tools of the same kind, for the time a resolution takes at that size. */
function grown(tools: Tools, times: number): Tools {
  const out: Record<string, Tool> = {};
  for (let i = 0; i < times; i++) for (const [name, t] of Object.entries(tools)) out[i === 0 ? name : `${name}_${i}`] = t;
  return out;
}

export async function intentResolvers(tuning: Partial<ResolverTuning> = {}) {
  const domain = await loadDomainSchema(join(REPO_ROOT, 'bench', 'intents', 'catalogue.pkl'), { root: REPO_ROOT }); // it imports the examples' tools
  const loadStarted = performance.now();
  const embedder = StaticEmbedder.load(offlineModelDir(), { maxLength: 256 });
  const loadMs = performance.now() - loadStarted;
  const buildStarted = performance.now();
  const glossary = Glossary.load(glossaryDir(), () => embedder.wordsByFrequency());
  const resolver = await IntentResolver.build(domain.tools, { embedder, tuning, glossary });
  const buildMs = performance.now() - buildStarted;
  return { domain, embedder, glossary, resolver, loadMs, buildMs };
}

/** The time a fresh glossary takes to read its first German intent (the German glossary read from disk, then the gloss), or undefined when none was built. */
function firstReading(): number | undefined {
  const started = performance.now();
  const read = Glossary.load(glossaryDir())?.read('Ich möchte den Wasserkocher aus der Bestellung zurückschicken');
  return read?.language === 'deu' ? performance.now() - started : undefined;
}

export const intentsScenario: Scenario = {
  name: 'intents',
  title: 'Intent resolution: plain words to a tool call, offline',
  async run() {
    // Dates in the intents ("tomorrow", "next Tuesday") are read from a fixed day, so a run is repeatable.
    const now = new Date('2026-06-10T09:00:00');
    const { domain, embedder, glossary, resolver, loadMs, buildMs } = await intentResolvers();
    const dev = await measure(resolver, readSet('dev.json'), now);
    const held = await measure(resolver, readSet('held.json'), now);
    const big = await IntentResolver.build(grown(domain.tools, 3), { embedder, glossary });
    const size = Object.keys(grown(domain.tools, 3)).length;
    const timed = await measure(big, [...readSet('dev.json'), ...readSet('held.json')], now);
    // Again: each word's neighbours in meaning are remembered now, as in an agent that has heard such words before.
    const again = await measure(big, [...readSet('dev.json'), ...readSet('held.json')], now);
    // The catalogue's own examples, each against the others: the authors' own words, with the names, places and ids their tools' examples share, that nothing was tuned on (`thymos validate --intents`).
    const own = await checkExamples(domain.tools, { embedder, glossary, now });
    const pct = (a: number) => round((100 * a) / Math.max(own.examples, 1), 1);
    const astrayCalls = own.astray.filter((x) => x.call);
    const figures: Figure[] = [
      ...figuresOf('development half', dev),
      ...figuresOf('held-aside half', held),
      {
        metric: `the catalogue's ${own.examples} examples, each against the others (${own.folds} folds): own tool first / answered with it / with another tool`,
        value: `${pct(own.first)} / ${pct(own.ownTool)} / ${pct(own.astray.length)}`,
        unit: '%',
      },
      {
        metric: 'the same: calls of another tool / of them to tools that are not read_only',
        value: `${astrayCalls.length} / ${astrayCalls.filter((x) => x.writes).length}`,
        unit: 'calls',
      },
      {
        metric: `resolution at ${size} tools, p50 / p95`,
        value: `${round(quantile(timed.ms, 0.5), 2)} / ${round(quantile(timed.ms, 0.95), 2)}`,
        unit: 'ms',
        goal: '≤ 20 ms p95 at 200 tools',
      },
      {
        metric: `resolution at ${size} tools, the same intents again (their words' neighbours remembered), p50 / p95`,
        value: `${round(quantile(again.ms, 0.5), 2)} / ${round(quantile(again.ms, 0.95), 2)}`,
        unit: 'ms',
      },
      {
        metric: `resolution at ${Object.keys(domain.tools).length} tools, p50 / p95`,
        value: `${round(quantile([...dev.ms, ...held.ms], 0.5), 2)} / ${round(quantile([...dev.ms, ...held.ms], 0.95), 2)}`,
        unit: 'ms',
      },
      {
        metric: 'loading the offline model (GloVe 100d, 50,000 words) / indexing 63 tools',
        value: `${round(loadMs, 0)} / ${round(buildMs, 0)}`,
        unit: 'ms',
      },
    ];
    const read = await modelFigures(domain.tools, embedder, glossary, now);
    figures.push(...read.figures);
    const firstGerman = firstReading();
    if (firstGerman !== undefined)
      figures.push({
        metric: "an agent's first intent in German: reading the German glossary from disk, and the gloss",
        value: round(firstGerman, 0),
        unit: 'ms',
      });
    const timing = await toolLoopOverhead(100);
    const reading = await readingOverhead(
      domain.tools,
      readSet('dev.json').map((x) => x.intent),
      now,
    );
    const added = timing.loop.map((l, i) => l - timing.direct[i]!);
    figures.push(
      {
        metric: "a model's tool loop of one call (two model answers of 20 ms each), p50 / p95",
        value: `${round(quantile(timing.loop, 0.5), 1)} / ${round(quantile(timing.loop, 0.95), 1)}`,
        unit: 'ms',
      },
      {
        metric: "what the loop adds above the model's own time (the same two answers asked directly), p50 / p95",
        value: `${round(quantile(added, 0.5), 2)} / ${round(quantile(added, 0.95), 2)}`,
        unit: 'ms',
      },
      {
        metric: `plain words read by an [llm.extraction] model (one answer of 20 ms) at ${Object.keys(domain.tools).length} tools, p50 / p95`,
        value: `${round(quantile(reading.read, 0.5), 1)} / ${round(quantile(reading.read, 0.95), 1)}`,
        unit: 'ms',
      },
      {
        metric:
          "what the reading adds above the model's own time (the ranking, the request, validation; the same request asked directly), p50 / p95",
        value: `${round(quantile(reading.added, 0.5), 2)} / ${round(quantile(reading.added, 0.95), 2)}`,
        unit: 'ms',
      },
    );
    return {
      figures,
      notes: [
        `The catalogue: bench/intents/catalogue.pkl (63 tools with their authors' examples). The intents: bench/intents/dev.json and held.json (README there), written by other authors than the tools, from their descriptions; held.json is run, never tuned on (its SHA-256 is in held.sha256).`,
        "Offline: words by BM25 over each tool's metadata and examples, words near in meaning by the offline model's word vectors, the meaning of the whole intent, how the values the intent holds fit the tools' fields, and which tool's lines use the intent's words (each tool a language model); whether any tool is meant by how much better the best one's lines explain the words than plain English does; arguments by the deterministic filler. Dates are read from 2026-06-10 09:00.",
        'An answer names a tool when it is a call or asks for the missing fields of one tool; "no call" counts answers that name none (out of scope, ambiguous, another language).',
        "The held-aside half's last runs, in order (top-1 / out of scope with no call / in scope answered / wrong calls, of them to tools that write): f564996 82.2 / 80 / 54.8 % / 4, 2; 90f8769 (naive Bayes over the tools' lines) 82.9 / 73.3 / 71.2 % / 7, 1; ed06224 (language models against plain English) 84.2 / 73.3 / 76 % / 8, 2; 36b4742 (no typo read into a word the model holds; bars for tools that write on the ratio) 84.2 / 77.8 / 74.7 % / 8, 2; 49f3174 (the same rankings, faster) the same; 0d5092c (each word once in the ratio; words alone call only tools that read) 84.9 / 77.8 / 74 % / 8, 2; 7c10b7a, 4f5d1cf and ff85dd6 (the same rankings; the split by language added, then the values of an incomplete answer counted among the arguments filled) the same, in English alone 87.3 / 76.1 % of 142; b91e63e (an intent in another language lists candidates, never a call) 86.3 / 77.8 / 74 % / 8, 2; e57a24a (intents in French, Spanish and German read through the FreeDict glossaries) 87.7 / 77.8 / 75.3 % / 8, 2, in English alone as before; 1ddf1f1 and 17b5b09 (words that refuse a tool's action are no call of it; a line's language weighed against the glossaries) the same; 186b853 (the English-to-French and -Spanish dictionaries read backwards too) 87.7 / 77.8 / 76 % / 8, 2; d130f3e (words of courtesy as stop words; the catalogue's examples measured too) 87.7 / 80 / 76.7 % / 8, 2; a89e111 (only please and kindly of them) the same; the commit this table names (an [llm.extraction] model, when one is set, reads plain words among the offline candidates; offline nothing changed) the same.",
        glossary
          ? "Intents in French, Spanish and German are read through the glossaries `thymos glossary` built on this machine from the FreeDict dictionaries (Debian's dict-freedict-fra-eng, -spa-eng, -deu-eng, and -eng-fra and -eng-spa read backwards); without them they are unsupported_language and the figures are those of b91e63e."
          : 'No glossary was built here (`thymos glossary`): intents in French, Spanish and German are unsupported_language, with candidates and no call.',
        'How it resolves, every lever tried with its figure on the development half, and what the gap to the goals is made of: docs/intents.md.',
        ...read.notes,
      ],
      json: { dev: { ...dev, ms: undefined }, held: { ...held, ms: undefined } },
    };
  },
};
