/**
 * A local Kinesis Data Streams or DynamoDB Streams event source mapping: reads a {@link ShardLog}
 * and invokes a Lambda handler with the stream's events, with the semantics of Lambda's stream
 * event source mappings with `ReportBatchItemFailures`, finite retries and an on-failure destination.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';
import type { DynamoDBRecord, KinesisStreamRecord } from 'aws-lambda';
import { type ConsumerSettings, type FilterPattern, streamSettingsOf } from 'idempotent-consumer/settings';
import { guardInvocations } from '../aws/invocationGuard.js';
import type { AnySdkClient } from '../aws/sdkMiddleware.js';
import { PollerIdleTimeoutError } from '../errors.js';
import { invokeWithinTimeout } from '../invokeWithinTimeout.js';
import type { InvocationOutcome } from '../judgeBatchResponse.js';
import { createLambdaContext, newLogStreamName } from '../lambdaContext.js';
import type { OnFailureInvocation } from '../onFailureRecord.js';
import { judgeStreamBatchResponse, type StreamBatchJudgement } from '../outbox/judgeStreamBatchResponse.js';
import { assertFilters, dynamoDbStreamRecordPasses, kinesisRecordPasses } from '../recordFilters.js';
import type { ShardLog, ShardRecord } from './ShardLog.js';
import { buildStreamEvent } from './streamEvents.js';

/** A Lambda handler for Kinesis or DynamoDB Streams events; its result may be anything (it is read as AWS reads it). */
export type LocalStreamHandler = (event: never, context: Context) => unknown;

/** What a batch's records span, as the on-failure record names them. */
interface StreamBatchInfo {
  readonly shardId: string;
  readonly startSequenceNumber: string;
  readonly endSequenceNumber: string;
  /** ISO 8601. */
  readonly approximateArrivalOfFirstRecord: string;
  readonly approximateArrivalOfLastRecord: string;
  readonly batchSize: number;
  readonly streamArn: string;
}

/**
 * What Lambda sends to the SQS queue or SNS topic on-failure destination of a Kinesis
 * (`KinesisBatchInfo`) or DynamoDB Streams (`DDBStreamBatchInfo`) mapping when it gives up on a
 * batch: metadata only. To find the records, read the shard from `startSequenceNumber` to
 * `endSequenceNumber` within the stream's retention.
 *
 * Sources: https://docs.aws.amazon.com/lambda/latest/dg/kinesis-on-failure-destination.html,
 * https://docs.aws.amazon.com/lambda/latest/dg/services-dynamodb-errors.html
 */
export type StreamOnFailureRecord = OnFailureInvocation &
  ({ readonly KinesisBatchInfo: StreamBatchInfo } | { readonly DDBStreamBatchInfo: StreamBatchInfo });

/** What one invocation did, for progress output and tests. */
export interface StreamPollerInvocationReport {
  readonly awsRequestId: string;
  readonly shardId: string;
  /** The records the handler got. */
  readonly records: readonly ShardRecord[];
  readonly outcome: InvocationOutcome;
  /** How the result was read. */
  readonly judgement: StreamBatchJudgement;
  /** What happens next: the shard moves past the batch, retries from a record, or gives the rest of the batch up. */
  readonly next: 'done' | 'retry' | 'gave-up';
  /** The on-failure record sent after this invocation, when it gave up. */
  readonly gaveUp?: StreamOnFailureRecord;
}

/** Options of {@link StreamEventSourcePoller}. */
export interface StreamEventSourcePollerOptions {
  readonly log: ShardLog;
  /**
   * Creates the handler of the execution environment; called at start and again after an
   * invocation timed out (Lambda replaces that environment).
   */
  readonly createHandler: () => LocalStreamHandler;
  /** Most records per invocation, of one shard (1 to 10,000). @default 100 */
  readonly batchSize?: number;
  /** Retries of a failed batch after its first invocation (finite, 0 to 10,000). @default 10,000 */
  readonly retryAttempts?: number;
  /**
   * The mapping's filter criteria (`settings.stream.filters`): a record no pattern matches is
   * skipped, the shard's checkpoint moving past it without an invocation, as Lambda does.
   * @default none: every record
   */
  readonly filters?: readonly FilterPattern[];
  /** Called with the `eventID`s of the records the filters skipped (never invoked). */
  readonly onFilteredOut?: (eventIds: readonly string[]) => void;
  /** Receives the metadata record of each batch given up (the on-failure destination). @default none (dropped) */
  readonly onFailure?: (record: StreamOnFailureRecord) => void | Promise<void>;
  /** Function timeout in seconds. @default 30 */
  readonly functionTimeoutSeconds?: number;
  /** @default 1024 */
  readonly memorySizeMb?: number;
  /** @default 'local-consumer' */
  readonly functionName?: string;
  /** Called after each invocation, once the shard's position moved. */
  readonly onInvocation?: (report: StreamPollerInvocationReport) => void;
  /**
   * The clients the handler uses. Once an invocation has run past the function timeout, its later
   * calls on them are refused before they leave the process (see `guardInvocations`).
   * @default []
   */
  readonly guardedClients?: readonly AnySdkClient[];
}

