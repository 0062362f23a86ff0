import { z } from 'zod';

import { AgentStateSchema, WorldQuerySchema } from '../../shared/protocol/index.js';
import { personaPrompt } from '../llm/persona-prompt.js';
import { guard, MEMORIES_RESOURCE_LIMIT, memoryOut, QUERY_MAX, type ToolContext } from './tool-kit.js';

/** State and the world: the agent's state, its resources, its persona prompt, and world lookups. */
export function registerStateTools(ctx: ToolContext): void {
  const { server, runtime, id, persona } = ctx;
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
        const rows = await runtime.links.queryWorld(args);
        const text = rows.length === 0 ? `No ${args.table} matches.` : rows.map((r) => JSON.stringify(r)).join('\n');
        return { content: [{ type: 'text', text }], structuredContent: { rows } };
      }),
  );
  registerStateResources(ctx);
  registerPersonaPrompt(ctx);
}

/** The agent's state and its newest memories as resources (subscribable: told when they change). */
function registerStateResources(ctx: ToolContext): void {
  const { server, runtime, persona, uris } = ctx;
  server.registerResource(
    'state',
    uris.state,
    { title: `State of ${persona.name}`, description: 'Subscribe to be told when it changes.', mimeType: 'application/json' },
    async () => ({ contents: [{ uri: uris.state, mimeType: 'application/json', text: JSON.stringify(runtime.getState()) }] }),
  );

  server.registerResource(
    'memories',
    uris.memories,
    {
      title: `Recent memories of ${persona.name}`,
      description: `The newest ${MEMORIES_RESOURCE_LIMIT} memories.`,
      mimeType: 'application/json',
    },
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
}

/** `persona`: a system prompt that puts a model in the agent's character. */
function registerPersonaPrompt(ctx: ToolContext): void {
  const { server, runtime, persona } = ctx;
  server.registerPrompt(
    'persona',
    {
      title: `Speak as ${persona.name}`,
      description: `A system prompt that puts a model in ${persona.name}'s character.`,
      argsSchema: { situation: z.string().max(QUERY_MAX).optional().describe('What is going on right now.') },
    },
    ({ situation }) => ({
      messages: [
        {
          role: 'user',
          content: { type: 'text', text: personaPrompt(runtime.definition.persona, situation ? `Right now: ${situation}` : undefined) },
        },
      ],
    }),
  );
}
