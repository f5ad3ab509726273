import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { BasePersistenceLayer } from '@aws-lambda-powertools/idempotency/persistence';
import type { Context } from 'aws-lambda';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ConsumerDefinitionError, NotAttempted } from '../errors.js';
import type { InvocationClock, SideEffectExecutor, SideEffectRan } from '../engine/Unit.js';
import type { SideEffectHandler, SideEffectRequest } from '../types.js';

/**
 * Powertools' DynamoDB store (`DynamoDBPersistenceLayer`, same options) whose `saveSuccess`
 * starts the write of the `COMPLETED` record and returns at once, so that Powertools'
 * `makeIdempotent` returns as soon as the effect has run. The write is then taken with
 * {@link CompletionDeferringStore.takeCompletion}, by the payload it was started for, and awaited
 * beside the commit (see {@link SideEffectRunner}). The record's key, payload hash and expiry are
 * computed before the write's first await, under the configuration of the call that started it.
 */
export class CompletionDeferringStore extends DynamoDBPersistenceLayer {
  /** The completion writes in flight, by the payload (the guarded call's argument) they were started for. */
  readonly #completions = new WeakMap<object, Promise<void>>();

  /** Starts the write of the completion record; resolves at once when it can be found again by `data` (an object). */
  override saveSuccess(
    data: Parameters<DynamoDBPersistenceLayer['saveSuccess']>[0],
    result: Parameters<DynamoDBPersistenceLayer['saveSuccess']>[1],
  ): Promise<void> {
    const write = super.saveSuccess(data, result);
    if (typeof data !== 'object' || data === null) return write;
    // Whoever takes it sees its rejection; this only keeps a write nobody takes from being unhandled.
    write.catch(() => undefined);
    this.#completions.set(data, write);
    return Promise.resolve();
  }

  /**
   * The completion write started for `data`, once (a second call returns `undefined`).
   *
   * @returns the write in flight, which rejects with the DynamoDB client's error; `undefined` when none was started for it
   */
  takeCompletion(data: object): Promise<void> | undefined {
    const write = this.#completions.get(data);
    this.#completions.delete(data);
    return write;
  }
}

/** Options of {@link SideEffectRunner}. */
export interface SideEffectRunnerOptions {
  /** The user's effects, by name. */
  readonly handlers: Readonly<Record<string, SideEffectHandler>>;
  /** Where Powertools keeps its idempotency records (Powertools' DynamoDB store on the idempotency table). */
  readonly persistenceStore: CompletionDeferringStore;
  /**
   * The prefix of every idempotency record key: the consumer's name, so that a key survives a
   * redeploy under another function name (Powertools' default prefix is the function name).
   */
  readonly keyPrefix: string;
  /** How long a completed effect is remembered, in seconds (`expiresAfterSeconds`). */
  readonly expiresAfterSeconds: number;
  /** The least remaining invocation time, in milliseconds, with which an effect may start. */
  readonly minRemainingMs: number;
  /** Handed to the effects (see `SideEffectContext.documentClient`). */
  readonly documentClient: DynamoDBDocumentClient;
  /** The business tables: logical name → physical name. */
  readonly tables: Readonly<Record<string, string>>;
}

/** What the guarded function receives: Powertools keys the record on `effectKey`. */
interface GuardedCall {
  readonly effectKey: string;
  readonly idempotencyKey: string;
  readonly name: string;
  readonly input: unknown;
}

/** Thrown inside the guarded function when the gate refuses: Powertools then releases the lock. */
class GateRefused extends Error {
  override readonly name = 'GateRefused';
}

