import type { Tool } from '../../shared/domain/tool-schema.js';

/**
 * Removes the values of the secrets an agent's tools use (the environment variables their
 * `Secret`s name) from whatever is kept or sent: results, errors, records, memories and logs.
 * A service may echo a header back; its value becomes `[secret ENV]`. Values are read from the
 * environment when the redactor is made and again when they change.
 */
export class SecretRedactor {
  readonly #names: string[];
  readonly #env: NodeJS.ProcessEnv;

  constructor(tools: readonly Tool[], env: NodeJS.ProcessEnv) {
    const names = new Set<string>();
    for (const t of tools) if (t.executor.kind === 'http') for (const v of Object.values(t.executor.headers)) if (typeof v !== 'string') names.add(v.env);
    this.#names = [...names];
    this.#env = env;
  }

  /** A copy of `value` with every secret's value replaced; strings inside objects and arrays too. */
  redact<T>(value: T): T {
    const secrets = this.#names.flatMap((name) => {
      const v = this.#env[name];
      return v ? [[v, `[secret ${name}]`] as const] : [];
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
