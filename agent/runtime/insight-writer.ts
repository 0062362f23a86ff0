import { type LlmMessage } from '../llm/llm-provider.js';
import { ANSWER_SHAPES, SummarySchema } from '../llm/llm-tasks.js';
import { generateStructured } from '../llm/structured-output.js';
import type { AgentBehaviorContext } from './agent-behavior.js';

/**
 * An insight in one sentence by the `[llm.consolidation]` model, from its source memories
 * and the consolidator's draft, worded as the agent (`name`) would remember it.
 */
export async function wordInsight(ctx: AgentBehaviorContext, name: string, sources: readonly string[], draft: string): Promise<string> {
  const provider = ctx.model('consolidation');
  const messages: LlmMessage[] = [
    { role: 'system', content: `You consolidate the memories of ${name}. ${ANSWER_SHAPES.summarize}` },
    {
      role: 'user',
      content: `Memories:\n${sources.map((m) => `- ${m}`).join('\n')}\nA draft: ${draft}\nWrite the insight as ${name} would remember it.`,
    },
  ];
  const { value } = await generateStructured(
    provider,
    { messages, signal: ctx.signal, brief: { task: 'summarize', sources: [...sources], draft } },
    SummarySchema,
    {
      // An insight in plain words is an insight still.
      prose: (text) => ({ insight: text }),
      spent: (r) => ctx.spent('consolidation', provider, r),
    },
  );
  return value.insight;
}
