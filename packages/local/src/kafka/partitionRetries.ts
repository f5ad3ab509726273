/**
 * How a Kafka event source mapping moves one partition on after an invocation: which of its
 * records come back, its committed offset, the records waiting for a retry and the retries it has
 * left. The local runtime's poller (`KafkaEventSourcePoller`) and the proof suite's simulated
 * topic both settle their partitions with {@link settlePartition}, so they follow one reading of
 * AWS's rules (docs/aws-rules.md, K4–K6).
 *
 * @module
 */
import type { KafkaBatchVerdict } from 'idempotent-consumer/kafka';
import { topicPartition } from 'idempotent-consumer/kafka';
import type { LogRecord } from './PartitionedLog.js';

/**
 * How the mapping retries after a partial batch response. AWS documents that Lambda retries "the
 * failed records", which can be read two ways; the consumer reports a failed record and every
 * later record of its partition in the batch, which is correct under both:
 *
 * - `resume-from-lowest-offset`: each reported partition resumes from its lowest reported offset
 *   (every record from there on comes back, reported or not) — what this module's contract
 *   (`lambda/batch/kafkaBatchResponse.ts`) describes;
 * - `retry-reported-records`: only the reported records come back (a record after a reported
 *   one that was not reported counts as processed); the partition moves past the batch.
 */
export type KafkaRetryReading = 'resume-from-lowest-offset' | 'retry-reported-records';

/** A mapping's retry state, by partition number. */
export interface PartitionRetryState {
  /** The next offset to read, by partition. */
  readonly committed: number[];
  /** The failing offset and the invocations it failed in a row. */
  readonly failing: Map<number, { offset: number; invocations: number }>;
  /** With `retry-reported-records`: the records to send again before reading on. */
  readonly retrying: Map<number, LogRecord[]>;
}

/** A new state for `partitions` partitions, all at offset 0. */
export function newPartitionRetryState(partitions: number): PartitionRetryState {
  return { committed: Array.from({ length: partitions }, () => 0), failing: new Map(), retrying: new Map() };
}

/**
 * Settles one partition's records of a batch after the invocation's verdict: commits past them,
 * or keeps the failed ones for a retry while `retryAttempts` allow, or gives them up.
 *
 * @param records - the partition's records in the batch, in offset order (at least one)
 * @param reported - with `retry-reported-records`: the reported offsets, by `"<topic>-<partition>"`
 * @returns the records given up (retries exhausted) with the invocations they failed in, if any
 */
export function settlePartition(
  state: PartitionRetryState,
  topic: string,
  partition: number,
  records: readonly LogRecord[],
  verdict: KafkaBatchVerdict,
  reported: ReadonlyMap<string, ReadonlySet<number>>,
  options: { readonly retryAttempts: number; readonly retryReading: KafkaRetryReading },
): { readonly gaveUp: readonly LogRecord[]; readonly invocations: number } | undefined {
  const last = records[records.length - 1]!;
  const key = topicPartition(topic, partition);
  // The records of this partition that come back, per the verdict and the retry reading.
  let failed: LogRecord[];
  if (verdict.kind === 'success') failed = [];
  else if (verdict.kind === 'failure') failed = [...records];
  else if (options.retryReading === 'retry-reported-records') failed = records.filter((record) => reported.get(key)?.has(record.offset));
  else {
    const resumeAt = verdict.resumeAt.get(key);
    failed = resumeAt === undefined ? [] : records.filter((record) => record.offset >= resumeAt);
  }
  // Retry reading: records still waiting for a retry that did not fit in this batch stay waiting.
  const sent = new Set(records.map((record) => record.offset));
  const stillWaiting = (state.retrying.get(partition) ?? []).filter((record) => !sent.has(record.offset));
  const moveOn = (waiting: readonly LogRecord[]) => {
    state.committed[partition] = Math.max(state.committed[partition] ?? 0, last.offset + 1);
    if (waiting.length > 0)
      state.retrying.set(
        partition,
        [...waiting].sort((a, b) => a.offset - b.offset),
      );
    else state.retrying.delete(partition);
  };
  const failedAt = failed[0]?.offset;
  if (failedAt === undefined) {
    moveOn(stillWaiting);
    state.failing.delete(partition);
    return undefined;
  }
  const previous = state.failing.get(partition);
  const invocations = previous?.offset === failedAt ? previous.invocations + 1 : 1;
  if (invocations <= options.retryAttempts) {
    state.failing.set(partition, { offset: failedAt, invocations });
    if (options.retryReading === 'retry-reported-records') moveOn([...failed, ...stillWaiting]);
    else state.committed[partition] = failedAt;
    return undefined;
  }
  moveOn(stillWaiting);
  state.failing.delete(partition);
  return { gaveUp: failed, invocations };
}

/** The offsets a partial batch response reports, by `"<topic>-<partition>"` (malformed entries left out). */
export function reportedOffsets(response: unknown): Map<string, Set<number>> {
  const offsets = new Map<string, Set<number>>();
  const failures = (response as { batchItemFailures?: unknown } | null)?.batchItemFailures;
  for (const failure of Array.isArray(failures) ? failures : []) {
    const identifier = (failure as { itemIdentifier?: { partition?: unknown; offset?: unknown } } | null)?.itemIdentifier;
    if (typeof identifier?.partition !== 'string' || typeof identifier.offset !== 'number') continue;
    offsets.set(identifier.partition, (offsets.get(identifier.partition) ?? new Set()).add(identifier.offset));
  }
  return offsets;
}
