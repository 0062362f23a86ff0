import { z } from 'zod';

import type { Tools } from '../../shared/domain/tool-schema.js';
import type { GenerateResult, LlmProvider } from '../llm/llm-provider.js';
import { generateStructured } from '../llm/structured-output.js';
import type { ModelFiller } from './intent-resolver.js';

/** What a model is told of one field. */
function fieldLine(name: string, f: Tools[string]['input'][string]): string {
  const shape = f.type === 'enum' ? `one of ${(f.values ?? []).map((v) => JSON.stringify(v)).join(', ')}` : `${f.list ? 'a list of ' : ''}${f.type}${f.pattern ? ` matching ${f.pattern}` : ''}`;
  return `- ${name} (${f.required ? 'required' : 'optional'}, ${shape})${f.description ? `: ${f.description}` : ''}`;
}

/**
 * Arguments filled by a model's structured output: the tool's fields described, the request (and
 * its context) given, and only the values it states asked for. What the model answers is checked
 * field by field by the resolver (a value its field refuses is left out and reported missing).
 * A model that fails answers nothing, and the offline filler fills instead.
 */
export function modelFiller(tools: Tools, provider: () => LlmProvider, spent: (provider: LlmProvider, result: GenerateResult) => void): ModelFiller {
  return async (name, intent, context) => {
    const tool = Object.hasOwn(tools, name) ? tools[name] : undefined;
    const model = provider();
    if (!tool || model.kind === 'offline') return undefined;
    const fields = Object.entries(tool.input);
    if (fields.length === 0) return { arguments: {}, missing: [] };
    const system = [
      `Fill the arguments of the tool ${name}: ${tool.description}`,
      'Its fields:',
      ...fields.map(([f, spec]) => fieldLine(f, spec)),
      'Use only values the request states or the context gives; leave out every field you are not given. Do not invent ids, amounts or dates.',
      'Answer with one JSON object of the fields you could fill.',
    ].join('\n');
    const user = `Request: ${intent}${context ? `\nContext: ${context}` : ''}`;
    try {
      const { value } = await generateStructured(model, { messages: [{ role: 'system', content: system }, { role: 'user', content: user }], temperature: 0 }, z.record(z.string(), z.unknown()), { spent: (r) => spent(model, r) });
      const args = Object.fromEntries(Object.entries(value).filter(([k, v]) => Object.hasOwn(tool.input, k) && v !== null && v !== ''));
      return { arguments: args, missing: fields.filter(([f, spec]) => spec.required && args[f] === undefined).map(([f]) => f) };
    } catch {
      return undefined;
    }
  };
}
