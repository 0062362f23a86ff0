import * as chrono from 'chrono-node';

import { compilePattern, type SafePattern, type Tool, type ToolField } from '../../shared/domain/index.js';
import { editDistance, rawWords } from './intent-words.js';

/** A name the agent knows for an id (an agent's name or alias, a place), for fields that take ids. */
export interface KnownName {
  id: string;
  names: readonly string[];
}

/** What filling found: the arguments, and which required fields it could not fill. */
export interface Filled {
  arguments: Record<string, unknown>;
  missing: string[];
}

const NUMBER = /(?<![\p{L}\p{N}_.-])[-+]?\d+(?:[.,]\d+)?(?![\p{L}\p{N}_]|[.,]\d)/gu;
const QUOTED = /"([^"\n]{1,500})"|“([^”\n]{1,500})”|'([^'\n]{2,500})'(?![\p{L}])/gu;
/** How far (in words) a cue may be from the number it names. */
const CUE_REACH = 3;

interface Token {
  text: string;
  at: number;
}

/** The words of a text with where each starts; a word over 128 characters is no value of any field, and no pattern is tried on it. */
function tokens(text: string): Token[] {
  return [...text.matchAll(/[^\s,;!?()]+/gu)]
    .map((m) => ({ text: m[0].replace(/^['"“]+|['"”.:]+$/gu, ''), at: m.index }))
    .filter((t) => t.text.length <= 128);
}

/** The words that name a field: its name's parts and its description's words. */
function cueWords(name: string, field: ToolField): Set<string> {
  return new Set([...rawWords(name.replace(/[_-]/g, ' ')), ...rawWords(field.description ?? '').slice(0, 6)]);
}

function wholeMatch(field: ToolField): SafePattern | undefined {
  if (!field.pattern) return undefined;
  try {
    return compilePattern(field.pattern);
  } catch {
    return undefined;
  }
}

/** Whether a string field takes dates or times: its pattern takes an ISO date, time or date-time, or its description says ISO 8601. */
function timeShape(field: ToolField): 'date' | 'datetime' | 'time' | undefined {
  const whole = wholeMatch(field);
  if (whole?.matches('2024-06-11T15:00')) return 'datetime';
  if (whole?.matches('2024-06-11')) return 'date';
  if (whole?.matches('15:00')) return 'time';
  if (!whole && /ISO 8601|\bdate\b/i.test(field.description ?? ''))
    return /\btime\b|T\d\d:/i.test(field.description ?? '') ? 'datetime' : 'date';
  return undefined;
}

const pad = (n: number) => String(n).padStart(2, '0');

function formatTime(d: Date, shape: 'date' | 'datetime' | 'time'): string {
  const date = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
  const time = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
  return shape === 'date' ? date : shape === 'time' ? time : `${date}T${time}`;
}

/**
 * Fills a tool's input from plain words, deterministically, with no model: values a field's
 * pattern takes (ids, emails, versions); enum values the words name; numbers next to the words
 * that name their field ("reward 40", "3 replicas"); dates and times through chrono-node
 * ("next Tuesday at 3pm", relative to `now`); quoted text for free-text fields; and names the
 * agent knows for fields that take ids. A value is used for one field only; a field with no
 * value it could take is left out, and listed in `missing` when required. Nothing is guessed:
 * a field two values fit equally is left out.
 */
export function fillArguments(tool: Tool, text: string, options: { known?: readonly KnownName[]; now?: Date } = {}): Filled {
  const args: Record<string, unknown> = {};
  const used = new Set<string>();
  const words = tokens(text);
  const numbers = numbersIn(text);
  const quoted = [...text.matchAll(QUOTED)].map((m) => m[1] ?? m[2] ?? m[3] ?? '');
  const entries = Object.entries(tool.input);
  // Most particular first: a pattern or a time says more than a number or free text does.
  const order = (f: ToolField) =>
    f.type === 'string' && f.pattern && !timeShape(f) ? 0 : f.type === 'enum' ? 1 : timeShape(f) ? 2 : f.type === 'string' ? 4 : 3;
  for (const [name, field] of [...entries].sort(([, a], [, b]) => order(a) - order(b))) {
    const source = { text, words, numbers, quoted, used, known: options.known ?? [], now: options.now ?? new Date() };
    if (field.list) {
      const values = listValues(field, source);
      if (values.length > 0) {
        args[name] = values;
        for (const v of values) used.add(v);
      }
      continue;
    }
    const value = fillOne(name, field, source);
    if (value !== undefined) {
      args[name] = value;
      used.add(String(value));
    }
  }
  const missing = entries.filter(([name, f]) => f.required && args[name] === undefined).map(([name]) => name);
  return { arguments: args, missing };
}

interface Source {
  text: string;
  words: Token[];
  numbers: Array<{ value: number; raw: string; at: number }>;
  quoted: string[];
  used: Set<string>;
  known: readonly KnownName[];
  now: Date;
}

/** A list field takes every value of a distinctive shape its pattern takes (emails, ids), in order, at most `maxItems`. */
function listValues(field: ToolField, s: Source): string[] {
  const whole = wholeMatch(field);
  if (field.type !== 'string' || !whole) return [];
  const found = s.words.map((w) => w.text).filter((w) => !s.used.has(w) && whole.matches(w) && /[\d@:A-Z-]/.test(w));
  return [...new Set(found)].slice(0, field.maxItems);
}

/** Numbers written as words, as people write small counts. */
const NUMBER_WORDS: Readonly<Record<string, number>> = {
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
  eleven: 11,
  twelve: 12,
  fifteen: 15,
  twenty: 20,
  thirty: 30,
  fifty: 50,
  hundred: 100,
};

/** The numbers a text holds, written in digits or as words. */
export function numbersIn(text: string): Array<{ value: number; raw: string; at: number }> {
  const digits = [...text.matchAll(NUMBER)].map((m) => ({ value: Number(m[0].replace(',', '.')), raw: m[0], at: m.index }));
  const words = [...text.matchAll(/\p{L}+/gu)]
    .filter((m) => Object.hasOwn(NUMBER_WORDS, m[0].toLowerCase()))
    .map((m) => ({ value: NUMBER_WORDS[m[0].toLowerCase()]!, raw: m[0], at: m.index }));
  return [...digits, ...words].sort((a, b) => a.at - b.at);
}

function fillOne(name: string, field: ToolField, s: Source): unknown {
  const cues = cueWords(name, field);
  switch (field.type) {
    case 'enum':
      return enumValue(field, s);
    case 'number':
    case 'integer':
      return numberNear(cues, field, s);
    case 'boolean':
      return undefined;
    default:
      return stringValue(name, field, cues, s);
  }
}

/** An enum value the words name: each of its words said, begun ("prod" for production) or a typo away ("stagign"). */
function enumValue(field: ToolField, s: Source): string | undefined {
  const said = [...new Set(rawWords(s.text))];
  const names = (p: string) =>
    said.some((w) => w === p || (w.length >= 4 && p.startsWith(w)) || (w.length >= 5 && editDistance(w, p, 1) <= 1));
  const fits = (field.values ?? []).filter((v) => {
    const parts = rawWords(v.replace(/[_-]/g, ' '));
    return parts.length > 0 && parts.every(names);
  });
  return fits.length === 1 ? fits[0] : undefined;
}

function numberNear(cues: Set<string>, field: ToolField, s: Source): number | undefined {
  const ok = (n: number) =>
    (field.type !== 'integer' || Number.isInteger(n)) && (field.min == null || n >= field.min) && (field.max == null || n <= field.max);
  const free = s.numbers.filter((n) => !s.used.has(String(n.value)) && ok(n.value) && !partOfId(n, s));
  const near = free.filter((n) => {
    const i = s.words.findIndex((w) => w.at <= n.at && n.at < w.at + w.text.length + 2);
    const around = s.words.slice(Math.max(0, i - CUE_REACH), i + CUE_REACH + 1).flatMap((w) => rawWords(w.text));
    return around.some((w) => cues.has(w));
  });
  if (near.length >= 1) return near[0]!.value;
  return free.length === 1 && s.numbers.length === 1 ? free[0]!.value : undefined;
}

/** Whether a number is part of an id, a date or a time the text holds (ORD-12345, 2024-06-11, 15:00, v2.3.1). */
function partOfId(n: { raw: string; at: number }, s: Source): boolean {
  const before = s.text[n.at - 1] ?? ' ';
  const after = s.text[n.at + n.raw.length] ?? ' ';
  return /[-:/.\p{L}]/u.test(before) || /[-:/]\d|\.\d/u.test(after + (s.text[n.at + n.raw.length + 1] ?? ''));
}

function stringValue(name: string, field: ToolField, cues: Set<string>, s: Source): string | undefined {
  const whole = wholeMatch(field);
  const shape = timeShape(field);
  if (shape) {
    const parsed = chrono.parse(s.text, s.now, { forwardDate: true });
    const found = parsed
      .filter((p) => !Number.isNaN(p.start.date().getTime()))
      .map((p) => formatTime(p.start.date(), shape))
      .filter((v) => !s.used.has(v) && (!whole || whole.matches(v)));
    return found.length >= 1 ? found[0] : undefined;
  }
  const fits = (v: string) =>
    !s.used.has(v) && v.length >= (field.min ?? 1) && v.length <= (field.max ?? 10_000) && (!whole || whole.matches(v));
  // A known name for an id the field takes.
  for (const k of s.known) {
    if (!fits(k.id)) continue;
    if (
      k.names.some((n) => new RegExp(`(?<![\\p{L}])${n.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\p{L}])`, 'iu').test(s.text)) &&
      [...cues].some((c) => /who|npc|agent|person|giver|target|name/.test(c) || c === name)
    )
      return k.id;
  }
  // A word right after the field's name ("id wolves", "location: north_pasture").
  for (let i = 0; i < s.words.length - 1; i++) {
    if (!rawWords(s.words[i]!.text).some((w) => w === name.toLowerCase() || (cues.has(w) && name.toLowerCase().includes(w)))) continue;
    const next = s.words[i + 1]!.text.replace(/^[:=]$/, '') || s.words[i + 2]?.text;
    if (next && fits(next) && (whole || !/^(the|a|an|to|of|for)$/i.test(next))) return next;
  }
  // The word right before the field's name ("the ledger service").
  for (let i = 1; i < s.words.length; i++) {
    if (s.words[i]!.text.toLowerCase() !== name.toLowerCase()) continue;
    const before = s.words[i - 1]!.text;
    if (fits(before) && !/^(the|a|an|my|our|this|that|your)$/i.test(before)) return before;
  }
  if (whole) {
    const found = [...new Set(s.words.map((w) => w.text).filter((w) => fits(w)))];
    // An ordinary word takes a loose pattern too: only a value of a distinctive shape (it has a digit, a mark or a capital) is taken unnamed.
    const shaped = found.filter((w) => /[\d@:A-Z-]/.test(w));
    return shaped.length === 1 ? shaped[0] : undefined;
  }
  const text = s.quoted.find((q) => fits(q));
  if (text !== undefined || !field.required) return text;
  // Unquoted, what follows a colon ("Page the payments on-call: refunds are failing"), to the end of its clause.
  const after = /:\s*([^,;\n]{2,})/u
    .exec(s.text)?.[1]
    ?.trim()
    .replace(/[.!?]+$/u, '');
  return after !== undefined && fits(after) && !/^\d/.test(after) ? after : undefined;
}
