/**
 * Polls `probe` until it returns a value other than `undefined`, waiting a little longer between
 * tries (50 ms up to 1 s), so a busy machine only makes it slower, not red.
 *
 * @param options.timeoutMs - give up after this long, in milliseconds
 * @param options.what - what is awaited, for the error message
 * @throws Error naming `what` when the time runs out
 */
export async function waitFor<T>(
  probe: () => Promise<T | undefined>,
  options: { readonly timeoutMs: number; readonly what: string },
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  let pause = 50;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${options.what} after ${options.timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, pause));
    pause = Math.min(1000, pause * 2);
  }
}
