import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { RemoteEmbedder } from '../agent/links/remote-embedder.js';
import { AgentMemory, type SearchStrategy } from '../agent/memory/agent-memory.js';
import { MemoryStore } from '../agent/memory/memory-store.js';
import { ThymosConfigSchema } from '../shared/config/thymos-config.js';
import { connectNats } from '../shared/nats/nats-connection.js';
import { EmbeddingService } from '../supervisor/embedding/embedding-service.js';
import { ensureModel, loadTestEmbedder } from '../test/helpers/embedding-model.js';
import { startNatsServer } from '../test/helpers/nats-server.js';
import type { Figure, Scenario } from './scenario.js';
import { quantile, removeDbDir, round, seeded, timed } from './stats.js';

const SIZES = [10_000, 100_000];
const QUERIES = 200;

/** Sentences of 8–20 real English words (the model's vocabulary, Zipf-like), the same every run. */
function corpus(n: number, vocab: string[], rand: () => number): string[] {
  const word = () => vocab[Math.min(vocab.length - 1, Math.floor(vocab.length * rand() ** 2.5))]!;
  return Array.from({ length: n }, () => Array.from({ length: 8 + Math.floor(rand() * 12) }, word).join(' '));
}

async function recallFigures(texts: string[], queries: string[]): Promise<Figure[]> {
  const embedder = await loadTestEmbedder();
  const settings = ThymosConfigSchema.parse({}).memory;
  const figures: Figure[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'thymos-bench-vec-'));
  const store = await MemoryStore.open(join(dir, 'db'), { timeoutMs: 30_000 });
  try {
    const memory = await AgentMemory.load(store, settings, { embedder });
    let stored = 0;
    for (const n of SIZES) {
      const from = stored;
      const ingest = await timed(async () => {
        for (; stored < n; stored += 1000) {
          await memory.rememberMany(
            texts.slice(stored, stored + 1000).map((content) => ({ content, source: { kind: 'bench', by: 'bench' } })),
          );
        }
      });
      figures.push({
        metric: `remember with vectors, batches of 1,000, from ${from.toLocaleString('en')} to ${n.toLocaleString('en')} memories, per memory`,
        value: round(ingest / (n - from), 3),
        unit: 'ms',
      });
      for (const strategy of ['bm25', 'vector', 'hybrid', 'cascade'] as SearchStrategy[]) {
        const samples: number[] = [];
        for (const q of queries) samples.push(await timed(() => memory.recall(q, { k: 10, strategy, reinforce: false })));
        figures.push({
          metric: `recall k=10, ${strategy}, ${n.toLocaleString('en')} memories, p50 / p95`,
          value: `${round(quantile(samples, 0.5))} / ${round(quantile(samples, 0.95))}`,
          unit: 'ms',
          goal:
            n === 10_000
              ? strategy === 'bm25' || strategy === 'cascade'
                ? 'p95 ≤ 10 ms'
                : strategy === 'hybrid'
                  ? 'p95 ≤ 25 ms'
                  : undefined
              : undefined,
        });
      }
    }
  } finally {
    await store.close();
    await removeDbDir(dir);
  }
  return figures;
}

async function serviceFigures(texts: string[]): Promise<Figure[]> {
  const figures: Figure[] = [];
  const direct = await loadTestEmbedder();
  const batch = texts.slice(0, 2048);
  const inProcessMs = await timed(async () => {
    for (let i = 0; i < batch.length; i += 64) await direct.embed(batch.slice(i, i + 64));
  });
  figures.push({ metric: 'model in process, batches of 64', value: Math.round((batch.length / inProcessMs) * 1000), unit: 'texts/s' });

  const nats = await startNatsServer();
  const serverNc = await connectNats({ servers: nats.url, name: 'bench-embed-service' });
  const clientNc = await connectNats({ servers: nats.url, name: 'bench-embed-client' });
  const service = new EmbeddingService(direct, { batchMax: 64, cacheEntries: 100_000 });
  try {
    service.serve(serverNc, (await import('../shared/engines/pino-logger.js')).createLogger({ level: 'silent' }));
    await serverNc.flush();
    const remote = await RemoteEmbedder.connect(clientNc, 10_000);
    const one: number[] = [];
    for (let i = 0; i < 200; i++) one.push(await timed(() => remote.embed([texts[10_000 + i]!])));
    figures.push({
      metric: 'service over NATS, one text per request, one at a time, p50 / p95',
      value: `${round(quantile(one, 0.5))} / ${round(quantile(one, 0.95))}`,
      unit: 'ms',
    });
    const fresh = texts.slice(20_000, 22_048);
    const runsBefore = service.stats.runs;
    const concurrentMs = await timed(() => Promise.all(fresh.map((t) => remote.embed([t]))));
    figures.push({
      metric: `service, ${fresh.length.toLocaleString('en')} one-text requests at once (merged into ${service.stats.runs - runsBefore} model runs)`,
      value: Math.round((fresh.length / concurrentMs) * 1000),
      unit: 'texts/s',
    });
    const batched = texts.slice(30_000, 32_048);
    const batchedMs = await timed(async () => {
      for (let i = 0; i < batched.length; i += 64) await remote.embed(batched.slice(i, i + 64));
    });
    figures.push({
      metric: 'service, requests of 64 texts, one at a time',
      value: Math.round((batched.length / batchedMs) * 1000),
      unit: 'texts/s',
    });
    const cachedMs = await timed(async () => {
      for (let i = 0; i < batched.length; i += 64) await remote.embed(batched.slice(i, i + 64));
    });
    figures.push({
      metric: 'service, the same requests again (cache by content hash)',
      value: Math.round((batched.length / cachedMs) * 1000),
      unit: 'texts/s',
    });
  } finally {
    service.stop();
    await clientNc.close();
    await serverNc.close();
    await nats.stop();
  }
  return figures;
}

/**
 * The offline model (GloVe 6B 100d, built into ONNX, run by fastembed) in process and as the
 * fleet's service over NATS; then recall per strategy at 10,000 and 100,000 memories.
 */
export const embeddingScenario: Scenario = {
  name: 'embedding',
  title: 'Embeddings: service throughput, and recall per search strategy',
  async run() {
    const tokenizer = JSON.parse(readFileSync(join(ensureModel(), 'tokenizer.json'), 'utf8')) as {
      model: { vocab: Record<string, number> };
    };
    const vocab = Object.keys(tokenizer.model.vocab).slice(2, 30_002);
    const texts = corpus(Math.max(...SIZES), vocab, seeded(7));
    const queries = Array.from({ length: QUERIES }, (_, i) => texts[(i * 7919) % texts.length]!.split(' ').slice(0, 3).join(' '));
    const figures = [...(await serviceFigures(texts)), ...(await recallFigures(texts, queries))];
    return {
      figures,
      notes: [
        'Texts are 8–20 words drawn from the model vocabulary with a Zipf-like spread; fastembed pads every input to `[embedding] max_length` = 128 tokens.',
        "Recall is in process (no MCP, no NATS) without reinforcement; vector search is exhaustive over one Float32Array; hybrid runs both searches and fuses their ranks; cascade (the default) asks the embedder for the query's vector on every recall to rank its word matches by meaning, which in an agent is one request to the fleet's service (the one-text figure above). Queries are three words of a stored memory.",
        'The service is the supervisor’s `EmbeddingService` on a real nats-server: one model run at a time, texts of requests that wait merged up to `batch_max` = 64.',
      ],
    };
  },
};
