/**
 * Settles with `promise`, or with `onTimeout()` after `ms`, whichever is first. The timer is
 * cleared either way, so a deadline never keeps the process alive after its work is done.
 */
export async function withDeadline<T, U = never>(promise: Promise<T>, ms: number, onTimeout: () => U): Promise<T | U> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<U>((resolve, reject) => {
        timer = setTimeout(() => {
          try {
            resolve(onTimeout());
          } catch (err) {
            reject(err);
          }
        }, ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
