/** Keys a disposition keeps, and the longest JSON of one value. */
const DISPOSITION_KEYS = 32;
const DISPOSITION_VALUE_CHARS = 500;

/**
 * An agent's mood (the tone of its last reply) and what its replies changed (`state_changes`),
 * bounded so a model cannot grow it without end: at most 32 keys, each value at most 500
 * characters of JSON. Kept in snapshots.
 */
export class AgentDisposition {
  #values: Record<string, unknown> = {};

  /** The current values; a new object after each `feel`, so a reader's copy does not change under it. */
  get values(): Record<string, unknown> {
    return this.#values;
  }

  restore(saved: unknown): void {
    if (saved && typeof saved === 'object') this.#values = { ...(saved as Record<string, unknown>) };
  }

  feel(tone: string, changes: Record<string, unknown>): void {
    const next: Record<string, unknown> = { ...this.#values, mood: tone };
    for (const [key, value] of Object.entries(changes)) {
      if (key in next || Object.keys(next).length < DISPOSITION_KEYS) {
        const json = JSON.stringify(value);
        if (json !== undefined && json.length <= DISPOSITION_VALUE_CHARS) next[key] = value;
      }
    }
    this.#values = next;
  }
}