/**
 * Runs inline side effects guarded with Powertools idempotency (`makeIdempotent`, keyed on the
 * effect key under the prefix `keyPrefix`: `<idempotency key>#<name>#<position>`, or
 * `<name>#<key>` for a chosen key, shared by every message that asks for it; see `effectKeys.ts`):
 *
 * - an effect that **completed** is not run again when its message comes back (a crash between the
 *   effect and the commit, a cancelled commit);
 * - an effect **in progress** in another invocation (another delivery of the message, or another
 *   message that asks for the same chosen key) raises Powertools' `IdempotencyAlreadyInProgressError`,
 *   which the classifier retries without counting an attempt, not before the lock expires;
 * - the lock expires at the calling invocation's deadline (its Lambda context, carried by its
 *   `InvocationClock`), so a delivery after a timeout takes it over;
 * - an effect never starts with less than `minRemainingMs` left: the lock would expire before the
 *   effect finished and another delivery could run it a second time (case C15). Such a message is
 *   retried without counting an attempt.
 *
 * The lock is taken while the engine checks the commit's conditions (the `gate`): the effect
 * starts inside the lock once they hold, and a refusal releases the lock, the effect not run. A
 * round with effects then waits for one round trip where it waited for two; a refused check costs
 * the lock's write and its deletion.
 *
 * The completion record is written beside the commit, not before it: `run` resolves once the
 * effect has run and returns the record's write still in flight (`completionRecorded`), which the
 * engine awaits together with its commit. That saves the invocation one round trip per round with
 * effects. The order of the two writes changes nothing a redelivery sees: a key whose commit
 * landed is a duplicate before its effect is looked at, and one whose commit did not finds the
 * effect completed (or, if the completion was lost too, in progress until the lock expires, as
 * after a crash). The store is a {@link CompletionDeferringStore}.
 *
 * What this cannot do: if the invocation dies after the effect and before Powertools records its
 * completion, the next delivery runs it again. Each effect therefore receives `effectKey` to pass
 * downstream, where a receiver that deduplicates on it makes it exactly once.
 */
export class SideEffectRunner implements SideEffectExecutor {
  readonly #options: SideEffectRunnerOptions;

  constructor(options: SideEffectRunnerOptions) {
    this.#options = options;
  }

