import { z } from 'zod';

import { guard, HitOutSchema, hitsResult, isoTime, recallFilters, recallOptions, strategy, TAG_MAX, type ToolContext } from './tool-kit.js';

/** Memory: what the agent knows, remember, recall and consolidate. */
export function registerMemoryTools(ctx: ToolContext): void {
  const { server, runtime, id, persona, limits, content, k, query } = ctx;
  server.registerTool(
    `query_${id}_knowledge`,
    {
      title: `What ${persona.name} knows`,
      description: `Look up what ${persona.name} knows about something, without talking and without reinforcing the memories. Works while listening.`,
      inputSchema: { query, k, strategy, ...recallFilters },
      outputSchema: { results: z.array(HitOutSchema) },
      annotations: { readOnlyHint: true },
    },
    async (args) =>
      guard(async () =>
        hitsResult(await runtime.recall(args.query, { ...recallOptions(args, limits.recall_default_k), reinforce: false })),
      ),
  );

  server.registerTool(
    'remember',
    {
      title: 'Remember',
      description: `Store a memory for ${persona.name}. Only while the agent is active.`,
      inputSchema: {
        content: content.describe('What to remember.'),
        importance: z.number().min(0).max(1).optional().describe('0..1, default 0.5; important memories fade slower.'),
        emotional_weight: z.number().min(0).max(1).optional().describe('0..1, default 0; emotional memories fade slower.'),
        tags: z.array(z.string().min(1).max(TAG_MAX)).max(limits.max_tags).optional(),
        occurred_at: isoTime.optional().describe('When what it tells happened (ISO 8601), if not now: recall filters and ranks by it.'),
      },
      outputSchema: { id: z.string(), memory_count: z.number() },
    },
    async (args, extra) =>
      guard(async () => {
        const record = await runtime.remember({
          content: args.content,
          importance: args.importance,
          emotional_weight: args.emotional_weight,
          tags: args.tags,
          occurred_at: args.occurred_at,
          source: { kind: 'told', by: extra.sessionId ? `mcp:${extra.sessionId}` : 'mcp' },
        });
        const out = { id: record.id, memory_count: runtime.getState().memory_count };
        return { content: [{ type: 'text', text: `Remembered (${record.id}).` }], structuredContent: out };
      }),
  );

  server.registerTool(
    'recall',
    {
      title: 'Recall',
      description: `Find ${persona.name}'s memories that match a query by words, meaning or both, best first, each with its score (strategy, bm25, vector, strength, final). Recalled memories grow stronger.`,
      inputSchema: { query, k, strategy, ...recallFilters },
      outputSchema: { results: z.array(HitOutSchema) },
    },
    async (args) => guard(async () => hitsResult(await runtime.recall(args.query, recallOptions(args, limits.recall_default_k)))),
  );
}

/** Consolidation: the agent reflects on a scope of its memories. */
export function registerConsolidationTools(ctx: ToolContext): void {
  const { server, runtime, persona } = ctx;
  server.registerTool(
    'consolidate',
    {
      title: 'Consolidate memories',
      description: `Has ${persona.name} reflect on memories in a scope (a conversation thread, a time range, a tag; all when none): recurring concepts become theme insights that point to their sources, a newer memory that contradicts an older one supersedes it (kept, with the reason), faded memories are demoted and compacted into digests. Nothing is deleted or rewritten. dry_run reports without writing (works while listening).`,
      inputSchema: {
        session: z.string().min(1).max(200).optional().describe('Only memories of this conversation thread.'),
        since: isoTime.optional().describe('Only memories created at or after this time (ISO 8601).'),
        until: isoTime.optional().describe('Only memories created at or before this time (ISO 8601).'),
        tag: z.string().min(1).max(TAG_MAX).optional().describe('Only memories with this tag.'),
        dry_run: z.boolean().optional(),
      },
      outputSchema: {
        examined: z.number(),
        insights: z.array(
          z.object({
            id: z.string(),
            kind: z.enum(['theme', 'contradiction', 'digest']),
            content: z.string(),
            sources: z.array(z.string()),
          }),
        ),
        superseded: z.array(z.object({ id: z.string(), by: z.string(), reason: z.string() })),
        importance: z.array(z.object({ id: z.string(), from: z.number(), to: z.number(), reason: z.string() })),
        demoted: z.array(z.string()),
        dry_run: z.boolean(),
        took_ms: z.number(),
      },
    },
    async ({ dry_run, ...scope }) =>
      guard(async () => {
        const { trigger: _trigger, scope: _scope, ...report } = await runtime.consolidate(scope, { dryRun: dry_run });
        const lines = [
          `${report.dry_run ? 'Would write' : 'Wrote'} ${report.insights.length} insight(s) from ${report.examined} memories; ${report.superseded.length} superseded, ${report.demoted.length} demoted.`,
          ...report.insights.map((i) => `- ${i.kind}: ${i.content}`),
        ];
        return { content: [{ type: 'text', text: lines.join('\n') }], structuredContent: report };
      }),
  );
}