/**
 * The poller settings of a stream mapping from the one source of settings: the function's timeout,
 * memory and name; `stream.batchSize` (100 by default, AWS's default) and `stream.filters`, as
 * the constructs read them; and `maxAttempts × batchSize − 1 + 5` retries (at most 10,000), the room the
 * consumer's own attempt count needs (the same rule as the constructs' `requiredStreamRetryAttempts`).
 */
export function streamPollerOptionsFromSettings(
  settings: ConsumerSettings,
): Required<
  Pick<StreamEventSourcePollerOptions, 'batchSize' | 'retryAttempts' | 'functionTimeoutSeconds' | 'memorySizeMb' | 'functionName'>
> &
  Pick<StreamEventSourcePollerOptions, 'filters'> {
  const { batchSize, filters } = streamSettingsOf(settings);
  return {
    batchSize,
    ...(filters === undefined || filters.length === 0 ? {} : { filters }),
    retryAttempts: Math.min(10_000, settings.retry.maxAttempts * batchSize - 1 + 5),
    functionTimeoutSeconds: settings.function.timeoutSeconds,
    memorySizeMb: settings.function.memorySizeMb,
    functionName: settings.consumerName,
  };
}

const localRegion = 'us-east-1';
const localAccount = '000000000000';

/**
 * Reads a shard log and invokes a handler as Lambda's Kinesis and DynamoDB Streams event source
 * mappings do (starting position `TRIM_HORIZON`, `ReportBatchItemFailures` on, parallelization
 * factor 1, bisect off):
 *
 * - Each shard keeps a checkpoint (a position in the shard). A batch holds up to `batchSize`
 *   records of **one** shard, in sequence order; shards take turns. Invocations run one at a time,
 *   so a shard never has two batches in flight.
 * - The result is read by `judgeStreamBatchResponse` (AWS's success and failure conditions, with a
 *   JSON round trip). Success: the checkpoint moves past the batch. A partial batch response: the
 *   checkpoint moves to the lowest reported sequence number, and the next batch of the shard starts
 *   there (with what follows it, up to `batchSize`). A function error (thrown, timed out,
 *   unreadable or unknown identifiers): the whole batch is retried.
 * - A batch that failed from the same record on `retryAttempts + 1` invocations in a row is given
 *   up: one metadata-only {@link StreamOnFailureRecord} goes to `onFailure` for the records from
 *   that one to the end of the batch, and the checkpoint moves past them.
 * - Past the function timeout the invocation is stopped: the batch fails, the environment is
 *   replaced, and the handler's later calls on `guardedClients` are refused.
 *
 * Differences from AWS: retries are counted per first failing record, not per batch (the two agree
 * while the batch starts at that record, as here); no batching window, maximum record age,
 * parallelization factor, bisect, resharding or 6 MB payload limit; a handler that times out is
 * abandoned (its code is not terminated; only its guarded calls are stopped).
 *
 * Sources: https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html,
 * https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-batchfailurereporting.html,
 * https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-batchfailurereporting.html
 */
export class StreamEventSourcePoller {
  readonly #options: StreamEventSourcePollerOptions;
  readonly #log: ShardLog;
  readonly #batchSize: number;
  readonly #retryAttempts: number;
  readonly #functionTimeoutSeconds: number;
  /** Per shard: the checkpoint (the next position to read). */
  readonly #checkpoint: number[];
  /** Per shard: the sequence number it last failed at, and the invocations in a row. */
  readonly #failing = new Map<number, { sequenceNumber: string; invocations: number }>();
  #handler: LocalStreamHandler;
  #logStreamName = newLogStreamName();
  #nextShard = 0;
  #invocations = 0;

