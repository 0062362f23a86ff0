import { Console } from 'node:console';
import { Writable } from 'node:stream';

/**
 * Makes the process's `console` write through `redact` to standard output and error: a Script
 * runs in the agent's process, so what it logs with `console.log` lands in the agent's log, and
 * the value of a secret it holds must not. Each console call writes its whole line at once, so
 * a secret is never split between two writes. What a script writes to `process.stdout`
 * itself is not covered. Returns how to put the process's own console back.
 */
export function redactConsole(redact: (text: string) => string, stdout: NodeJS.WritableStream = process.stdout, stderr: NodeJS.WritableStream = process.stderr): () => void {
  const through = (to: NodeJS.WritableStream) =>
    new Writable({
      decodeStrings: false,
      write(chunk: string | Buffer, _encoding, done) {
        to.write(redact(typeof chunk === 'string' ? chunk : chunk.toString('utf8')));
        done();
      },
    });
  const original = globalThis.console;
  const redacting = new Console({ stdout: through(stdout), stderr: through(stderr) });
  globalThis.console = redacting;
  return () => {
    if (globalThis.console === redacting) globalThis.console = original;
  };
}
