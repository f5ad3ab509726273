import type { SQSClient } from '@aws-sdk/client-sqs';

/** A source of the current time. */
export interface Clock {
  now(): Date;
}

/**
 * The SQS server's time, as its responses tell it (the HTTP `Date` header), advanced by this
 * machine's monotonic clock (`performance.now()`) since. The tool compares SQS's timestamps
 * (`SentTimestamp`) and the consumer's failure times with this, never with the local wall clock,
 * so a skewed local clock changes nothing.
 *
 * The header has a resolution of one second and is read when the response arrives, so the
 * estimate is never later than the server's time and at most about a second earlier; of several
 * responses the latest estimate is kept. Before any response has a `Date` header, `now()` is the
 * local clock ({@link synchronized} is `false`).
 */
export class ServerClock implements Clock {
  /** Server time minus `performance.now()`, in milliseconds: the largest seen. */
  #offsetMs: number | undefined;

  /** Whether a response has given the server's time. */
  get synchronized(): boolean {
    return this.#offsetMs !== undefined;
  }

  /** Records a server time (the `Date` header of a response that just arrived). Invalid dates are ignored. */
  observe(serverTime: Date): void {
    const ms = serverTime.getTime();
    if (Number.isNaN(ms)) return;
    const offset = ms - performance.now();
    if (this.#offsetMs === undefined || offset > this.#offsetMs) this.#offsetMs = offset;
  }

  /** The server's current time, estimated; the local clock when not {@link synchronized}. */
  now(): Date {
    return this.#offsetMs === undefined ? new Date() : new Date(performance.now() + this.#offsetMs);
  }
}

const clocks = new WeakMap<object, ServerClock>();

/**
 * The server clock of an SQS client: the first call adds a middleware that reads the `Date`
 * header of every response. A client without a middleware stack (a test's stub) gets a clock
 * that stays on the local time.
 */
export function serverClockOf(sqs: SQSClient): ServerClock {
  const existing = clocks.get(sqs);
  if (existing !== undefined) return existing;
  const clock = new ServerClock();
  clocks.set(sqs, clock);
  const stack = (sqs as Partial<SQSClient>).middlewareStack;
  stack?.add(
    (next) => async (args) => {
      const result = await next(args);
      const headers = (result.response as { headers?: Record<string, string | undefined> } | undefined)?.headers;
      const date = headers?.date ?? headers?.Date;
      if (date !== undefined) clock.observe(new Date(date));
      return result;
    },
    { step: 'deserialize', name: 'idempotentConsumerServerClock' },
  );
  return clock;
}
