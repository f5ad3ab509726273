/**
 * A local Kafka event source mapping: reads a {@link PartitionedLog} and invokes a Lambda
 * handler with MSK events, with the semantics of Lambda's Kafka event source mapping in
 * provisioned mode with `ReportBatchItemFailures`, finite retries and an on-failure
 * destination.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';
import { defaultSettings, kafkaRetryAttempts } from 'idempotent-consumer/settings';
import type { ConsumerSettings } from 'idempotent-consumer/settings';
import { readKafkaBatchResponse, topicPartition } from 'idempotent-consumer/kafka';
import type { KafkaBatchVerdict } from 'idempotent-consumer/kafka';
import type { KafkaEvent, KafkaRecord } from 'idempotent-consumer/kafka';
import { guardInvocations } from '../aws/invocationGuard.js';
import type { AnySdkClient } from '../aws/sdkMiddleware.js';
import { PollerIdleTimeoutError } from '../errors.js';
import { invokeWithinTimeout } from '../invokeWithinTimeout.js';
import {
  type KafkaRetryReading,
  newPartitionRetryState,
  type PartitionRetryState,
  reportedOffsets,
  settlePartition,
} from './partitionRetries.js';
import { createLambdaContext, newLogStreamName } from '../lambdaContext.js';
import type { LogRecord, PartitionedLog } from './PartitionedLog.js';
import type { OnFailureInvocation } from '../onFailureRecord.js';
import type { FilterPattern } from '../matchesFilterPattern.js';
import { assertFilters, kafkaRecordPasses } from '../recordFilters.js';

/** A Lambda handler for Kafka events; its result may be anything (it is read as AWS reads it). */
export type LocalKafkaHandler = (event: KafkaEvent, context: Context) => unknown;

/**
 * What Lambda sends to an SQS queue or SNS topic on-failure destination of a Kafka event source
 * mapping when it gives up on a batch: metadata only, no record content (only an S3
 * destination gets the whole event in `payload`; a Kafka topic destination gets one message
 * per record, with the record). To find the records, read the topic partitions in
 * `recordsInfo` from `firstRecordOffset` to `lastRecordOffset`; the consumer's attempt log
 * (`DynamoDBKafkaAttemptLog`) holds the last error of the first of them.
 *
 * Source: "SNS and SQS example invocation record",
 * https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure.html (formerly
 * with-msk-on-failure.html).
 */
export interface KafkaOnFailureRecord extends OnFailureInvocation {
  readonly KafkaBatchInfo: {
    /** Records given up, across the partitions in `recordsInfo`. */
    readonly batchSize: number;
    /** The MSK cluster ARN (absent for self-managed Kafka). */
    readonly eventSourceArn?: string;
    readonly bootstrapServers: string;
    /** Size of the last invocation's event, in bytes. */
    readonly payloadSize: number;
    /** By `"<topic>-<partition>"`: the offsets (as strings) and timestamps (ISO 8601) given up. */
    readonly recordsInfo: Readonly<
      Record<
        string,
        {
          readonly firstRecordOffset: string;
          readonly lastRecordOffset: string;
          readonly firstRecordTimestamp: string;
          readonly lastRecordTimestamp: string;
        }
      >
    >;
  };
}

/** What one invocation did, for progress output and tests. */
export interface KafkaInvocationReport {
  readonly awsRequestId: string;
  /** The event the handler got. */
  readonly event: KafkaEvent;
  /** How the handler ended. */
  readonly outcome: 'returned' | 'threw' | 'timed-out';
  /** What it returned, or threw. */
  readonly response?: unknown;
  readonly error?: unknown;
  /** How the response was read (a thrown error or a timeout is a `failure`). */
  readonly verdict: KafkaBatchVerdict;
  /** Each partition of the batch → its committed offset after this invocation (the next offset to read). */
  readonly committed: ReadonlyMap<string, number>;
  /** On-failure records sent after this invocation (retries exhausted). */
  readonly gaveUp: readonly KafkaOnFailureRecord[];
}

export type { KafkaRetryReading } from './partitionRetries.js';

