/** How concepts and memories are walked: along typed relationships, and back along `caused_by` links. */

/** A concept reached from another through typed relationships. */
export interface RelatedConcept {
  key: string;
  name: string;
  hops: number;
  /** The relationships walked, e.g. [{ type: 'trusts', to: 'bram_smith', properties: { strength: 0.8 } }]. */
  path: Array<{ type: string; to: string; properties: Record<string, unknown> }>;
}

/** A memory's causes, walked back along `caused_by` links. */
export interface CauseStep {
  memory: string;
  content: string;
  reason: string;
  hops: number;
}

type Edge = { type: string; to: string; properties: Record<string, unknown> };

/** Concepts reachable from `start` within `limit` hops, nearest first, optionally along some types only. */
export function walkRelated(
  start: string,
  limit: number,
  edgesOf: (key: string) => readonly Edge[],
  nameOf: (key: string) => string,
  types?: readonly string[],
): RelatedConcept[] {
  const seen = new Set([start]);
  const out: RelatedConcept[] = [];
  let frontier: RelatedConcept[] = [{ key: start, name: '', hops: 0, path: [] }];
  for (let hop = 1; hop <= limit && frontier.length > 0; hop++) {
    const next: RelatedConcept[] = [];
    for (const node of frontier) {
      for (const e of edgesOf(node.key)) {
        if ((types && !types.includes(e.type)) || seen.has(e.to)) continue;
        seen.add(e.to);
        const reached = { key: e.to, name: nameOf(e.to), hops: hop, path: [...node.path, e] };
        next.push(reached);
        out.push(reached);
      }
    }
    frontier = next;
  }
  return out;
}

/** The causes of memory `id`, walked back up to `limit` links, nearest first. */
export function walkCauses(
  id: string,
  limit: number,
  causesOf: (id: string) => ReadonlyArray<{ cause: string; reason: string }>,
  contentOf: (id: string) => string,
): CauseStep[] {
  const out: CauseStep[] = [];
  const seen = new Set([id]);
  let frontier = [id];
  for (let hop = 1; hop <= limit && frontier.length > 0; hop++) {
    const next: string[] = [];
    for (const at of frontier) {
      for (const c of causesOf(at)) {
        if (seen.has(c.cause)) continue;
        seen.add(c.cause);
        next.push(c.cause);
        out.push({ memory: c.cause, content: contentOf(c.cause), reason: c.reason, hops: hop });
      }
    }
    frontier = next;
  }
  return out;
}
