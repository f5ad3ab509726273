/**
 * A local DynamoDB Stream event source mapping: reads a table's stream from DynamoDB Local and
 * invokes a Lambda handler with stream events, with the semantics of Lambda's DynamoDB Stream
 * event source mapping with `ReportBatchItemFailures`, filter criteria, bisect on error, finite
 * retries and an on-failure destination.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import {
  DescribeStreamCommand,
  type DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type _Record as SdkStreamRecord,
  type Shard,
} from '@aws-sdk/client-dynamodb-streams';
import type { AttributeValue as SdkAttributeValue } from '@aws-sdk/client-dynamodb';
import type { Context, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { defaultOutboxRelaySettings } from 'idempotent-consumer/outbox';
import { PollerIdleTimeoutError } from '../errors.js';
import { invokeWithinTimeout } from '../invokeWithinTimeout.js';
import type { InvocationOutcome } from '../judgeBatchResponse.js';
import { createLambdaContext, newLogStreamName } from '../lambdaContext.js';
import { localRegion } from '../localClientConfig.js';
import { judgeStreamBatchResponse, type StreamBatchJudgement } from './judgeStreamBatchResponse.js';
import { type FilterPattern, matchesFilterPattern } from './matchesFilterPattern.js';
import type { OnFailureInvocation } from '../onFailureRecord.js';

/** A Lambda handler for DynamoDB Stream events; its result may be anything (it is read as AWS reads it). */
export type LocalStreamHandler = (event: DynamoDBStreamEvent, context: Context) => unknown;

/**
 * What Lambda sends to the SQS queue or SNS topic on-failure destination of a DynamoDB Stream event
 * source mapping when it discards a batch: metadata only. To find the items, read the shard from
 * `startSequenceNumber` to `endSequenceNumber` (within the stream's 24-hour retention), or look
 * for the items that are still unpublished.
 *
 * Source: "Configuring destinations for DynamoDB event source mappings",
 * https://docs.aws.amazon.com/lambda/latest/dg/services-dynamodb-errors.html
 */
export interface DynamoDbStreamOnFailureRecord extends OnFailureInvocation {
  readonly DDBStreamBatchInfo: {
    readonly shardId: string;
    readonly startSequenceNumber: string;
    readonly endSequenceNumber: string;
    /** ISO 8601. */
    readonly approximateArrivalOfFirstRecord: string;
    readonly approximateArrivalOfLastRecord: string;
    readonly batchSize: number;
    readonly streamArn: string;
  };
}

/** What one invocation did, for progress output and tests. */
export interface StreamInvocationReport {
  readonly awsRequestId: string;
  readonly shardId: string;
  /** The event the handler got. */
  readonly event: DynamoDBStreamEvent;
  /** How the handler ended, and what it returned or threw. */
  readonly outcome: InvocationOutcome;
  /** How the result was read. */
  readonly judgement: StreamBatchJudgement;
  /** What happens next: the batch is done, retried from a record, split in two, or given up. */
  readonly next: 'done' | 'retry' | 'bisect' | 'gave-up';
  /** The on-failure record sent after this invocation, when it gave up. */
  readonly gaveUp?: DynamoDbStreamOnFailureRecord;
}

