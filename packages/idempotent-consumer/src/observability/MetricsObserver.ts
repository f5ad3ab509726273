import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { FAILURE_REASON_DIMENSION, MetricName } from '../settings/metricNames.js';
import { Outcome, type OutcomeObserver, type OutcomeRecord } from './outcomes.js';

export { FAILURE_REASON_DIMENSION, MetricName };

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
        if (record.fromPark === true) this.metrics.addMetric(MetricName.AppliedFromPark, MetricUnit.Count, 1);
        break;
      case Outcome.Duplicate:
        this.metrics.addMetric(MetricName.DuplicatesAcknowledged, MetricUnit.Count, 1);
        break;
      case Outcome.Retried:
        this.metrics.addMetric(MetricName.RetryableFailures, MetricUnit.Count, 1);
        if (record.parked === true) this.metrics.addMetric(MetricName.MessagesParked, MetricUnit.Count, 1);
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
