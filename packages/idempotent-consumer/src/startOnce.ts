/**
 * What an execution environment makes at its first use and then shares between invocations (the
 * consumer's environment, an AWS SDK client, a module loaded on demand): `start` runs once, and
 * every caller gets its promise. A failure is not remembered: the next caller starts again, so a
 * transient error at start-up (a throttled call, a variable fixed by a redeploy of the
 * configuration) costs one invocation, never every later invocation of the environment.
 *
 * @param start - makes the value; it may throw or reject
 * @returns a function that gives the value, starting it when no start is under way or done
 */
export function startOnce<T>(start: () => T | Promise<T>): () => Promise<T> {
  let started: Promise<T> | undefined;
  return () => {
    started ??= (async () => start())().catch((error: unknown) => {
      started = undefined;
      throw error;
    });
    return started;
  };
}
