/**
 * The captain's `post_quest` tool (a Script executor of examples/village/world.pkl): puts a
 * quest on the village's board in the shared world and tells the village it was posted.
 *
 * Safe to run twice: the row is written by its id (a second run writes the same quest again)
 * and the event carries a fixed id, which the event stream keeps once within its duplicate
 * window.
 *
 * @param {{ id: string, title: string, location: string, reward: number }} input
 * @param {import('thymos/agent').ScriptContext} ctx
 */
export async function postQuest(input, ctx) {
  const row = await ctx.world.set('quest', input.id, {
    title: input.title,
    status: 'open',
    giver: ctx.agent,
    location: input.location,
    reward: input.reward,
  });
  await ctx.publish({
    id: `quest-posted-${input.id}`,
    type: 'quest.posted',
    location: input.location,
    tags: ['quest'],
    payload: { summary: `${ctx.agent} posted a quest: ${input.title}`, quest: input.id },
  });
  return { quest: row.id, status: String(row.status) };
}
