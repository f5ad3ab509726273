import { isConsumerError, isNotAttempted, toFailureReason } from './errors.js';
import { MAX_ERROR_MESSAGE_LENGTH } from './dlq/deadLetterMessage.js';
import type { ErrorClassification } from './types.js';

// One limit for the logs and the dead-letter attribute: the DLQ message format owns it.
export { MAX_ERROR_MESSAGE_LENGTH };

/** The verdict on one failure. */
export interface Classification {
  /** Whether a later attempt may succeed. */
  readonly retryable: boolean;
  /** The dead-letter reason when not retryable. */
  readonly reason: string | undefined;
  /** The error's `name` (e.g. `ValidationError`, `ProvisionedThroughputExceededException`), at most 128 characters. */
  readonly errorType: string;
  /** The error's message, at most `MAX_ERROR_MESSAGE_LENGTH` (1,024) characters. */
  readonly errorMessage: string;
  /**
   * Whether this failure used up one of the message's attempts. A delivery that was not
   * attempted (a side-effect lock held elsewhere, too little time left, an earlier message of
   * its FIFO group or Kafka partition failed) does not count.
   */
  readonly countsAsAttempt: boolean;
  /** When the message may be tried again, in epoch milliseconds, if known (a side-effect lock's expiry). */
  readonly retryAt?: number;
  /** `true` for a `PredecessorNotApplied` (or a subclass): the message waits for an earlier one of its ordering key and may be parked. */
  readonly waitsForPredecessor?: true;
}

/** Powertools idempotency's "another invocation holds the lock" error, recognised by name (no import at cold start). */
interface InProgressError {
  readonly name: 'IdempotencyAlreadyInProgressError';
  readonly existingRecord?: { readonly inProgressExpiryTimestamp?: number; readonly expiryTimestamp?: number };
}

/**
 * The one place that decides what happens to a failed message.
 *
 * - A `NonRetryableError` (the library's `ValidationError`, `MissingIdempotencyKey`,
 *   `IdempotencyConflict`, `UnknownMessageType`, `BusinessRuleViolation`,
 *   `ConditionalWriteFailed`, `InvalidWrite`, or a user's subclass) is dead-lettered at once with
 *   its `reason`.
 * - A `RetryableError` (`PredecessorNotApplied`, `TransactionConflict`, a user's subclass) is
 *   retried; `NotAttempted` is retried without counting an attempt.
 * - Powertools' `IdempotencyAlreadyInProgressError` (another invocation holds a side effect's
 *   lock) is retried without counting an attempt, not before the lock expires.
 * - Anything else goes to the user's `classifyError` first, then is retryable by default:
 *   throttling, timeouts, 5xx, network errors, and errors nobody knows. An unknown error is
 *   retried rather than dead-lettered because a deploy or a dependency may fix it; if not, it
 *   reaches the DLQ as `RetriesExhausted` with its type and message.
 *
 * @param error - anything that was thrown
 * @param userClassify - the consumer's `classifyError` option
 */
export function classify(error: unknown, userClassify?: (error: unknown) => ErrorClassification | undefined): Classification {
  const errorType = errorName(error);
  const errorMessage = errorText(error);
  if (isNotAttempted(error)) {
    return {
      retryable: true,
      reason: undefined,
      errorType,
      errorMessage,
      countsAsAttempt: false,
      ...(error.retryAt === undefined ? {} : { retryAt: error.retryAt }),
    };
  }
  if (isConsumerError(error)) {
    // By its marks, not `instanceof`: an error from another copy of the library counts the same.
    return error.retryable
      ? {
          retryable: true,
          reason: undefined,
          errorType,
          errorMessage,
          countsAsAttempt: true,
          ...((error as { waitsForPredecessor?: unknown }).waitsForPredecessor === true ? { waitsForPredecessor: true as const } : {}),
        }
      : {
          retryable: false,
          reason: typeof error.reason === 'string' ? toFailureReason(error.reason) : toFailureReason(errorType),
          errorType,
          errorMessage,
          countsAsAttempt: true,
        };
  }
  if (isInProgress(error)) {
    const expiry = error.existingRecord?.inProgressExpiryTimestamp;
    return {
      retryable: true,
      reason: undefined,
      errorType,
      errorMessage,
      countsAsAttempt: false,
      ...(expiry === undefined ? {} : { retryAt: expiry }),
    };
  }
  let verdict: ErrorClassification | undefined;
  try {
    verdict = userClassify?.(error);
  } catch {
    verdict = undefined;
  }
  if (verdict !== undefined && !verdict.retryable) {
    return { retryable: false, reason: toFailureReason(verdict.reason), errorType, errorMessage, countsAsAttempt: true };
  }
  return { retryable: true, reason: undefined, errorType, errorMessage, countsAsAttempt: true };
}

function isInProgress(error: unknown): error is InProgressError {
  return error instanceof Error && error.name === 'IdempotencyAlreadyInProgressError';
}

function errorName(error: unknown): string {
  const name = error instanceof Error ? error.name || 'Error' : typeof error;
  return name.slice(0, 128);
}

function errorText(error: unknown): string {
  const text = error instanceof Error ? error.message : typeof error === 'string' ? error : `a thrown ${typeof error}`;
  return text.length <= MAX_ERROR_MESSAGE_LENGTH ? text : `${text.slice(0, MAX_ERROR_MESSAGE_LENGTH - 1)}…`;
}
