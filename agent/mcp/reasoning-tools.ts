import { z } from 'zod';

import { ScoredOptionSchema } from '../../shared/protocol/index.js';
import { callChain } from './declared-tools.js';
import { guard, OPTION_MAX, OPTIONS_MAX, samplingClient, SITUATION_MAX, thoughtText, type ToolContext } from './tool-kit.js';

/** Reasoning: think a situation through, or decide between options. */
export function registerReasoningTools(ctx: ToolContext): void {
  const { server, runtime, persona } = ctx;
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
        const decision = await runtime.decide(args.situation, args.options, samplingClient(server, extra), callChain(extra));
        const text = `${decision.action} (confidence ${decision.confidence})${decision.reason ? `: ${decision.reason}` : ''}`;
        return { content: [{ type: 'text', text }], structuredContent: { ...decision, thought: { ...decision.thought } } };
      }),
  );
}
