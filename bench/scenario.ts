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
}

export interface Scenario {
  name: string;
  title: string;
  run(): Promise<Omit<ScenarioResult, 'name' | 'title'>>;
}
