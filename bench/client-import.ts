import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import type { Scenario } from './scenario.js';
import { quantile, round } from './stats.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ROUNDS = 15;

/** What one fresh process saw importing one entry point of the installed package. */
interface Sample {
  ms: number;
  native: boolean;
  rss: number;
}

/** A fresh `node` in the project imports `spec` once and reports the time, what it mapped, and its RSS. */
function importOnce(project: string, spec: string): Promise<Sample> {
  const script = `
    const t = performance.now();
    await import(${JSON.stringify(spec)});
    const ms = performance.now() - t;
    const { readFileSync } = await import('node:fs');
    const maps = readFileSync('/proc/self/maps', 'utf8');
    process.stdout.write(JSON.stringify({ ms, native: /surrealdb[^\\n]*\\.node$/m.test(maps), rss: process.memoryUsage().rss }));`;
  return new Promise((resolve, reject) => {
    let out = '';
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: project, stdio: ['ignore', 'pipe', 'inherit'] });
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as Sample) : reject(new Error(`import ${spec} exited ${code}`))));
  });
}

export const clientImportScenario: Scenario = {
  name: 'client-import',
  title: 'Importing the library: thymos/client against thymos, from a packed install',
  async run() {
    const root = mkdtempSync(join(tmpdir(), 'thymos-import-'));
    try {
      // The package as a user gets it: npm pack of this checkout (dist built by `npm run bench`), installed into an empty project.
      execFileSync('npm', ['pack', '--ignore-scripts', '--pack-destination', root], { cwd: ROOT, stdio: 'ignore' });
      const tgz = readdirSync(root).find((f) => f.endsWith('.tgz'))!;
      const project = join(root, 'project');
      mkdirSync(project);
      execFileSync('npm', ['init', '-y'], { cwd: project, stdio: 'ignore' });
      execFileSync('npm', ['install', join(root, tgz), '--no-audit', '--no-fund', '--prefer-offline'], { cwd: project, stdio: 'ignore' });
      const samples: Record<'thymos/client' | 'thymos', Sample[]> = { 'thymos/client': [], thymos: [] };
      // One warm-up each (the page cache), then the two in turn.
      await importOnce(project, 'thymos/client');
      await importOnce(project, 'thymos');
      for (let i = 0; i < ROUNDS; i++)
        for (const spec of ['thymos/client', 'thymos'] as const) samples[spec].push(await importOnce(project, spec));
      const p50 = (spec: keyof typeof samples) =>
        quantile(
          samples[spec].map((s) => s.ms),
          0.5,
        );
      const rss = (spec: keyof typeof samples) =>
        quantile(
          samples[spec].map((s) => s.rss / 2 ** 20),
          0.5,
        );
      const mapped = (spec: keyof typeof samples) => `${samples[spec].filter((s) => s.native).length} of ${ROUNDS}`;
      return {
        figures: [
          {
            metric: "import('thymos/client') p50 / p95",
            value: `${round(p50('thymos/client'), 0)} / ${round(
              quantile(
                samples['thymos/client'].map((s) => s.ms),
                0.95,
              ),
              0,
            )}`,
            unit: 'ms',
          },
          {
            metric: "import('thymos') p50 / p95",
            value: `${round(p50('thymos'), 0)} / ${round(
              quantile(
                samples.thymos.map((s) => s.ms),
                0.95,
              ),
              0,
            )}`,
            unit: 'ms',
          },
          { metric: 'ratio thymos/client / thymos (p50)', value: round(p50('thymos/client') / p50('thymos'), 2), unit: '×', goal: '< 0.5' },
          {
            metric: 'RSS after import p50: thymos/client / thymos',
            value: `${round(rss('thymos/client'), 0)} / ${round(rss('thymos'), 0)}`,
            unit: 'MB',
          },
          {
            metric: "processes that mapped @surrealdb/node's native library: thymos/client / thymos",
            value: `${mapped('thymos/client')} / ${mapped('thymos')}`,
            unit: '',
          },
        ],
        notes: [
          `${ROUNDS} fresh processes per entry point, in turn, each timing one dynamic import in an empty project that installed the packed package; /proc/self/maps read after the import.`,
          "thymos/client loads the NATS client, zod and the fleet's protocol; the MCP client loads with the first fleet.agent(id). thymos loads the agent side too: the embedded SurrealDB's native engine, the MCP server, pm2 (lazily, on up) and the supervisor.",
        ],
      };
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  },
};
