/**
 * Failure reasons: the value of a dead-letter message's `ic.failureReason` attribute.
 *
 * A reason is open: any name a user's error carries, as long as it is 1 to 64 letters, digits,
 * `_`, `.` or `-` ({@link isValidFailureReason}). The library's own reasons are the
 * {@link FailureReason} constants. The DLQ tool groups and selects messages by reason, and only
 * warns about a reason it has not seen.
 *
 * @module
 */

/** The reasons the library itself dead-letters a message with. */
export const FailureReason = {
  /** The body is not JSON, or does not match the event schema. */
  ValidationError: 'ValidationError',
  /** The body has no usable idempotency key. */
  MissingIdempotencyKey: 'MissingIdempotencyKey',
  /** The inbox already holds this idempotency key with a different payload hash. */
  IdempotencyConflict: 'IdempotencyConflict',
  /** The message's type is not one the consumer knows. */
  UnknownMessageType: 'UnknownMessageType',
  /** The event can never apply to the state it addresses. */
  BusinessRuleViolation: 'BusinessRuleViolation',
  /** A condition the decision put on a write failed at commit time, on a consistent view. */
  ConditionalWriteFailed: 'ConditionalWriteFailed',
  /** DynamoDB refused a write of the decision as invalid (e.g. an item over 400 KB). */
  InvalidWrite: 'InvalidWrite',
  /** A retryable failure happened on the last allowed attempt. */
  RetriesExhausted: 'RetriesExhausted',
} as const;

/** One of the library's own reasons. A user's reason is any string {@link isValidFailureReason} accepts. */
export type BuiltInFailureReason = (typeof FailureReason)[keyof typeof FailureReason];

/** The library's own reasons, in declaration order. */
export const builtInFailureReasons: readonly BuiltInFailureReason[] = Object.values(FailureReason);

/**
 * The word the DLQ tool uses for messages that carry no reason: those the queue's redrive policy
 * moved (after crashes or timeouts). It is reserved: no error may use it as its reason.
 */
export const NO_FAILURE_REASON = 'none';

/** What a reason name looks like: 1 to 64 of `A-Z a-z 0-9 _ . -`. */
export const FAILURE_REASON_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * Whether `name` can be a failure reason: 1 to 64 of `A-Z a-z 0-9 _ . -`, and not the reserved
 * {@link NO_FAILURE_REASON} (in any case). The library's error classes and a user's
 * `classifyError` must give reasons that pass; the dead-letter writer refuses others.
 *
 * @example
 * isValidFailureReason('OutOfStock');        // true
 * isValidFailureReason('inventory.reserve'); // true
 * isValidFailureReason('out of stock');      // false (spaces)
 * isValidFailureReason('none');              // false (reserved)
 */
export function isValidFailureReason(name: string): boolean {
  return FAILURE_REASON_PATTERN.test(name) && name.toLowerCase() !== NO_FAILURE_REASON;
}
