/**
 * Waits `ms` milliseconds; resolves early (never rejects) when `signal` aborts.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted === true) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * A limiter that spaces calls to at most `perSecond` per second: await the returned function
 * before each call. Without a rate it never waits.
 *
 * @param perSecond - calls per second; `undefined` or ≤ 0 means no limit
 */
export function createRateLimiter(perSecond: number | undefined): () => Promise<void> {
  if (perSecond === undefined || perSecond <= 0) return async () => {};
  const intervalMs = 1000 / perSecond;
  let next = 0;
  return async () => {
    const now = Date.now();
    const wait = next - now;
    next = Math.max(now, next) + intervalMs;
    if (wait > 0) await sleep(wait);
  };
}
