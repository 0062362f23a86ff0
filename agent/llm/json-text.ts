/**
 * A model's JSON as it writes it: local models often put a line break or a tab inside a string
 * as it is, which JSON does not allow. `StringControls` writes them escaped, a piece at a time;
 * `jsonIn` reads the first JSON object of a text, escaped so when it would not parse as written.
 */
export class StringControls {
  #inString = false;
  #escaped = false;

  /** The piece with every control character inside a string written as its escape; the rest as it is. */
  feed(piece: string): string {
    let out = '';
    for (const c of piece) {
      if (this.#inString) {
        if (this.#escaped) this.#escaped = false;
        else if (c === '\\') this.#escaped = true;
        else if (c === '"') this.#inString = false;
        else if (c < ' ') {
          out += CONTROL_ESCAPES[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
          continue;
        }
      } else if (c === '"') this.#inString = true;
      out += c;
    }
    return out;
  }
}

const CONTROL_ESCAPES: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '\b': '\\b', '\f': '\\f' };

/** The first JSON object in a text: models wrap JSON in prose or code fences now and then, and leave line breaks in strings. */
export function jsonIn(text: string): unknown {
  const start = text.indexOf('{');
  const end = text.lastIndexOf('}');
  if (start < 0 || end < start) throw new Error('no JSON object in the output');
  const object = text.slice(start, end + 1);
  try {
    return JSON.parse(object);
  } catch (err) {
    const escaped = new StringControls().feed(object);
    if (escaped === object) throw err;
    return JSON.parse(escaped);
  }
}
