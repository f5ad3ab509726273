/**
 * The retry backoff's arithmetic, apart from the SQS client that applies it (`retryBackoff.ts`), so
 * that a handler can compute delays without loading `@aws-sdk/client-sqs` at import.
 *
 * @module
 */

/**
 * SQS's largest visibility timeout, in seconds (12 hours, counted from the receipt: a change
 * cannot extend a message beyond it), less a margin for the time already spent since.
 */
export const MAX_VISIBILITY_SECONDS = 43_200 - 900;

/**
 * The delay before a failed message comes back, in seconds:
 * `min(baseSeconds × 2^(attempt − 1), maxSeconds)`, 0 when `baseSeconds` is 0.
 *
 * @param attempt - the failed delivery's attempt number (from 1)
 * @param baseSeconds - the delay after the first failed receive, in seconds
 * @param maxSeconds - the upper bound, in seconds (capped at SQS's 43,200)
 */
export function backoffSeconds(attempt: number, baseSeconds: number, maxSeconds: number): number {
  if (baseSeconds <= 0) return 0;
  const exponent = Math.max(0, Math.min(attempt - 1, 30));
  return Math.min(baseSeconds * 2 ** exponent, maxSeconds, MAX_VISIBILITY_SECONDS);
}
