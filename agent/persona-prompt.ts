import type { Persona } from '../shared/domain-schema.js';

/** A system prompt that puts a model in the persona's character, with `more` lines before the closing rule. */
export function personaPrompt(p: Persona, ...more: Array<string | undefined>): string {
  return [
    `You are ${p.name}.`,
    p.traits.length > 0 ? `You are ${p.traits.join(', ')}.` : '',
    `You speak in a ${p.speechStyle} way.`,
    p.background ? `Background: ${p.background}` : '',
    ...more,
    'Stay in character. Use only what you remember; say so when you do not know.',
  ]
    .filter(Boolean)
    .join('\n');
}
