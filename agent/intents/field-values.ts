import { compilePattern, type SafePattern, type Tool, type Tools } from '../../shared/domain/index.js';

/** Words a distinctive pattern does not take: one that takes any of them takes ordinary words, and says nothing of a tool. */
const ORDINARY = ['order', 'the', 'hello', 'please', 'a', 'x', 'Order', 'OK', 'I', '1', '42', '2024', 'yes', 'TODAY', 'it'];

/** A field whose pattern is distinctive, and whether a value is one, whole. */
export interface FieldPattern {
  field: string;
  whole: SafePattern;
}

/** The fields of a tool whose `pattern` is distinctive (takes none of the ordinary words), each with how to find its values in a text. */
export function distinctivePatterns(tool: Tool): FieldPattern[] {
  const out: FieldPattern[] = [];
  for (const [field, spec] of Object.entries(tool.input)) {
    if (spec.type !== 'string' || !spec.pattern) continue;
    let whole: SafePattern;
    try {
      whole = compilePattern(spec.pattern);
    } catch {
      continue;
    }
    if (ORDINARY.some((w) => whole.matches(w))) continue;
    out.push({ field, whole });
  }
  return out;
}

/** The longest token a pattern is tried on: a pattern the domain's author wrote runs on short strings only. */
const TOKEN_MAX = 128;

/** The words of a text as values are written: between spaces and clause marks, trailing marks off. */
export function valueTokens(text: string): string[] {
  return (text.match(/[^\s,;!?()"“”]+/gu) ?? [])
    .map((t) => t.replace(/^['‘]+|['’.:]+$/gu, '').replace(/'s$/u, ''))
    .filter((t) => t.length > 0 && t.length <= TOKEN_MAX);
}

/** The values an intent holds that some tool's distinctive pattern takes (each token tried whole), by the pattern's source. */
export function valuesIn(text: string, patterns: readonly FieldPattern[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const tokens = valueTokens(text);
  for (const p of patterns) {
    const found = tokens.filter((t) => p.whole.matches(t));
    if (found.length > 0) out.set(p.whole.source, found);
  }
  return out;
}

/**
 * How well the values an intent holds (ids, versions, emails, dates a tool's patterns take)
 * fit each tool: the share of those values some field of the tool takes. Undefined when the
 * intent holds none.
 */
export function valueFit(text: string, tools: Tools, byTool: ReadonlyMap<string, FieldPattern[]>): Map<string, number> | undefined {
  const all = [...byTool.values()].flat();
  const values = new Set<string>();
  for (const found of valuesIn(text, all).values()) for (const v of found) values.add(v);
  if (values.size === 0) return undefined;
  const fit = new Map<string, number>();
  for (const name of Object.keys(tools)) {
    const mine = byTool.get(name) ?? [];
    let taken = 0;
    for (const v of values) if (mine.some((p) => p.whole.matches(v))) taken++;
    fit.set(name, taken / values.size);
  }
  return fit;
}
