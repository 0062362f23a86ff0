import { z } from 'zod';

import type { Tools } from '../../shared/domain/index.js';
import type { SamplingClient } from '../llm/agent-models.js';
import type { GenerateResult, LlmProvider } from '../llm/llm-provider.js';
import { generateStructured } from '../llm/structured-output.js';
import type { ReadRequest } from '../runtime/acting.js';
import type { Filled } from './argument-filler.js';

/** What a model made of plain words: the candidate it reads them as asking for (none: `tool` undefined), and that tool's arguments the words state. */
export interface ModelReading extends Filled {
  tool?: string | undefined;
}

/**
 * Reads an intent with a model: which of the offered candidates it asks for, if any, and the
 * arguments it states. Undefined when no model is configured (the offline resolver decides);
 * throws when the model fails or answers outside what it was offered. `request`: the MCP client
 * that asked, when it can sample (a use of `mcp-sampling` reads with its model), and what cancels the reading.
 */
export type ModelReader = (
  offered: readonly string[],
  intent: string,
  context: string | undefined,
  request?: ReadRequest,
) => Promise<ModelReading | undefined>;

/** What a model is told of one field. */
function fieldLine(name: string, f: Tools[string]['input'][string]): string {
  const shape =
    f.type === 'enum'
      ? `one of ${(f.values ?? []).map((v) => JSON.stringify(v)).join(', ')}`
      : `${f.list ? 'a list of ' : ''}${f.type}${f.pattern ? ` matching ${f.pattern}` : ''}`;
  return `  - ${name} (${f.required ? 'required' : 'optional'}, ${shape})${f.description ? `: ${f.description}` : ''}`;
}

/** What a model is told of one tool it may choose: what it does, whether it changes something, its fields. */
function toolLines(name: string, tool: Tools[string]): string[] {
  const fields = Object.entries(tool.input);
  return [
    `- ${name} (${tool.sideEffect === 'read_only' ? 'only reads' : 'changes something'}): ${tool.description}`,
    ...(fields.length > 0 ? fields.map(([f, spec]) => fieldLine(f, spec)) : ['  (no fields)']),
  ];
}

/**
 * An intent read by a model's structured output: shown the candidates the offline ranking found
 * (granted tools only, at most five: never a tool it was not offered), it answers which one the
 * request asks for, or none, and the values the request states for that tool's fields. The
 * answer is validated with zod (a tool it was not offered is not taken: it is asked once to
 * repair, then the reading fails); the resolver then checks the arguments field by field, so a
 * value a field refuses is left out and reported missing, and a tool that changes something is
 * still not called on words that refuse its action.
 */
export function modelReader(
  tools: Tools,
  provider: (client?: SamplingClient) => LlmProvider,
  spent: (provider: LlmProvider, result: GenerateResult) => void,
): ModelReader {
  return async (offered, intent, context, request) => {
    const names = offered.filter((n) => Object.hasOwn(tools, n));
    const model = provider(request?.client);
    if (names.length === 0 || model.kind === 'offline') return undefined;
    const system = [
      'You map a request to one of the tools below, or to none of them.',
      'Tools:',
      ...names.flatMap((n) => toolLines(n, tools[n]!)),
      'Choose the tool the request asks to use. Answer null when it asks for something none of them does, only talks about one, or asks not to do it.',
      "Fill only that tool's fields, with values the request states or the context gives; leave out every field you are not given. Do not invent ids, amounts or dates.",
      'Answer with one JSON object: {"tool": the tool\'s name or null, "arguments": {the fields you could fill}}.',
    ].join('\n');
    const user = `Request: ${intent}${context ? `\nContext: ${context}` : ''}`;
    const schema = z.object({
      tool: z.enum(names as [string, ...string[]]).nullable(),
      arguments: z.record(z.string(), z.unknown()).nullish(),
    });
    const { value } = await generateStructured(
      model,
      {
        messages: [
          { role: 'system', content: system },
          { role: 'user', content: user },
        ],
        temperature: 0,
        signal: request?.signal,
      },
      schema,
      { spent: (r) => spent(model, r) },
    );
    if (value.tool === null) return { arguments: {}, missing: [] };
    const tool = tools[value.tool]!;
    const args = Object.fromEntries(
      Object.entries(value.arguments ?? {}).filter(([k, v]) => Object.hasOwn(tool.input, k) && v !== null && v !== ''),
    );
    return {
      tool: value.tool,
      arguments: args,
      missing: Object.entries(tool.input)
        .filter(([f, spec]) => spec.required && !Object.hasOwn(args, f))
        .map(([f]) => f),
    };
  };
}
