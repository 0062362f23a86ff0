/** The part of the `ws` client (a dependency that ships no types) that bench/profile-hearer.ts uses. */
declare module 'ws' {
  export default class WebSocket {
    constructor(url: string);
    once(event: 'open' | 'error', listener: (...args: unknown[]) => void): this;
    on(event: 'message', listener: (data: Buffer) => void): this;
    send(data: string): void;
    close(): void;
  }
}
