/**
 * A Kafka topic and the receiving side of Lambda's Kafka event source mapping (provisioned mode,
 * `ReportBatchItemFailures`, finite retries), in memory and on the suite's clock: committed
 * offsets per partition, one batch per partition in flight, both readings of AWS's retry rule
 * (`resume-from-lowest-offset`, `retry-reported-records`), a partition given up after
 * `retryAttempts + 1` failing invocations at one offset (what Lambda sends to the on-failure
 * destination is metadata only: those records are lost to the consumer), a lost offset commit
 * (the batch comes back), and a rebalance that hands in-flight partitions to another poller
 * (the old owner's commit is then refused, as Kafka refuses a commit of an older generation).
 *
 * Records are stored in the local runtime's `PartitionedLog`; events are built with its
 * `buildKafkaEvent`; responses are read with the library's `readKafkaBatchResponse` (the one
 * module that knows the format). The commit rules are those of the local runtime's
 * `KafkaEventSourcePoller` (keep the two in step): the poller runs its own invocations on real
 * timers, while the suite must drive each invocation itself (kill it, run another beside it,
 * lose its commit, rebalance its partitions).
 *
 * Source: https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html
 *
 * @module
 */
import { readKafkaBatchResponse } from 'idempotent-consumer/kafka';
import type { KafkaEvent } from 'idempotent-consumer/kafka';
import { buildKafkaEvent } from '@idempotent-consumer/local/internal';
import { type LogRecord, PartitionedLog } from '@idempotent-consumer/local/internal';
import { newPartitionRetryState, type PartitionRetryState, reportedOffsets, settlePartition } from '@idempotent-consumer/local/internal';
import type { KafkaRetryReading } from './schedule.js';
import type { VirtualClock } from './virtualClock.js';

/** The MSK cluster of the suite's events. */
export const PROVE_MSK_ARN = 'arn:aws:kafka:us-east-1:000000000000:cluster/prove/00000000-0000-0000-0000-000000000000-1';

/** Options of {@link SimulatedKafkaTopic}. */
export interface SimulatedKafkaTopicOptions {
  readonly topic: string;
  readonly partitions: number;
  readonly batchSize: number;
  /** `MaximumRetryAttempts`. */
  readonly retryAttempts: number;
  readonly retryReading: KafkaRetryReading;
  readonly clock: VirtualClock;
}

/** A batch handed to one invocation. */
export interface KafkaBatch {
  readonly records: readonly LogRecord[];
  readonly event: KafkaEvent;
  /** Each partition's ownership generation when the batch was read. */
  readonly generations: ReadonlyMap<number, number>;
}

/** See the module comment. */
export class SimulatedKafkaTopic {
  readonly #options: SimulatedKafkaTopicOptions;
  readonly log: PartitionedLog;
  readonly #state: PartitionRetryState;
  readonly #inFlight = new Set<number>();
  readonly #generation: number[];
  readonly #gaveUp: LogRecord[] = [];
  #nextPartition = 0;
  /** Records delivered in all. */
  deliveries = 0;

  constructor(options: SimulatedKafkaTopicOptions) {
    this.#options = options;
    this.log = new PartitionedLog({ topic: options.topic, partitions: options.partitions, now: options.clock.now });
    this.#state = newPartitionRetryState(options.partitions);
    this.#generation = Array.from({ length: options.partitions }, () => 0);
  }

  /**
   * Appends a record to `partition`.
   *
   * @param headers - record headers by name (e.g. `ic.redrive` on a redriven dead letter), as UTF-8 text
   */
  append(
    key: string,
    value: string,
    partition: number,
    headers: Readonly<Record<string, string>> = {},
  ): { readonly partition: number; readonly offset: number } {
    return this.log.append({
      key,
      value,
      partition: partition % this.#options.partitions,
      headers: Object.entries(headers).map(([name, text]) => ({ name, value: text })),
    });
  }

