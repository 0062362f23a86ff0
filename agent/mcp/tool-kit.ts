import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  type CallToolResult,
  CreateMessageResultSchema,
  CreateMessageResultWithToolsSchema,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

import type { MemorySettings } from '../../shared/config/index.js';
import type { Persona } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError, toThymosError } from '../../shared/errors/index.js';
import type { ConceptView } from '../concepts/concept-tracker.js';
import type { SamplingClient } from '../llm/agent-models.js';
import type { RecallOptions } from '../memory/agent-memory.js';
import { type MemoryRecord, occurredAt, type RecallHit } from '../memory/memory-record.js';
import type { Thought } from '../runtime/agent-reasoner.js';
import type { AgentRuntime } from '../runtime/agent-runtime.js';

/** What every group of tools registers with: the session's server, the agent, and the input schemas its limits shape. */
export interface ToolContext {
  server: McpServer;
  runtime: AgentRuntime;
  id: string;
  persona: Persona;
  limits: MemorySettings;
  uris: { state: string; memories: string };
  /** A memory's or a message's text, within `[memory] max_content_chars`. */
  content: z.ZodString;
  /** How many memories a recall returns, within `[memory] recall_max_k`. */
  k: z.ZodOptional<z.ZodNumber>;
  /** What to look for, in words. */
  query: z.ZodString;
}

export const MEMORIES_RESOURCE_LIMIT = 50;
export const SPEAKER_MAX = 100;
export const QUERY_MAX = 2000;
export const TAG_MAX = 64;
export const SITUATION_MAX = 4000;
export const OPTIONS_MAX = 20;
export const OPTION_MAX = 200;

export const ScoreSchema = z.object({
  strategy: z.enum(['bm25', 'vector', 'hybrid', 'cascade']),
  bm25: z.number(),
  vector: z.number().optional(),
  stages: z.array(z.enum(['structural', 'temporal', 'lexical', 'causal', 'semantic'])).optional(),
  fuzzy: z.boolean().optional(),
  strength: z.number(),
  final: z.number(),
});
export const strategy = z
  .string()
  .min(1)
  .max(48)
  .optional()
  .describe(
    "bm25 matches words, vector matches meaning, hybrid fuses both, cascade narrows by who, when and why before words and meaning (meaning alone is marked fuzzy), or the name of one of the domain's search strategies (default: the agent's searchStrategy, else [memory] search_strategy). Without an embedder, bm25.",
  );
export const MemoryOutSchema = z.object({
  id: z.string(),
  content: z.string(),
  importance: z.number(),
  emotional_weight: z.number(),
  tags: z.array(z.string()),
  source: z.object({
    kind: z.string(),
    by: z.string(),
    thread: z.string().optional(),
    event: z.string().optional(),
    model: z.string().optional(),
  }),
  created_at: z.string(),
  occurred_at: z.string().optional(),
  access_count: z.number(),
  derived_from: z.array(z.string()).optional(),
  superseded_by: z.string().optional(),
  superseded_reason: z.string().optional(),
  demoted_at: z.string().optional(),
  compacted_into: z.string().optional(),
});
export const HitOutSchema = MemoryOutSchema.extend({ score: ScoreSchema });
export const RelatedOutSchema = z.object({
  key: z.string(),
  name: z.string(),
  hops: z.number(),
  path: z.array(z.object({ type: z.string(), to: z.string(), properties: z.record(z.string(), z.unknown()) })),
});
export const ConceptOutSchema = z.object({
  key: z.string(),
  name: z.string(),
  type: z.string(),
  tier: z.enum(['mentioned', 'provisional', 'tracked']),
  mentions: z.number(),
  significance: z.number(),
  first_seen: z.string(),
  last_seen: z.string(),
  aliases: z.array(z.object({ text: z.string(), type: z.string(), source: z.string() })),
  memories: z.array(z.string()),
  attributes: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
});
export const isoTime = z.iso.datetime({ offset: true }).transform((s) => Date.parse(s));
/** Filters a recall applies before ranking. */
export const recallFilters = {
  tags: z.array(z.string().min(1).max(TAG_MAX)).max(32).optional().describe('Only memories with every one of these tags.'),
  source: z
    .string()
    .min(1)
    .max(64)
    .optional()
    .describe('Only memories of this source kind: told, dialogue, knowledge, event, world, insight, …'),
  since: isoTime.optional().describe('Only memories of what happened at or after this time (ISO 8601): occurred_at, else when stored.'),
  until: isoTime.optional().describe('Only memories of what happened at or before this time (ISO 8601): occurred_at, else when stored.'),
  include_superseded: z.boolean().optional().describe('Also memories a newer one superseded (default false).'),
  include_faded: z.boolean().optional().describe('Also memories demoted because they faded (default false).'),
};
type RecallFilterArgs = {
  tags?: string[] | undefined;
  source?: string | undefined;
  since?: number | undefined;
  until?: number | undefined;
  include_superseded?: boolean | undefined;
  include_faded?: boolean | undefined;
};

