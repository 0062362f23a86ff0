import { type Tool, toolSecrets } from '../../shared/domain/index.js';

/**
 * The ways a secret's value is likely to come back: as set, trimmed (as a header sends it),
 * percent-encoded, escaped inside a JSON string, and in base64. Only those: a service that
 * transforms a token otherwise (hashes, truncates, splits it) is not covered.
 */
function forms(value: string): Set<string> {
  const out = new Set<string>();
  for (const v of new Set([value, value.trim()])) {
    if (v.length === 0) continue;
    out.add(v);
    out.add(encodeURIComponent(v));
    out.add(JSON.stringify(v).slice(1, -1));
    out.add(Buffer.from(v).toString('base64').replace(/=+$/, ''));
    out.add(Buffer.from(v).toString('base64url'));
  }
  return out;
}

/**
 * Removes the values of the secrets an agent's tools use (the environment variables their
 * `Secret`s name) from whatever is kept or sent: results, errors, records, memories and logs.
 * A service may echo a header back; its value (in the forms `forms` lists) becomes
 * `[secret ENV]`. Values are read from the environment each time, so a changed one is covered.
 */
export class SecretRedactor {
  readonly #names: string[];
  readonly #env: NodeJS.ProcessEnv;

  constructor(tools: readonly Tool[], env: NodeJS.ProcessEnv) {
    const names = new Set<string>();
    for (const t of tools) for (const { secret } of toolSecrets(t)) names.add(secret.env);
    this.#names = [...names];
    this.#env = env;
  }

  /** A copy of `value` with every secret's value replaced; strings inside objects and arrays too. */
  redact<T>(value: T): T {
    const secrets = this.#names.flatMap((name) => {
      const v = this.#env[name];
      return v ? [...forms(v)].map((form) => [form, `[secret ${name}]`] as const) : [];
    });
    if (secrets.length === 0) return value;
    // Longest first: a secret that contains another is removed whole.
    secrets.sort((a, b) => b[0].length - a[0].length);
    const walk = (v: unknown): unknown => {
      if (typeof v === 'string') return secrets.reduce((s, [secret, mark]) => s.replaceAll(secret, mark), v);
      if (Array.isArray(v)) return v.map(walk);
      if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [walk(k) as string, walk(x)]));
      return v;
    };
    return walk(value) as T;
  }
}
