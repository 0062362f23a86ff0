import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

import { AgentIdSchema } from '../../shared/domain/index.js';
import { ToolStepSchema } from '../../shared/protocol/index.js';
import type { TalkReply } from '../runtime/agent-behavior.js';
import { CONTEXT_TIERS } from '../runtime/context-packet.js';
import { callChain, callerOf } from './declared-tools.js';
import {
  guard,
  hitOut,
  HitOutSchema,
  MEMORIES_RESOURCE_LIMIT,
  memoryOut,
  MemoryOutSchema,
  samplingClient,
  SPEAKER_MAX,
  type ToolContext,
} from './tool-kit.js';

/** Dialogue: talk, and the conversation so far. */
export function registerDialogueTools(ctx: ToolContext): void {
  registerTalkTool(ctx);
  registerConversationTool(ctx);
}

/** `talk_to_<id>`: a reply in character, its text streamed as progress notifications when asked. */
function registerTalkTool(ctx: ToolContext): void {
  const { server, runtime, id, persona, content } = ctx;
  server.registerTool(
    `talk_to_${id}`,
    {
      title: `Talk to ${persona.name}`,
      description: `Say something to ${persona.name}. The reply is in character and grounded in what ${persona.name} remembers. Only while the agent is active. Give a progressToken to have the reply's text as it is written, in progress notifications (each one's message is the next piece); the pieces add up to the result's text.`,
      inputSchema: {
        message: content.describe('What you say.'),
        speaker: z
          .string()
          .min(1)
          .max(SPEAKER_MAX)
          .optional()
          .describe('Who is speaking; names the conversation thread. Default "stranger".'),
      },
      outputSchema: {
        greeting: z.string().optional().describe("The persona's greeting, when this line opened the conversation with the speaker."),
        reply: z.string(),
        grounding: z.array(HitOutSchema),
        emotional_tone: z.string().optional(),
        actions: z.array(z.string()).optional(),
        state_changes: z.record(z.string(), z.unknown()).optional(),
        learned: z.array(z.string()).optional(),
        model: z.string().optional(),
        tool_calls: z
          .array(ToolStepSchema)
          .optional()
          .describe("Calls of the agent's tools made while it answered: its model's, and each [TOOL: …] in its reply."),
      },
    },
    async ({ message, speaker }, extra) =>
      guard(async () => {
        const progress = progressText(extra);
        const request = {
          message,
          speaker: speaker ?? 'stranger',
          client: samplingClient(server, extra),
          caller: callerOf(server, extra),
          chain: callChain(extra),
        };
        const result = await runtime.talk({ ...request, signal: extra.signal, onText: progress?.send }).finally(() => progress?.sent);
        return talkResult(result);
      }),
  );
}

/** A reply as the tool answers it: its text (after the greeting, if any) and every part of it, structured. */
function talkResult(result: TalkReply): CallToolResult {
  return {
    content: [{ type: 'text', text: result.greeting !== undefined ? `${result.greeting}\n${result.reply}` : result.reply }],
    structuredContent: {
      ...(result.greeting !== undefined ? { greeting: result.greeting } : {}),
      reply: result.reply,
      grounding: result.grounding.map(hitOut),
      ...(result.tone !== undefined ? { emotional_tone: result.tone } : {}),
      ...(result.actions ? { actions: result.actions } : {}),
      ...(result.state_changes ? { state_changes: result.state_changes } : {}),
      ...(result.learned ? { learned: result.learned } : {}),
      ...(result.model ? { model: result.model } : {}),
      ...(result.tool_calls?.length ? { tool_calls: result.tool_calls } : {}),
    },
  };
}