  /** @throws RangeError when `batchSize` is not 1 to 10,000 or `retryAttempts` is not a whole number from 0 to 10,000 */
  constructor(options: StreamEventSourcePollerOptions) {
    this.#options = options;
    this.#log = options.log;
    this.#batchSize = options.batchSize ?? 100;
    this.#retryAttempts = options.retryAttempts ?? 10_000;
    this.#functionTimeoutSeconds = options.functionTimeoutSeconds ?? 30;
    if (!Number.isInteger(this.#batchSize) || this.#batchSize < 1 || this.#batchSize > 10_000) {
      throw new RangeError(`batchSize ${this.#batchSize} is outside 1..10000`);
    }
    if (!Number.isInteger(this.#retryAttempts) || this.#retryAttempts < 0 || this.#retryAttempts > 10_000) {
      throw new RangeError(`retryAttempts ${this.#retryAttempts} must be a whole number from 0 to 10000: stream retries must be finite`);
    }
    assertFilters(options.filters);
    for (const client of options.guardedClients ?? []) guardInvocations(client);
    this.#checkpoint = Array.from({ length: this.#log.shards }, () => 0);
    this.#handler = options.createHandler();
  }

  /** Invocations so far. */
  get invocations(): number {
    return this.#invocations;
  }

  /** The next position the mapping reads from `shard` (everything before it is checkpointed). */
  checkpoint(shard: number): number {
    return this.#checkpoint[shard] ?? 0;
  }

  /** Records not checkpointed yet, across shards. */
  lag(): number {
    return this.#checkpoint.reduce((sum, position, shard) => sum + this.#log.endOf(shard) - position, 0);
  }

  /**
   * Invokes the handler once with the next batch of a shard, if any record is not checkpointed.
   *
   * @returns what the invocation did, or `undefined` when there was nothing to read
   */
  async pollOnce(): Promise<StreamPollerInvocationReport | undefined> {
    for (let i = 0; i < this.#log.shards; i += 1) {
      const shard = (this.#nextShard + i) % this.#log.shards;
      const records = this.#passing(shard, this.#log.read(shard, this.checkpoint(shard), this.#batchSize));
      if (records.length === 0) continue;
      this.#nextShard = (shard + 1) % this.#log.shards;
      return this.#invoke(shard, records);
    }
    return undefined;
  }

  /**
   * Polls until every record of the log is checkpointed (processed, or given up).
   *
   * @returns the invocations it made
   * @throws PollerIdleTimeoutError when records remain after `maxInvocations` invocations or `timeoutMs` milliseconds
   */
  async runUntilIdle(options: { readonly maxInvocations?: number; readonly timeoutMs?: number } = {}): Promise<number> {
    const maxInvocations = options.maxInvocations ?? 100_000;
    const timeoutMs = options.timeoutMs ?? 600_000;
    const deadline = Date.now() + timeoutMs;
    let made = 0;
    while (this.lag() > 0) {
      if (made >= maxInvocations || Date.now() > deadline) {
        throw new PollerIdleTimeoutError(
          `The stream ${this.#log.name} still has ${this.lag()} records not checkpointed after ${made} invocations ` +
            `(limits: ${maxInvocations} invocations, ${timeoutMs} ms).`,
        );
      }
      await this.pollOnce();
      made += 1;
    }
    return made;
  }

  /**
   * The records of a batch the filters let through: the ones no pattern matches at its start are
   * skipped (the checkpoint moves past them, as Lambda's does), and the batch ends before the next
   * one skipped, so that the records invoked are contiguous (Lambda gathers the records that pass
   * across those it drops; here a batch is cut there: the same records, in the same order, in more
   * batches).
   */
  #passing(shard: number, records: readonly ShardRecord[]): readonly ShardRecord[] {
    const filters = this.#options.filters;
    if (filters === undefined || filters.length === 0 || records.length === 0) return records;
    const event = buildStreamEvent(this.#log, records);
    const passes = (event.Records as readonly (KinesisStreamRecord | DynamoDBRecord)[]).map((record) =>
      this.#log.kind === 'kinesis'
        ? kinesisRecordPasses(filters, record as KinesisStreamRecord)
        : dynamoDbStreamRecordPasses(filters, record as DynamoDBRecord),
    );
    const start = passes.indexOf(true);
    const skipped = start === -1 ? records : records.slice(0, start);
    if (skipped.length > 0) this.#options.onFilteredOut?.(skipped.map((record) => record.eventId));
    if (start === -1) {
      this.#checkpoint[shard] = this.checkpoint(shard) + records.length;
      return [];
    }
    this.#checkpoint[shard] = this.checkpoint(shard) + start;
    const end = passes.indexOf(false, start);
    return records.slice(start, end === -1 ? records.length : end);
  }

  async #invoke(shard: number, records: readonly ShardRecord[]): Promise<StreamPollerInvocationReport> {
    const event = buildStreamEvent(this.#log, records);
    const context = createLambdaContext({
      functionName: this.#options.functionName ?? 'local-consumer',
      region: localRegion,
      accountId: localAccount,
      timeoutSeconds: this.#functionTimeoutSeconds,
      memorySizeMb: this.#options.memorySizeMb ?? 1024,
      logStreamName: this.#logStreamName,
    });
    this.#invocations += 1;
    // The handler gets its own copy, as it would get a freshly parsed event in Lambda.
    const copy = JSON.parse(JSON.stringify(event)) as never;
    const outcome = await invokeWithinTimeout(this.#handler, copy, context, this.#functionTimeoutSeconds);
    if (outcome.kind === 'timed-out') {
      this.#handler = this.#options.createHandler();
      this.#logStreamName = newLogStreamName();
    }
    const judgement = judgeStreamBatchResponse(
      outcome,
      records.map((record) => record.sequenceNumber),
    );
    const first = records[0]!;
    const shardId = first.shardId;
    let next: StreamPollerInvocationReport['next'];
    let gaveUp: StreamOnFailureRecord | undefined;
    if (judgement.kind === 'success') {
      this.#checkpoint[shard] = this.checkpoint(shard) + records.length;
      this.#failing.delete(shard);
      next = 'done';
    } else {
      const resumeIndex = judgement.kind === 'partial' ? judgement.resumeIndex : 0;
      const failedAt = records[resumeIndex]!;
      const previous = this.#failing.get(shard);
      const invocations = previous?.sequenceNumber === failedAt.sequenceNumber ? previous.invocations + 1 : 1;
      if (invocations > this.#retryAttempts) {
        gaveUp = this.#onFailureRecord(records.slice(resumeIndex), invocations, context, judgement.kind === 'failure');
        // Sent before the shard moves on: if the destination refuses it, the batch stays and is invoked again.
        await this.#options.onFailure?.(gaveUp);
        this.#checkpoint[shard] = this.checkpoint(shard) + records.length;
        this.#failing.delete(shard);
        next = 'gave-up';
      } else {
        this.#checkpoint[shard] = this.checkpoint(shard) + resumeIndex;
        this.#failing.set(shard, { sequenceNumber: failedAt.sequenceNumber, invocations });
        next = 'retry';
      }
    }
    const report: StreamPollerInvocationReport = {
      awsRequestId: context.awsRequestId,
      shardId,
      records,
      outcome,
      judgement,
      next,
      ...(gaveUp === undefined ? {} : { gaveUp }),
    };
    this.#options.onInvocation?.(report);
    return report;
  }

  #onFailureRecord(records: readonly ShardRecord[], invocations: number, context: Context, functionError: boolean): StreamOnFailureRecord {
    const first = records[0]!;
    const last = records[records.length - 1]!;
    const info: StreamBatchInfo = {
      shardId: first.shardId,
      startSequenceNumber: first.sequenceNumber,
      endSequenceNumber: last.sequenceNumber,
      approximateArrivalOfFirstRecord: new Date(first.arrivalMs).toISOString(),
      approximateArrivalOfLastRecord: new Date(last.arrivalMs).toISOString(),
      batchSize: records.length,
      streamArn: this.#log.arn,
    };
    const invocation: OnFailureInvocation = {
      requestContext: {
        requestId: context.awsRequestId ?? randomUUID(),
        functionArn: context.invokedFunctionArn,
        condition: 'RetryAttemptsExhausted',
        approximateInvokeCount: invocations,
      },
      responseContext: { statusCode: 200, executedVersion: '$LATEST', ...(functionError ? { functionError: 'Unhandled' } : {}) },
      version: '1.0',
      timestamp: new Date().toISOString(),
    };
    return this.#log.kind === 'kinesis' ? { ...invocation, KinesisBatchInfo: info } : { ...invocation, DDBStreamBatchInfo: info };
  }
}
