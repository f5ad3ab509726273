/**
 * The consumer's metrics per outcome (`MetricsObserver`): one count per outcome, and the parking
 * counts beside them (`MessagesParked` within `RetryableFailures`, `AppliedFromPark` within
 * `MessagesApplied`).
 */
import type { Metrics } from '@aws-lambda-powertools/metrics';
import { describe, expect, it } from 'vitest';
import { MetricsObserver } from '../../packages/idempotent-consumer/src/observability/MetricsObserver.js';
import type { OutcomeRecord } from '../../packages/idempotent-consumer/src/observability/outcomes.js';

function recording() {
  const added: string[] = [];
  const single = { addDimension: () => undefined, addMetric: (name: string) => added.push(`${name} (by reason)`) };
  const metrics = { addMetric: (name: string) => added.push(name), singleMetric: () => single } as unknown as Metrics;
  return { added, observer: new MetricsObserver(metrics) };
}

const outcome = (fields: Partial<OutcomeRecord>): OutcomeRecord => ({
  outcome: 'applied',
  messageId: 'm-1',
  idempotencyKey: 'k-1',
  orderingKey: 'o-1',
  fields: {},
  attempt: 1,
  reason: undefined,
  errorType: undefined,
  errorMessage: undefined,
  countsAsAttempt: undefined,
  durationMs: 3,
  ...fields,
});

describe('MetricsObserver', () => {
  it('counts each outcome once, beside its latency', () => {
    const { added, observer } = recording();
    observer.onOutcome(outcome({ outcome: 'applied' }));
    observer.onOutcome(outcome({ outcome: 'duplicate' }));
    observer.onOutcome(outcome({ outcome: 'retried', errorType: 'ThrottlingException', countsAsAttempt: true }));
    observer.onOutcome(outcome({ outcome: 'dead-lettered', reason: 'ValidationError' }));
    expect(added.filter((name) => name !== 'ProcessingLatency')).toEqual([
      'MessagesApplied',
      'DuplicatesAcknowledged',
      'RetryableFailures',
      'DeadLettered',
      'DeadLettered (by reason)',
    ]);
    expect(added.filter((name) => name === 'ProcessingLatency')).toHaveLength(4);
  });

  it('counts a parked retry and a message applied from the park in their own metrics too', () => {
    const { added, observer } = recording();
    observer.onOutcome(outcome({ outcome: 'retried', errorType: 'PredecessorNotApplied', countsAsAttempt: true, parked: true }));
    observer.onOutcome(outcome({ outcome: 'applied', fromPark: true }));
    observer.onOutcome(outcome({ outcome: 'duplicate', fromPark: true }));
    expect(added.filter((name) => name !== 'ProcessingLatency')).toEqual([
      'RetryableFailures',
      'MessagesParked',
      'MessagesApplied',
      'AppliedFromPark',
      'DuplicatesAcknowledged',
    ]);
  });
});
