import type { AliasEntry } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { Logger } from '../../shared/platform/index.js';
import type { ToolCallRecord } from '../../shared/protocol/index.js';
import type { ToolLoop } from '../llm/tool-loop.js';
import type { NewMemory } from '../memory/agent-memory.js';
import {
  type Acting,
  type ActOutcome,
  type ActRequest,
  type IntentAnswer,
  type JobCalls,
  type ReadRequest,
  REPLY_MARKER,
  withoutMarkers,
} from '../runtime/acting.js';
import type { TalkReply, TalkRequest } from '../runtime/agent-behavior.js';
import type { ToolCaller } from '../tools/tool-caller.js';
import type { KnownName } from './argument-filler.js';
import { IntentResolver } from './intent-resolver.js';
import type { ModelReader } from './model-reader.js';
import { readWords } from './words-model.js';

/** The tag of the memory an agent keeps of each act and each `[TOOL: …]` it resolved. */
export const INTENT_TAG = 'intent';
/** The most `[TOOL: …]` one reply may act on; more are resolved to nothing and said so. */
const MARKERS_MAX = 3;

/** The names the domain gives each id (agents' names and aliases, alias patterns), for fields that take ids. */
export function knownNames(aliases: readonly AliasEntry[]): KnownName[] {
  const byId = new Map<string, Set<string>>();
  for (const a of aliases) byId.set(a.target, (byId.get(a.target) ?? new Set()).add(a.alias).add(a.name));
  return [...byId].map(([id, names]) => ({ id, names: [...names] }));
}

/**
 * Plain words to the agent's granted tools: `resolve` (read-only: nothing runs), `act` (resolve,
 * and run the call through the governed path when it is confident and complete) and `[TOOL: …]`
 * in a reply. Every act and `[TOOL: …]` is remembered as an `intent` memory with its outcome,
 * refused ones included. The resolver is built at the first use, over the granted tools, with
 * the offline model Thymos ships (the same answers alone and in a fleet); without that model
 * it resolves by words only, and says so in the log.
 */
export class IntentActs implements Acting {
  readonly #caller: ToolCaller;
  readonly #known: readonly KnownName[];
  readonly #remember: (memories: NewMemory[]) => Promise<unknown>;
  readonly #logger: Logger;
  readonly #model: ModelReader | undefined;
  readonly #glossaryDir: string | undefined;
  readonly #modelDir: string | undefined;
  readonly #loop: (use: 'dialogue' | 'reasoning', chain?: readonly string[], by?: string, job?: JobCalls) => ToolLoop | undefined;
  #resolver: Promise<IntentResolver> | undefined;

  constructor(options: {
    caller: ToolCaller;
    known: readonly KnownName[];
    remember: (memories: NewMemory[]) => Promise<unknown>;
    logger: Logger;
    /** A use's model tool loop, its calls made as `by` (see `toolLoopOf`), under the keys of `job` when given. */
    loop: (use: 'dialogue' | 'reasoning', chain?: readonly string[], by?: string, job?: JobCalls) => ToolLoop | undefined;
    model?: ModelReader;
    /** Where the glossaries for intents in other languages are; default: models/glossary of the Thymos install. */
    glossaryDir?: string;
    /** A custom model to read plain words with (`customWordsModel`), when it is a static one (`readWords`). */
    modelDir?: string;
  }) {
    this.#loop = options.loop;
    this.#caller = options.caller;
    this.#known = options.known;
    this.#remember = options.remember;
    this.#logger = options.logger;
    this.#model = options.model;
    this.#glossaryDir = options.glossaryDir;
    this.#modelDir = options.modelDir;
  }