/** `conversation`: the turns with one speaker so far. */
function registerConversationTool(ctx: ToolContext): void {
  const { server, runtime, persona } = ctx;
  server.registerTool(
    'conversation',
    {
      title: `${persona.name}'s conversation with someone`,
      description: `The turns of ${persona.name}'s conversation with one speaker, oldest first: who said what, and for replies the model that wrote them and the memories they drew on (derived_from). Works while listening.`,
      inputSchema: {
        speaker: z.string().min(1).max(SPEAKER_MAX).describe('Whose conversation (the speaker named when talking).'),
        limit: z
          .number()
          .int()
          .min(1)
          .max(MEMORIES_RESOURCE_LIMIT)
          .optional()
          .describe(`The newest turns to show (default 20, at most ${MEMORIES_RESOURCE_LIMIT}).`),
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
}

/**
 * A reply's text as MCP progress notifications, when the caller asked for progress (gave a
 * `progressToken`): each piece in order as `message`, with `progress` the characters sent so
 * far. `sent` resolves once every notification is out, so the result comes after the last one.
 */
function progressText(
  extra: RequestHandlerExtra<ServerRequest, ServerNotification>,
): { send: (piece: string) => void; readonly sent: Promise<void> } | undefined {
  const progressToken = extra._meta?.progressToken;
  if (progressToken === undefined) return undefined;
  let progress = 0;
  let sent = Promise.resolve();
  return {
    send: (piece) => {
      progress += piece.length;
      const params = { progressToken, progress, message: piece };
      // A caller that went away misses the rest of its reply; the agent's work is not disturbed.
      sent = sent.then(() => extra.sendNotification({ method: 'notifications/progress', params })).catch(() => undefined);
    },
    get sent() {
      return sent;
    },
  };
}

/** The context packet a message would give the dialogue or reasoning model, to see why the agent says what it says. */
export function registerContextTool(ctx: ToolContext): void {
  const { server, runtime, persona, content } = ctx;
  const Item = z.object({
    id: z.string(),
    tier: z.enum(CONTEXT_TIERS),
    content: z.string(),
    relevance: z.number(),
    strength: z.number(),
    tokens: z.number(),
    thread: z.string().optional(),
    by: z.string(),
    occurred_at: z.number(),
  });
  server.registerTool(
    'context',
    {
      title: `What ${persona.name} would have in mind`,
      description: `The context packet ${persona.name}'s model would be given for a message: what it knows, summaries, earlier turns and open questions, filled in that order within the use's token budget ([llm.dialogue] or [llm.reasoning] context_tokens, counted as characters / 4), with what was left out and why. Nothing is remembered or reinforced. Works while listening.`,
      inputSchema: {
        message: content.describe('What is said to the agent (dialogue) or what happened (reasoning).'),
        use: z.enum(['dialogue', 'reasoning']).optional().describe('Whose prompt: talk (dialogue, the default) or think (reasoning).'),
        speaker: z
          .string()
          .min(1)
          .max(SPEAKER_MAX)
          .optional()
          .describe('Who is speaking, for dialogue: that conversation\'s turns come in. Default "stranger".'),
      },
      outputSchema: {
        use: z.enum(['dialogue', 'reasoning']),
        query: z.string(),
        budget_tokens: z.number(),
        used_tokens: z.number(),
        token_count: z.string(),
        min_relevance: z.number(),
        items: z.array(Item),
        left_out: z.array(
          Item.pick({ id: true, tier: true, relevance: true, tokens: true }).extend({ why: z.enum(['budget', 'relevance', 'covered']) }),
        ),
      },
    },
    async ({ message, use, speaker }) =>
      guard(async () => {
        const packet = await runtime.context(message, use ?? 'dialogue', speaker);
        const text = [
          `${packet.used_tokens} of ${packet.budget_tokens} tokens (${packet.token_count}); ${packet.left_out.length} left out.`,
          ...packet.items.map((i) => `[${i.tier}] ${i.content}`),
        ].join('\n');
        return { content: [{ type: 'text', text }], structuredContent: { ...packet } };
      }),
  );
}

/** Messages: tell another agent something, or ask it and wait for the answer. */
export function registerMessageTools(ctx: ToolContext): void {
  const { server, runtime, id, persona, content } = ctx;
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
        const sent = await runtime.links.tell(args.to, args.message);
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
        const answer = await runtime.links.ask(args.to, args.question, args.timeout_ms ?? 5000);
        if (!answer) {
          const text = `No answer from ${args.to} yet: it is not running or did not answer in time. It will answer when it wakes, into ${id}'s inbox.`;
          return { content: [{ type: 'text', text }], structuredContent: { answered: false } };
        }
        return {
          content: [{ type: 'text', text: answer.text }],
          structuredContent: { answered: true, answer: answer.text, id: answer.id },
        };
      }),
  );
}