/** Options of {@link DynamoDbStreamEventSourcePoller}. */
export interface DynamoDbStreamEventSourcePollerOptions {
  /** A DynamoDB Streams client for DynamoDB Local (or AWS). */
  readonly streams: DynamoDBStreamsClient;
  /** The stream to read (`DescribeTable`'s `LatestStreamArn`). */
  readonly streamArn: string;
  /**
   * Creates the handler of the execution environment; called at start and again after an
   * invocation timed out (Lambda replaces that environment).
   */
  readonly createHandler: () => LocalStreamHandler;
  /** Most records per invocation (1 to 10,000). @default defaultOutboxRelaySettings.batchSize */
  readonly batchSize?: number;
  /** Retries of a failed batch after its first invocation (finite, from 0). @default defaultOutboxRelaySettings.retryAttempts */
  readonly retryAttempts?: number;
  /** Split a batch in two after a function error. @default defaultOutboxRelaySettings.bisectBatchOnError */
  readonly bisectBatchOnError?: boolean;
  /**
   * Filter criteria: a record reaches the handler when it matches one of the patterns (equality
   * rules only, see `matchesFilterPattern`); the others are skipped as if processed.
   * @default [] (every record)
   */
  readonly filters?: readonly FilterPattern[];
  /** Receives the metadata record of each batch given up (the on-failure destination). @default none (dropped) */
  readonly onFailure?: (record: DynamoDbStreamOnFailureRecord) => void | Promise<void>;
  /** Function timeout in seconds. @default defaultOutboxRelaySettings.timeoutSeconds */
  readonly functionTimeoutSeconds?: number;
  /** @default defaultOutboxRelaySettings.memorySizeMb */
  readonly memorySizeMb?: number;
  /** @default 'local-outbox-relay' */
  readonly functionName?: string;
  /** Pause between polls of a stream with nothing new, in milliseconds (Lambda polls 4 times a second). @default 250 */
  readonly idlePollIntervalMs?: number;
  /** Called after each invocation. */
  readonly onInvocation?: (report: StreamInvocationReport) => void;
}

/** A batch waiting for an invocation (first or retry), with the failed invocations it has had. */
interface PendingBatch {
  readonly records: readonly DynamoDBRecord[];
  readonly failures: number;
}

interface ShardState {
  readonly shardId: string;
  readonly parentShardId: string | undefined;
  /** `undefined`: not opened yet; `null`: closed and read to its end. */
  iterator: string | null | undefined;
  /** The sequence number of the last record read (kept or filtered out): where a new iterator resumes. */
  lastSequenceNumber: string | undefined;
  /** Records read and kept by the filter, not yet in a batch. */
  readonly buffer: DynamoDBRecord[];
  /** Batches waiting: the first is retried before anything else of the shard (halves of a split follow it). */
  readonly pending: PendingBatch[];
}

const localAccount = '000000000000';

/** Failed polls in a row after which the background loop stops. */
const MAX_CONSECUTIVE_POLL_ERRORS = 5;

/**
 * Reads a DynamoDB Stream and invokes a handler as Lambda's DynamoDB Stream event source mapping
 * does (starting position `TRIM_HORIZON`, `ReportBatchItemFailures` on):
 *
 * - Each shard is read in order, a child shard only after its parent is read to its end and
 *   every batch of it is done, so the records of one item arrive in the order they were written.
 *   Invocations run one at a time, so a shard never has two batches in flight.
 * - Records that match none of `filters` are dropped before batching and never come back.
 * - A batch holds up to `batchSize` records of one shard, as a `DynamoDBStreamEvent` (`eventSource`
 *   `aws:dynamodb`, `eventSourceARN` the stream, `ApproximateCreationDateTime` in epoch seconds,
 *   binary attributes in base64).
 * - The result is read by `judgeStreamBatchResponse`. Success: the shard moves past the batch. A
 *   partial batch response: the records before the lowest reported sequence number are done, the
 *   batch is retried from it. A function error (thrown, timed out, unreadable response): the whole
 *   batch is retried, split in two halves first when `bisectBatchOnError` is on (each half is
 *   retried in turn).
 * - A batch that failed on `retryAttempts + 1` invocations is given up: one metadata-only
 *   {@link DynamoDbStreamOnFailureRecord} goes to `onFailure`, and the shard moves past it.
 * - A handler that times out is abandoned (not killed) and a new one created, as Lambda replaces
 *   the execution environment.
 *
 * Differences from AWS: a failure count is kept per batch and inherited by both halves of a split;
 * no batching window, maximum record age, parallelization factor or 6 MB payload limit; filter
 * patterns with equality rules only.
 */
export class DynamoDbStreamEventSourcePoller {
  readonly #options: DynamoDbStreamEventSourcePollerOptions;
  readonly #batchSize: number;
  readonly #retryAttempts: number;
  readonly #bisect: boolean;
  readonly #functionTimeoutSeconds: number;
  readonly #functionName: string;
  readonly #shards = new Map<string, ShardState>();
  #shardsKnown = false;
  #handler: LocalStreamHandler;
  #logStreamName = newLogStreamName();
  #nextShard = 0;
  #invocations = 0;
  #gaveUp = 0;
  #reopenedIterators = 0;
  #running: Promise<void> | undefined;
  #stopping = false;
  #passes = 0;
  #idleWaiters: { readonly afterPass: number; readonly resolve: () => void }[] = [];
  #loopError: unknown;

