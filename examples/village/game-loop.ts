/**
 * A player walks through Ashford for a few ticks. Every tick the game loop tells the
 * fleet where the player is and who is in the party; Thymos starts, passivates and stops
 * NPC processes to match, and the loop talks to whoever is active. It checks its own
 * expectations and exits non-zero when one fails.
 *
 *   npm run example                       (builds, then runs this file)
 *   node --import tsx examples/village/game-loop.ts [path/to/thymos.toml]
 */
import { fileURLToPath } from 'node:url';

import {
  connect,
  type DomainSchema,
  downFleet,
  type EventDecision,
  exitWithError,
  type FleetStatus,
  loadConfig,
  loadDomainSchema,
  type ReconcileContextInput,
  unreadableByDomain,
  upFleet,
} from '../../index.js';

const configFile = process.argv[2] ?? fileURLToPath(new URL('thymos.toml', import.meta.url));
const failures: string[] = [];
const livesAt = (world: DomainSchema, place: string) =>
  Object.entries(world.agents)
    .filter(([, a]) => a.homeLocation === place)
    .map(([id]) => id);

function check(what: string, ok: boolean, detail = ''): void {
  console.log(`  ${ok ? 'ok  ' : 'FAIL'} ${what}${detail && !ok ? ` — ${detail}` : ''}`);
  if (!ok) failures.push(what);
}

function text(result: unknown): string {
  return ((result as { content: Array<{ text?: string }> }).content ?? []).map((c) => c.text ?? '').join('\n');
}

