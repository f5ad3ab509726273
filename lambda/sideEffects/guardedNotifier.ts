import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import type { BasePersistenceLayer } from '@aws-lambda-powertools/idempotency/persistence';
import type { Context } from 'aws-lambda';
import type { PaymentNotification } from '../domain/order.js';
import type { Notifier } from './Notifier.js';

/** Options of {@link createGuardedNotifier}. */
export interface GuardedNotifierOptions {
  /** The unguarded notifier. */
  readonly notifier: Notifier;
  /** Where the idempotency records live (a `DynamoDBPersistenceLayer` in production). */
  readonly persistenceStore: BasePersistenceLayer;
  /** How long a completed send is remembered, in seconds (`expiresAfterSeconds`). */
  readonly expiresAfterSeconds: number;
}

/** A notifier whose sends happen at most once per `eventId`, and the hook that arms it. */
export interface GuardedNotifier extends Notifier {
  /**
   * Registers the invocation's Lambda context. Call it at the start of every invocation: the
   * in-progress lock then expires at the invocation's deadline, so a delivery after a timeout
   * takes the lock over instead of waiting for the whole idempotency window (case C2).
   */
  registerLambdaContext(context: Context): void;
}

/** Thrown when a guarded send is attempted before any Lambda context was registered. */
export class LambdaContextNotRegistered extends Error {
  constructor() {
    super('registerLambdaContext() must be called before a guarded side effect: without it the in-progress lock has no expiry');
    this.name = 'LambdaContextNotRegistered';
  }
}

/**
 * Guards a notifier with Powertools idempotency (`makeIdempotent` keyed on `eventId`): a send
 * that completed is not repeated when the message is redelivered (a crash between the send and
 * the inbox commit), a send in progress elsewhere raises `IdempotencyAlreadyInProgressError`
 * (retryable), and a lock left by an invocation that timed out is taken over after its
 * deadline.
 *
 * The guard refuses to send before `registerLambdaContext` has been called, so an in-progress
 * record is never written without a finite expiry.
 *
 * @throws LambdaContextNotRegistered from `paymentReceived` when no context was registered
 */
export function createGuardedNotifier(options: GuardedNotifierOptions): GuardedNotifier {
  const config = new IdempotencyConfig({
    eventKeyJmesPath: 'eventId',
    expiresAfterSeconds: options.expiresAfterSeconds,
    throwOnNoIdempotencyKey: true,
  });
  let registered = false;
  const send = makeIdempotent(
    async (notification: PaymentNotification): Promise<{ readonly sent: string }> => {
      await options.notifier.paymentReceived(notification);
      return { sent: notification.eventId };
    },
    { persistenceStore: options.persistenceStore, config },
  );
  return {
    registerLambdaContext(context: Context): void {
      config.registerLambdaContext(context);
      registered = true;
    },
    async paymentReceived(notification: PaymentNotification): Promise<void> {
      if (!registered) throw new LambdaContextNotRegistered();
      await send(notification);
    },
  };
}
