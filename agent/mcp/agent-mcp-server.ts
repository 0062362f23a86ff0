import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { CreateMessageResultSchema, ErrorCode as McpErrorCode, McpError, SubscribeRequestSchema, UnsubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { WorldQuerySchema } from '../../shared/protocol/world-protocol.js';
import { AgentIdSchema } from '../../shared/domain/domain-schema.js';
import { AgentStateSchema, ScoredOptionSchema } from '../../shared/protocol/agent-protocol.js';
import { toThymosError } from '../../shared/errors/errors.js';
import type { ThymosConfig } from '../../shared/config/thymos-config.js';
import type { SamplingClient } from '../llm/agent-models.js';
import type { Thought } from '../runtime/agent-reasoner.js';
import type { AgentRuntime } from '../runtime/agent-runtime.js';
import { personaPrompt } from '../llm/persona-prompt.js';
import type { RecallOptions } from '../memory/agent-memory.js';
import type { ConceptView } from '../concepts/concept-tracker.js';
import type { MemoryRecord, RecallHit } from '../memory/memory-record.js';

/** Version reported to MCP clients. */
export const THYMOS_VERSION = '0.1.0';

const MEMORIES_RESOURCE_LIMIT = 50;
const SPEAKER_MAX = 100;
const QUERY_MAX = 2000;
const TAG_MAX = 64;
const SITUATION_MAX = 4000;
const OPTIONS_MAX = 20;
const OPTION_MAX = 200;

/** URIs of an agent's resources. */
export function agentResourceUris(id: string): { state: string; memories: string } {
  return { state: `agent://${id}/state`, memories: `agent://${id}/memories` };
}

const ScoreSchema = z.object({ strategy: z.enum(['bm25', 'vector', 'hybrid']), bm25: z.number(), vector: z.number().optional(), strength: z.number(), final: z.number() });
const strategy = z
  .string()
  .min(1)
  .max(48)
  .optional()
  .describe("bm25 matches words, vector matches meaning, hybrid fuses both, or the name of one of the domain's search strategies (default: the agent's searchStrategy, else [memory] search_strategy). Without an embedder, bm25.");
const MemoryOutSchema = z.object({
  id: z.string(),
  content: z.string(),
  importance: z.number(),
  emotional_weight: z.number(),
  tags: z.array(z.string()),
  source: z.object({ kind: z.string(), by: z.string(), thread: z.string().optional(), event: z.string().optional(), model: z.string().optional() }),
  created_at: z.string(),
  access_count: z.number(),
  derived_from: z.array(z.string()).optional(),
  superseded_by: z.string().optional(),
  superseded_reason: z.string().optional(),
  demoted_at: z.string().optional(),
  compacted_into: z.string().optional(),
});
const HitOutSchema = MemoryOutSchema.extend({ score: ScoreSchema });
const RelatedOutSchema = z.object({
  key: z.string(),
  name: z.string(),
  hops: z.number(),
  path: z.array(z.object({ type: z.string(), to: z.string(), properties: z.record(z.string(), z.unknown()) })),
});
const ConceptOutSchema = z.object({
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
const isoTime = z.iso.datetime({ offset: true }).transform((s) => Date.parse(s));
/** Filters a recall applies before ranking. */
const recallFilters = {
  tags: z.array(z.string().min(1).max(TAG_MAX)).max(32).optional().describe('Only memories with every one of these tags.'),
  source: z.string().min(1).max(64).optional().describe('Only memories of this source kind: told, dialogue, knowledge, event, world, insight, …'),
  since: isoTime.optional().describe('Only memories created at or after this time (ISO 8601).'),
  until: isoTime.optional().describe('Only memories created at or before this time (ISO 8601).'),
  include_superseded: z.boolean().optional().describe('Also memories a newer one superseded (default false).'),
  include_faded: z.boolean().optional().describe('Also memories demoted because they faded (default false).'),
};
type RecallFilterArgs = { tags?: string[] | undefined; source?: string | undefined; since?: number | undefined; until?: number | undefined; include_superseded?: boolean | undefined; include_faded?: boolean | undefined };

function recallOptions(args: RecallFilterArgs & { k?: number | undefined; strategy?: string | undefined }, defaultK: number): Omit<RecallOptions, 'strategy'> & { strategy?: string } {
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
            (since === undefined || m.created_at >= since) &&
            (until === undefined || m.created_at <= until),
        }
      : {}),
  };
}

