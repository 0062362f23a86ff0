import { z } from 'zod';

import { conceptOut, ConceptOutSchema, guard, RelatedOutSchema, type ToolContext } from './tool-kit.js';

/** Concepts: what the agent's memories are about, their links and causes. */
export function registerConceptTools(ctx: ToolContext): void {
  const { server, runtime, persona } = ctx;
  server.registerTool(
    'concepts',
    {
      title: `What ${persona.name} keeps track of`,
      description: `People, places and organisations ${persona.name}'s memories mention, with their aliases, tier (mentioned, provisional, tracked), mentions and the memories that mention them. Give a name or alias for one concept. Works while listening.`,
      inputSchema: {
        name: z.string().min(1).max(200).optional().describe('A concept by name or alias, e.g. "the old badger".'),
        tier: z.enum(['mentioned', 'provisional', 'tracked']).optional().describe('Only concepts at this tier or above.'),
        limit: z.number().int().min(1).max(500).optional(),
        depth: z
          .number()
          .int()
          .min(1)
          .max(5)
          .optional()
          .describe('With name: also the concepts related to it within this many hops (1–5).'),
        types: z.array(z.string().min(1)).max(20).optional().describe('With depth: follow only these relationship types.'),
      },
      outputSchema: { concepts: z.array(ConceptOutSchema), related: z.array(RelatedOutSchema).optional() },
      annotations: { readOnlyHint: true },
    },
    async (args) =>
      guard(async () => {
        const concepts = runtime.concepts.list(args).map(conceptOut);
        const related =
          args.name !== undefined && args.depth !== undefined ? runtime.concepts.related(args.name, args.depth, args.types) : undefined;
        const lines = concepts.map(
          (c) =>
            `${c.name} (${c.type}, ${c.tier}, ${c.mentions} mentions${c.aliases.length ? `; also ${c.aliases.map((a) => a.text).join(', ')}` : ''})`,
        );
        for (const r of related ?? [])
          lines.push(`  ${r.path.map((p) => `${p.type} → ${p.to}`).join(', ')} (${r.hops} hop${r.hops > 1 ? 's' : ''})`);
        const text = lines.length === 0 ? 'No such concept.' : lines.join('\n');
        return { content: [{ type: 'text', text }], structuredContent: { concepts, ...(related ? { related } : {}) } };
      }),
  );

  server.registerTool(
    'describe_concept',
    {
      title: 'Describe a concept',
      description: `Records what ${persona.name} knows of a person, place or thing: its type and attributes, checked against the concept types the domain declares (declared attributes, types, allowed values, required ones). A new name becomes a concept. Only while active.`,
      inputSchema: {
        name: z.string().min(1).max(200).describe('A concept name, alias or key, e.g. "the mill".'),
        type: z.string().min(1).max(64).optional().describe('A concept type of the domain, e.g. "place".'),
        attributes: z
          .record(z.string().min(1).max(64), z.union([z.string().max(1000), z.number(), z.boolean()]))
          .optional()
          .describe('e.g. {"kind": "building"}'),
      },
      outputSchema: { concept: ConceptOutSchema },
    },
    async (args) =>
      guard(async () => {
        const concept = conceptOut(await runtime.concepts.describe(args));
        return {
          content: [{ type: 'text', text: `${concept.name} (${concept.type}): ${JSON.stringify(concept.attributes ?? {})}` }],
          structuredContent: { concept },
        };
      }),
  );
}

/** Links: relationships between concepts, and the causes between memories. */
export function registerLinkTools(ctx: ToolContext): void {
  const { server, runtime } = ctx;
  server.registerTool(
    'link',
    {
      title: 'Link',
      description:
        'Relates two concepts with a relationship type the domain declares (e.g. trusts, with properties), both ways for a symmetric type; or, with type caused_by, records that memory `from` happened because of memory `to`. Only while active.',
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
        const linked = await runtime.concepts.link(args);
        return {
          content: [{ type: 'text', text: `Linked ${args.from} -${args.type}-> ${args.to}.` }],
          structuredContent: linked as Record<string, unknown>,
        };
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
        const causes = runtime.concepts.causes(args.memory, args.depth ?? 5);
        const text =
          causes.length === 0
            ? 'No recorded causes.'
            : causes.map((c) => `${'  '.repeat(c.hops - 1)}← ${c.content}${c.reason ? ` (${c.reason})` : ''}`).join('\n');
        return { content: [{ type: 'text', text }], structuredContent: { causes } };
      }),
  );
}
