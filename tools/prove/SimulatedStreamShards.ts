/**
 * A Kinesis data stream or DynamoDB stream and the receiving side of Lambda's stream event source
 * mapping (`ReportBatchItemFailures`, parallelization factor 1, bisect off, finite retries), in
 * memory and on the suite's clock: a checkpoint per shard, one batch per shard in flight, a batch
 * of one shard at a time, resumed from the lowest reported sequence number, the rest of a batch
 * given up after `retryAttempts + 1` failing invocations from one record (what Lambda sends to the
 * on-failure destination is metadata only: those records are lost to the consumer), a lost
 * checkpoint (the batch comes back), and a shard lease that moves to another poller while a batch
 * is in flight (the old owner's checkpoint is then refused, as a lease of an older generation is).
 *
 * Records are stored in the local runtime's `ShardLog`; events are built with its
 * `buildStreamEvent`; responses are read with its `judgeStreamBatchResponse` (AWS's success and
 * failure conditions). The checkpoint rules are those of the local runtime's
 * `StreamEventSourcePoller` (keep the two in step).
 *
 * Sources: https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-batchfailurereporting.html,
 * https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-batchfailurereporting.html
 *
 * @module
 */
import type { DynamoDBStreamEvent, KinesisStreamEvent } from 'aws-lambda';
import {
  buildStreamEvent,
  jsonToAttribute,
  judgeStreamBatchResponse,
  ShardLog,
  type ShardRecord,
  type StreamKind,
} from '@idempotent-consumer/local/internal';
import type { VirtualClock } from './virtualClock.js';

/** Options of {@link SimulatedStreamShards}. */
export interface SimulatedStreamShardsOptions {
  readonly kind: StreamKind;
  readonly name: string;
  readonly shards: number;
  readonly batchSize: number;
  /** `MaximumRetryAttempts`. */
  readonly retryAttempts: number;
  readonly clock: VirtualClock;
}

/** A batch handed to one invocation: records of one shard. */
export interface StreamBatch {
  readonly shard: number;
  readonly records: readonly ShardRecord[];
  readonly event: KinesisStreamEvent | DynamoDBStreamEvent;
  /** The shard's lease generation when the batch was read. */
  readonly generation: number;
}

/** See the module comment. */
export class SimulatedStreamShards {
  readonly #options: SimulatedStreamShardsOptions;
  readonly log: ShardLog;
  readonly #checkpoint: number[];
  readonly #failing = new Map<number, { sequenceNumber: string; invocations: number }>();
  readonly #inFlight = new Set<number>();
  readonly #generation: number[];
  readonly #gaveUp: ShardRecord[] = [];
  /** By sequence number: the id of the dead letter a record redrives. */
  readonly #redrives = new Map<string, string>();
  #nextShard = 0;
  /** Records delivered in all. */
  deliveries = 0;

  constructor(options: SimulatedStreamShardsOptions) {
    this.#options = options;
    this.log = new ShardLog({ kind: options.kind, name: options.name, shards: options.shards, now: options.clock.now });
    this.#checkpoint = Array.from({ length: options.shards }, () => 0);
    this.#generation = Array.from({ length: options.shards }, () => 0);
  }

