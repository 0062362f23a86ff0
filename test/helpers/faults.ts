import { readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import type { Fleet } from '../../client/fleet-client.js';
import { isAlive } from '../../shared/platform/data-lock.js';

/**
 * Live processes (not zombies) holding agent `id`'s database open (a file descriptor under
 * `<dataDir>/agents/<id>/db`), found in /proc: what "runs once" is checked against, whatever
 * pm2, the lock file or the registry believe.
 */
export function agentProcesses(dataDir: string, id: string): number[] {
  const db = join(dataDir, 'agents', id, 'db');
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const holds = readdirSync(`/proc/${pid}/fd`).some((fd) => {
        try {
          return readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith(db);
        } catch {
          return false;
        }
      });
      if (holds && isAlive(pid)) found.push(pid);
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

export interface AckedWrite {
  id: string;
  /** A word only this write contains, to recall it by. */
  word: string;
  memoryId: string;
  /** When the write was sent and when it was acknowledged (performance.now()). */
  sentAt: number;
  at: number;
}

export interface HammerResult {
  kills: number;
  acked: AckedWrite[];
  /** Writes refused or cut off (the agent was down or dying): not acknowledged, so not owed. */
  failedWrites: number;
  /** From each kill to the acknowledgement of the first write sent after it, in ms. */
  backMs: number[];
}

/**
 * One writer per agent stores memories through MCP without pause, reconnecting after each
 * failure, while agents are killed with SIGKILL in turn (`kills` times, `gapMs` apart). Each
 * kill waits for the agent to acknowledge a write again (pm2 restarts it) before the next.
 */
export async function hammerWithKills(o: {
  fleet: Fleet;
  ids: string[];
  kills: number;
  pidOf: (id: string) => Promise<number | null | undefined>;
  backTimeoutMs: number;
  gapMs?: number;
}): Promise<HammerResult> {
  const acked: AckedWrite[] = [];
  let failedWrites = 0;
  let stop = false;
  const writer = async (id: string, index: number) => {
    for (let n = 0; !stop; n++) {
      const word = `zq${index}w${n}x`;
      const sentAt = performance.now();
      try {
        const client = await o.fleet.agent(id);
        // A request whose connection a kill cut is answered by nobody: the SDK would wait for its 60 s default.
        const r = await client.callTool(
          { name: 'remember', arguments: { content: `Tally mark ${word} was cut into the gatepost` } },
          undefined,
          { timeout: 3000 },
        );
        const memoryId = (r.structuredContent as { id?: string } | undefined)?.id;
        if (r.isError || !memoryId) throw new Error('refused');
        acked.push({ id, word, memoryId, sentAt, at: performance.now() });
      } catch {
        failedWrites++;
        await sleep(50);
      }
    }
  };
  const writers = o.ids.map((id, i) => writer(id, i));
  const backMs: number[] = [];
  try {
    for (let k = 0; k < o.kills; k++) {
      await sleep(o.gapMs ?? 700);
      const id = o.ids[k % o.ids.length]!;
      const pid = await o.pidOf(id);
      if (!pid) throw new Error(`no pid for ${id} before kill ${k + 1}`);
      const t0 = performance.now();
      process.kill(pid, 'SIGKILL');
      const deadline = t0 + o.backTimeoutMs;
      // Back: a write sent after the kill is acknowledged (a reply already on its way from the
      // killed process does not count).
      const backAgain = () => acked.find((a) => a.id === id && a.sentAt > t0);
      while (!backAgain()) {
        if (performance.now() > deadline) throw new Error(`${id} acknowledged no write within ${o.backTimeoutMs} ms of kill ${k + 1}`);
        await sleep(20);
      }
      backMs.push(Math.round(backAgain()!.at - t0));
    }
  } finally {
    stop = true;
    await Promise.all(writers);
  }
  return { kills: backMs.length, acked, failedWrites, backMs };
}
