/**
 * An Http tool's URL template, `scheme://host:port/path/{field}?key={field}`: the scheme, host
 * and port are fixed; `{field}` placeholders stand in path segments and query values only. A
 * call fills them percent-encoded, so no input can change where the request goes or the
 * shape of its path.
 */

/** A piece of a path segment or a query value: literal text, or an input field. */
type Piece = { text: string } | { field: string };

export interface UrlTemplate {
  /** `http://127.0.0.1:8787`: what every request of the tool goes to. */
  origin: string;
  /** The path's segments (after the first `/`), each made of pieces. */
  segments: Piece[][];
  /** Query parameters in order: a fixed key, a value made of pieces. */
  query: Array<{ key: string; value: Piece[] }>;
  /** The fields the template names, where each stands. */
  fields: Map<string, 'path' | 'query'>;
}

const PLACEHOLDER = /\{([^{}]*)\}/g;

function pieces(text: string, where: string, url: string): Piece[] {
  const out: Piece[] = [];
  let last = 0;
  for (const m of text.matchAll(PLACEHOLDER)) {
    if (m.index > last) out.push({ text: text.slice(last, m.index) });
    if (!/^[A-Za-z_][A-Za-z0-9_-]{0,63}$/.test(m[1]!))
      throw new Error(`url ${JSON.stringify(url)}: {${m[1]}} in ${where} is not an input field name`);
    out.push({ field: m[1]! });
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push({ text: text.slice(last) });
  if (out.some((p) => 'text' in p && /[{}]/.test(p.text))) throw new Error(`url ${JSON.stringify(url)}: an unmatched { or } in ${where}`);
  return out;
}

/** Parses and checks a template; the error says what is wrong with it. */
export function parseUrlTemplate(url: string): UrlTemplate {
  const m = /^(https?):\/\/([^/?#]+)(\/[^?#]*)?(?:\?([^#]*))?$/.exec(url);
  if (!m)
    throw new Error(`url ${JSON.stringify(url)}: expected http:// or https://, a host, then a path and query (no fragment, no spaces)`);
  const [, scheme, authority, path = '/', search] = m;
  if (/[{}]/.test(authority!))
    throw new Error(
      `url ${JSON.stringify(url)}: the host and port are fixed; a placeholder may stand only in a path segment or a query value`,
    );
  if (authority!.includes('@'))
    throw new Error(`url ${JSON.stringify(url)}: no user or password in the URL; put credentials in a header from a Secret`);
  let origin: string;
  try {
    origin = new URL(`${scheme}://${authority}`).origin;
  } catch {
    throw new Error(`url ${JSON.stringify(url)}: ${authority} is not a host[:port]`);
  }
  if (/\s/.test(url)) throw new Error(`url ${JSON.stringify(url)}: no spaces; percent-encode them`);
  const segments = path!
    .slice(1)
    .split('/')
    .map((s, i) => pieces(s, `path segment ${i + 1}`, url));
  const query = (search ? search.split('&').filter(Boolean) : []).map((pair) => {
    const eq = pair.indexOf('=');
    const key = eq < 0 ? pair : pair.slice(0, eq);
    if (/[{}]/.test(key))
      throw new Error(`url ${JSON.stringify(url)}: a query key is fixed; a placeholder may stand only in its value (${key})`);
    return { key, value: pieces(eq < 0 ? '' : pair.slice(eq + 1), `the value of ${key}`, url) };
  });
  const fields = new Map<string, 'path' | 'query'>();
  for (const seg of segments) for (const p of seg) if ('field' in p) fields.set(p.field, 'path');
  for (const q of query) for (const p of q.value) if ('field' in p) fields.set(p.field, 'query');
  return { origin, segments, query, fields };
}

/** Why a filled URL is refused: the field and the value's problem. */
export class UrlInputError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** `s` with every lone surrogate (text no encoding can carry) replaced by U+FFFD. */
export function wellFormed(s: string): string {
  return s.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
}

/** A value percent-encoded; a string with a lone surrogate is refused, not changed. */
function encode(field: string, value: string): string {
  if (wellFormed(value) !== value) throw new UrlInputError(field, `${field}: the value is not well-formed text (a lone surrogate)`);
  return encodeURIComponent(value);
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/**
 * `s` percent-decoded until it no longer changes (at most 5 times): what a server that decodes
 * more than once may see. A run that is not UTF-8 keeps its bytes above 0x7F encoded and gives
 * up the others, as a lenient decoder would: a stray `%` does not hide a `%2F` beside it.
 */
function decodeFully(s: string): string {
  let out = s;
  for (let i = 0; i < 5; i++) {
    const next = out.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => {
      try {
        return decodeURIComponent(run);
      } catch {
        return run.replace(/%([0-7][0-9A-Fa-f])/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
      }
    });
    if (next === out) return out;
    out = next;
  }
  return out;
}

/** Whether text a server reads as one path segment, once decoded, is a dot segment or holds a separator or NUL. */
function unsafeSegment(decoded: string): boolean {
  // Servers that decode %2F or %5C before they resolve dot segments would read a separator: none may come from input.
  // eslint-disable-next-line no-control-regex -- NUL is one of the characters refused
  return decoded === '.' || decoded === '..' || /[/\\\u0000]/.test(decoded);
}

/** One path segment filled from `input`; refused if a value, or the segment they make together, is unsafe decoded. */
function fillSegment(seg: readonly Piece[], input: Readonly<Record<string, unknown>>): string {
  const filled = seg
    .map((p) => {
      if ('text' in p) return p.text;
      const value = input[p.field];
      if (value === undefined || value === null || Array.isArray(value))
        throw new UrlInputError(p.field, `${p.field}: a path segment needs one value`);
      const raw = text(value);
      if (raw === '' || unsafeSegment(decodeFully(raw)))
        throw new UrlInputError(
          p.field,
          `${p.field}: ${JSON.stringify(raw)} cannot stand in a path segment (no /, \\, . or .., encoded or not)`,
        );
      return encode(p.field, raw);
    })
    .join('');
  // Values side by side (`{a}{b}`: `.` and `.`, or `%2` and `E.`) can make together what neither is alone.
  const fields = seg.flatMap((p) => ('field' in p ? [p.field] : []));
  if (fields.length > 0 && unsafeSegment(decodeFully(filled))) {
    throw new UrlInputError(
      fields[0]!,
      `${fields.join(', ')}: together they make the path segment ${JSON.stringify(decodeFully(filled))}, which a server that decodes it could read as . or .. or a separator`,
    );
  }
  return filled;
}

/**
 * The URL for one call: every placeholder percent-encoded from `input`. A path value that is
 * (or decodes, once or more, to) `.` or `..`, or holds `/`, `\` or NUL, is refused, and so is a
 * path segment its values make so together; a query placeholder of an absent optional field drops
 * the parameter when the value is the placeholder alone; a list in a query value repeats the
 * parameter. The result is checked to keep the template's origin and number of path segments.
 */
export function fillUrl(template: UrlTemplate, input: Readonly<Record<string, unknown>>): URL {
  const path = template.segments.map((seg) => fillSegment(seg, input)).join('/');
  const params: string[] = [];
  for (const q of template.query) {
    const only = q.value.length === 1 && 'field' in q.value[0]! ? q.value[0].field : undefined;
    const value = only === undefined ? undefined : input[only];
    if (only !== undefined && (value === undefined || value === null)) continue;
    const values = Array.isArray(value) ? value : [undefined];
    for (const v of values) {
      const filled = q.value
        .map((p) => ('text' in p ? p.text : encode(p.field, text(v !== undefined ? v : (input[p.field] ?? '')))))
        .join('');
      params.push(q.value.length === 0 ? q.key : `${q.key}=${filled}`);
    }
  }
  const url = new URL(`${template.origin}/${path}${params.length ? `?${params.join('&')}` : ''}`);
  const segments = url.pathname.slice(1).split('/').length;
  if (url.origin !== template.origin || segments !== template.segments.length) {
    throw new UrlInputError(
      [...template.fields.keys()].join(', '),
      `the input would change where the request goes (${url.origin}${url.pathname})`,
    );
  }
  return url;
}
