/**
 * The consumer's errors. Each has a stable `name`; `lambda/classifier.ts` decides from it
 * whether the record is retried or dead-lettered, and the name of a non-retryable error
 * becomes the dead-letter message's `failureReason`.
 *
 * @module
 */

/** Reasons a message is dead-lettered: the values of the DLQ's `failureReason` attribute. */
export const FailureReason = {
  /** The body is not JSON, or does not match the event schema. */
  ValidationError: 'ValidationError',
  /** The body has no usable `eventId`. */
  MissingIdempotencyKey: 'MissingIdempotencyKey',
  /** The inbox already holds this `eventId` with a different payload hash. */
  IdempotencyConflict: 'IdempotencyConflict',
  /** The `type` is not one the consumer knows. */
  UnknownMessageType: 'UnknownMessageType',
  /** The event can never apply to the order (e.g. `OrderShipped` for a cancelled order). */
  BusinessRuleViolation: 'BusinessRuleViolation',
  /** A retryable failure happened on the last allowed attempt. */
  RetriesExhausted: 'RetriesExhausted',
} as const;
export type FailureReason = (typeof FailureReason)[keyof typeof FailureReason];

/** Every failure reason, for validation of CLI flags and metric dimensions. */
export const failureReasons: readonly FailureReason[] = Object.values(FailureReason);

/** Base of the consumer's errors: sets `name` to the subclass's name and forwards `cause`. */
export abstract class ConsumerError extends Error {
  /** Whether a later attempt may succeed. */
  abstract readonly retryable: boolean;

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Base of the errors that no retry can fix. Their `name` is a {@link FailureReason}. */
export abstract class NonRetryableError extends ConsumerError {
  readonly retryable = false;
}

/** Base of the errors that a later attempt may not meet. */
export abstract class RetryableError extends ConsumerError {
  readonly retryable = true;
}

/** The body is not JSON, or fails the schema. `issues` lists what is wrong, field by field. */
export class ValidationError extends NonRetryableError {
  constructor(
    message: string,
    public readonly issues: readonly string[] = [],
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The body has no `eventId` (the idempotency key), or it is empty. */
export class MissingIdempotencyKey extends NonRetryableError {}

/** The `type` is not one of the known event types. */
export class UnknownMessageType extends NonRetryableError {
  constructor(public readonly messageType: unknown) {
    super(`unknown message type ${JSON.stringify(messageType)}`);
  }
}

/** The inbox holds this idempotency key with a different payload hash. */
export class IdempotencyConflict extends NonRetryableError {
  constructor(
    public readonly idempotencyKey: string,
    public readonly storedPayloadHash: string,
    public readonly payloadHash: string,
  ) {
    super(
      `idempotency key ${idempotencyKey} was already processed with payload hash ${storedPayloadHash}; ` +
        `this message has ${payloadHash}`,
    );
  }
}

/** The event can never apply to the order in its current state. */
export class BusinessRuleViolation extends NonRetryableError {}

/**
 * The event's predecessor has not been applied yet (e.g. `OrderPaid` before `OrderPlaced` on a
 * standard queue). It may apply once the predecessor arrives, so it is retried.
 */
export class PredecessorNotApplied extends RetryableError {}

/**
 * Another writer changed the order between this record's read and its write (the version
 * condition of the transaction failed), or DynamoDB reported a transaction conflict.
 */
export class TransactionConflict extends RetryableError {}
