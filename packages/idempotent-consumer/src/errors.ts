/**
 * The library's errors, and the base classes of the user's own. Each error has a stable `name`;
 * `classifier.ts` decides from its `retryable` flag whether the message is retried or
 * dead-lettered, and the `reason` of a non-retryable error becomes the dead-letter message's
 * failure reason.
 *
 * Names are set explicitly, never taken from the class name alone: a minified bundle renames
 * classes. A user's subclass without an explicit reason uses its class name, so bundle with
 * esbuild's `keepNames` (the construct does), or pass `reason` to the constructor.
 *
 * @module
 */

export { FailureReason } from './dlq/failureReasons.js';
import { FailureReason, isValidFailureReason } from './dlq/failureReasons.js';

/**
 * `reason` made into a valid failure reason (see `isValidFailureReason`): other characters
 * become `_`, cut to 64; the reserved `none` (the DLQ tool's word for "moved by the redrive
 * policy") becomes `none_`.
 */
export function toFailureReason(reason: string): string {
  const cleaned = reason.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 64);
  if (cleaned === '') return 'Unknown';
  return isValidFailureReason(cleaned) ? cleaned : `${cleaned}_`.slice(0, 64);
}

/** Options of the library's error constructors. */
export interface ConsumerErrorOptions extends ErrorOptions {
  /** The dead-letter reason of a non-retryable error. @default the error's `name` */
  readonly reason?: string;
}

/**
 * Marks the library's errors across copies of the library: a project can load two (a bundle and
 * a tool, a package installed twice, a loader's namespace), and `instanceof` sees only its own
 * copy's classes. The classifier reads these marks as well.
 */
const consumerErrorMark = Symbol.for('idempotent-consumer.ConsumerError');
const notAttemptedMark = Symbol.for('idempotent-consumer.NotAttempted');

/** Base of the library's errors and of the user's own: sets `name`, forwards `cause`. */
export abstract class ConsumerError extends Error {
  /** Whether a later attempt may succeed. */
  abstract readonly retryable: boolean;

  constructor(message: string, options?: ConsumerErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    Object.defineProperty(this, consumerErrorMark, { value: true });
  }
}

/**
 * Whether `error` is a {@link ConsumerError}, thrown by this copy of the library or another one
 * (where `instanceof` says no).
 */
export function isConsumerError(error: unknown): error is ConsumerError & { readonly reason?: string } {
  return (
    error instanceof ConsumerError ||
    (typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[consumerErrorMark] === true)
  );
}

/** Whether `error` is a `NotAttempted`, from this copy of the library or another one. */
export function isNotAttempted(error: unknown): error is NotAttempted {
  return (
    error instanceof NotAttempted || (isConsumerError(error) && (error as unknown as Record<symbol, unknown>)[notAttemptedMark] === true)
  );
}

/**
 * Base of errors no retry can fix: the message is dead-lettered at once, with `reason` (by default
 * the subclass's name) as its failure reason.
 *
 * @example
 * class OutOfStock extends NonRetryableError {}
 * throw new OutOfStock(`sku ${sku} has ${available} left, ${quantity} asked`);
 */
export abstract class NonRetryableError extends ConsumerError {
  /** Always `false`: the message is dead-lettered at once, with {@link NonRetryableError.reason}. */
  readonly retryable = false as const;
  /** The dead-letter failure reason. */
  readonly reason: string;

  constructor(message: string, options?: ConsumerErrorOptions) {
    super(message, options);
    this.reason = toFailureReason(options?.reason ?? this.name);
  }
}

/**
 * Base of errors a later attempt may not meet (e.g. an event whose predecessor has not arrived):
 * the message is retried, and dead-lettered as `RetriesExhausted` when its attempts run out.
 */
export abstract class RetryableError extends ConsumerError {
  /** Always `true`: the message is reported as a batch item failure and delivered again. */
  readonly retryable = true as const;
}

/** The body is not JSON, fails the schema, or an id is not well-formed. `issues` lists what is wrong, path by path (never values). */
export class ValidationError extends NonRetryableError {
  constructor(
    message: string,
    /**
     * What is wrong, one sentence per issue, each naming its path in the body (never a value
     * from it). @default [] (none listed)
     */
    public readonly issues: readonly string[] = [],
    options?: ErrorOptions,
  ) {
    super(message, { ...options, reason: FailureReason.ValidationError });
    this.name = 'ValidationError';
  }
}

