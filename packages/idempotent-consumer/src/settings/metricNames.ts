/**
 * Names of the consumer's CloudWatch metrics (Powertools Metrics, embedded metric format, namespace
 * `METRICS_NAMESPACE`, dimension `service` = the consumer's name). The engine emits them; the CDK
 * monitoring's alarms and dashboard read them. Light (no AWS SDK, no AWS CDK), so both can import it.
 *
 * @module
 */

/** The consumer's metrics, by name. */
export const MetricName = {
  /** Messages whose effects were committed (Count). */
  MessagesApplied: 'MessagesApplied',
  /** Messages acknowledged as duplicates, nothing written (Count). */
  DuplicatesAcknowledged: 'DuplicatesAcknowledged',
  /** Messages reported as batch item failures, to be redelivered (Count). */
  RetryableFailures: 'RetryableFailures',
  /** Messages sent to the dead-letter queue; also emitted with the `failureReason` dimension (Count). */
  DeadLettered: 'DeadLettered',
  /** Retryable failures whose record was parked to wait for its predecessor (`retry.parkOutOfOrder`; a part of `RetryableFailures`) (Count). */
  MessagesParked: 'MessagesParked',
  /** Parked messages applied by the invocation that applied their predecessor, not redelivered (a part of `MessagesApplied`) (Count). */
  AppliedFromPark: 'AppliedFromPark',
  /** Time spent on one message, in milliseconds. */
  ProcessingLatency: 'ProcessingLatency',
  /** Records per invocation (Count). */
  BatchSize: 'BatchSize',
} as const;
/** One of the `MetricName` values: the name of one of the consumer's CloudWatch metrics. */
export type MetricName = (typeof MetricName)[keyof typeof MetricName];

/** The dimension that splits `DeadLettered` by reason (beside `service`). */
export const FAILURE_REASON_DIMENSION = 'failureReason';