  /** @throws RangeError when `batchSize` is not 1 to 10,000 or `retryAttempts` is not a whole number ≥ 0 */
  constructor(options: DynamoDbStreamEventSourcePollerOptions) {
    this.#options = options;
    this.#batchSize = options.batchSize ?? defaultOutboxRelaySettings.batchSize;
    this.#retryAttempts = options.retryAttempts ?? defaultOutboxRelaySettings.retryAttempts;
    this.#bisect = options.bisectBatchOnError ?? defaultOutboxRelaySettings.bisectBatchOnError;
    this.#functionTimeoutSeconds = options.functionTimeoutSeconds ?? defaultOutboxRelaySettings.timeoutSeconds;
    this.#functionName = options.functionName ?? 'local-outbox-relay';
    if (!Number.isInteger(this.#batchSize) || this.#batchSize < 1 || this.#batchSize > 10_000) {
      throw new RangeError(`batchSize ${this.#batchSize} is outside 1..10000`);
    }
    if (!Number.isInteger(this.#retryAttempts) || this.#retryAttempts < 0) {
      throw new RangeError(`retryAttempts ${this.#retryAttempts} must be a whole number from 0: stream retries must be finite`);
    }
    for (const pattern of options.filters ?? []) matchesFilterPattern(pattern, {}); // refuses unsupported rules now
    this.#handler = options.createHandler();
  }

  /** Invocations so far. */
  get invocations(): number {
    return this.#invocations;
  }

  /** Shard iterators opened again after DynamoDB refused one (expired, or trimmed by DynamoDB Local). */
  get reopenedIterators(): number {
    return this.#reopenedIterators;
  }

  /** Batches given up so far (each sent to `onFailure`). */
  get gaveUp(): number {
    return this.#gaveUp;
  }

  /**
   * Invokes the handler once with the next batch of a shard, if one has records to deliver.
   * Do not call it while {@link start} runs.
   *
   * @returns what the invocation did, or `undefined` when every shard is read to its current end
   *   and no batch is waiting
   */
  async pollOnce(): Promise<StreamInvocationReport | undefined> {
    this.#passes += 1;
    const pass = this.#passes;
    await this.#refreshShards();
    const eligible = this.#eligibleShards();
    for (let i = 0; i < eligible.length; i += 1) {
      const shard = eligible[(this.#nextShard + i) % eligible.length]!;
      const batch = await this.#nextBatch(shard);
      if (batch === undefined) continue;
      this.#nextShard = (this.#nextShard + i + 1) % Math.max(1, eligible.length);
      return this.#invoke(shard, batch);
    }
    this.#idleWaiters = this.#idleWaiters.filter((waiter) => {
      if (waiter.afterPass >= pass) return true;
      waiter.resolve();
      return false;
    });
    return undefined;
  }

  /**
   * Polls until a pass finds nothing to deliver.
   *
   * @returns the invocations it made
   * @throws PollerIdleTimeoutError when records remain after `maxInvocations` invocations or `timeoutMs` milliseconds
   */
  async runUntilIdle(options: { readonly maxInvocations?: number; readonly timeoutMs?: number } = {}): Promise<number> {
    const maxInvocations = options.maxInvocations ?? 100_000;
    const timeoutMs = options.timeoutMs ?? 600_000;
    const deadline = Date.now() + timeoutMs;
    let made = 0;
    for (;;) {
      if (made >= maxInvocations || Date.now() > deadline) {
        throw new PollerIdleTimeoutError(
          `The stream ${this.#options.streamArn} still has records to deliver after ${made} invocations (limits: ${maxInvocations} invocations, ${timeoutMs} ms).`,
        );
      }
      const report = await this.pollOnce();
      if (report === undefined) return made;
      made += 1;
    }
  }

  /** Polls in the background until {@link stop}: one invocation after another, a pause when idle. */
  start(): void {
    if (this.#running !== undefined) throw new Error('the poller is already running');
    this.#stopping = false;
    this.#running = (async () => {
      let consecutiveErrors = 0;
      while (!this.#stopping) {
        try {
          const report = await this.pollOnce();
          consecutiveErrors = 0;
          if (report === undefined) await sleep(this.#options.idlePollIntervalMs ?? 250);
        } catch (error) {
          // A DynamoDB Streams request failed (the handler's errors never get here): try again a
          // few times, as Lambda's pollers do, then stop and let drain() report it.
          consecutiveErrors += 1;
          if (consecutiveErrors < MAX_CONSECUTIVE_POLL_ERRORS) {
            await sleep(this.#options.idlePollIntervalMs ?? 250);
            continue;
          }
          this.#loopError = error;
          this.#stopping = true;
          for (const waiter of this.#idleWaiters) waiter.resolve();
          this.#idleWaiters = [];
        }
      }
    })();
  }

  /**
   * Resolves once a poll that started after this call found nothing to deliver: every record
   * written before the call has been delivered (or filtered out, or given up).
   *
   * @throws PollerIdleTimeoutError after `timeoutMs` milliseconds (default 60,000)
   * @throws the error that stopped the background loop (a DynamoDB Streams error)
   * @throws Error when the poller is not running (use {@link runUntilIdle} then)
   */
  async drain(options: { readonly timeoutMs?: number } = {}): Promise<void> {
    if (this.#running === undefined) throw new Error('the poller is not running: call start() first, or use runUntilIdle()');
    if (this.#loopError !== undefined) throw this.#loopError;
    const timeoutMs = options.timeoutMs ?? 60_000;
    const afterPass = this.#passes;
    let timer: NodeJS.Timeout | undefined;
    const idle = new Promise<void>((resolve) => this.#idleWaiters.push({ afterPass, resolve }));
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new PollerIdleTimeoutError(
              `The stream ${this.#options.streamArn} was not drained within ${timeoutMs} ms (${this.#invocations} invocations so far).`,
            ),
          ),
        timeoutMs,
      );
    });
    try {
      await Promise.race([idle, timedOut]);
    } finally {
      clearTimeout(timer);
    }
    if (this.#loopError !== undefined) throw this.#loopError;
  }

  /** Stops the background loop after the invocation in flight (bounded by the function timeout). Idempotent. */
  async stop(): Promise<void> {
    this.#stopping = true;
    const running = this.#running;
    this.#running = undefined;
    await running;
  }

  async #refreshShards(): Promise<void> {
    const anyClosed = [...this.#shards.values()].some((shard) => shard.iterator === null);
    if (this.#shardsKnown && !anyClosed && this.#passes % 20 !== 0) return;
    const shards: Shard[] = [];
    let exclusiveStartShardId: string | undefined;
    do {
      const output = await this.#options.streams.send(
        new DescribeStreamCommand({
          StreamArn: this.#options.streamArn,
          ...(exclusiveStartShardId === undefined ? {} : { ExclusiveStartShardId: exclusiveStartShardId }),
        }),
      );
      shards.push(...(output.StreamDescription?.Shards ?? []));
      exclusiveStartShardId = output.StreamDescription?.LastEvaluatedShardId;
    } while (exclusiveStartShardId !== undefined);
    for (const shard of shards) {
      if (shard.ShardId === undefined || this.#shards.has(shard.ShardId)) continue;
      this.#shards.set(shard.ShardId, {
        shardId: shard.ShardId,
        parentShardId: shard.ParentShardId,
        iterator: undefined,
        lastSequenceNumber: undefined,
        buffer: [],
        pending: [],
      });
    }
    this.#shardsKnown = true;
  }

  /** Shards with work possibly left, whose parent (if still known) is finished. */
  #eligibleShards(): ShardState[] {
    const finished = (shard: ShardState): boolean => shard.iterator === null && shard.buffer.length === 0 && shard.pending.length === 0;
    return [...this.#shards.values()].filter((shard) => {
      if (finished(shard)) return false;
      const parent = shard.parentShardId === undefined ? undefined : this.#shards.get(shard.parentShardId);
      return parent === undefined || finished(parent);
    });
  }

  async #nextBatch(shard: ShardState): Promise<PendingBatch | undefined> {
    const waiting = shard.pending[0];
    if (waiting !== undefined) return waiting;
    let reopened = 0;
    while (shard.buffer.length < this.#batchSize && shard.iterator !== null) {
      if (shard.iterator === undefined) {
        const resume = shard.lastSequenceNumber;
        const opened = await this.#options.streams.send(
          new GetShardIteratorCommand({
            StreamArn: this.#options.streamArn,
            ShardId: shard.shardId,
            ...(resume === undefined
              ? { ShardIteratorType: 'TRIM_HORIZON' }
              : { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: resume }),
          }),
        );
        shard.iterator = opened.ShardIterator ?? null;
        continue;
      }
      let output;
      try {
        output = await this.#options.streams.send(new GetRecordsCommand({ ShardIterator: shard.iterator, Limit: 1000 }));
      } catch (error) {
        // An iterator expires after 15 minutes, and DynamoDB Local sometimes refuses one it gave
        // (TrimmedDataAccessException) under load: open a new one after the last record read, as
        // Lambda's pollers do.
        const name = (error as { name?: string } | null)?.name;
        if ((name === 'ExpiredIteratorException' || name === 'TrimmedDataAccessException') && reopened < 3) {
          reopened += 1;
          this.#reopenedIterators += 1;
          shard.iterator = undefined;
          continue;
        }
        throw error;
      }
      shard.iterator = output.NextShardIterator ?? null;
      const read = output.Records ?? [];
      const lastRead = read[read.length - 1]?.dynamodb?.SequenceNumber;
      if (lastRead !== undefined) shard.lastSequenceNumber = lastRead;
      const records = read.map((record) => toLambdaRecord(record, this.#options.streamArn));
      const filters = this.#options.filters ?? [];
      shard.buffer.push(
        ...(filters.length === 0 ? records : records.filter((record) => filters.some((pattern) => matchesFilterPattern(pattern, record)))),
      );
      if (records.length === 0) break; // read to the current end of an open shard
    }
    if (shard.buffer.length === 0) return undefined;
    const batch: PendingBatch = { records: shard.buffer.splice(0, this.#batchSize), failures: 0 };
    shard.pending.push(batch);
    return batch;
  }

  async #invoke(shard: ShardState, batch: PendingBatch): Promise<StreamInvocationReport> {
    const event: DynamoDBStreamEvent = { Records: [...batch.records] };
    const context = createLambdaContext({
      functionName: this.#functionName,
      region: localRegion,
      accountId: localAccount,
      timeoutSeconds: this.#functionTimeoutSeconds,
      memorySizeMb: this.#options.memorySizeMb ?? defaultOutboxRelaySettings.memorySizeMb,
      logStreamName: this.#logStreamName,
    });
    this.#invocations += 1;
    // The handler gets its own copy, as it would get a freshly parsed event in Lambda.
    const copy = JSON.parse(JSON.stringify(event)) as DynamoDBStreamEvent;
    const outcome = await invokeWithinTimeout(this.#handler, copy, context, this.#functionTimeoutSeconds);
    if (outcome.kind === 'timed-out') {
      this.#handler = this.#options.createHandler();
      this.#logStreamName = newLogStreamName();
    }
    const sequenceNumbers = batch.records.map((record) => record.dynamodb?.SequenceNumber ?? '');
    const judgement = judgeStreamBatchResponse(outcome, sequenceNumbers);

    let next: StreamInvocationReport['next'];
    let gaveUp: DynamoDbStreamOnFailureRecord | undefined;
    if (judgement.kind === 'success') {
      shard.pending.shift();
      next = 'done';
    } else {
      const failures = batch.failures + 1;
      const remaining = judgement.kind === 'partial' ? batch.records.slice(judgement.resumeIndex) : batch.records;
      if (failures > this.#retryAttempts) {
        gaveUp = this.#onFailureRecord(shard.shardId, remaining, failures, context, judgement.kind === 'failure');
        // Sent before the shard moves on: if the destination refuses it, the batch stays and is invoked again.
        await this.#options.onFailure?.(gaveUp);
        shard.pending.shift();
        this.#gaveUp += 1;
        next = 'gave-up';
      } else {
        shard.pending.shift();
        if (judgement.kind === 'failure' && this.#bisect && remaining.length > 1) {
          const half = Math.ceil(remaining.length / 2);
          shard.pending.unshift({ records: remaining.slice(0, half), failures }, { records: remaining.slice(half), failures });
          next = 'bisect';
        } else {
          shard.pending.unshift({ records: remaining, failures });
          next = 'retry';
        }
      }
    }
    const report: StreamInvocationReport = {
      awsRequestId: context.awsRequestId,
      shardId: shard.shardId,
      event,
      outcome,
      judgement,
      next,
      ...(gaveUp === undefined ? {} : { gaveUp }),
    };
    this.#options.onInvocation?.(report);
    return report;
  }

  #onFailureRecord(
    shardId: string,
    records: readonly DynamoDBRecord[],
    invocations: number,
    context: Context,
    functionError: boolean,
  ): DynamoDbStreamOnFailureRecord {
    const first = records[0]!;
    const last = records[records.length - 1]!;
    const arrival = (record: DynamoDBRecord) => new Date((record.dynamodb?.ApproximateCreationDateTime ?? 0) * 1000).toISOString();
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
      DDBStreamBatchInfo: {
        shardId,
        startSequenceNumber: first.dynamodb?.SequenceNumber ?? '',
        endSequenceNumber: last.dynamodb?.SequenceNumber ?? '',
        approximateArrivalOfFirstRecord: arrival(first),
        approximateArrivalOfLastRecord: arrival(last),
        batchSize: records.length,
        streamArn: this.#options.streamArn,
      },
    };
  }
}

/**
 * A record of `GetRecords` as Lambda puts it in the event: `eventSourceARN` added,
 * `ApproximateCreationDateTime` in epoch seconds, binary attribute values in base64.
 */
export function toLambdaRecord(record: SdkStreamRecord, streamArn: string): DynamoDBRecord {
  const data = record.dynamodb;
  const image = (value: Record<string, SdkAttributeValue> | undefined) => (value === undefined ? undefined : toJsonAttributes(value));
  const created = data?.ApproximateCreationDateTime;
  return {
    ...(record.eventID === undefined ? {} : { eventID: record.eventID }),
    ...(record.eventName === undefined ? {} : { eventName: record.eventName }),
    eventVersion: record.eventVersion ?? '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: record.awsRegion ?? localRegion,
    eventSourceARN: streamArn,
    dynamodb: {
      ...(created === undefined ? {} : { ApproximateCreationDateTime: Math.floor(created.getTime() / 1000) }),
      ...(data?.Keys === undefined ? {} : { Keys: image(data.Keys as Record<string, SdkAttributeValue>) }),
      ...(data?.NewImage === undefined ? {} : { NewImage: image(data.NewImage as Record<string, SdkAttributeValue>) }),
      ...(data?.OldImage === undefined ? {} : { OldImage: image(data.OldImage as Record<string, SdkAttributeValue>) }),
      ...(data?.SequenceNumber === undefined ? {} : { SequenceNumber: data.SequenceNumber }),
      ...(data?.SizeBytes === undefined ? {} : { SizeBytes: data.SizeBytes }),
      ...(data?.StreamViewType === undefined ? {} : { StreamViewType: data.StreamViewType }),
    },
  } as DynamoDBRecord;
}

/** Attribute values as Lambda's JSON has them: binary as base64, the rest as the SDK gives them. */
function toJsonAttributes(values: Record<string, SdkAttributeValue>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(values).map(([name, value]) => [name, toJsonAttribute(value)]));
}

function toJsonAttribute(value: SdkAttributeValue): unknown {
  if (value.B !== undefined) return { B: Buffer.from(value.B).toString('base64') };
  if (value.BS !== undefined) return { BS: value.BS.map((b) => Buffer.from(b).toString('base64')) };
  if (value.M !== undefined) return { M: toJsonAttributes(value.M) };
  if (value.L !== undefined) return { L: value.L.map(toJsonAttribute) };
  return value;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
