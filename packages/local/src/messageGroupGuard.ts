/**
 * Keeps at most one batch per FIFO message group in flight in the local event source.
 *
 * SQS itself hides a group's messages while one of them is in flight, but a message whose
 * visibility timeout runs out while its handler still runs becomes visible again and can be
 * received by another worker. Lambda never runs two batches of one group at once; this guard
 * makes the local poller keep that promise too: a worker holding a batch of a busy group waits
 * until the group is released.
 */
export class MessageGroupGuard {
  private readonly held = new Set<string>();
  private waiters: Array<() => void> = [];

  /** Groups held right now. */
  get heldGroups(): ReadonlySet<string> {
    return this.held;
  }

  /**
   * Takes every group in `groupIds` if none of them is held, all or nothing.
   * @returns `true` when taken, `false` when at least one group is busy (nothing is taken)
   */
  tryAcquire(groupIds: Iterable<string>): boolean {
    const groups = [...new Set(groupIds)];
    if (groups.some((group) => this.held.has(group))) return false;
    for (const group of groups) this.held.add(group);
    return true;
  }

  /**
   * Waits until none of `groupIds` is held, then takes all of them (all or nothing, so two
   * batches that share groups cannot deadlock). Waiters retry in arrival order.
   */
  async acquire(groupIds: Iterable<string>): Promise<void> {
    const groups = [...new Set(groupIds)];
    while (!this.tryAcquire(groups)) {
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  /**
   * Releases groups taken by {@link acquire} or {@link tryAcquire} and wakes the waiters.
   * @throws {Error} when a group is not held (a release without an acquire is a bug)
   */
  release(groupIds: Iterable<string>): void {
    const groups = [...new Set(groupIds)];
    const notHeld = groups.filter((group) => !this.held.has(group));
    if (notHeld.length > 0) throw new Error(`MessageGroupGuard: release of groups not held: ${notHeld.join(', ')}`);
    for (const group of groups) this.held.delete(group);
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}
