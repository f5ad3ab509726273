import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import type { BasePersistenceLayer } from '@aws-lambda-powertools/idempotency/persistence';
import type { Context } from 'aws-lambda';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ConsumerDefinitionError, NotAttempted } from '../errors.js';
import type { InvocationClock, SideEffectExecutor } from '../engine/Unit.js';
import type { SideEffectHandler, SideEffectRequest } from '../types.js';

/** Options of {@link SideEffectRunner}. */
export interface SideEffectRunnerOptions {
  /** The user's effects, by name. */
  readonly handlers: Readonly<Record<string, SideEffectHandler>>;
  /** Where Powertools keeps its idempotency records (a `DynamoDBPersistenceLayer` on the idempotency table). */
  readonly persistenceStore: BasePersistenceLayer;
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
  #guard(lambdaContext: Context, clock: InvocationClock): (call: GuardedCall) => Promise<unknown> {
    const options = this.#options;
    const config = new IdempotencyConfig({
      eventKeyJmesPath: 'effectKey',
      expiresAfterSeconds: options.expiresAfterSeconds,
      throwOnNoIdempotencyKey: true,
      lambdaContext,
    });
    return makeIdempotent(
      async (call: GuardedCall): Promise<{ readonly done: true }> => {
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

  /**
   * Runs one effect, at most once per effect key (see the class comment).
   *
   * @throws NotAttempted when the invocation has no Lambda context (`clock.lambdaContext`) or too little time is left to start
   * @throws Powertools' `IdempotencyAlreadyInProgressError` when another invocation holds the lock
   * @throws whatever the effect throws
   */
  async run(
    request: SideEffectRequest,
    context: { readonly idempotencyKey: string; readonly effectKey: string },
    clock: InvocationClock,
  ): Promise<void> {
    const lambdaContext = clock.lambdaContext;
    if (lambdaContext === undefined)
      throw new NotAttempted('the invocation has no Lambda context: a side effect never starts without a finite lock expiry');
    const remaining = clock.remainingTimeMs();
    if (!(remaining >= this.#options.minRemainingMs)) {
      throw new NotAttempted(
        `too little time left to start side effect ${request.name} (${Math.max(0, Math.floor(remaining))} ms; needs ${this.#options.minRemainingMs} ms)`,
      );
    }
    const call: GuardedCall = {
      effectKey: context.effectKey,
      idempotencyKey: context.idempotencyKey,
      name: request.name,
      input: request.input ?? null,
    };
    try {
      await this.#guard(lambdaContext, clock)(call);
    } catch (error) {
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
