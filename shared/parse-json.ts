/** JSON.parse that returns undefined for text that is not JSON (for messages validated next with zod). */
export function parseJsonOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
