import type { Tool, Tools } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import type { Embedder } from '../../shared/platform/index.js';
import type { KnownName } from './argument-filler.js';
import type { Glossary } from './glossary.js';
import { IntentResolver } from './intent-resolver.js';

/** An example that, held out of its tool's list, is resolved to another tool. */
export interface AstrayExample {
  /** The tool whose example it is. */
  tool: string;
  example: string;
  /** The tool it is resolved to instead. */
  resolved: string;
  /** Whether that is a call (every required value found), not only a tool named with what it misses. */
  call: boolean;
  /** Whether that tool is not `read_only`: a call of it would change something. */
  writes: boolean;
}

/** How a catalogue's own examples resolve, each against the catalogue without it. */
export interface ExampleCheck {
  tools: number;
  /** Examples read (every example of every tool). */
  examples: number;
  /** Parts the examples were cut into: as many as asked, or as many as the longest list of examples has. */
  folds: number;
  /** Examples whose own tool is the first candidate. */
  first: number;
  /** Examples answered with their own tool: a call, or the fields it misses. */
  ownTool: number;
  /** Of those, calls. */
  called: number;
  /** Examples answered with another tool, in the catalogue's order. */
  astray: AstrayExample[];
  /** Examples answered with no tool (none fits well enough, or two alike). */
  noTool: number;
  /** Pairs of tools whose examples are resolved to each other, most examples first. */
  confusable: Array<{ tools: [string, string]; examples: number }>;
}

/**
 * Resolves every example of a catalogue against the catalogue without it: the examples are cut
 * into `folds` parts by their place in each tool's list, and each part is resolved by a resolver
 * built on the rest, as an agent granted every tool would resolve those words if nobody had
 * written them down. An example resolved to another tool says the two are told apart by too
 * little: words they share (the same names, places and ids in both tools' examples), or words of
 * one that the other's lines use. Nothing runs; nothing is fitted to any intent.
 *
 * @param options.known the names the domain gives ids, as an agent reads them (`knownNames`)
 * @param options.folds how many parts to cut each tool's examples into (at least 2; at most as many as the longest list has); 5 by default
 */
export async function checkExamples(
  tools: Tools,
  options: {
    embedder?: Embedder | undefined;
    glossary?: Glossary | undefined;
    known?: readonly KnownName[];
    folds?: number;
    now?: Date;
  } = {},
): Promise<ExampleCheck> {
  const asked = options.folds ?? 5;
  if (!Number.isInteger(asked) || asked < 2)
    throw new ThymosError(ErrorCode.INVALID_INPUT, `folds: expected a whole number of at least 2, got ${asked}`);
  // A part per example of the longest list at most: more would hold nothing out.
  const longest = Math.max(0, ...Object.values(tools).map((t) => t.examples.length));
  const folds = Math.max(2, Math.min(asked, longest));
  const now = options.now ?? new Date();
  const check: ExampleCheck = {
    tools: Object.keys(tools).length,
    examples: 0,
    folds,
    first: 0,
    ownTool: 0,
    called: 0,
    astray: [],
    noTool: 0,
    confusable: [],
  };
  const order = new Map(Object.keys(tools).map((t, i) => [t, i]));
  for (let fold = 0; fold < folds; fold++) {
    const rest: Record<string, Tool> = {};
    const held: Array<{ tool: string; example: string }> = [];
    for (const [name, tool] of Object.entries(tools)) {
      tool.examples.forEach((example, at) => at % folds === fold && held.push({ tool: name, example }));
      rest[name] = { ...tool, examples: tool.examples.filter((_, i) => i % folds !== fold) };
    }
    if (held.length === 0) continue;
    const resolver = await IntentResolver.build(rest, {
      embedder: options.embedder,
      glossary: options.glossary,
      known: options.known ?? [],
    });
    for (const { tool, example } of held) {
      const a = await resolver.resolve(example, undefined, now);
      check.examples++;
      if (a.candidates[0]?.tool === tool) check.first++;
      const named = a.call?.tool ?? a.tool;
      if (named === tool) {
        check.ownTool++;
        if (a.call) check.called++;
      } else if (named !== undefined) {
        check.astray.push({ tool, example, resolved: named, call: a.call !== undefined, writes: tools[named]!.sideEffect !== 'read_only' });
      } else {
        check.noTool++;
      }
    }
  }
  // The catalogue's order: by tool, then by the example's place in its list.
  const placeOf = (x: AstrayExample) => tools[x.tool]!.examples.indexOf(x.example);
  check.astray.sort((a, b) => order.get(a.tool)! - order.get(b.tool)! || placeOf(a) - placeOf(b));
  const pairs = new Map<string, { tools: [string, string]; examples: number }>();
  for (const x of check.astray) {
    const pair = [x.tool, x.resolved].sort() as [string, string];
    const key = pair.join(' ');
    pairs.set(key, { tools: pair, examples: (pairs.get(key)?.examples ?? 0) + 1 });
  }
  check.confusable = [...pairs.values()].sort((a, b) => b.examples - a.examples || a.tools[0].localeCompare(b.tools[0]));
  return check;
}
