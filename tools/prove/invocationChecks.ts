/**
 * The invariants checked after each invocation that returned a response: `outcome-agrees` (what
 * the consumer logged and counted for each message matches what its batch response reported) and
 * `own-attempts` (no message's attempt is counted for another message's failure).
 *
 * @module
 */
import { FailureReason, type OutcomeRecord } from 'idempotent-consumer';
import { FAILURE_REASON_DIMENSION, MetricName, Outcome } from 'idempotent-consumer/observability';
import { Invariant, type Violation } from './invariants.js';
import type { MetricPoint } from './recordingMetrics.js';

/** What one invocation reported, and what the checks need to judge it. */
export interface InvocationEvidence {
  /** The batch's message ids (the source's ids), in order. */
  readonly batchIds: readonly string[];
  /** The ids its response reported as batch item failures. */
  readonly failed: ReadonlySet<string>;
  /** The outcomes its `observer` received. */
  readonly outcomes: readonly OutcomeRecord[];
  /** The metrics it added. */
  readonly metrics: readonly MetricPoint[];
  /** The idempotency key of a message of the batch, when it has one. */
  readonly keyOf: (messageId: string) => string | undefined;
  /** Error types and reasons that name one message's own failure (see `Workload.attributableErrors`). */
  readonly attributable: ReadonlySet<string>;
  /** What a key's own messages may fail with. */
  readonly ownErrors: (key: string) => ReadonlySet<string>;
}