/** The body has no idempotency key, or it is empty, not a string, too long or not well-formed. */
export class MissingIdempotencyKey extends NonRetryableError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, { ...options, reason: FailureReason.MissingIdempotencyKey });
    this.name = 'MissingIdempotencyKey';
  }
}

/** The event's type is not one the consumer knows. Throw it from a `parse` function. */
export class UnknownMessageType extends NonRetryableError {
  constructor(messageType: unknown, options?: ErrorOptions) {
    super(`unknown message type ${describeValue(messageType)}`, { ...options, reason: FailureReason.UnknownMessageType });
    this.name = 'UnknownMessageType';
  }
}

/** The inbox holds this idempotency key with a different payload hash: the producer reused a key for another event. */
export class IdempotencyConflict extends NonRetryableError {
  constructor(
    /** The idempotency key the producer reused. */
    public readonly idempotencyKey: string,
    /** The payload hash the inbox row holds: that of the event first applied with this key. */
    public readonly storedPayloadHash: string,
    /** The payload hash of this message, which differs from {@link IdempotencyConflict.storedPayloadHash}. */
    public readonly payloadHash: string,
  ) {
    super(
      `idempotency key ${describeValue(idempotencyKey)} was already applied with payload hash ${storedPayloadHash}; this message has ${payloadHash}`,
      { reason: FailureReason.IdempotencyConflict },
    );
    this.name = 'IdempotencyConflict';
  }
}

/** The event can never apply to the stored state. Throw it (or your own `NonRetryableError`) from `decide`. */
export class BusinessRuleViolation extends NonRetryableError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, { ...options, reason: FailureReason.BusinessRuleViolation });
    this.name = 'BusinessRuleViolation';
  }
}

/** A condition a decision put on its own write failed at commit time, seen in the same transaction as the inbox row's absence. */
export class ConditionalWriteFailed extends NonRetryableError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, { ...options, reason: FailureReason.ConditionalWriteFailed });
    this.name = 'ConditionalWriteFailed';
  }
}

/** DynamoDB refused one of the decision's writes as invalid (`ValidationError` cancellation reason). */
export class InvalidWrite extends NonRetryableError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, { ...options, reason: FailureReason.InvalidWrite });
    this.name = 'InvalidWrite';
  }
}

/**
 * The event's predecessor has not been applied yet; it may apply once it has. Throw it from `decide`.
 *
 * On a standard queue with `retry.parkOutOfOrder` on, a message that fails with it (or a subclass)
 * is parked: its record waits in the inbox table and is decided again as soon as a message of its
 * ordering key is applied (see docs/parking.md).
 */
export class PredecessorNotApplied extends RetryableError {
  /** Marks the error as a wait for a predecessor (read by mark, not `instanceof`: another copy of the library counts the same). */
  readonly waitsForPredecessor = true;
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'PredecessorNotApplied';
  }
}

/** Another writer changed an item between this decision's view and its commit, and retries within the invocation ran out. */
export class TransactionConflict extends RetryableError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'TransactionConflict';
  }
}

/**
 * A delivery that was not attempted: another invocation holds its side-effect lock, too little
 * time is left to start, or an earlier message of its FIFO group or Kafka partition failed. It
 * is retried and its attempt is not counted.
 */
export class NotAttempted extends RetryableError {
  constructor(
    message: string,
    /** When it may be tried again, in epoch milliseconds, if known (e.g. a side-effect lock's expiry). */
    public readonly retryAt?: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'NotAttempted';
    Object.defineProperty(this, notAttemptedMark, { value: true });
  }
}

/**
 * The consumer's definition is wrong (e.g. `decide` wrote to a table that is not in `tables`, or
 * read a key that `read` did not name). Classified as an unknown error: retried, so a deploy can
 * fix it, and dead-lettered as `RetriesExhausted` with this message if it does not.
 */
export class ConsumerDefinitionError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ConsumerDefinitionError';
  }
}

/**
 * A short description of a value taken from a message, safe for logs: an identifier-like string
 * (at most 64 of `A-Za-z0-9_.:-`) is shown; anything else only by its kind and length, so no free
 * text from a body (a name, an e-mail address) reaches an error message.
 */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') {
    return /^[A-Za-z0-9_.:-]{1,64}$/.test(value) ? JSON.stringify(value) : `(a string of ${value.length} characters)`;
  }
  if (typeof value === 'number' || typeof value === 'boolean' || value === null || value === undefined) return String(value);
  return Array.isArray(value) ? `(an array of ${value.length})` : `(${typeof value})`;
}