/** Options of {@link KafkaEventSourcePoller}. */
export interface KafkaEventSourcePollerOptions {
  readonly log: PartitionedLog;
  /**
   * Creates the handler of the execution environment; called at start and again after an
   * invocation timed out (Lambda replaces that environment).
   */
  readonly createHandler: () => LocalKafkaHandler;
  /** Most records per invocation, across partitions. @default defaultSettings.kafka.batchSize */
  readonly batchSize?: number;
  /**
   * Retries of a failed batch after its first attempt (finite, from 0).
   * @default kafkaRetryAttempts(defaultSettings)
   */
  readonly retryAttempts?: number;
  /**
   * Receives the metadata record of each batch given up (the on-failure destination), with the
   * event of the last invocation (what an S3 destination keeps in `payload`). @default none (dropped)
   */
  readonly onFailure?: (record: KafkaOnFailureRecord, event: KafkaEvent) => void | Promise<void>;
  /** Function timeout in seconds. @default defaultSettings.function.timeoutSeconds */
  readonly functionTimeoutSeconds?: number;
  /** @default defaultSettings.function.memorySizeMb */
  readonly memorySizeMb?: number;
  /** @default 'local-consumer' */
  readonly functionName?: string;
  /**
   * The clock of each invocation's context (`getRemainingTimeInMillis()` counts the function timeout
   * down on it), in epoch milliseconds: a test's virtual clock, with the handler's `sleep` advancing
   * it. The timeout that stops an invocation stays on real time.
   * @default Date.now
   */
  readonly now?: () => number;
  /** `aws:kafka` (MSK, with an ARN) or `SelfManagedKafka`. @default 'aws:kafka' */
  readonly eventSource?: KafkaEvent['eventSource'];
  /** @default a local MSK cluster ARN in us-east-1, account 000000000000 */
  readonly eventSourceArn?: string;
  /** @default '127.0.0.1:9092' */
  readonly bootstrapServers?: string;
  /** Called after each invocation, once offsets are committed. */
  readonly onInvocation?: (report: KafkaInvocationReport) => void;
  /**
   * The mapping's filter criteria (`FilterCriteria` on `value`, see `kafkaRecordPasses`): a record that
   * matches none is left out of the event and its offset committed with its batch, as Lambda does
   * (https://docs.aws.amazon.com/lambda/latest/dg/kafka-filtering.html); a batch left empty is not
   * invoked. Checked at construction.
   * @default undefined: every record invokes the handler
   */
  readonly filters?: readonly FilterPattern[];
  /** Called with the records the filters left out of a batch (`"<topic>-<partition>@<offset>"` each). */
  readonly onFilteredOut?: (records: readonly string[]) => void;
  /** How a partial batch response is retried (see {@link KafkaRetryReading}). @default 'resume-from-lowest-offset' */
  readonly retryReading?: KafkaRetryReading;
  /**
   * The clients the handler uses. Once an invocation has run past the function timeout, its
   * later calls on them are refused before they leave the process (see `guardInvocations`).
   * @default []
   */
  readonly guardedClients?: readonly AnySdkClient[];
}

const localRegion = 'us-east-1';
const localAccount = '000000000000';

/** The poller settings of the stack's Kafka event source mapping, from the one source of settings. */
export function kafkaPollerOptionsFromSettings(
  settings: ConsumerSettings,
): Required<
  Pick<KafkaEventSourcePollerOptions, 'batchSize' | 'retryAttempts' | 'functionTimeoutSeconds' | 'memorySizeMb' | 'functionName'>
> &
  Pick<KafkaEventSourcePollerOptions, 'filters'> {
  return {
    ...(settings.kafka.filters === undefined ? {} : { filters: settings.kafka.filters }),
    batchSize: settings.kafka.batchSize,
    retryAttempts: kafkaRetryAttempts(settings),
    functionTimeoutSeconds: settings.function.timeoutSeconds,
    memorySizeMb: settings.function.memorySizeMb,
    functionName: settings.consumerName,
  };
}

/**
 * Reads a partitioned log and invokes a handler as Lambda's Kafka event source mapping does:
 *
 * - It keeps a committed offset per partition (starting at 0, like `TRIM_HORIZON`), and
 *   builds each batch from the partitions in turn, up to `batchSize` records, each partition's
 *   records in offset order, as an MSK event (`eventSource`, `eventSourceArn`,
 *   `bootstrapServers`, `records` by `"<topic>-<partition>"`, each record with base64 `key` and
 *   `value`, byte-array `headers`, `timestamp` in ms and `timestampType: CREATE_TIME`).
 * - Invocations run one at a time, so a partition never has two batches in flight.
 * - The response is read by `readKafkaBatchResponse` (the one module that knows the format),
 *   after a JSON round trip as the Node.js runtime does. Full success commits every partition
 *   of the batch; a partial response, with `retryReading: 'resume-from-lowest-offset'` (the
 *   default), commits each reported partition up to its lowest reported offset (that record
 *   comes back first in a later batch) and the others to their end; with
 *   `'retry-reported-records'` only the reported records come back (alone, in the next batch of
 *   their partition) and the rest is committed; a malformed response, a thrown error or a
 *   timeout fails the whole batch (nothing committed).
 * - A partition that fails at the same offset on `retryAttempts + 1` invocations in a row is
 *   given up: one metadata-only {@link KafkaOnFailureRecord} goes to `onFailure` for the records
 *   that would have come back, and the partition moves past them.
 *
 * - Past the function timeout the invocation is stopped: the batch fails, the environment is
 *   replaced, and the handler's later calls on `guardedClients` are refused.
 *
 * Differences from AWS: retries are counted per partition and offset, not per batch (a batch
 * here holds what the partitions had, so the two mostly agree); no maximum record age, no
 * batch split on error, no batching window, no 6 MB payload limit, no scaling across pollers;
 * a handler that times out is abandoned (its code is not terminated; only its guarded calls are
 * stopped).
 */
