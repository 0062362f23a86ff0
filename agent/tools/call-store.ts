import type { CallStatus, ToolCallRecord } from '../../shared/protocol/index.js';

/** Where an agent keeps its calls: its own database. */
export interface CallStore {
  saveCall(record: ToolCallRecord): Promise<void>;
  getCall(id: string): Promise<ToolCallRecord | undefined>;
  callsWithStatus(status: CallStatus): Promise<ToolCallRecord[]>;
  /** The latest call of `tool` that ran or waited under idempotency key `key`. */
  callWithKey(tool: string, key: string): Promise<ToolCallRecord | undefined>;
  /** Makes `callId` the latest call of `tool` under `key`. */
  claimKey(tool: string, key: string, callId: string): Promise<void>;
  /** Saves a record within `delayMs`, with other writes that wait; every read of the store sees it at once. */
  saveCallSoon?(record: ToolCallRecord, delayMs: number): Promise<void>;
}