/** The violations of `outcome-agrees` and `own-attempts` in one invocation. */
export function checkInvocation(evidence: InvocationEvidence): Violation[] {
  const violations: Violation[] = [];
  const agree = (detail: string) => violations.push({ invariant: Invariant.outcomeAgrees, detail });
  const { batchIds, failed, outcomes, metrics } = evidence;
  const inBatch = new Set(batchIds);

  // A message taken up from the park (`retry.parkOutOfOrder`) is decided without being in the
  // batch: its outcome says `fromPark`, it is one outcome per invocation, and it is no batch item
  // (the invocation deletes it from the queue itself once it is settled).
  const byMessage = new Map<string, OutcomeRecord[]>();
  const fromPark = new Map<string, OutcomeRecord[]>();
  for (const record of outcomes) {
    if (record.fromPark === true) {
      if (inBatch.has(record.messageId))
        agree(`message ${record.messageId} of the batch had an outcome (${record.outcome}) decided from the park`);
      fromPark.set(record.messageId, [...(fromPark.get(record.messageId) ?? []), record]);
      continue;
    }
    if (!inBatch.has(record.messageId))
      agree(`an outcome (${record.outcome}) was reported for ${record.messageId}, which is not in the batch`);
    byMessage.set(record.messageId, [...(byMessage.get(record.messageId) ?? []), record]);
  }
  for (const [id, records] of fromPark) {
    if (records.length !== 1)
      agree(
        `message ${id} had ${records.length} outcomes decided from the park in one invocation (${records.map((r) => r.outcome).join(', ')})`,
      );
  }
  for (const record of outcomes) {
    if (record.parked === true && (record.outcome !== Outcome.Retried || record.fromPark === true))
      agree(
        `message ${record.messageId} was logged ${record.outcome}${record.fromPark === true ? ' from the park' : ''} and parked: only a retried delivery of the batch is parked`,
      );
  }
  for (const id of batchIds) {
    const records = byMessage.get(id) ?? [];
    if (records.length !== 1)
      agree(
        `message ${id} had ${records.length} outcomes in one invocation (${records.map((r) => r.outcome).join(', ') || 'none'}), expected exactly 1`,
      );
    const record = records[0];
    if (record === undefined) continue;
    const retried = record.outcome === Outcome.Retried;
    if (retried !== failed.has(id)) {
      agree(
        `message ${id} was logged ${record.outcome}${record.errorType === undefined ? '' : ` (${record.errorType})`} but the batch response ${failed.has(id) ? 'reported it as a batch item failure' : 'did not report it'}`,
      );
    }
  }

  const counted = (name: string, withReason?: string) =>
    metrics
      .filter(
        (point) =>
          point.name === name &&
          (withReason === undefined
            ? point.dimensions[FAILURE_REASON_DIMENSION] === undefined
            : point.dimensions[FAILURE_REASON_DIMENSION] === withReason),
      )
      .reduce((sum, point) => sum + point.value, 0);
  // The metrics count every outcome: the batch's and those decided from the park.
  const outcomesOf = (outcome: Outcome) =>
    outcomes.filter((record) => record.outcome === outcome && (inBatch.has(record.messageId) || record.fromPark === true));
  const pairs: [string, Outcome][] = [
    [MetricName.MessagesApplied, Outcome.Applied],
    [MetricName.DuplicatesAcknowledged, Outcome.Duplicate],
    [MetricName.RetryableFailures, Outcome.Retried],
    [MetricName.DeadLettered, Outcome.DeadLettered],
  ];
  for (const [name, outcome] of pairs) {
    const want = outcomesOf(outcome).length;
    const have = counted(name);
    if (have !== want) agree(`the metric ${name} counted ${have} in an invocation that logged ${want} ${outcome} outcome(s)`);
  }
  const reasons = new Map<string, number>();
  for (const record of outcomesOf(Outcome.DeadLettered))
    reasons.set(record.reason ?? 'Unknown', (reasons.get(record.reason ?? 'Unknown') ?? 0) + 1);
  const reasonPoints = new Set(
    metrics.flatMap((point) =>
      point.name === MetricName.DeadLettered && point.dimensions[FAILURE_REASON_DIMENSION] !== undefined
        ? [point.dimensions[FAILURE_REASON_DIMENSION]!]
        : [],
    ),
  );
  for (const reason of new Set([...reasons.keys(), ...reasonPoints])) {
    const have = counted(MetricName.DeadLettered, reason);
    if (have !== (reasons.get(reason) ?? 0))
      agree(
        `the metric ${MetricName.DeadLettered} with ${FAILURE_REASON_DIMENSION}=${reason} counted ${have}, the invocation dead-lettered ${reasons.get(reason) ?? 0} with that reason`,
      );
  }
  const batchSize = counted(MetricName.BatchSize);
  if (batchSize !== batchIds.length) agree(`the metric ${MetricName.BatchSize} counted ${batchSize} for a batch of ${batchIds.length}`);

  for (const record of outcomes) {
    const key = record.idempotencyKey ?? evidence.keyOf(record.messageId);
    if (key === undefined) continue;
    const own = evidence.ownErrors(key);
    const foreign = (name: string | undefined) => name !== undefined && evidence.attributable.has(name) && !own.has(name);
    const what = `message ${record.messageId} (${key})`;
    if (record.outcome === Outcome.Retried && record.countsAsAttempt === true && foreign(record.errorType)) {
      violations.push({
        invariant: Invariant.ownAttempts,
        detail: `${what} had an attempt counted for ${record.errorType} (${(record.errorMessage ?? '').slice(0, 160)}), which is not a failure of its own`,
      });
    }
    if (record.outcome === Outcome.DeadLettered) {
      if (foreign(record.reason))
        violations.push({
          invariant: Invariant.ownAttempts,
          detail: `${what} was dead-lettered as ${record.reason} (${(record.errorMessage ?? '').slice(0, 160)}), which is not a failure of its own`,
        });
      else if (record.reason === FailureReason.RetriesExhausted && foreign(record.errorType)) {
        violations.push({
          invariant: Invariant.ownAttempts,
          detail: `${what} was dead-lettered as RetriesExhausted after ${record.errorType} (${(record.errorMessage ?? '').slice(0, 160)}), which is not a failure of its own`,
        });
      }
    }
  }
  return violations;
}
