/**
 * The proof suite's clock: the wall clock of this process (`Date`, `Date.now()`) moved forward on
 * demand, so that a schedule spans minutes of a queue's time (visibility timeouts, backoff
 * delays, side-effect lock expiries, invocation deadlines) without waiting for them.
 *
 * Everything that reads the wall clock in this process follows it: the consumer (its `now`),
 * Powertools idempotency (lock and record expiries are `Date.now()` based), the Lambda contexts
 * and invocation guards of the suite, and the SQS server when it runs in this process. DynamoDB
 * Local runs in its own process with the true time; the consumer never asks it for the time
 * (DynamoDB's TTL is not what expires an inbox row or a lock: both are compared with the
 * caller's clock).
 *
 * The clock stands still unless the suite moves it: the time an invocation takes is what its
 * schedule says (each SDK attempt costs `callCostMs`; a retry costs the SDK's backoff delay), not
 * how fast this machine happens to be, so a schedule's deadlines pass at the same points on
 * every replay. It only moves forward, so timestamps stay ordered. Code that waits for the wall
 * clock to pass a time by polling it would wait forever: nothing in the consumer does.
 *
 * @module
 */

/** The process's virtual wall clock. */
export interface VirtualClock {
  /** Milliseconds since the epoch, as `Date.now()` now reads. */
  now(): number;
  /** Moves the clock forward by `ms` milliseconds (a negative or non-finite value does nothing). */
  advance(ms: number): void;
  /** Moves the clock forward to `epochMs`, if it is later than now. */
  advanceTo(epochMs: number): void;
  /** How far the clock was moved since it was installed, in milliseconds. */
  readonly offsetMs: number;
}

const RealDate = Date;
let installed: VirtualClock | undefined;

/**
 * Replaces the global `Date` with one whose current time is the time of the call, frozen, plus
 * what {@link VirtualClock.advance} added since. Idempotent: a second call returns the same clock.
 * `new Date(value)`, `Date.parse` and `Date.UTC` are unchanged.
 */
export function installVirtualClock(): VirtualClock {
  if (installed !== undefined) return installed;
  const start = RealDate.now();
  let offset = 0;
  const now = () => start + offset;
  class VirtualDate extends RealDate {
    constructor(...args: unknown[]) {
      if (args.length === 0) super(now());
      else super(...(args as [string | number | Date]));
    }

    static override now(): number {
      return now();
    }
  }
  globalThis.Date = VirtualDate as DateConstructor;
  installed = {
    now,
    advance(ms) {
      if (Number.isFinite(ms) && ms > 0) offset += ms;
    },
    advanceTo(epochMs) {
      const gap = epochMs - now();
      if (Number.isFinite(gap) && gap > 0) offset += gap;
    },
    get offsetMs() {
      return offset;
    },
  };
  return installed;
}

/**
 * Puts the true `Date` back (for a test file that installed the clock in a shared worker).
 * The next {@link installVirtualClock} starts a new clock.
 */
export function uninstallVirtualClock(): void {
  if (installed === undefined) return;
  globalThis.Date = RealDate;
  installed = undefined;
}
