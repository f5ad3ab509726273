import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { Outcome, type OutcomeObserver, type OutcomeRecord } from './outcomes.js';

/** Names of the consumer's CloudWatch metrics; the construct's alarms and dashboard use them. */
export const MetricName = {
  /** Messages whose effects were committed (Count). */
  MessagesApplied: 'MessagesApplied',
  /** Messages acknowledged as duplicates, nothing written (Count). */
  DuplicatesAcknowledged: 'DuplicatesAcknowledged',
  /** Messages reported as batch item failures, to be redelivered (Count). */
  RetryableFailures: 'RetryableFailures',
  /** Messages sent to the dead-letter queue; also emitted with the `failureReason` dimension (Count). */
  DeadLettered: 'DeadLettered',
  /** Time from the start of a message's batch to its outcome, in milliseconds. */
  ProcessingLatency: 'ProcessingLatency',
  /** Records per invocation (Count). */
  BatchSize: 'BatchSize',
} as const;

/** The dimension that splits `DeadLettered` by reason (reasons are open: a user's own appear as they come). */
export const FAILURE_REASON_DIMENSION = 'failureReason';

/**
 * Records the outcomes as CloudWatch metrics in the embedded metric format (Powertools Metrics).
 * The handler calls `metrics.publishStoredMetrics()` once per invocation; `DeadLettered` by reason
 * is a single metric written at once, with the reason as its dimension.
 */
export class MetricsObserver implements OutcomeObserver {
  constructor(private readonly metrics: Metrics) {}

  onOutcome(record: OutcomeRecord): void {
    this.metrics.addMetric(MetricName.ProcessingLatency, MetricUnit.Milliseconds, record.durationMs);
    switch (record.outcome) {
      case Outcome.Applied:
        this.metrics.addMetric(MetricName.MessagesApplied, MetricUnit.Count, 1);
        break;
      case Outcome.Duplicate:
        this.metrics.addMetric(MetricName.DuplicatesAcknowledged, MetricUnit.Count, 1);
        break;
      case Outcome.Retried:
        this.metrics.addMetric(MetricName.RetryableFailures, MetricUnit.Count, 1);
        break;
      case Outcome.DeadLettered: {
        this.metrics.addMetric(MetricName.DeadLettered, MetricUnit.Count, 1);
        const byReason = this.metrics.singleMetric();
        byReason.addDimension(FAILURE_REASON_DIMENSION, record.reason ?? 'Unknown');
        byReason.addMetric(MetricName.DeadLettered, MetricUnit.Count, 1);
        break;
      }
    }
  }
}
