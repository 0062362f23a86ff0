/** Which memories a consolidation looks at; every part narrows it, none means all. */
export interface ConsolidationScope {
  /** A conversation thread (`source.thread`). */
  session?: string | undefined;
  /** Created at or after (ms since the epoch). */
  since?: number | undefined;
  /** Created at or before (ms since the epoch). */
  until?: number | undefined;
  /** Carries this tag. */
  tag?: string | undefined;
}

export type ConsolidationTrigger = 'demand' | 'schedule' | 'passivation';

/** A memory a consolidation wrote. */
export interface Insight {
  id: string;
  kind: 'theme' | 'contradiction' | 'digest';
  content: string;
  /** The memories it was made from. */
  sources: string[];
}

export interface ConsolidationReport {
  trigger: ConsolidationTrigger;
  scope: ConsolidationScope;
  /** Memories in scope that were considered. */
  examined: number;
  insights: Insight[];
  /** Memories that no longer hold: what replaced each and why. Nothing is deleted or rewritten. */
  superseded: Array<{ id: string; by: string; reason: string }>;
  importance: Array<{ id: string; from: number; to: number; reason: string }>;
  /** Memories that faded below `[memory] demote_below`. */
  demoted: string[];
  /** When true, nothing was written: the report says what would have been. */
  dry_run: boolean;
  took_ms: number;
}