  #build(): Promise<IntentResolver> {
    this.#resolver ??= (async () => {
      // Read when the first intent is resolved: an agent's start pays nothing for them. A few words at a time: their rows are read from the file as needed, not the whole model into this agent's heap.
      const { embedder, glossary, warnings } = readWords({ custom: this.#modelDir, glossary: this.#glossaryDir, resident: false });
      for (const w of warnings) this.#logger.warn(w);
      return IntentResolver.build(this.#caller.tools, {
        embedder,
        glossary,
        known: this.#known,
        ...(this.#model ? { model: this.#model } : {}),
      });
    })();
    this.#resolver.catch(() => (this.#resolver = undefined));
    return this.#resolver;
  }

  /** A use's model tool loop; its calls are made as `model:<use>`, as `sampling:<client>` when the MCP client's model writes them, or as a job's caller under its keys. */
  loop(use: 'dialogue' | 'reasoning', chain?: readonly string[], sampler?: string, job?: JobCalls): ToolLoop | undefined {
    if (job !== undefined) return this.#loop(use, chain, job.caller, job);
    return this.#loop(
      use,
      chain,
      sampler
        ? `sampling:${sampler
            .replace(/^the MCP client /, '')
            .replace(/[^\w.@-]/g, '_')
            .slice(0, 64)}`
        : `model:${use}`,
    );
  }

  /** One call by name through the governed path; the record says how it ended. */
  call(tool: string, args: Record<string, unknown>, request: ActRequest): Promise<ToolCallRecord> {
    return this.#caller.call(tool, args, { ...request, idempotencyKey: keyFor(request, tool) });
  }

  /** What the words mean among the granted tools; nothing runs. */
  async resolve(intent: string, context?: string, request?: ReadRequest): Promise<IntentAnswer> {
    return (await this.#build()).resolve(intent, context, new Date(), request);
  }

  /**
   * Resolves and, when the answer is a call, makes it through the governed path with `reason`
   * (validation, permission, approval, limits, record). Run twice (a retry after a crash), the
   * same words resolve offline to the same call with the same arguments: a tool with an
   * `idempotencyKey` answers the first call's outcome, as for any caller. Read by a model, a
   * retry may resolve to another call (the model answers anew, or fails and the offline bars
   * decide): a key settles only a call whose keyed fields are the same.
   */
  async act(intent: string, reason: string, request: ActRequest, how = 'act'): Promise<ActOutcome> {
    const answer = await this.resolve(intent, undefined, request);
    let outcome: ActOutcome = { intent, answer };
    if (answer.call) {
      try {
        outcome = {
          intent,
          answer,
          record: await this.#caller.call(
            answer.call.tool,
            { ...answer.call.arguments, reason },
            { ...request, idempotencyKey: keyFor(request, answer.call.tool) },
          ),
        };
      } catch (err) {
        // Refused before it became a record (its input, the agent stopping): the act says why, and is remembered.
        const e = err instanceof ThymosError ? err : new ThymosError(ErrorCode.INTERNAL, (err as Error).message);
        outcome = { intent, answer, error: { code: e.code, message: e.message } };
      }
    }
    await this.#keep(outcome, how, request.caller);
    return outcome;
  }

  /**
   * Acts on each `[TOOL: …]` of a reply (at most 3), as `reply:<who sent the line>`; answers the
   * words without them, and what each did. A reply the offline composer wrote is left as it is:
   * it quotes memories and writes no marker of its own. A marker the line it answered holds is
   * `echoed`, not acted on: a speaker cannot make the agent act by getting it to repeat them.
   * (A model is shown every `[TOOL:` it reads as `[tool:`, see `defuseMarkers`.)
   */
  async actOnMarkers(reply: TalkReply, request: TalkRequest, signal: AbortSignal): Promise<{ reply: string; acts: ActOutcome[] }> {
    const found = [...reply.reply.matchAll(REPLY_MARKER)];
    if (found.length === 0 || reply.model === 'offline') return { reply: reply.reply, acts: [] };
    const acts: ActOutcome[] = [];
    const ask: ActRequest = { caller: `reply:${request.caller ?? 'unknown'}`, signal, chain: request.chain };
    for (const m of found.slice(0, MARKERS_MAX)) {
      const intent = m[1]!.trim();
      if (request.message.includes(m[0]) || request.message.includes(intent)) {
        const outcome: ActOutcome = {
          intent,
          answer: {
            candidates: [],
            missing: [],
            confidence: 0,
            outcome: 'echoed',
            note: 'the line it answered holds these words: quoted, not its own',
          },
        };
        await this.#keep(outcome, '[TOOL:]', ask.caller);
        acts.push(outcome);
        continue;
      }
      acts.push(await this.act(intent, `its reply to ${request.speaker} said so`, ask, '[TOOL:]'));
    }
    if (found.length > MARKERS_MAX)
      this.#logger.warn({ markers: found.length }, `a reply asked for more than ${MARKERS_MAX} [TOOL: …]; the rest were not acted on`);
    return { reply: withoutMarkers(reply.reply), acts };
  }

  async #keep(outcome: ActOutcome, how: string, by: string): Promise<void> {
    const { answer, record } = outcome;
    const what = record
      ? `${record.tool} ${record.status}${record.error ? ` (${record.error.code})` : ''}`
      : outcome.error
        ? `${answer.call?.tool ?? ''} refused (${outcome.error.code})`
        : `no call: ${answer.outcome}${answer.tool ? ` ${answer.tool}, missing ${answer.missing.join(', ')}` : ''}${answer.candidates.length ? `; candidates ${answer.candidates.map((c) => c.tool).join(', ')}` : ''}`;
    try {
      await this.#remember([
        {
          content: `${how} "${outcome.intent.slice(0, 300)}" → ${what}`,
          tags: [INTENT_TAG, answer.outcome, ...(record ? [record.tool] : [])],
          importance: 0.4,
          source: { kind: 'intent', by },
        },
      ]);
    } catch (err) {
      this.#logger.warn({ err: (err as Error).message }, 'the memory of an intent was not kept');
    }
  }
}

/** The idempotency key a request gives a call of `tool`: its own, or the one its `keyOf` names. */
function keyFor(request: ActRequest, tool: string): string | undefined {
  return typeof request.idempotencyKey === 'function' ? request.idempotencyKey(tool) : request.idempotencyKey;
}
