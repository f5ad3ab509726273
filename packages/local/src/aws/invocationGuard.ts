/**
 * The deadline of a local invocation: once the function timeout has passed (or the invocation is
 * killed), AWS SDK calls made by that invocation are refused before they leave the process, as
 * Lambda stops a function at its timeout and nothing it would still do reaches the stores.
 *
 * Two ways to attach it:
 * - **Shared clients** (the usual case: one DynamoDB and one SQS client for every execution
 *   environment): {@link guardInvocations} adds the check to a client once; each invocation runs
 *   its handler with {@link InvocationGuard.run}, and a call is refused when the invocation it
 *   was made from (found through `AsyncLocalStorage`, so it follows the handler's promises and
 *   timers) is over. Calls made outside any invocation (the event source's own receives and
 *   deletes) pass.
 * - **Clients of one invocation**: {@link InvocationGuard.install} refuses every call of that
 *   client after the kill, whatever context makes it.
 *
 * The check runs before every attempt (inside the SDK's retries), so a call that is retrying when
 * the deadline passes makes no further attempt. A request already sent before the deadline is
 * not recalled: its effect lands, as a request in flight does on AWS.
 *
 * @module
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { FinalizeRequestMiddleware } from '@smithy/types';
import type { SdkClient } from './sdkMiddleware.js';

/** Thrown, instead of sending, for a call made by an invocation that is over. Not retryable. */
export class InvocationStoppedError extends Error {
  constructor(
    /** Why the invocation is over. */
    public readonly reason: string,
  ) {
    super(`The invocation is over (${reason}): calls it makes no longer reach AWS, as Lambda stops a function at its timeout.`);
    this.name = 'InvocationStoppedError';
  }
}

/** Options of {@link createInvocationGuard}. */
export interface InvocationGuardOptions {
  /** When the invocation's time is up (start + function timeout), epoch milliseconds. */
  readonly deadlineMs: number;
  /** Clock in epoch milliseconds. @default Date.now */
  readonly now?: () => number;
}

/** One invocation's deadline and kill switch. */
export interface InvocationGuard {
  /** The deadline, epoch milliseconds. */
  readonly deadlineMs: number;
  /** Whether calls are refused now: killed, or past the deadline. */
  readonly stopped: boolean;
  /** Refuses every later call of the invocation (idempotent; the first reason is kept). */
  kill(reason?: string): void;
  /**
   * Runs `fn` as this invocation: the calls it (and everything it starts) makes on clients
   * prepared with {@link guardInvocations} are refused once the invocation is stopped.
   */
  run<T>(fn: () => T): T;
  /** Refuses every call of `client` once this invocation is stopped (for a client of this invocation only). */
  install<Input extends object, Output extends object>(client: SdkClient<Input, Output>): void;
}

const currentInvocation = new AsyncLocalStorage<Guard>();
const guardedClients = new WeakSet<object>();
let guardNames = 0;

class Guard implements InvocationGuard {
  readonly deadlineMs: number;
  readonly #now: () => number;
  #killedFor: string | undefined;

  constructor(options: InvocationGuardOptions) {
    this.deadlineMs = options.deadlineMs;
    this.#now = options.now ?? Date.now;
  }

  /** Why calls are refused now, or `undefined` while the invocation runs. */
  stopReason(): string | undefined {
    if (this.#killedFor !== undefined) return this.#killedFor;
    return this.#now() >= this.deadlineMs ? `its deadline ${new Date(this.deadlineMs).toISOString()} has passed` : undefined;
  }

  get stopped(): boolean {
    return this.stopReason() !== undefined;
  }

  kill(reason = 'killed'): void {
    this.#killedFor ??= reason;
  }

  run<T>(fn: () => T): T {
    return currentInvocation.run(this, fn);
  }

  install<Input extends object, Output extends object>(client: SdkClient<Input, Output>): void {
    client.middlewareStack.add(
      refusingMiddleware<Input, Output>(() => this.stopReason()),
      {
        step: 'finalizeRequest',
        priority: 'low',
        name: `idempotentConsumerInvocationGuard${(guardNames += 1)}`,
      },
    );
  }
}

/**
 * A guard for one invocation.
 *
 * @example
 * const guard = createInvocationGuard({ deadlineMs: Date.now() + timeoutSeconds * 1_000 });
 * const running = guard.run(() => handler(event, context));
 * // at the timeout: guard.kill('function timeout');
 * @throws RangeError when `deadlineMs` is not a finite number
 */
export function createInvocationGuard(options: InvocationGuardOptions): InvocationGuard {
  if (!Number.isFinite(options.deadlineMs))
    throw new RangeError(`deadlineMs must be a finite number of epoch milliseconds, got ${options.deadlineMs}`);
  return new Guard(options);
}

/**
 * Prepares a shared client: a call made inside {@link InvocationGuard.run} of a stopped
 * invocation is refused with {@link InvocationStoppedError}. Idempotent per client.
 */
export function guardInvocations<Input extends object, Output extends object>(client: SdkClient<Input, Output>): void {
  if (guardedClients.has(client)) return;
  guardedClients.add(client);
  client.middlewareStack.add(
    refusingMiddleware<Input, Output>(() => currentInvocation.getStore()?.stopReason()),
    {
      step: 'finalizeRequest',
      priority: 'low',
      name: 'idempotentConsumerInvocationGuard',
    },
  );
}

/** The invocation the current code runs in, if any. */
export function currentInvocationGuard(): InvocationGuard | undefined {
  return currentInvocation.getStore();
}

function refusingMiddleware<Input extends object, Output extends object>(
  stopReason: () => string | undefined,
): FinalizeRequestMiddleware<Input, Output> {
  return (next) => async (args) => {
    const reason = stopReason();
    if (reason !== undefined) throw new InvocationStoppedError(reason);
    return next(args);
  };
}
