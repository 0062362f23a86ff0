/**
 * One piece of a glob: a run of characters to match as written, one character of a set, any one
 * character, or `*` (any run, empty included).
 */
type Piece =
  { kind: 'char'; char: string } | { kind: 'any' } | { kind: 'star' } | { kind: 'set'; negated: boolean; ranges: Array<[number, number]> };

/**
 * A glob over names and tags, as fnmatch reads it (case-sensitive): `*` matches any run of
 * characters, `/` and a leading `.` included; `?` any one character; `[abc]`, `[a-z]` one of a
 * set and `[!abc]` one outside it. Nothing else is special: `\`, `{…}` and a `[` that is never
 * closed stand for themselves (write `[*]` for a `*`). A value is never a path here, so no
 * character ends what `*` may take: a deny reads as wide as it is written.
 */
export class NameGlob {
  readonly #pieces: readonly Piece[];
  /** Whether the glob has a wildcard; a glob without one matches only itself. */
  readonly wild: boolean;

  constructor(readonly text: string) {
    this.#pieces = parse(text);
    this.wild = this.#pieces.some((p) => p.kind !== 'char');
  }

  /**
   * Whether `value` matches the whole glob. A `*` that could take more is only ever
   * returned to at the last `*` seen, so a match costs at most the glob's length times the
   * value's, however many `*` it has.
   */
  matches(value: string): boolean {
    const chars = Array.from(value);
    const pieces = this.#pieces;
    let p = 0;
    let v = 0;
    let star = -1;
    let resume = 0;
    while (v < chars.length) {
      const piece = pieces[p];
      if (piece?.kind === 'star') {
        star = p++;
        resume = v;
      } else if (piece && one(piece, chars[v]!)) {
        p++;
        v++;
      } else if (star >= 0) {
        p = star + 1;
        v = ++resume;
      } else {
        return false;
      }
    }
    while (pieces[p]?.kind === 'star') p++;
    return p === pieces.length;
  }
}

function one(piece: Exclude<Piece, { kind: 'star' }>, char: string): boolean {
  if (piece.kind === 'any') return true;
  if (piece.kind === 'char') return piece.char === char;
  const code = char.codePointAt(0)!;
  return piece.ranges.some(([lo, hi]) => code >= lo && code <= hi) !== piece.negated;
}

function parse(text: string): Piece[] {
  const chars = Array.from(text);
  const pieces: Piece[] = [];
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i]!;
    if (c === '*') {
      if (pieces.at(-1)?.kind !== 'star') pieces.push({ kind: 'star' });
    } else if (c === '?') {
      pieces.push({ kind: 'any' });
    } else if (c === '[') {
      const set = parseSet(chars, i);
      if (set) {
        pieces.push(set.piece);
        i = set.end;
      } else {
        pieces.push({ kind: 'char', char: c });
      }
    } else {
      pieces.push({ kind: 'char', char: c });
    }
  }
  return pieces;
}

/** The set opened at `chars[open]`, and where it closes; undefined when nothing closes it. */
function parseSet(chars: readonly string[], open: number): { piece: Piece; end: number } | undefined {
  let i = open + 1;
  const negated = chars[i] === '!';
  if (negated) i++;
  const first = i;
  // A `]` first in the set is one of its characters, as fnmatch has it.
  while (i < chars.length && (chars[i] !== ']' || i === first)) i++;
  if (i >= chars.length) return undefined;
  const body = chars.slice(first, i);
  const ranges: Array<[number, number]> = [];
  for (let j = 0; j < body.length; j++) {
    const lo = body[j]!.codePointAt(0)!;
    if (body[j + 1] === '-' && j + 2 < body.length) {
      ranges.push([lo, body[j + 2]!.codePointAt(0)!]);
      j += 2;
    } else {
      ranges.push([lo, lo]);
    }
  }
  return { piece: { kind: 'set', negated, ranges }, end: i };
}
