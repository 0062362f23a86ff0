import type { AgentDefinition, Persona } from '../../shared/domain/index.js';

/**
 * A system prompt that puts a model in the persona's character, with `more` lines before the
 * closing rule. The persona's own `prompt` (the domain's `prompts["persona"]` filled in) replaces
 * the name, traits and speech lines; the background follows unless that prompt has it already.
 */
export function personaPrompt(p: Persona, ...more: Array<string | undefined>): string {
  const intro = p.prompt
    ? [p.prompt]
    : [`You are ${p.name}.`, p.traits.length > 0 ? `You are ${p.traits.join(', ')}.` : '', `You speak in a ${p.speechStyle} way.`];
  return [
    ...intro,
    p.background && !(p.prompt ?? '').includes(p.background) ? `Background: ${p.background}` : '',
    ...more,
    'Stay in character. Use only what you remember; say so when you do not know.',
  ]
    .filter(Boolean)
    .join('\n');
}

/** The agent's goals as a prompt line, when it has any. */
export function goalsLine(definition: AgentDefinition): string | undefined {
  return definition.goals.length > 0 ? `Your goals: ${definition.goals.join('; ')}.` : undefined;
}
