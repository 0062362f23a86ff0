import { join } from 'node:path';

import { REPO_ROOT } from '../test/helpers/workspace.js';

/** The first line of a benchmark's domain: it amends the repository's own `schemas/Thymos.pkl`. */
export const AMENDS_THYMOS = `amends ${JSON.stringify(join(REPO_ROOT, 'schemas', 'Thymos.pkl'))}`;

/** One agent of a benchmark's domain: its id, its persona's name, and its other properties in Pkl (`;` between them), if any. */
export interface BenchAgent {
  id: string;
  name: string;
  more?: string;
}

/** A Pkl domain of `n` agents, the `i`th as `agent(i)` says, then the lines of `after` (filters, rules, tables). */
export function domainText(n: number, agent: (i: number) => BenchAgent, after: readonly string[] = []): string {
  const lines = [AMENDS_THYMOS, 'agents {'];
  for (let i = 0; i < n; i++) {
    const { id, name, more } = agent(i);
    lines.push(`  ["${id}"] { persona { name = "${name}" }${more === undefined ? '' : `; ${more}`} }`);
  }
  lines.push('}', ...after);
  return lines.join('\n');
}
