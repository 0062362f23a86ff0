import type { AgentMode, AgentState } from '../../shared/protocol/index.js';
import { LlmSpending } from '../llm/llm-spending.js';
import type { MemoryStore } from '../memory/memory-store.js';
import { AgentDisposition } from './agent-disposition.js';
import { readSavedState, type SavedState } from './saved-state.js';

/**
 * What an agent counts and keeps across restarts in its snapshots: the conversations it held,
 * what its models cost, its disposition, and when it last saved one.
 */
export class RuntimeTallies {
  conversations = 0;
  lastSnapshotAt: string | null = null;
  readonly spending = new LlmSpending();
  readonly disposition = new AgentDisposition();

  /** Restores what the last snapshot saved. */
  async restore(store: Pick<MemoryStore, 'latestSnapshot'>): Promise<void> {
    const snap = await store.latestSnapshot();
    if (!snap) return;
    const saved = readSavedState(snap.state);
    if (saved.conversations !== undefined) this.conversations = saved.conversations;
    this.spending.restore(saved.llm);
    this.disposition.restore(saved.disposition);
    this.lastSnapshotAt = new Date(snap.at).toISOString();
  }

  /** Saves them, with the agent's mode, as a snapshot for `reason`; returns when it was taken. */
  async snapshot(store: Pick<MemoryStore, 'saveSnapshot'>, reason: string, mode: AgentMode): Promise<string> {
    const at = Date.now();
    const llm = this.spending.totals;
    const saved: SavedState = { conversations: this.conversations, ...(llm ? { llm } : {}), disposition: this.disposition.values };
    await store.saveSnapshot({ at, reason, state: { ...saved, mode } });
    this.lastSnapshotAt = new Date(at).toISOString();
    return this.lastSnapshotAt;
  }

  /** Their part of the agent's state. */
  state(): Pick<AgentState, 'conversations' | 'last_snapshot_at' | 'llm' | 'disposition'> {
    return {
      conversations: this.conversations,
      last_snapshot_at: this.lastSnapshotAt,
      ...(this.spending.totals ? { llm: { ...this.spending.totals } } : {}),
      ...(Object.keys(this.disposition.values).length > 0 ? { disposition: { ...this.disposition.values } } : {}),
    };
  }
}
