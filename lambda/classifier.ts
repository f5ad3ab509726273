import { ConsumerError, FailureReason } from './errors.js';

/** What the consumer does with a record that failed. */
export const Disposition = {
  /** Report it as a batch item failure: the event source redelivers it. */
  Retry: 'retry',
  /** Send it to the dead-letter queue with its reason, then acknowledge it. */
  DeadLetter: 'dead-letter',
} as const;
export type Disposition = (typeof Disposition)[keyof typeof Disposition];

/** The verdict on one failed record. */
export interface Classification {
  readonly disposition: Disposition;
  /** Why it is dead-lettered; `undefined` when it is retried. */
  readonly reason: FailureReason | undefined;
  /** The error's `name` (e.g. `ValidationError`, `ProvisionedThroughputExceededException`). */
  readonly errorType: string;
  /** The error's message (not truncated here: the DLQ writer truncates). */
  readonly errorMessage: string;
}

/** Where the record stands in its delivery attempts. */
export interface AttemptInfo {
  /** This delivery's attempt number, from 1 (SQS `ApproximateReceiveCount`). */
  readonly attempt: number;
  /** The attempt after which the event source gives up (SQS `maxReceiveCount`). */
  readonly maxAttempts: number;
}

/**
 * The one place that decides what happens to a failed record.
 *
 * - The consumer's non-retryable errors (`ValidationError`, `MissingIdempotencyKey`,
 *   `IdempotencyConflict`, `UnknownMessageType`, `BusinessRuleViolation`) are dead-lettered at
 *   once with their name as the reason.
 * - Everything else is retryable: the consumer's retryable errors (`PredecessorNotApplied`,
 *   `TransactionConflict`), throttling, timeouts, 5xx and network errors, a side-effect lock
 *   held by another invocation (`IdempotencyAlreadyInProgressError`), and any error the
 *   consumer does not know. An unknown error is retried rather than dead-lettered because a
 *   deploy or a dependency may fix it; if it does not, it reaches the DLQ as
 *   `RetriesExhausted` with its type and message, ready to be redriven once fixed.
 * - A retryable failure on the last attempt (`attempt ≥ maxAttempts`) is dead-lettered as
 *   `RetriesExhausted`, so it reaches the DLQ with the last error attached instead of being
 *   moved there by the redrive policy without one.
 *
 * @param error - anything a record handler threw
 * @param attempt - the delivery attempt; omit it for sources without a receive count
 */
export function classify(error: unknown, attempt?: AttemptInfo): Classification {
  const errorType = errorName(error);
  const errorMessage = error instanceof Error ? error.message : String(error);
  if (isNonRetryable(error)) {
    return { disposition: Disposition.DeadLetter, reason: errorType as FailureReason, errorType, errorMessage };
  }
  if (attempt !== undefined && attempt.attempt >= attempt.maxAttempts) {
    return { disposition: Disposition.DeadLetter, reason: FailureReason.RetriesExhausted, errorType, errorMessage };
  }
  return { disposition: Disposition.Retry, reason: undefined, errorType, errorMessage };
}

/** Whether no retry can ever fix this error. */
export function isNonRetryable(error: unknown): boolean {
  return error instanceof ConsumerError && !error.retryable;
}

function errorName(error: unknown): string {
  if (error instanceof Error) return error.name || 'Error';
  return typeof error;
}
