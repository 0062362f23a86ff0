/** One figure of a benchmark. */
export interface Figure {
  metric: string;
  value: number | string;
  unit: string;
  /** The target, when there is one, e.g. "≤ 250 ms p50". */
  goal?: string;
}

/** What a scenario returns; stored in bench/results/<name>.json and rendered into docs/benchmarks.md. */
export interface ScenarioResult {
  name: string;
  title: string;
  figures: Figure[];
  /** Sentences that say how it was measured and what the figures mean. */
  notes: string[];
  /** Printed as the command's last line, as JSON (machine-readable figures). */
  json?: unknown;
}

/** What `npm run bench` passes on: `--data PATH` for scenarios that read a data set, `--node PATH` for a second Node to compare with. */
export interface ScenarioOptions {
  data?: string | undefined;
  node?: string | undefined;
}

export interface Scenario {
  name: string;
  title: string;
  /** Runs only when named, with `--data PATH`; a run of every scenario leaves it out. */
  needsData?: boolean;
  run(options: ScenarioOptions): Promise<Omit<ScenarioResult, 'name' | 'title'>>;
}