  /**
   * The guarded function of one call: its own Powertools config, whose lock expires at the
   * deadline of the calling invocation (`lambdaContext`), and a handler that reads that
   * invocation's clock. Nothing of one invocation is kept where another one could read it: a
   * process that serves several invocations at once (Lambda Managed Instances) keeps each
   * effect's lock and `remainingTimeMs` its own.
   */
  #guard(
    lambdaContext: Context,
    clock: InvocationClock,
    gate: Promise<boolean> | undefined,
    state: { refused: boolean },
  ): (call: GuardedCall) => Promise<unknown> {
    const options = this.#options;
    const config = new IdempotencyConfig({
      eventKeyJmesPath: 'effectKey',
      expiresAfterSeconds: options.expiresAfterSeconds,
      throwOnNoIdempotencyKey: true,
      lambdaContext,
    });
    return makeIdempotent(
      async (call: GuardedCall): Promise<{ readonly done: true }> => {
        // The lock is held: the effect starts only if the commit's conditions hold, and only with
        // the time it needs still left after waiting for them (case C15).
        if (gate !== undefined) {
          if (!(await gate)) {
            state.refused = true;
            throw new GateRefused('the commit would be refused');
          }
          this.#checkTimeLeft(call.name, clock);
        }
        const handler = options.handlers[call.name];
        if (handler === undefined) throw new Error(`no side effect named ${call.name}`);
        await handler(call.input, {
          idempotencyKey: call.idempotencyKey,
          effectKey: call.effectKey,
          remainingTimeMs: () => clock.remainingTimeMs(),
          documentClient: options.documentClient,
          tableName: (logicalName) => {
            const name = Object.hasOwn(options.tables, logicalName) ? options.tables[logicalName] : undefined;
            if (name === undefined) throw new ConsumerDefinitionError(`no business table named ${JSON.stringify(logicalName)}`);
            return name;
          },
        });
        return { done: true };
      },
      { persistenceStore: options.persistenceStore, config, keyPrefix: options.keyPrefix },
    );
  }

  /** @throws NotAttempted when less than `minRemainingMs` is left: the lock could expire before the effect ends. */
  #checkTimeLeft(name: string, clock: InvocationClock): void {
    const remaining = clock.remainingTimeMs();
    if (!(remaining >= this.#options.minRemainingMs)) {
      throw new NotAttempted(
        `too little time left to start side effect ${name} (${Math.max(0, Math.floor(remaining))} ms; needs ${this.#options.minRemainingMs} ms)`,
      );
    }
  }

  /**
   * Runs one effect, at most once per effect key (see the class comment).
   *
   * `gate`: see `SideEffectExecutor.run`. The lock is taken at once; the effect waits inside it
   * for the gate, and a refusal releases the lock (Powertools deletes its record; if that fails,
   * the runner deletes it once more) and returns nothing. Once the gate opens, the time left is
   * checked again before the effect starts.
   *
   * @throws NotAttempted when the invocation has no Lambda context (`clock.lambdaContext`) or too
   *   little time is left to start, before the lock or after the gate
   * @throws NotAttempted (with the lock's expiry) when another invocation holds the lock
   * @throws whatever the effect throws
   * @returns the write of its completion record, in flight (see the class comment); nothing when
   *   the effect was found completed, or the gate refused it, and it did not run
   */
  async run(
    request: SideEffectRequest,
    context: { readonly idempotencyKey: string; readonly effectKey: string },
    clock: InvocationClock,
    gate?: Promise<boolean>,
  ): Promise<SideEffectRan | undefined> {
    const lambdaContext = clock.lambdaContext;
    if (lambdaContext === undefined)
      throw new NotAttempted('the invocation has no Lambda context: a side effect never starts without a finite lock expiry');
    this.#checkTimeLeft(request.name, clock);
    const call: GuardedCall = {
      effectKey: context.effectKey,
      idempotencyKey: context.idempotencyKey,
      name: request.name,
      input: request.input ?? null,
    };
    const state = { refused: false };
    try {
      // Settled at once, so a gate that rejects before the lock is taken is never an unhandled rejection.
      const opened = gate?.then(
        (open) => open,
        () => false,
      );
      await this.#guard(lambdaContext, clock, opened, state)(call);
      const completionRecorded = this.#options.persistenceStore.takeCompletion(call);
      return completionRecorded === undefined ? undefined : { completionRecorded };
    } catch (error) {
      // Not started: Powertools deleted the lock it took.
      if (error instanceof GateRefused) return undefined;
      if (state.refused) {
        // Not started, but Powertools could not delete the lock: once more, or this very
        // invocation would meet it in its next round and wait for its own deadline.
        await this.#options.persistenceStore
          .deleteRecord(call as unknown as Parameters<BasePersistenceLayer['deleteRecord']>[0])
          .catch(() => undefined);
        return undefined;
      }
      if (!(error instanceof Error) || error.name !== 'IdempotencyAlreadyInProgressError') throw error;
      const expiry = await this.#lockExpiry(call);
      if (expiry === undefined) throw error;
      throw new NotAttempted(
        `side effect ${request.name} is in progress in another invocation; its lock expires at ${new Date(expiry).toISOString()}`,
        expiry,
        { cause: error },
      );
    }
  }

  /**
   * When the in-progress lock another invocation holds expires, in epoch milliseconds (its
   * deadline): Powertools' `IdempotencyAlreadyInProgressError` does not carry the record, so it
   * is read (one strongly consistent `GetItem`). The retry waits for it: an SQS message's
   * visibility, a Kafka record in the invocation. `undefined` when it cannot be read.
   */
  async #lockExpiry(call: GuardedCall): Promise<number | undefined> {
    try {
      const record = await this.#options.persistenceStore.getRecord(call as unknown as Parameters<BasePersistenceLayer['getRecord']>[0]);
      const expiry = record.inProgressExpiryTimestamp;
      return typeof expiry === 'number' && Number.isFinite(expiry) ? expiry : undefined;
    } catch {
      return undefined;
    }
  }
}
