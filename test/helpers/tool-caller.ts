import { ToolCaller, type ToolCallerOptions } from '../../agent/tools/tool-caller.js';
import { parseDomainSchema } from '../../shared/domain/domain-schema.js';
import { createLogger } from '../../shared/engines/pino-logger.js';
import { ErrorCode, ThymosError } from '../../shared/errors/errors.js';
import type { CallStatus, ToolCallRecord } from '../../shared/protocol/tool-call.js';

/**
 * A ToolCaller for agent `desk` over an in-memory call store, with the tools of `tools` (a
 * domain's `tools`, paths taken from `dir`) and a mode the test switches. `rows` is the store.
 */
export function memoryToolCaller(
  tools: Record<string, unknown>,
  dir: string,
  options: { failRemember?: boolean; overrides?: Partial<ToolCallerOptions>; agents?: string[] } = {},
) {
  const agents = Object.fromEntries((options.agents ?? []).map((id) => [id, { persona: { name: id } }]));
  const domain = parseDomainSchema({ tools, agents }, `${dir}/world.pkl`);
  const rows = new Map<string, ToolCallRecord>();
  const keys = new Map<string, string>();
  const mode = { active: true };
  const caller = new ToolCaller({
    agent: 'desk',
    tools: domain.tools,
    gate: {
      id: 'desk',
      call: (fn) => fn(),
      isActive: () => mode.active,
      requireActive: () => undefined,
      signal: () => new AbortController().signal,
    },
    calls: {
      saveCall: async (r) => void rows.set(r.call_id, structuredClone(r)),
      getCall: async (id) => structuredClone(rows.get(id)),
      callsWithStatus: async (status: CallStatus) => [...rows.values()].filter((r) => r.status === status).map((r) => structuredClone(r)),
      callWithKey: async (tool, key) => structuredClone(rows.get(keys.get(`${tool} ${key}`) ?? '')),
      claimKey: async (tool, key, callId) => void keys.set(`${tool} ${key}`, callId),
    },
    remember: async () => {
      if (options.failRemember) throw new ThymosError(ErrorCode.DATABASE_ERROR, 'memory store busy');
    },
    world: () => {
      throw new ThymosError(ErrorCode.NATS_UNAVAILABLE, 'no world here');
    },
    allowAdmin: false,
    approvalTimeoutS: 60,
    maxPending: 3,
    maxHops: 3,
    env: {},
    logger: createLogger({ level: 'silent' }),
    ...options.overrides,
  });
  return { tools: caller, rows, mode };
}