/** One MCP session's server. Sessions share the runtime; each gets its own subscriptions. */
export interface AgentMcpSession {
  server: McpServer;
  /** URIs this session subscribed to. */
  subscriptions: Set<string>;
}

/**
 * Builds the MCP server one session talks to: tools `talk_to_<id>`,
 * `query_<id>_knowledge`, `get_<id>_state`, `remember`, `recall`; resources
 * `agent://<id>/state` (subscribable) and `agent://<id>/memories`; prompt `persona`.
 */
export function createAgentMcpSession(runtime: AgentRuntime, config: ThymosConfig): AgentMcpSession {
  const id = runtime.id;
  const persona = runtime.definition.persona;
  const limits = config.memory;
  const uris = agentResourceUris(id);
  const server = new McpServer(
    { name: `thymos-agent-${id}`, title: persona.name, version: THYMOS_VERSION },
    {
      capabilities: { resources: { subscribe: true, listChanged: false }, tools: {}, prompts: {} },
      instructions: `${persona.name} (${id}), an agent of a Thymos fleet. Talk with talk_to_${id}; read with get_${id}_state, query_${id}_knowledge and recall.`,
    },
  );
  const subscriptions = new Set<string>();

  const content = z
    .string()
    .min(1, 'expected non-empty content')
    .max(limits.max_content_chars, `expected at most ${limits.max_content_chars} characters (memory.max_content_chars)`);
  const k = z.number().int().min(1).max(limits.recall_max_k).optional().describe(`How many memories (default ${limits.recall_default_k}, at most ${limits.recall_max_k}).`);
  const query = z.string().min(1).max(QUERY_MAX).describe('What to look for, in words.');

  server.registerTool(
    `talk_to_${id}`,
    {
      title: `Talk to ${persona.name}`,
      description: `Say something to ${persona.name}. The reply is in character and grounded in what ${persona.name} remembers. Only while the agent is active.`,
      inputSchema: {
        message: content.describe('What you say.'),
        speaker: z.string().min(1).max(SPEAKER_MAX).optional().describe('Who is speaking; names the conversation thread. Default "stranger".'),
      },
      outputSchema: {
        reply: z.string(),
        grounding: z.array(HitOutSchema),
        emotional_tone: z.string().optional(),
        actions: z.array(z.string()).optional(),
        state_changes: z.record(z.string(), z.unknown()).optional(),
        learned: z.array(z.string()).optional(),
        model: z.string().optional(),
      },
    },
    async ({ message, speaker }, extra) =>
      guard(async () => {
        const result = await runtime.talk({ message, speaker: speaker ?? 'stranger', client: samplingClient(server, extra) });
        return {
          content: [{ type: 'text', text: result.reply }],
          structuredContent: {
            reply: result.reply,
            grounding: result.grounding.map(hitOut),
            ...(result.tone !== undefined ? { emotional_tone: result.tone } : {}),
            ...(result.actions ? { actions: result.actions } : {}),
            ...(result.state_changes ? { state_changes: result.state_changes } : {}),
            ...(result.learned ? { learned: result.learned } : {}),
            ...(result.model ? { model: result.model } : {}),
          },
        };
      }),
  );

  server.registerTool(
    `query_${id}_knowledge`,
    {
      title: `What ${persona.name} knows`,
      description: `Look up what ${persona.name} knows about something, without talking and without reinforcing the memories. Works while listening.`,
      inputSchema: { query, k, strategy, ...recallFilters },
      outputSchema: { results: z.array(HitOutSchema) },
      annotations: { readOnlyHint: true },
    },
    async (args) => guard(async () => hitsResult(await runtime.recall(args.query, { ...recallOptions(args, limits.recall_default_k), reinforce: false }))),
  );

  server.registerTool(
    `get_${id}_state`,
    {
      title: `State of ${persona.name}`,
      description: 'Mode, status, memory count and process facts of this agent.',
      inputSchema: {},
      outputSchema: AgentStateSchema.shape,
      annotations: { readOnlyHint: true },
    },
    async () =>
      guard(async () => {
        const state = runtime.getState();
        return { content: [{ type: 'text', text: JSON.stringify(state) }], structuredContent: state };
      }),
  );

  const to = AgentIdSchema.refine((v) => v !== id, 'another agent than this one').describe('The agent id to reach, e.g. "bram_smith".');
  server.registerTool(
    'send_message',
    {
      title: 'Send a message to another agent',
      description: `${persona.name} tells another agent something. It waits in that agent's inbox if it is asleep. Only while active.`,
      inputSchema: { to, message: content.describe('What to tell.') },
      outputSchema: { id: z.string(), to: z.string() },
    },
    async (args) =>
      guard(async () => {
        const sent = await runtime.tell(args.to, args.message);
        return { content: [{ type: 'text', text: `Sent to ${sent.to} (${sent.id}).` }], structuredContent: { id: sent.id, to: sent.to } };
      }),
  );

  server.registerTool(
    'ask_agent',
    {
      title: 'Ask another agent',
      description: `${persona.name} asks another agent and waits for its answer. An agent that is asleep answers when it wakes; the answer then arrives in ${persona.name}'s memory. Only while active.`,
      inputSchema: {
        to,
        question: content.describe('What to ask.'),
        timeout_ms: z.number().int().min(100).max(60_000).optional().describe('How long to wait for a live answer (default 5000).'),
      },
      outputSchema: { answered: z.boolean(), answer: z.string().optional(), id: z.string().optional() },
    },
    async (args) =>
      guard(async () => {
        const answer = await runtime.ask(args.to, args.question, args.timeout_ms ?? 5000);
        if (!answer) {
          const text = `No answer from ${args.to} yet: it is not running or did not answer in time. It will answer when it wakes, into ${id}'s inbox.`;
          return { content: [{ type: 'text', text }], structuredContent: { answered: false } };
        }
        return { content: [{ type: 'text', text: answer.text }], structuredContent: { answered: true, answer: answer.text, id: answer.id } };
      }),
  );

  server.registerTool(
    'query_world',
    {
      title: 'Look up the shared world',
      description:
        'Reads rows of a world table the application declares (e.g. quest, location) through the supervisor: every condition must hold (field, op =, !=, <, <=, >, >=, contains, in; value), optionally ordered, at most limit rows. Works while listening.',
      inputSchema: {
        table: WorldQuerySchema.shape.table.describe('The world table, e.g. "quest".'),
        where: WorldQuerySchema.shape.where.describe('Conditions, e.g. [{"field":"status","op":"=","value":"open"}].'),
        order_by: WorldQuerySchema.shape.order_by,
        limit: WorldQuerySchema.shape.limit,
      },
      outputSchema: { rows: z.array(z.record(z.string(), z.unknown())) },
    },
    async (args) =>
      guard(async () => {
        const rows = await runtime.queryWorld(args);
        const text = rows.length === 0 ? `No ${args.table} matches.` : rows.map((r) => JSON.stringify(r)).join('\n');
        return { content: [{ type: 'text', text }], structuredContent: { rows } };
      }),
  );

  server.registerTool(
    'concepts',
    {
      title: `What ${persona.name} keeps track of`,
      description: `People, places and organisations ${persona.name}'s memories mention, with their aliases, tier (mentioned, provisional, tracked), mentions and the memories that mention them. Give a name or alias for one concept. Works while listening.`,
      inputSchema: {
        name: z.string().min(1).max(200).optional().describe('A concept by name or alias, e.g. "the old badger".'),
        tier: z.enum(['mentioned', 'provisional', 'tracked']).optional().describe('Only concepts at this tier or above.'),
        limit: z.number().int().min(1).max(500).optional(),
        depth: z.number().int().min(1).max(5).optional().describe('With name: also the concepts related to it within this many hops (1–5).'),
        types: z.array(z.string().min(1)).max(20).optional().describe('With depth: follow only these relationship types.'),
      },
      outputSchema: { concepts: z.array(ConceptOutSchema), related: z.array(RelatedOutSchema).optional() },
      annotations: { readOnlyHint: true },
    },
    async (args) =>
      guard(async () => {
        const concepts = runtime.concepts(args).map(conceptOut);
        const related = args.name !== undefined && args.depth !== undefined ? runtime.related(args.name, args.depth, args.types) : undefined;
        const lines = concepts.map((c) => `${c.name} (${c.type}, ${c.tier}, ${c.mentions} mentions${c.aliases.length ? `; also ${c.aliases.map((a) => a.text).join(', ')}` : ''})`);
        for (const r of related ?? []) lines.push(`  ${r.path.map((p) => `${p.type} → ${p.to}`).join(', ')} (${r.hops} hop${r.hops > 1 ? 's' : ''})`);
        const text = lines.length === 0 ? 'No such concept.' : lines.join('\n');
        return { content: [{ type: 'text', text }], structuredContent: { concepts, ...(related ? { related } : {}) } };
      }),
  );

  server.registerTool(
    'link',
    {
      title: 'Link',
      description:
        "Relates two concepts with a relationship type the domain declares (e.g. trusts, with properties), both ways for a symmetric type; or, with type caused_by, records that memory `from` happened because of memory `to`. Only while active.",
      inputSchema: {
        from: z.string().min(1).max(200).describe('A concept name, alias or key; a memory id for caused_by.'),
        to: z.string().min(1).max(200),
        type: z.string().min(1).max(64).describe('A relationship type of the domain, or caused_by.'),
        properties: z.record(z.string(), z.union([z.string().max(1000), z.number(), z.boolean()])).optional(),
        reason: z.string().max(1000).optional().describe('Why, for caused_by.'),
      },
    },
    async (args) =>
      guard(async () => {
        const linked = await runtime.link(args);
        return { content: [{ type: 'text', text: `Linked ${args.from} -${args.type}-> ${args.to}.` }], structuredContent: linked as Record<string, unknown> };
      }),
  );

  server.registerTool(
    'causes',
    {
      title: 'What led to a memory',
      description: 'Walks back along caused_by links from a memory, up to depth (1–5) links. Works while listening.',
      inputSchema: { memory: z.string().min(1).max(200), depth: z.number().int().min(1).max(5).optional() },
      outputSchema: { causes: z.array(z.object({ memory: z.string(), content: z.string(), reason: z.string(), hops: z.number() })) },
      annotations: { readOnlyHint: true },
    },
    async (args) =>
      guard(async () => {
        const causes = runtime.causes(args.memory, args.depth ?? 5);
        const text = causes.length === 0 ? 'No recorded causes.' : causes.map((c) => `${'  '.repeat(c.hops - 1)}← ${c.content}${c.reason ? ` (${c.reason})` : ''}`).join('\n');
        return { content: [{ type: 'text', text }], structuredContent: { causes } };
      }),
  );

  server.registerTool(
    'conversation',
    {
      title: `${persona.name}'s conversation with someone`,
      description: `The turns of ${persona.name}'s conversation with one speaker, oldest first: who said what, and for replies the model that wrote them and the memories they drew on (derived_from). Works while listening.`,
      inputSchema: {
        speaker: z.string().min(1).max(SPEAKER_MAX).describe('Whose conversation (the speaker named when talking).'),
        limit: z.number().int().min(1).max(MEMORIES_RESOURCE_LIMIT).optional().describe(`The newest turns to show (default 20, at most ${MEMORIES_RESOURCE_LIMIT}).`),
      },
      outputSchema: { turns: z.array(MemoryOutSchema) },
    },
    async ({ speaker, limit }) =>
      guard(async () => {
        const turns = runtime.conversation(speaker, limit ?? 20).map(memoryOut);
        const text = turns.length === 0 ? `${persona.name} has not talked with ${speaker}.` : turns.map((t) => t.content).join('\n');
        return { content: [{ type: 'text', text }], structuredContent: { turns } };
      }),
  );

  const situation = z.string().min(1).max(SITUATION_MAX).describe('What happened, in words.');
  const options = z
    .array(z.string().min(1).max(OPTION_MAX))
    .min(1)
    .max(OPTIONS_MAX)
    .optional()
    .describe(`What ${persona.name} could do. Default: the agent's actions from the domain schema.`);
  const ThoughtOut = { situation: z.string(), steps: z.array(z.string()), options: z.array(ScoredOptionSchema), model: z.string() };
  server.registerTool(
    'think',
    {
      title: `Ask ${persona.name} to think`,
      description: `${persona.name} reasons about a situation with the reasoning model: the steps, and every option scored 0..1. Only while active.`,
      inputSchema: { situation, options },
      outputSchema: ThoughtOut,
    },
    async (args, extra) =>
      guard(async () => {
        const thought = await runtime.think(args.situation, args.options, samplingClient(server, extra));
        return { content: [{ type: 'text', text: thoughtText(thought) }], structuredContent: { ...thought } };
      }),
  );
  server.registerTool(
    'decide',
    {
      title: `Ask ${persona.name} to decide`,
      description: `${persona.name} thinks about a situation, then chooses one option with a confidence from 0 to 1. Only while active.`,
      inputSchema: { situation, options },
      outputSchema: { action: z.string(), confidence: z.number(), reason: z.string(), thought: z.object(ThoughtOut) },
    },
    async (args, extra) =>
      guard(async () => {
        const decision = await runtime.decide(args.situation, args.options, samplingClient(server, extra));
        const text = `${decision.action} (confidence ${decision.confidence})${decision.reason ? `: ${decision.reason}` : ''}`;
        return { content: [{ type: 'text', text }], structuredContent: { ...decision, thought: { ...decision.thought } } };
      }),
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

  server.registerTool(
    'describe_concept',
    {
      title: 'Describe a concept',
      description: `Records what ${persona.name} knows of a person, place or thing: its type and attributes, checked against the concept types the domain declares (declared attributes, types, allowed values, required ones). A new name becomes a concept. Only while active.`,
      inputSchema: {
        name: z.string().min(1).max(200).describe('A concept name, alias or key, e.g. "the mill".'),
        type: z.string().min(1).max(64).optional().describe('A concept type of the domain, e.g. "place".'),
        attributes: z.record(z.string().min(1).max(64), z.union([z.string().max(1000), z.number(), z.boolean()])).optional().describe('e.g. {"kind": "building"}'),
      },
      outputSchema: { concept: ConceptOutSchema },
    },
    async (args) =>
      guard(async () => {
        const concept = conceptOut(await runtime.describeConcept(args));
        return { content: [{ type: 'text', text: `${concept.name} (${concept.type}): ${JSON.stringify(concept.attributes ?? {})}` }], structuredContent: { concept } };
      }),
  );

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
        insights: z.array(z.object({ id: z.string(), kind: z.enum(['theme', 'contradiction', 'digest']), content: z.string(), sources: z.array(z.string()) })),
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

  server.registerResource(
    'state',
    uris.state,
    { title: `State of ${persona.name}`, description: 'Subscribe to be told when it changes.', mimeType: 'application/json' },
    async () => ({ contents: [{ uri: uris.state, mimeType: 'application/json', text: JSON.stringify(runtime.getState()) }] }),
  );

  server.registerResource(
    'memories',
    uris.memories,
    { title: `Recent memories of ${persona.name}`, description: `The newest ${MEMORIES_RESOURCE_LIMIT} memories.`, mimeType: 'application/json' },
    async () => ({
      contents: [
        {
          uri: uris.memories,
          mimeType: 'application/json',
          text: JSON.stringify(runtime.recentMemories(MEMORIES_RESOURCE_LIMIT).map(memoryOut)),
        },
      ],
    }),
  );

  server.registerPrompt(
    'persona',
    {
      title: `Speak as ${persona.name}`,
      description: `A system prompt that puts a model in ${persona.name}'s character.`,
      argsSchema: { situation: z.string().max(QUERY_MAX).optional().describe('What is going on right now.') },
    },
    ({ situation }) => ({
      messages: [{ role: 'user', content: { type: 'text', text: personaPrompt(runtime.definition.persona, situation ? `Right now: ${situation}` : undefined) } }],
    }),
  );

  server.server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    const uri = request.params.uri;
    if (uri !== uris.state && uri !== uris.memories) {
      throw new McpError(McpErrorCode.InvalidParams, `no resource ${uri}; expected ${uris.state} or ${uris.memories}`);
    }
    subscriptions.add(uri);
    return {};
  });
  server.server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    subscriptions.delete(request.params.uri);
    return {};
  });

  return { server, subscriptions };
}

