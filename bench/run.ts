/**
 * `npm run bench [name…]`: runs the named scenarios (all when none is named), stores
 * each result in bench/results/<name>.json, and rewrites docs/benchmarks.md from every
 * stored result, with the machine, date and commit of each run.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { agentStartupScenario } from './agent-startup.js';
import { clientImportScenario } from './client-import.js';
import { clusterReconcileScenario } from './cluster-reconcile.js';
import { embeddingScenario } from './embedding.js';
import { eventDeliveryScenario } from './event-delivery.js';
import { failoverScenario } from './failover.js';
import { faultsScenario } from './faults.js';
import { fleetScaleScenario } from './fleet-scale.js';
import { fuzzScenario } from './fuzz.js';
import { intentsScenario } from './intents.js';
import { leaseScenario } from './lease.js';
import { locomoScenario } from './locomo.js';
import { recallScenario } from './recall.js';
import { reconcileDecisionScenario } from './reconcile-decision.js';
import type { Figure, Scenario, ScenarioResult } from './scenario.js';
import { supportScenario } from './support.js';
import { talkStreamScenario } from './talk-stream.js';
import { toolsScenario } from './tools.js';
import { wakePoolScenario, wakeScenario } from './wake.js';
import { wakeManyScenario } from './wake-many.js';
import { worldLiveScenario } from './world-live.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const RESULTS = join(ROOT, 'bench', 'results');
const SCENARIOS: Scenario[] = [
  agentStartupScenario,
  clientImportScenario,
  recallScenario,
  reconcileDecisionScenario,
  fleetScaleScenario,
  wakeScenario,
  wakePoolScenario,
  wakeManyScenario,
  eventDeliveryScenario,
  worldLiveScenario,
  toolsScenario,
  intentsScenario,
  talkStreamScenario,
  supportScenario,
  embeddingScenario,
  locomoScenario,
  faultsScenario,
  fuzzScenario,
  leaseScenario,
  clusterReconcileScenario,
  failoverScenario,
];

interface StoredResult extends ScenarioResult {
  machine: string;
  date: string;
  commit: string;
  node: string;
}

function machine(): string {
  const cpu = cpus();
  return `${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${cpu.length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, ${process.platform} ${process.arch}`;
}

function commit(): string {
  try {
    const sha = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync(
      'git',
      ['status', '--porcelain', '--', 'agent', 'supervisor', 'client', 'shared', 'cli', 'bench', ':!bench/results'],
      { cwd: ROOT, encoding: 'utf8' },
    ).trim();
    return dirty ? `${sha} (with uncommitted changes)` : sha;
  } catch {
    return 'unknown';
  }
}

/** The headline figures, in the order the summary shows them: scenario, metric pattern, label, goal when the figure has none. */
const HEADLINES: Array<{ scenario: string; metric: RegExp; label: string; goal?: string }> = [
  {
    scenario: 'agent-startup',
    metric: /^spawn → ready|^ratio agent ready \/ bare node \(p50\), Node v20/,
    label: 'Cold start of an agent',
  },
  { scenario: 'agent-startup', metric: /^cold start p50 \/ p95, Node/, label: 'Agent' },
  { scenario: 'agent-startup', metric: /^idle agent RSS/, label: 'Idle agent RSS' },
  { scenario: 'client-import', metric: /^ratio thymos\/client|^processes that mapped/, label: 'Importing thymos/client' },
  { scenario: 'reconcile-decision', metric: /^decision p50, 10,000/, label: 'Reconcile decision at 10,000 agents, p50' },
  {
    scenario: 'wake',
    metric:
      /^one agent Dormant|^a player's step, the player walks on.*reconcile wakes|agents Dormant → Active in one|^idle agent PSS|^CPU of/,
    label: 'Wake',
  },
  {
    scenario: 'wake-pool',
    metric:
      /^one agent Dormant|^CPU of one wake-and-stop|^a player's step, .*: (reconcile wakes|the [0-9]+ first visits)|^an agent's first-ever|^50 agents Dormant|^pool: refilling/,
    label: 'Warm wake (pool of 4)',
  },
  { scenario: 'wake-many', metric: /^50 agents Dormant|^a waiting spare/, label: 'Warm wake (pool of 50)' },
  {
    scenario: 'recall',
    metric: /^the default strategy .* recall k=10 p50 \/ p95 at 10k/,
    label: 'Recall at 10,000 memories (the default strategy, cascade), p50 / p95',
  },
  { scenario: 'event-delivery', metric: /50 agents, p95|5 of 50 agents hear|^CPU per event in each agent/, label: 'Events' },
  { scenario: 'tools', metric: /overhead above/, label: 'What a tool call costs' },
  {
    scenario: 'intents',
    metric: /^held-aside half: (top-1|out of scope|in scope answered with a call|wrong calls)|^resolution at 189|^what the loop adds/,
    label: "Intent resolution (held-aside half) and a model's tool loop",
  },
  { scenario: 'talk-stream', metric: /^first words: the stand-in|^the whole reply from asking/, label: 'Replies that stream' },
  { scenario: 'support', metric: /^tickets per second|^publish → solved|^burst of/, label: 'A worker fleet (support desk)' },
  { scenario: 'locomo', metric: /— R@5 \/ R@10 \/ R@20/, label: 'LoCoMo evidence recall' },
  { scenario: 'faults', metric: /./, label: 'Faults' },
  { scenario: 'fuzz', metric: /^all cases|^answers without|^fleet processes that died/, label: 'Fuzz' },
  { scenario: 'failover', metric: /^host lost → its agent answers/, label: 'Failover (a coordinating host lost, default lease)' },
];

