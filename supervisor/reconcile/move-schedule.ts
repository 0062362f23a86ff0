import PQueue from 'p-queue';

import type { LifecycleState } from '../../shared/domain/index.js';
import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import { RUNNING, STATE_RANK } from '../lifecycle/agent-states.js';

/** One agent's move from one state to another. */
export interface ScheduledMove {
  id: string;
  from: LifecycleState;
  to: LifecycleState;
}

export interface MoveLimits {
  /** Moves of each direction run at once. */
  concurrency: number;
  maxRunning: number;
  maxActive: number;
  /** Agents running, and active, when the moves begin. */
  running: number;
  active: number;
}

/** The limits of a reconcile's moves: the fleet's settings, and the states its agents are in now. */
export function moveLimits(
  states: readonly LifecycleState[],
  lifecycle: { max_running: number; max_active: number },
  concurrency: number,
): MoveLimits {
  return {
    concurrency,
    maxRunning: lifecycle.max_running,
    maxActive: lifecycle.max_active,
    running: states.filter(RUNNING).length,
    active: states.filter((s) => s === 'active').length,
  };
}

/**
 * A count of free places that moves take and give back; a move that needs one waits for it.
 * Once closed, every move still waiting (and any that asks later) fails: nothing will give one back.
 */
class Places {
  #free: number;
  #waiting: Array<{ take: () => void; refuse: (err: Error) => void }> = [];
  #closed: Error | undefined;

  constructor(free: number) {
    this.#free = free;
  }

  take(): Promise<void> {
    if (this.#free > 0) {
      this.#free--;
      return Promise.resolve();
    }
    if (this.#closed) return Promise.reject(this.#closed);
    return new Promise((take, refuse) => this.#waiting.push({ take, refuse }));
  }

  give(): void {
    const next = this.#waiting.shift();
    if (next) next.take();
    else this.#free++;
  }

  close(why: Error): void {
    this.#closed = why;
    for (const w of this.#waiting.splice(0)) w.refuse(why);
  }
}

/**
 * Runs a reconcile's moves so that no move up waits for a move down it does not need. Moves
 * down and up run side by side, each direction `concurrency` at a time; a move up that makes an
 * agent run (or be active) first takes a running (or active) place, which is free at once while
 * the fleet is under `max_running` (`max_active`), or given back by a move down as it
 * finishes. So the fleet never runs more agents than the limits allow, even for a moment, and
 * a player's step never waits for the previous place's agents to snapshot and stop unless
 * their places are needed. When no move up needs a freed place, the moves down wait until the
 * moves up are done, so the wakes have the CPU to themselves. A move up whose place no move down frees fails with
 * CAPACITY_EXCEEDED. `run` never throws; it resolves whether the move succeeded.
 *
 * `onUpsDone` is called once every move up has finished (or been refused), while moves down may
 * still run: a caller may answer then and let the moves down finish after. The returned promise
 * settles only when every move has finished, and a caller must not start other moves before it
 * does: the places this schedule counts are those of the states when it began.
 */
export async function runMoves<M extends ScheduledMove>(
  moves: readonly M[],
  limits: MoveLimits,
  run: (move: M) => Promise<boolean>,
  refused: (move: M, err: ThymosError) => void,
  onUpsDone: () => void = () => undefined,
): Promise<void> {
  const runningPlaces = new Places(limits.maxRunning - limits.running);
  const activePlaces = new Places(limits.maxActive - limits.active);
  const downs = new PQueue({ concurrency: limits.concurrency });
  const ups = new PQueue({ concurrency: limits.concurrency });
  const startsRunning = (m: M) => !RUNNING(m.from) && RUNNING(m.to);
  const startsActive = (m: M) => m.from !== 'active' && m.to === 'active';

  const down = moves.filter((m) => STATE_RANK[m.to] < STATE_RANK[m.from]);
  const up = moves.filter((m) => !down.includes(m));
  // When no move up needs a place a move down frees, the moves down start once the moves up are
  // done: they would only share the CPU with the wakes the caller is waiting for.
  const placesNeeded =
    up.filter(startsRunning).length > limits.maxRunning - limits.running ||
    up.filter(startsActive).length > limits.maxActive - limits.active;
  const upsDone = Promise.all(
    up.map(async (m) => {
      try {
        if (startsRunning(m)) await runningPlaces.take();
        if (startsActive(m)) await activePlaces.take();
      } catch (err) {
        refused(m, err as ThymosError);
        return;
      }
      await ups.add(async () => {
        const ok = await run(m);
        if (!ok && startsRunning(m)) runningPlaces.give();
        if (!ok && startsActive(m)) activePlaces.give();
      });
    }),
  );
  // The caller hears that the wakes are done before any move down that waited for them begins.
  const upsAnswered = upsDone.then(onUpsDone);
  const downsDone = Promise.all(
    down.map(async (m) => {
      if (!placesNeeded) await upsAnswered;
      await downs.add(async () => {
        const ok = await run(m);
        // A move that failed left its agent where it was: its places stay taken.
        if (ok && RUNNING(m.from) && !RUNNING(m.to)) runningPlaces.give();
        if (ok && m.from === 'active' && m.to !== 'active') activePlaces.give();
      });
    }),
  ).then(() => {
    runningPlaces.close(
      new ThymosError(
        ErrorCode.CAPACITY_EXCEEDED,
        `the fleet runs as many agents as [lifecycle] max_running (${limits.maxRunning}) allows`,
      ),
    );
    activePlaces.close(
      new ThymosError(
        ErrorCode.CAPACITY_EXCEEDED,
        `the fleet has as many active agents as [lifecycle] max_active (${limits.maxActive}) allows`,
      ),
    );
  });
  // Every move has ended before this returns, even if the caller's onUpsDone threw.
  await Promise.allSettled([upsAnswered, downsDone]);
  await upsAnswered;
}