  /** Records the mapping gave up on (sent to the on-failure destination as metadata only). */
  get gaveUp(): readonly LogRecord[] {
    return this.#gaveUp;
  }

  /** Whether every record is committed and none waits for a retry. */
  get drained(): boolean {
    if (this.#state.retrying.size > 0) return false;
    return this.#state.committed.every((offset, partition) => offset >= this.log.endOffset(partition));
  }

  /** Records not committed yet. */
  get lag(): number {
    const retrying = [...this.#state.retrying.values()].reduce((sum, records) => sum + records.length, 0);
    return retrying + this.#state.committed.reduce((sum, offset, partition) => sum + this.log.endOffset(partition) - offset, 0);
  }

  /** The next batch, across the partitions not in flight, up to `batchSize` records; `undefined` when none. */
  poll(): KafkaBatch | undefined {
    const records: LogRecord[] = [];
    const partitions = this.#options.partitions;
    for (let i = 0; i < partitions && records.length < this.#options.batchSize; i += 1) {
      const partition = (this.#nextPartition + i) % partitions;
      if (this.#inFlight.has(partition)) continue;
      const retrying = this.#state.retrying.get(partition);
      const taken =
        retrying !== undefined
          ? retrying.slice(0, this.#options.batchSize - records.length)
          : this.log.read(partition, this.#state.committed[partition] ?? 0, this.#options.batchSize - records.length);
      records.push(...taken);
    }
    this.#nextPartition = (this.#nextPartition + 1) % partitions;
    if (records.length === 0) return undefined;
    const generations = new Map<number, number>();
    for (const record of records) {
      this.#inFlight.add(record.partition);
      generations.set(record.partition, this.#generation[record.partition] ?? 0);
    }
    this.deliveries += records.length;
    const event = buildKafkaEvent(records, {
      eventSource: 'aws:kafka',
      eventSourceArn: PROVE_MSK_ARN,
      bootstrapServers: 'b-1.prove.kafka.us-east-1.amazonaws.com:9098',
    });
    return { records, event, generations };
  }

  /** A rebalance: the partitions of `batch` go to another poller, which reads them again from the committed offsets. */
  rebalance(batch: KafkaBatch): void {
    for (const partition of batch.generations.keys()) {
      this.#inFlight.delete(partition);
      this.#generation[partition] = (this.#generation[partition] ?? 0) + 1;
    }
  }

  /**
   * What the mapping does after an invocation: reads the response (`failed` for a thrown error
   * or a timeout) and moves each partition's committed offset, unless the commit is lost or the
   * partition was rebalanced away meanwhile.
   */
  settle(
    batch: KafkaBatch,
    outcome: { readonly kind: 'returned'; readonly response: unknown } | { readonly kind: 'failed' },
    acknowledgementLost: boolean,
  ): void {
    const verdict =
      outcome.kind === 'returned'
        ? readKafkaBatchResponse(outcome.response, batch.event.records)
        : { kind: 'failure' as const, reason: 'the invocation failed' };
    const reported =
      outcome.kind === 'returned' && verdict.kind === 'partial' ? reportedOffsets(outcome.response) : new Map<string, Set<number>>();
    const byPartition = new Map<number, LogRecord[]>();
    for (const record of batch.records) byPartition.set(record.partition, [...(byPartition.get(record.partition) ?? []), record]);

    for (const [partition, records] of byPartition) {
      if ((this.#generation[partition] ?? 0) !== batch.generations.get(partition)) continue; // not the owner any more
      this.#inFlight.delete(partition);
      if (acknowledgementLost && verdict.kind !== 'failure') continue; // the commit did not reach Kafka: the batch comes back
      const settled = settlePartition(this.#state, this.log.topic, partition, records, verdict, reported, {
        retryAttempts: this.#options.retryAttempts,
        retryReading: this.#options.retryReading,
      });
      if (settled !== undefined) this.#gaveUp.push(...settled.gaveUp);
    }
  }
}
