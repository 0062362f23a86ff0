import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { IntentResolver } from '../agent/intents/intent-resolver.js';
import type { ResolverTuning } from '../agent/intents/tool-ranker.js';
import { loadDomainSchema } from '../shared/domain/domain-schema.js';
import type { Tool, Tools } from '../shared/domain/tool-schema.js';
import { StaticEmbedder } from '../shared/platform/static-embedder.js';
import { offlineModelDir } from '../shared/platform/thymos-root.js';
import { REPO_ROOT } from '../test/helpers/workspace.js';
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
  /** Stated argument values filled as stated, among answers with the right tool. */
  argumentsRight: number;
  argumentsStated: number;
}

const same = (a: unknown, b: unknown) => (typeof a === 'string' && typeof b === 'string' ? a.toLowerCase() === b.toLowerCase() : a === b);

/** Resolves every intent of `set` and counts what the figures need. */
export async function measure(resolver: IntentResolver, set: readonly LabelledIntent[], now: Date): Promise<IntentFigures & { ms: number[] }> {
  const f: IntentFigures & { ms: number[] } = { intents: set.length, inScope: 0, outOfScope: 0, top1: 0, answered: 0, answeredRight: 0, calledWhenComplete: 0, outOfScopeNone: 0, wrongCalls: 0, wrongWriteCalls: 0, argumentsRight: 0, argumentsStated: 0, ms: [] };
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
    if (a.candidates[0]?.tool === x.tool) f.top1++;
    if (named) f.answered++;
    if (named === x.tool) {
      f.answeredRight++;
      const given = a.call?.arguments ?? {};
      for (const [k, v] of Object.entries(x.arguments ?? {})) {
        f.argumentsStated++;
        if (same(given[k], v)) f.argumentsRight++;
      }
    }
    const tool = resolver.tools[x.tool]!;
    const required = Object.entries(tool.input).filter(([, s]) => s.required).map(([k]) => k);
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
    { metric: `${half}: out of scope answered with no call and no tool (${f.outOfScope})`, value: pct(f.outOfScopeNone, f.outOfScope), unit: '%', goal: '≥ 75 %' },
    { metric: `${half}: in scope answered with a call or the missing fields of one tool`, value: pct(f.answered, f.inScope), unit: '%', goal: '≥ 90 %' },
    { metric: `${half}: in scope answered with the right tool`, value: pct(f.answeredRight, f.inScope), unit: '%' },
    { metric: `${half}: in scope with every required value stated, answered with the right call`, value: round(100 * f.calledWhenComplete, 1), unit: '%' },
    { metric: `${half}: wrong calls (to a tool not meant) / of them to tools that are not read_only`, value: `${f.wrongCalls} / ${f.wrongWriteCalls}`, unit: 'calls', goal: '0 to tools that are not read_only' },
    { metric: `${half}: stated arguments filled as stated, when the tool is right`, value: pct(f.argumentsRight, f.argumentsStated), unit: '%' },
  ];
}

/** The catalogue three times over, renamed: 189 tools of the same kind, for the time a resolution takes at that size. */
function grown(tools: Tools, times: number): Tools {
  const out: Record<string, Tool> = {};
  for (let i = 0; i < times; i++) for (const [name, t] of Object.entries(tools)) out[i === 0 ? name : `${name}_${i}`] = t;
  return out;
}

export async function intentResolvers(tuning: Partial<ResolverTuning> = {}) {
  const domain = await loadDomainSchema(join(REPO_ROOT, 'bench', 'intents', 'catalogue.pkl'));
  const loadStarted = performance.now();
  const embedder = StaticEmbedder.load(offlineModelDir(), { maxLength: 256 });
  const loadMs = performance.now() - loadStarted;
  const buildStarted = performance.now();
  const resolver = await IntentResolver.build(domain.tools, { embedder, tuning });
  const buildMs = performance.now() - buildStarted;
  return { domain, embedder, resolver, loadMs, buildMs };
}

export const intentsScenario: Scenario = {
  name: 'intents',
  title: 'Intent resolution: plain words to a tool call, offline',
  async run() {
    // Dates in the intents ("tomorrow", "next Tuesday") are read from a fixed day, so a run is repeatable.
    const now = new Date('2026-06-10T09:00:00');
    const { domain, embedder, resolver, loadMs, buildMs } = await intentResolvers();
    const dev = await measure(resolver, readSet('dev.json'), now);
    const held = await measure(resolver, readSet('held.json'), now);
    const big = await IntentResolver.build(grown(domain.tools, 3), { embedder });
    const size = Object.keys(grown(domain.tools, 3)).length;
    const timed = await measure(big, [...readSet('dev.json'), ...readSet('held.json')], now);
    const figures: Figure[] = [
      ...figuresOf('development half', dev),
      ...figuresOf('held-aside half', held),
      { metric: `resolution at ${size} tools, p50 / p95`, value: `${round(quantile(timed.ms, 0.5), 2)} / ${round(quantile(timed.ms, 0.95), 2)}`, unit: 'ms', goal: '≤ 20 ms p95 at 200 tools' },
      { metric: `resolution at ${Object.keys(domain.tools).length} tools, p50 / p95`, value: `${round(quantile([...dev.ms, ...held.ms], 0.5), 2)} / ${round(quantile([...dev.ms, ...held.ms], 0.95), 2)}`, unit: 'ms' },
      { metric: 'loading the offline model (GloVe 100d, 50,000 words) / indexing 63 tools', value: `${round(loadMs, 0)} / ${round(buildMs, 0)}`, unit: 'ms' },
    ];
    return {
      figures,
      notes: [
        `The catalogue: bench/intents/catalogue.pkl (63 tools with their authors' examples). The intents: bench/intents/dev.json and held.json (README there), written by other authors than the tools, from their descriptions; held.json is run, never tuned on (its SHA-256 is in held.sha256).`,
        'Offline: words by BM25 over each tool\'s metadata and examples, words near in meaning by the offline model\'s word vectors, the meaning of the whole intent, and how the values the intent holds fit the tools\' fields; arguments by the deterministic filler. Dates are read from 2026-06-10 09:00.',
        'An answer names a tool when it is a call or asks for the missing fields of one tool; "no call" counts answers that name none (out of scope, ambiguous, another language).',
      ],
      json: { dev, held },
    };
  },
};
