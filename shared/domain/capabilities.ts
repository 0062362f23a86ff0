import { NameGlob } from './name-glob.js';

/**
 * The capability grammar, `[!][scope:]pattern`: a glob over names (`orders_*`), or with a
 * scope (`tag:refunds`) over what that scope lists; `!` takes away what the rest grants. Each
 * pattern is matched in turn and the last that matches decides; nothing matching means no
 * grant. Tools use it now (names and tags); shared memory will use it with scopes of its own.
 * The pattern is a {@link NameGlob}: `*` takes any run of characters, `/` included, in every
 * scope, so `!tag:danger*` takes away `danger/high` as it reads.
 */
export interface Capability {
  /** The pattern as written. */
  text: string;
  deny: boolean;
  /** `name` when no scope is written. */
  scope: string;
  glob: string;
  /** Whether the glob has wildcards: a plain name that matches nothing is likely a typo. */
  literal: boolean;
  matches: (value: string) => boolean;
}

const CAPABILITY = /^(!?)(?:([a-z][a-z0-9_]*):)?([^!].*)$/;

/** Parses one capability; an unknown scope or an empty pattern is an error naming what is expected. */
export function parseCapability(text: string, scopes: readonly string[] = ['tag']): Capability {
  const m = CAPABILITY.exec(text.trim());
  if (!m || m[3]!.trim() === '')
    throw new Error(`capability ${JSON.stringify(text)}: expected [!][scope:]pattern, e.g. "lookup_*", "tag:orders", "!refund"`);
  const scope = m[2] ?? 'name';
  if (scope !== 'name' && !scopes.includes(scope))
    throw new Error(
      `capability ${JSON.stringify(text)}: unknown scope "${scope}:"; expected ${scopes.map((s) => `${s}:`).join(', ')} or a plain pattern`,
    );
  const glob = m[3]!;
  const pattern = new NameGlob(glob);
  return { text, deny: m[1] === '!', scope, glob, literal: !pattern.wild, matches: (value) => pattern.matches(value) };
}

/** What a capability is tested against: a name, and per scope the values it lists (a tool's tags). */
export interface Grantable {
  name: string;
  scopes: Readonly<Record<string, readonly string[]>>;
}

/** Whether `capabilities` grant `item`: the last capability that matches decides. */
export function grants(capabilities: readonly Capability[], item: Grantable): boolean {
  let granted = false;
  for (const c of capabilities) {
    const hit = c.scope === 'name' ? c.matches(item.name) : (item.scopes[c.scope] ?? []).some(c.matches);
    if (hit) granted = !c.deny;
  }
  return granted;
}