/** One table of the figures the project is judged by, each beside its goal and the run it comes from. */
function summary(results: StoredResult[]): string[] {
  const lines = ['## Summary', '', '| figure | value | goal | measured |', '| --- | --- | --- | --- |'];
  for (const h of HEADLINES) {
    const r = results.find((x) => x.name === h.scenario);
    if (!r) {
      lines.push(`| ${h.label} | not measured yet (\`npm run bench -- ${h.scenario}\`) | ${h.goal ?? ''} | |`);
      continue;
    }
    const found = r.figures.filter((x) => h.metric.test(x.metric));
    for (const f of found) {
      const label = found.length === 1 ? h.label : `${h.label}: ${f.metric}`;
      lines.push(`| ${label} | ${f.value} ${f.unit} | ${f.goal ?? h.goal ?? ''} | ${r.date}, ${r.commit} |`);
    }
  }
  lines.push('');
  return lines;
}

function render(results: StoredResult[]): string {
  const lines = [
    '# Benchmarks',
    '',
    'Written by `npm run bench` from `bench/results/*.json`; do not edit by hand. Each section',
    'says where and when it was measured. The machine is shared and noisy: read medians and',
    'ratios, not single numbers.',
    '',
    ...summary(results),
  ];
  for (const r of results) {
    lines.push(`## ${r.title}`, '', `Measured ${r.date} on ${r.machine}, Node ${r.node}, commit ${r.commit}.`, '');
    lines.push('| figure | value | goal |', '| --- | --- | --- |');
    for (const f of r.figures as Figure[]) lines.push(`| ${f.metric} | ${f.value} ${f.unit} | ${f.goal ?? ''} |`);
    lines.push('');
    for (const n of r.notes) lines.push(`- ${n}`);
    lines.push('');
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const { values, positionals: wanted } = parseArgs({
    args: process.argv.slice(2),
    options: { data: { type: 'string' }, node: { type: 'string' }, render: { type: 'boolean' } },
    allowPositionals: true,
  });
  // --render: no scenario runs; docs/benchmarks.md is written again from the stored results.
  const chosen = values.render
    ? []
    : wanted.length === 0
      ? SCENARIOS.filter((s) => !s.needsData || values.data)
      : SCENARIOS.filter((s) => wanted.includes(s.name));
  if (chosen.length === 0 && !values.render) {
    process.stderr.write(`no scenario named ${wanted.join(', ')}; known: ${SCENARIOS.map((s) => s.name).join(', ')}\n`);
    process.exit(2);
  }
  mkdirSync(RESULTS, { recursive: true });
  const json: unknown[] = [];
  for (const scenario of chosen) {
    process.stdout.write(`running ${scenario.name}…\n`);
    const { json: machineReadable, ...result } = await scenario.run({ data: values.data, node: values.node });
    if (machineReadable !== undefined) json.push(machineReadable);
    const stored: StoredResult = {
      name: scenario.name,
      title: scenario.title,
      ...result,
      machine: machine(),
      date: new Date().toISOString().slice(0, 10),
      commit: commit(),
      node: process.version,
    };
    writeFileSync(join(RESULTS, `${scenario.name}.json`), `${JSON.stringify(stored, null, 2)}\n`);
    for (const f of stored.figures) process.stdout.write(`  ${f.metric}: ${f.value} ${f.unit}${f.goal ? ` (goal ${f.goal})` : ''}\n`);
  }
  const all = readdirSync(RESULTS)
    .filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(join(RESULTS, f), 'utf8')) as StoredResult)
    .sort((a, b) => SCENARIOS.findIndex((s) => s.name === a.name) - SCENARIOS.findIndex((s) => s.name === b.name));
  mkdirSync(join(ROOT, 'docs'), { recursive: true });
  writeFileSync(join(ROOT, 'docs', 'benchmarks.md'), render(all));
  process.stdout.write('wrote docs/benchmarks.md\n');
  for (const j of json) process.stdout.write(`${JSON.stringify(j)}\n`);
  // The embedded database keeps Node alive after close once an index exists.
  process.exit(0);
}

await main();
