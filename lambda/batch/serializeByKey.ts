/**
 * Returns a runner that executes tasks with the same key one after another, in the order they
 * were submitted, and tasks with different keys concurrently.
 *
 * The standard-queue handler runs a batch's records in parallel but serializes those of one
 * order, so an `OrderPlaced` and an `OrderPaid` of the same order in one batch both apply, in
 * batch order, instead of the second one failing its version check.
 *
 * @example
 * const run = serializeByKey();
 * await Promise.all(records.map((r) => run(orderIdOf(r), () => handle(r))));
 */
export function serializeByKey(): <T>(key: string, task: () => Promise<T>) => Promise<T> {
  const tails = new Map<string, Promise<unknown>>();
  return <T>(key: string, task: () => Promise<T>): Promise<T> => {
    const result = (tails.get(key) ?? Promise.resolve()).then(task);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    tails.set(key, tail);
    void tail.then(() => {
      if (tails.get(key) === tail) tails.delete(key);
    });
    return result;
  };
}