  /**
   * Appends a message with `partitionKey` (its group): a Kinesis record with the body as data, or
   * the `INSERT` of a DynamoDB item whose attributes are the body's fields (a body that is not a
   * JSON object: `{"body": "<text>"}`), keyed `{pk: <group>, sk: <id>}`.
   *
   * @param redriveOf - the id of the dead letter it redrives: the record carries `"ic.redrive"` in the event, as a redrive invocation does
   * @returns the record's `eventID` (the consumer's message id)
   */
  append(partitionKey: string, body: string, id: string, redriveOf?: string): string {
    let record: ShardRecord;
    if (this.#options.kind === 'kinesis') record = this.log.appendData(partitionKey, body);
    else record = this.log.appendItem(partitionKey, { pk: { S: partitionKey }, sk: { S: id } }, dynamoDbImageOf(body));
    if (redriveOf !== undefined) this.#redrives.set(record.sequenceNumber, redriveOf);
    return record.eventId;
  }

  /** Records the mapping gave up on (sent to the on-failure destination as metadata only). */
  get gaveUp(): readonly ShardRecord[] {
    return this.#gaveUp;
  }

  /** Whether every record is checkpointed. */
  get drained(): boolean {
    return this.lag === 0;
  }

  /** Records not checkpointed yet. */
  get lag(): number {
    return this.#checkpoint.reduce((sum, position, shard) => sum + this.log.endOf(shard) - position, 0);
  }

  /** The next batch of a shard not in flight, up to `batchSize` records; `undefined` when none. */
  poll(): StreamBatch | undefined {
    for (let i = 0; i < this.log.shards; i += 1) {
      const shard = (this.#nextShard + i) % this.log.shards;
      if (this.#inFlight.has(shard)) continue;
      const records = this.log.read(shard, this.#checkpoint[shard] ?? 0, this.#options.batchSize);
      if (records.length === 0) continue;
      this.#nextShard = (shard + 1) % this.log.shards;
      this.#inFlight.add(shard);
      this.deliveries += records.length;
      const event = buildStreamEvent(this.log, records);
      event.Records.forEach((record, index) => {
        const redriveOf = this.#redrives.get(records[index]!.sequenceNumber);
        if (redriveOf !== undefined) Object.assign(record, { 'ic.redrive': redriveOf });
      });
      return { shard, records, event, generation: this.#generation[shard] ?? 0 };
    }
    return undefined;
  }

  /** The shard's lease moves to another poller, which reads it again from the checkpoint. */
  rebalance(batch: StreamBatch): void {
    this.#inFlight.delete(batch.shard);
    this.#generation[batch.shard] = (this.#generation[batch.shard] ?? 0) + 1;
  }

  /**
   * What the mapping does after an invocation: reads the response (`failed` for a thrown error or
   * a timeout) and moves the shard's checkpoint, unless the checkpoint is lost or the shard's lease
   * moved meanwhile.
   */
  settle(
    batch: StreamBatch,
    outcome: { readonly kind: 'returned'; readonly response: unknown } | { readonly kind: 'failed' },
    acknowledgementLost: boolean,
  ): void {
    const shard = batch.shard;
    if ((this.#generation[shard] ?? 0) !== batch.generation) return; // not the owner any more
    this.#inFlight.delete(shard);
    const judgement = judgeStreamBatchResponse(
      outcome.kind === 'returned' ? outcome : { kind: 'threw', error: new Error('the invocation failed') },
      batch.records.map((record) => record.sequenceNumber),
    );
    if (acknowledgementLost && judgement.kind !== 'failure') return; // the checkpoint was not saved: the batch comes back
    const start = this.#checkpoint[shard] ?? 0;
    if (judgement.kind === 'success') {
      this.#checkpoint[shard] = start + batch.records.length;
      this.#failing.delete(shard);
      return;
    }
    const resumeIndex = judgement.kind === 'partial' ? judgement.resumeIndex : 0;
    const failedAt = batch.records[resumeIndex]!;
    const previous = this.#failing.get(shard);
    const invocations = previous?.sequenceNumber === failedAt.sequenceNumber ? previous.invocations + 1 : 1;
    if (invocations > this.#options.retryAttempts) {
      this.#gaveUp.push(...batch.records.slice(resumeIndex));
      this.#checkpoint[shard] = start + batch.records.length;
      this.#failing.delete(shard);
      return;
    }
    this.#checkpoint[shard] = start + resumeIndex;
    this.#failing.set(shard, { sequenceNumber: failedAt.sequenceNumber, invocations });
  }
}

type Image = Record<string, ReturnType<typeof jsonToAttribute>>;

/** The DynamoDB item a message body is written as: its fields, or `{"body": "<text>"}` for a body that is not a JSON object. */
export function dynamoDbImageOf(body: string): Image {
  try {
    const json: unknown = JSON.parse(body);
    if (json !== null && typeof json === 'object' && !Array.isArray(json)) return (jsonToAttribute(json) as { M: Image }).M;
  } catch {
    // not JSON: kept as text
  }
  return { body: { S: body } };
}

/**
 * What is wrong with a stream partial batch response, per AWS's contract and the consumer's: each
 * item `{"itemIdentifier":"<sequence number>"}` of a record of the batch, once, and every record
 * after the lowest reported one reported too (a batch holds one shard).
 */
export function streamResponseProblem(response: unknown, sequenceNumbers: readonly string[]): string | undefined {
  if (response === null || typeof response !== 'object' || Array.isArray(response))
    return `the response is not an object: ${JSON.stringify(response)}`;
  const failures = (response as { batchItemFailures?: unknown }).batchItemFailures;
  if (!Array.isArray(failures)) return 'batchItemFailures is not a list';
  const reported = new Set<string>();
  for (const failure of failures as unknown[]) {
    const identifier = (failure as { itemIdentifier?: unknown } | null)?.itemIdentifier;
    if (typeof identifier !== 'string' || !sequenceNumbers.includes(identifier))
      return `a batch item failure is not a sequence number of the batch: ${JSON.stringify(failure)}`;
    if (reported.has(identifier)) return `${identifier} is reported twice`;
    reported.add(identifier);
  }
  const first = sequenceNumbers.findIndex((sequenceNumber) => reported.has(sequenceNumber));
  if (first < 0) return undefined;
  const missing = sequenceNumbers.slice(first).filter((sequenceNumber) => !reported.has(sequenceNumber));
  return missing.length === 0 ? undefined : `sequence numbers ${missing.join(', ')} follow a reported one but are not reported`;
}
