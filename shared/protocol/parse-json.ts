import { ErrorCode, ThymosError } from '../errors/errors.js';

/**
 * How deeply JSON from the wire may nest. JSON.parse itself copes with any depth, but code
 * that walks the result recursively (JSON.stringify, zod's issue reports, SurrealDB's
 * encoder) overflows the stack somewhere past a few thousand levels.
 */
export const MAX_JSON_DEPTH = 64;

/** The deepest nesting of arrays and objects in JSON text (strings are skipped); linear in its length. */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92)
        i++; // backslash: skip the escaped character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 || c === 123) {
      if (++depth > max) max = depth;
    } else if (c === 93 || c === 125) depth--;
  }
  return max;
}

/**
 * Parses JSON that arrived from outside (a NATS message, an HTTP body): not JSON, or nested
 * deeper than MAX_JSON_DEPTH, is INVALID_INPUT naming `where`.
 */
export function parseWireJson(text: string, where: string): unknown {
  const depth = jsonDepth(text);
  if (depth > MAX_JSON_DEPTH) {
    throw new ThymosError(ErrorCode.INVALID_INPUT, `${where}: JSON nested ${depth} levels deep; expected at most ${MAX_JSON_DEPTH}`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ThymosError(ErrorCode.INVALID_INPUT, `${where}: expected JSON: ${(err as Error).message}`, { cause: err });
  }
}

/** Wire JSON, or undefined when it is not JSON or nests too deeply (for messages validated next with zod). */
export function parseJsonOrUndefined(text: string): unknown {
  try {
    return parseWireJson(text, 'message');
  } catch {
    return undefined;
  }
}
