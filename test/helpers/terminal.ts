import { spawnSync } from 'node:child_process';

import { eventually } from './fleet.js';

/**
 * A command on a terminal of its own: a tmux server private to this test (its own socket), one
 * window of `width`×`height`. After the command ends the shell prints `exited <code>` and waits,
 * so the screen can still be read. `close()` kills the server and what it runs.
 */
export function terminal(name: string, command: string, o: { cwd: string; env?: NodeJS.ProcessEnv; width?: number; height?: number }) {
  const tmux = (...args: string[]) =>
    spawnSync('tmux', ['-L', `${name}-${process.pid}`, ...args], { cwd: o.cwd, env: o.env ?? process.env, encoding: 'utf8' });
  const started = tmux(
    'new-session',
    '-d',
    '-s',
    name,
    '-x',
    String(o.width ?? 160),
    '-y',
    String(o.height ?? 24),
    `${command}; echo "exited $?"; sleep 600`,
  );
  if (started.status !== 0) throw new Error(`tmux did not start ${command}: ${started.stderr}`);
  const screen = () => tmux('capture-pane', '-p', '-t', name).stdout;
  return {
    screen,
    keys: (keys: string) => void tmux('send-keys', '-t', name, keys),
    /** Waits until the screen matches `pattern`; resolves with its first group, or the match. */
    until: (pattern: RegExp, ms: number, what: string) =>
      eventually(() => pattern.exec(screen())?.[1] ?? pattern.exec(screen())?.[0], ms, what),
    close: () => void tmux('kill-server'),
  };
}