/** The client of a tool call as a sampler, when it declared the sampling capability. */
function samplingClient(server: McpServer, extra: RequestHandlerExtra<ServerRequest, ServerNotification>): SamplingClient | undefined {
  if (!server.server.getClientCapabilities()?.sampling) return undefined;
  const info = server.server.getClientVersion();
  return {
    name: info ? `the MCP client ${info.name}` : 'the MCP client',
    sample: (params, options) =>
      extra.sendRequest({ method: 'sampling/createMessage', params }, CreateMessageResultSchema, { signal: AbortSignal.any([options.signal, extra.signal]), timeout: options.timeout }),
  };
}

function thoughtText(t: Thought): string {
  return [...t.steps, ...t.options.map((o) => `${o.action}: ${o.score}${o.reason ? ` (${o.reason})` : ''}`)].join('\n');
}

async function guard(fn: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await fn();
  } catch (err) {
    const e = toThymosError(err);
    return {
      isError: true,
      content: [{ type: 'text', text: `${e.code}: ${e.message}` }],
      _meta: { 'thymos/error': e.toJSON() },
    };
  }
}

function hitsResult(hits: RecallHit[]): CallToolResult {
  const results = hits.map(hitOut);
  const text =
    results.length === 0
      ? 'No matching memories.'
      : results.map((r, i) => `${i + 1}. ${r.content} (score ${r.score.final})`).join('\n');
  return { content: [{ type: 'text', text }], structuredContent: { results } };
}

function memoryOut(m: MemoryRecord): z.infer<typeof MemoryOutSchema> {
  return {
    id: m.id,
    content: m.content,
    importance: m.importance,
    emotional_weight: m.emotional_weight,
    tags: m.tags,
    source: m.source,
    created_at: new Date(m.created_at).toISOString(),
    access_count: m.access_count,
    ...(m.derived_from ? { derived_from: m.derived_from } : {}),
    ...(m.superseded_by !== undefined ? { superseded_by: m.superseded_by, superseded_reason: m.superseded_reason ?? '' } : {}),
    ...(m.demoted_at !== undefined ? { demoted_at: new Date(m.demoted_at).toISOString() } : {}),
    ...(m.compacted_into !== undefined ? { compacted_into: m.compacted_into } : {}),
  };
}

function conceptOut(c: ConceptView): z.infer<typeof ConceptOutSchema> {
  return { ...c, first_seen: new Date(c.first_seen).toISOString(), last_seen: new Date(c.last_seen).toISOString(), memories: c.memories.slice(0, 20) };
}

function hitOut(h: RecallHit): z.infer<typeof HitOutSchema> {
  return { ...memoryOut(h.memory), score: h.score };
}