export function recallOptions(
  args: RecallFilterArgs & { k?: number | undefined; strategy?: string | undefined },
  defaultK: number,
): Omit<RecallOptions, 'strategy'> & { strategy?: string } {
  const { tags, source, since, until } = args;
  const filtered = tags?.length || source !== undefined || since !== undefined || until !== undefined;
  return {
    k: args.k ?? defaultK,
    ...(args.strategy ? { strategy: args.strategy } : {}),
    includeSuperseded: args.include_superseded ?? false,
    includeDemoted: args.include_faded ?? false,
    ...(filtered
      ? {
          filter: (m: MemoryRecord) =>
            (!tags || tags.every((t) => m.tags.includes(t))) &&
            (source === undefined || m.source.kind === source) &&
            (since === undefined || occurredAt(m) >= since) &&
            (until === undefined || occurredAt(m) <= until),
        }
      : {}),
  };
}

/** The client of a tool call as a sampler, when it declared the sampling capability. */
export function samplingClient(
  server: McpServer,
  extra: RequestHandlerExtra<ServerRequest, ServerNotification>,
): SamplingClient | undefined {
  const sampling = server.server.getClientCapabilities()?.sampling;
  if (!sampling) return undefined;
  const info = server.server.getClientVersion();
  return {
    name: info ? `the MCP client ${info.name}` : 'the MCP client',
    tools: sampling.tools !== undefined,
    sample: (params, options) =>
      extra.sendRequest(
        { method: 'sampling/createMessage', params },
        params.tools ? CreateMessageResultWithToolsSchema : CreateMessageResultSchema,
        { signal: AbortSignal.any([options.signal, extra.signal]), timeout: options.timeout },
      ),
  };
}

export function thoughtText(t: Thought): string {
  return [...t.steps, ...t.options.map((o) => `${o.action}: ${o.score}${o.reason ? ` (${o.reason})` : ''}`)].join('\n');
}

export async function guard(fn: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await fn();
  } catch (err) {
    return toolError(toThymosError(err));
  }
}

/** A tool result that carries an error: its code and message as text, and again in `_meta["thymos/error"]`. */
export function toolError(e: ThymosError): CallToolResult {
  return {
    isError: true,
    content: [{ type: 'text', text: `${e.code}: ${e.message}` }],
    _meta: { 'thymos/error': e.toJSON() },
  };
}

/**
 * The errors the MCP SDK answers itself before a tool runs (arguments its schema refuses, a tool
 * name nobody registered) as coded tool errors like every other: `INVALID_INPUT` and `NOT_FOUND`
 * instead of a bare `MCP error -32602`.
 */
export function codedSdkToolError(message: string): CallToolResult {
  const invalid = /^MCP error -32602: Input validation error: Invalid arguments for tool (\S+): ([\s\S]*)$/.exec(message);
  if (invalid)
    return toolError(
      new ThymosError(ErrorCode.INVALID_INPUT, `arguments of ${invalid[1]}: ${invalid[2]}`, { location: { path: 'arguments' } }),
    );
  const missing = /^MCP error -32602: Tool (\S+) (not found|disabled)$/.exec(message);
  if (missing)
    return toolError(
      new ThymosError(
        ErrorCode.NOT_FOUND,
        `no tool ${JSON.stringify(missing[1])} on this agent; tools/list (or thymos tools ID) names its tools`,
        { location: { path: 'name' } },
      ),
    );
  const other = /^MCP error -32602: (?!Output validation)([\s\S]*)$/.exec(message);
  return toolError(other ? new ThymosError(ErrorCode.INVALID_INPUT, other[1]!) : new ThymosError(ErrorCode.INTERNAL, message));
}

export function hitsResult(hits: RecallHit[]): CallToolResult {
  const results = hits.map(hitOut);
  const text =
    results.length === 0 ? 'No matching memories.' : results.map((r, i) => `${i + 1}. ${r.content} (score ${r.score.final})`).join('\n');
  return { content: [{ type: 'text', text }], structuredContent: { results } };
}

export function memoryOut(m: MemoryRecord): z.infer<typeof MemoryOutSchema> {
  return {
    id: m.id,
    content: m.content,
    importance: m.importance,
    emotional_weight: m.emotional_weight,
    tags: m.tags,
    source: m.source,
    created_at: new Date(m.created_at).toISOString(),
    ...(m.occurred_at !== undefined ? { occurred_at: new Date(m.occurred_at).toISOString() } : {}),
    access_count: m.access_count,
    ...(m.derived_from ? { derived_from: m.derived_from } : {}),
    ...(m.superseded_by !== undefined ? { superseded_by: m.superseded_by, superseded_reason: m.superseded_reason ?? '' } : {}),
    ...(m.demoted_at !== undefined ? { demoted_at: new Date(m.demoted_at).toISOString() } : {}),
    ...(m.compacted_into !== undefined ? { compacted_into: m.compacted_into } : {}),
  };
}

export function conceptOut(c: ConceptView): z.infer<typeof ConceptOutSchema> {
  return {
    ...c,
    first_seen: new Date(c.first_seen).toISOString(),
    last_seen: new Date(c.last_seen).toISOString(),
    memories: c.memories.slice(0, 20),
  };
}

export function hitOut(h: RecallHit): z.infer<typeof HitOutSchema> {
  return { ...memoryOut(h.memory), score: h.score };
}