export class KafkaEventSourcePoller {
  readonly #options: KafkaEventSourcePollerOptions;
  readonly #log: PartitionedLog;
  readonly #batchSize: number;
  readonly #retryAttempts: number;
  readonly #functionTimeoutSeconds: number;
  readonly #functionName: string;
  /** Per partition: the committed offset, the offset it last failed at (and how many invocations in a row), the records to retry first. */
  readonly #state: PartitionRetryState;
  readonly #retryReading: KafkaRetryReading;
  #handler: LocalKafkaHandler;
  #logStreamName = newLogStreamName();
  #nextPartition = 0;
  #invocations = 0;

  /** @throws RangeError when `batchSize` is not 1 to 10,000 or `retryAttempts` is not a finite integer ≥ 0 */
  constructor(options: KafkaEventSourcePollerOptions) {
    this.#options = options;
    this.#log = options.log;
    this.#batchSize = options.batchSize ?? defaultSettings.kafka.batchSize;
    this.#retryAttempts = options.retryAttempts ?? kafkaRetryAttempts(defaultSettings);
    this.#functionTimeoutSeconds = options.functionTimeoutSeconds ?? defaultSettings.function.timeoutSeconds;
    this.#functionName = options.functionName ?? 'local-consumer';
    this.#retryReading = options.retryReading ?? 'resume-from-lowest-offset';
    for (const client of options.guardedClients ?? []) guardInvocations(client);
    if (!Number.isInteger(this.#batchSize) || this.#batchSize < 1 || this.#batchSize > 10_000) {
      throw new RangeError(`batchSize ${this.#batchSize} is outside 1..10000`);
    }
    if (!Number.isInteger(this.#retryAttempts) || this.#retryAttempts < 0) {
      throw new RangeError(`retryAttempts ${this.#retryAttempts} must be a whole number from 0: Kafka retries must be finite`);
    }
    assertFilters(options.filters);
    this.#state = newPartitionRetryState(this.#log.partitions);
    this.#handler = options.createHandler();
  }

  /** Invocations so far. */
  get invocations(): number {
    return this.#invocations;
  }

  /** The next offset the mapping reads from `partition` (everything before it is committed). */
  committedOffset(partition: number): number {
    return this.#state.committed[partition] ?? 0;
  }

  /** Records not committed yet (or waiting for a retry), across partitions. */
  lag(): number {
    const retrying = [...this.#state.retrying.values()].reduce((sum, records) => sum + records.length, 0);
    return retrying + this.#state.committed.reduce((sum, committed, partition) => sum + this.#log.endOffset(partition) - committed, 0);
  }

  /**
   * Invokes the handler once with the next batch, if any record is not committed.
   *
   * @returns what the invocation did, or `undefined` when there was nothing to read
   */
  async pollOnce(): Promise<KafkaInvocationReport | undefined> {
    const batch = this.#nextBatch();
    if (batch.length === 0) return undefined;
    const passing = this.#passingFilters(batch);
    if (passing.length === 0) return this.pollOnce(); // every record filtered out and committed: no invocation
    const event = buildKafkaEvent(passing, {
      eventSource: this.#options.eventSource ?? 'aws:kafka',
      eventSourceArn:
        this.#options.eventSourceArn ?? `arn:aws:kafka:${localRegion}:${localAccount}:cluster/local/00000000-0000-0000-0000-000000000000-1`,
      bootstrapServers: this.#options.bootstrapServers ?? '127.0.0.1:9092',
    });
    const context = createLambdaContext({
      functionName: this.#functionName,
      region: localRegion,
      accountId: localAccount,
      timeoutSeconds: this.#functionTimeoutSeconds,
      memorySizeMb: this.#options.memorySizeMb ?? defaultSettings.function.memorySizeMb,
      logStreamName: this.#logStreamName,
      ...(this.#options.now === undefined ? {} : { now: this.#options.now }),
    });
    this.#invocations += 1;
    const invoked = await invokeWithinTimeout(this.#handler, event, context, this.#functionTimeoutSeconds);
    const result =
      invoked.kind === 'returned'
        ? { outcome: 'returned' as const, response: invoked.response }
        : invoked.kind === 'threw'
          ? { outcome: 'threw' as const, error: invoked.error }
          : { outcome: 'timed-out' as const };
    if (result.outcome === 'timed-out') {
      this.#handler = this.#options.createHandler();
      this.#logStreamName = newLogStreamName();
    }
    const verdict: KafkaBatchVerdict =
      result.outcome === 'returned'
        ? readKafkaBatchResponse(result.response, event.records)
        : {
            kind: 'failure',
            reason: result.outcome === 'threw' ? `the handler threw: ${describe(result.error)}` : 'the invocation timed out',
          };

    const reported =
      verdict.kind === 'partial' && result.outcome === 'returned' ? reportedOffsets(result.response) : new Map<string, Set<number>>();
    const gaveUp = await this.#commit(batch, verdict, reported, event, context, result.outcome !== 'returned');
    const committed = new Map(
      [...new Set(batch.map((record) => record.partition))].map((p) => [topicPartition(this.#log.topic, p), this.committedOffset(p)]),
    );
    const report: KafkaInvocationReport = {
      awsRequestId: context.awsRequestId,
      event,
      outcome: result.outcome,
      ...(result.outcome === 'returned' ? { response: result.response } : {}),
      ...(result.outcome === 'threw' ? { error: result.error } : {}),
      verdict,
      committed,
      gaveUp,
    };
    this.#options.onInvocation?.(report);
    return report;
  }

  /**
   * Polls until every record of the log is committed (processed, or given up).
   *
   * @returns the invocations it made
   * @throws PollerIdleTimeoutError when records remain after `maxInvocations` invocations or
   *   `timeoutMs` milliseconds
   */
  async runUntilIdle(options: { readonly maxInvocations?: number; readonly timeoutMs?: number } = {}): Promise<number> {
    const maxInvocations = options.maxInvocations ?? 100_000;
    const deadline = Date.now() + (options.timeoutMs ?? 600_000);
    let made = 0;
    while (this.lag() > 0) {
      if (made >= maxInvocations || Date.now() > deadline) {
        throw new PollerIdleTimeoutError(
          `The topic ${this.#log.topic} still has ${this.lag()} uncommitted records after ${made} invocations ` +
            `(limits: ${maxInvocations} invocations, ${options.timeoutMs ?? 600_000} ms).`,
        );
      }
      await this.pollOnce();
      made += 1;
    }
    return made;
  }

  /**
   * The records of `batch` that pass the filters. The others stay in the batch for the commit (a
   * filtered-out record is committed with its batch, or comes back with it and is filtered again);
   * when none passes, the batch is committed here.
   */
  #passingFilters(batch: readonly LogRecord[]): LogRecord[] {
    const filters = this.#options.filters;
    if (filters === undefined || filters.length === 0) return [...batch];
    const passing = batch.filter((record) => kafkaRecordPasses(filters, toEventRecord(record)));
    if (passing.length < batch.length) {
      const left = batch.filter((record) => !passing.includes(record));
      this.#options.onFilteredOut?.(left.map((record) => `${topicPartition(record.topic, record.partition)}@${record.offset}`));
    }
    if (passing.length > 0) return passing;
    for (const partition of new Set(batch.map((record) => record.partition))) {
      const records = batch.filter((record) => record.partition === partition);
      settlePartition(this.#state, this.#log.topic, partition, records, { kind: 'success' }, new Map(), {
        retryAttempts: this.#retryAttempts,
        retryReading: this.#retryReading,
      });
    }
    return [];
  }

  #nextBatch(): LogRecord[] {
    const batch: LogRecord[] = [];
    const partitions = this.#log.partitions;
    for (let i = 0; i < partitions && batch.length < this.#batchSize; i += 1) {
      const partition = (this.#nextPartition + i) % partitions;
      const retrying = this.#state.retrying.get(partition);
      if (retrying !== undefined) {
        batch.push(...retrying.slice(0, this.#batchSize - batch.length));
        continue; // a partition with records to retry sends only those
      }
      batch.push(...this.#log.read(partition, this.committedOffset(partition), this.#batchSize - batch.length));
    }
    this.#nextPartition = (this.#nextPartition + 1) % partitions;
    return batch;
  }

  /** Moves the committed offsets after an invocation; returns the on-failure records it sent. */
  async #commit(
    batch: readonly LogRecord[],
    verdict: KafkaBatchVerdict,
    reported: ReadonlyMap<string, ReadonlySet<number>>,
    event: KafkaEvent,
    context: Context,
    functionError: boolean,
  ): Promise<KafkaOnFailureRecord[]> {
    const byPartition = new Map<number, LogRecord[]>();
    for (const record of batch) byPartition.set(record.partition, [...(byPartition.get(record.partition) ?? []), record]);

    const gaveUp: KafkaOnFailureRecord[] = [];
    for (const [partition, records] of byPartition) {
      const settled = settlePartition(this.#state, this.#log.topic, partition, records, verdict, reported, {
        retryAttempts: this.#retryAttempts,
        retryReading: this.#retryReading,
      });
      if (settled === undefined) continue;
      const record = this.#onFailureRecord(settled.gaveUp, settled.invocations, event, context, functionError);
      // With the last invocation's event: an S3 destination keeps it whole (`kafkaS3OnFailureRecord`).
      await this.#options.onFailure?.(record, event);
      gaveUp.push(record);
    }
    return gaveUp;
  }

  #onFailureRecord(
    records: readonly LogRecord[],
    invocations: number,
    event: KafkaEvent,
    context: Context,
    functionError: boolean,
  ): KafkaOnFailureRecord {
    const first = records[0]!;
    const last = records[records.length - 1]!;
    return {
      requestContext: {
        requestId: context.awsRequestId ?? randomUUID(),
        functionArn: context.invokedFunctionArn,
        condition: 'RetryAttemptsExhausted',
        approximateInvokeCount: invocations,
      },
      responseContext: { statusCode: 200, executedVersion: '$LATEST', ...(functionError ? { functionError: 'Unhandled' } : {}) },
      version: '1.0',
      timestamp: new Date().toISOString(),
      KafkaBatchInfo: {
        batchSize: records.length,
        ...(event.eventSourceArn !== undefined ? { eventSourceArn: event.eventSourceArn } : {}),
        bootstrapServers: event.bootstrapServers,
        payloadSize: Buffer.byteLength(JSON.stringify(event)),
        recordsInfo: {
          [topicPartition(first.topic, first.partition)]: {
            firstRecordOffset: String(first.offset),
            lastRecordOffset: String(last.offset),
            firstRecordTimestamp: new Date(first.timestamp).toISOString(),
            lastRecordTimestamp: new Date(last.timestamp).toISOString(),
          },
        },
      },
    };
  }
}

/**
 * An MSK (or self-managed Kafka) event of `records`, as the event source mapping builds it:
 * records grouped by `"<topic>-<partition>"` in offset order, `key` and `value` in base64 (`key`
 * omitted for a record without one, `value` `null` for a tombstone), headers as
 * `[{ "<name>": [byte, ...] }]`, `timestampType: "CREATE_TIME"`.
 */
export function buildKafkaEvent(
  records: readonly LogRecord[],
  source: { readonly eventSource: KafkaEvent['eventSource']; readonly eventSourceArn?: string; readonly bootstrapServers: string },
): KafkaEvent {
  const grouped: Record<string, KafkaRecord[]> = {};
  for (const record of [...records].sort((a, b) => a.partition - b.partition || a.offset - b.offset)) {
    const key = topicPartition(record.topic, record.partition);
    (grouped[key] ??= []).push(toEventRecord(record));
  }
  return {
    eventSource: source.eventSource,
    ...(source.eventSource === 'aws:kafka' && source.eventSourceArn !== undefined ? { eventSourceArn: source.eventSourceArn } : {}),
    bootstrapServers: source.bootstrapServers,
    records: grouped,
  };
}

function toEventRecord(record: LogRecord): KafkaRecord {
  return {
    topic: record.topic,
    partition: record.partition,
    offset: record.offset,
    timestamp: record.timestamp,
    timestampType: 'CREATE_TIME',
    ...(record.key !== null ? { key: Buffer.from(record.key).toString('base64') } : {}),
    value: record.value === null ? null : Buffer.from(record.value).toString('base64'),
    headers: record.headers.map((header) => ({ [header.name]: [...header.value] })),
  };
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