/** Polls `get` for up to 10 s; the decision about an event comes a moment after the event. */
async function waitFor<T>(get: () => T | undefined): Promise<T | undefined> {
  for (let i = 0; i < 50; i++) {
    const v = get();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
  return undefined;
}

function printFleet(status: FleetStatus): void {
  for (const a of status.agents) {
    const score = a.score === null ? '  -  ' : a.score.toFixed(2);
    console.log(`    ${a.id.padEnd(16)} ${a.state.padEnd(9)} ${score} ${(a.source ?? '').padEnd(7)} ${a.port ? `:${a.port}` : ''}`);
  }
}

/** Where the player walks, who joins, what the player says and to whom. */
const walk = [
  {
    at: 'village_square',
    to: 'elder_rowan',
    say: 'Elder, the mill wheel creaks again, and Hal the miller says its axle is cracked. Who tends the mill?',
  },
  { at: 'forge', to: 'bram_smith', say: 'Bram, will you come with me to the northern pass?', joins: 'bram_smith' },
  { at: 'herb_garden', to: 'mira_herbalist', say: 'Mira, where does silverleaf grow?' },
  { at: 'tavern', to: 'tomas_innkeeper', say: 'Any news of strangers, Tomas?' },
  {
    at: 'gatehouse',
    to: 'captain_lysa',
    say: 'Captain, what troubles the north road?',
    news: { type: 'village.alarm', tags: ['danger'], payload: { summary: 'Wolves took two sheep from the north pasture' } },
  },
  { at: 'village_square', to: 'elder_rowan', say: 'Elder, what did I tell you about the mill?' },
] as const;

/** The walk; the exit status says whether every check held. */
async function main(): Promise<number> {
  const config = loadConfig(configFile);
  const world = await loadDomainSchema(config.domainSchemaPath!, { exclude: unreadableByDomain(config) });
  console.log(`Starting the Ashford fleet (${configFile})`);
  const up = await upFleet(config, { onStep: (line) => console.log(`  ${line}`) });
  const fleet = await connect(config);
  const lastTalk = new Map<string, number>();
  const party = new Set<string>();
  // The game loop follows the quest board live: every new or changed quest is printed as it happens.
  const questNews: string[] = [];
  // The captain reasons about what she hears on duty (reasonOnEvents in world.pkl); her decisions arrive live.
  const decisions: EventDecision[] = [];
  const decisionFeed = fleet.decisions((d) => {
    decisions.push(d);
    console.log(`  ${d.agent} decided: ${d.action} (confidence ${d.confidence}) about "${d.heard.slice(0, 60)}"`);
  });
  const replies = new Map<string, string>();
  // A game played before in this data folder left its quest on the board; the captain's post_quest,
  // under the same idempotency key, answers as it did then and posts nothing twice.
  const earlierQuest = await fleet.world.get('quest', 'wolves');
  const questBoard = await fleet.world.subscribe({ table: 'quest' }, (c) => {
    questNews.push(`${c.action} ${c.id}`);
    console.log(`  quest board: ${c.id} ${c.action} (${String(c.row.title)}, ${String(c.row.status)})`);
  });
  try {
    for (const [i, step] of walk.entries()) {
      const tick = i + 1;
      if ('joins' in step) party.add(step.joins);
      const agents: NonNullable<ReconcileContextInput['agents']> = {};
      for (const id of Object.keys(world.agents)) {
        const props: Record<string, unknown> = {};
        if (party.has(id)) props.in_party = true;
        if (lastTalk.has(id)) props.ticks_since_talk = tick - lastTalk.get(id)!;
        if (id === 'mira_herbalist') props.active_quest = tick >= 3 && tick <= 4;
        agents[id] = props;
      }
      console.log(`\ntick ${tick}: the player is at ${step.at}${party.size ? ` with ${[...party].join(', ')}` : ''}`);
      const report = await fleet.reconcile({ tick, global: { player_location: step.at }, agents });
      const moves = (['started', 'stopped', 'upgraded', 'downgraded', 'archived', 'restored'] as const)
        .filter((k) => report[k].length)
        .map((k) => `${k} ${report[k].join(', ')}`);
      console.log(`  reconcile: ${moves.join('; ') || 'no change'} (${report.duration_ms} ms)`);
      check(`tick ${tick}: no transition failed`, report.failed.length === 0, JSON.stringify(report.failed));
      // The world moves on: agents whose event filters match remember it; Dormant ones when they wake.
      await fleet.publish({
        type: 'player.arrived',
        location: step.at,
        source: 'player',
        payload: { summary: `A traveller walked into ${step.at.replace('_', ' ')}` },
      });
      if ('news' in step) {
        await fleet.publish({ ...step.news, tags: [...step.news.tags] });
        console.log(`  news: ${step.news.payload.summary}`);
        // The shared world changes too: the pasture is dangerous.
        await fleet.world.set('place', 'north_pasture', { name: 'North pasture', danger: 5 });
      }
      const status = await fleet.status();
      printFleet(status);

      const state = (id: string) => status.agents.find((a) => a.id === id)?.state;
      const here = livesAt(world, step.at);
      check(
        `tick ${tick}: whoever lives at ${step.at} is active`,
        here.length > 0 && here.every((id) => state(id) === 'active'),
        here.join(','),
      );
      for (const id of party) check(`tick ${tick}: ${id} (in the party) is active`, state(id) === 'active');
      for (const [id, when] of lastTalk) {
        const ago = tick - when;
        const home = status.agents.find((a) => a.id === id);
        if (!party.has(id) && home?.source === 'rules' && home.score === 0.6 && ago <= 3)
          check(`tick ${tick}: ${id}, talked to ${ago} tick(s) ago, still listens`, state(id) === 'listening');
        if (!party.has(id) && ago > 3 && home?.source === 'default')
          check(`tick ${tick}: ${id}, not seen for ${ago} ticks, is dormant`, state(id) === 'dormant');
      }

      // The line goes to the one it is addressed to; the others present (Bram, in the party) do not answer it.
      for (const id of [step.to]) {
        check(`tick ${tick}: ${id}, spoken to, is active`, state(id) === 'active');
        // The reply is printed as it is written: word by word offline, as the model streams it when one is configured.
        console.log(`  player: ${step.say}`);
        process.stdout.write(`  ${id}: `);
        let heard = '';
        const onText = (piece: string) => {
          heard += piece;
          process.stdout.write(piece.replaceAll('\n', `\n  ${id}: `));
        };
        const answer = await fleet.talk(id, step.say, { speaker: 'player', onText }).catch((err: unknown) => ({ failed: String(err) }));
        process.stdout.write('\n');
        check(`tick ${tick}: ${id} answers`, !('failed' in answer), 'failed' in answer ? answer.failed : '');
        if ('failed' in answer) continue;
        check(
          `tick ${tick}: ${id}'s reply, as it streamed, is the whole reply`,
          heard === answer.text,
          JSON.stringify({ heard, text: answer.text }),
        );
        replies.set(`${tick}:${id}`, answer.text);
        lastTalk.set(id, tick);
      }
      if ('news' in step) {
        // NPCs talk among themselves: the captain asks the elder, who is asleep; he answers when he wakes.
        const captain = await fleet.agent('captain_lysa');
        // The captain acts in plain words: `act` resolves them to her declared post_quest tool (offline,
        // by the tool's description, fields and examples) and makes the call through her governed path.
        const posted = await captain.callTool({
          name: 'act',
          arguments: {
            intent: 'post a quest "Drive the wolves from the north pasture", id wolves, location north_pasture, reward 40 silver',
            reason: 'wolves took sheep from the north pasture',
          },
        });
        const record = (posted.structuredContent as { record?: { status?: string } } | undefined)?.record;
        check(
          'the captain posts the wolves quest by saying so (act → post_quest)',
          !posted.isError && record?.status === 'ok',
          text(posted),
        );
        console.log(`  captain_lysa acts: ${text(posted)}`);
        const asked = await captain.callTool({
          name: 'ask_agent',
          arguments: { to: 'elder_rowan', question: 'Elder, what should be done about the wolves?', timeout_ms: 300 },
        });
        console.log(`  captain_lysa asks elder_rowan about the wolves: ${text(asked)}`);
      }
    }

    // Told at tick 1, Dormant in between, woken at tick 6: the reply uses what he was told.
    const retold = replies.get(`${walk.length}:elder_rowan`) ?? '';
    check(
      'the elder, woken after sleeping, answers with what the player told him before',
      /axle is cracked/.test(retold),
      retold.slice(0, 300),
    );
    const wolves = await waitFor(() => decisions.find((d) => d.agent === 'captain_lysa' && /Wolves took two sheep/.test(d.heard)));
    check(
      'the captain, on duty when the wolves alarm came, decided to send the watch to the north pasture',
      wolves?.action === 'send the watch to the north pasture',
      JSON.stringify(wolves ?? decisions),
    );
    const elder = await fleet.agent('elder_rowan');
    const memory = text(await elder.callTool({ name: 'recall', arguments: { query: 'mill wheel', k: 5 } }));
    check(
      'the elder remembers the first conversation after sleeping through the walk',
      /mill wheel creaks/.test(memory),
      memory.slice(0, 200),
    );
    const heard = text(
      await elder.callTool({ name: 'query_elder_rowan_knowledge', arguments: { query: 'wolves sheep north pasture', k: 3 } }),
    );
    // By meaning, not words: no word of the question is in the memory.
    const meant = text(
      await elder.callTool({
        name: 'query_elder_rowan_knowledge',
        arguments: { query: 'predators hurting the flock', k: 5, strategy: 'by_meaning' },
      }),
    );
    check(
      'the elder recalls by meaning: "predators hurting the flock" finds the wolves',
      /Wolves took two sheep/.test(meant),
      meant.slice(0, 300),
    );
    check('the elder, Dormant when the wolves came, heard of them on waking', /Wolves took two sheep/.test(heard), heard.slice(0, 200));
    // By alias: "the smith" is Bram, so the question finds what the elder knows of Bram.
    const smith = text(await elder.callTool({ name: 'query_elder_rowan_knowledge', arguments: { query: 'the smith', k: 3 } }));
    check('the elder recalls by alias: "the smith" finds what Bram owes', /Bram the blacksmith owes/.test(smith), smith.slice(0, 300));
    // Consolidation: recurring concepts become insights that point to the memories they come from.
    const consolidated = await elder.callTool({ name: 'consolidate', arguments: {} });
    const report = consolidated.structuredContent as { insights: Array<{ kind: string; content: string; sources: string[] }> } | undefined;
    for (const insight of report?.insights ?? []) console.log(`  elder_rowan consolidated: ${insight.content.slice(0, 140)}`);
    const insights = (
      await elder.callTool({ name: 'query_elder_rowan_knowledge', arguments: { query: 'come up together', k: 5, source: 'insight' } })
    ).structuredContent as { results: Array<{ content: string; derived_from?: string[] }> } | undefined;
    const theme = insights?.results.find((r) => (r.derived_from?.length ?? 0) >= 3);
    check('consolidation gave the elder an insight with its sources', theme !== undefined, text(consolidated).slice(0, 300));
    let answer = '';
    for (let i = 0; i < 50 && !/elder_rowan answered me/.test(answer); i++) {
      answer = text(
        await (
          await fleet.agent('captain_lysa')
        ).callTool({ name: 'query_captain_lysa_knowledge', arguments: { query: 'elder_rowan answered me wolves', k: 2 } }),
      );
      if (!/elder_rowan answered me/.test(answer)) await new Promise((r) => setTimeout(r, 200));
    }
    console.log(`  captain_lysa remembers: ${answer.split('\n')[0]}`);
    check(
      "the elder answered the captain's question after waking, and she remembers it",
      /elder_rowan answered me: .*Wolves took two sheep/.test(answer),
      answer.slice(0, 300),
    );
    const openQuests = await fleet.world.query({
      table: 'quest',
      where: [{ field: 'status', value: 'open' }],
      order_by: { field: 'reward', direction: 'desc' },
    });
    check(
      'the quest board lists the open wolves quest',
      openQuests.some((q) => q.id === 'wolves' && q.giver === 'captain_lysa'),
      JSON.stringify(openQuests),
    );
    if (earlierQuest)
      check(
        `the wolves quest, on the board from a game played before in ${config.dataPath}, was not posted twice`,
        !questNews.some((n) => n === 'create wolves'),
        questNews.join(', '),
      );
    else
      check(
        'the game loop saw the quest posted, live',
        questNews.some((n) => n.endsWith(' wolves')),
        questNews.join(', '),
      );
    // What she did is in her memory, with why: a tool_call record.
    const did = await (
      await fleet.agent('captain_lysa')
    ).callTool({ name: 'recall', arguments: { query: 'post_quest wolves', source: 'tool_call' } });
    check(
      'the captain remembers posting the quest, and why',
      /post_quest .*wolves.*because wolves took sheep/.test(text(did)),
      text(did).slice(0, 300),
    );
    const watched = text(
      await (
        await fleet.agent('captain_lysa')
      ).callTool({ name: 'query_captain_lysa_knowledge', arguments: { query: 'place north_pasture danger', k: 3 } }),
    );
    check(
      'the captain, who watches dangerous places, remembers the north pasture turning dangerous',
      /place north_pasture (appeared|changed) \(name: North pasture; danger: 5\)/.test(watched),
      watched.slice(0, 200),
    );
    const history = await fleet.history('elder_rowan');
    check(
      'the elder went dormant while the player was away and woke on return',
      history.some((t) => t.to === 'dormant') && history[0]?.to === 'active',
      JSON.stringify(history.map((t) => `${t.from}>${t.to}`)),
    );
  } finally {
    decisionFeed.close();
    await questBoard.close();
    await fleet.close();
    if (!up.alreadyRunning) {
      console.log('\nStopping the fleet');
      await downFleet(config);
    }
  }

  if (failures.length) {
    console.error(`\n${failures.length} check(s) failed:\n  ${failures.join('\n  ')}`);
    return 1;
  }
  console.log('\nall checks passed');
  return 0;
}

// A ThymosError (nats-server missing, a bad config) ends the run as the thymos command does:
// one line, `thymos: CODE: message`, and the exit status of its code.
main().then((code) => process.exit(code), exitWithError);
