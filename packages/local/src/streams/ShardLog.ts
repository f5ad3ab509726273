/**
 * An in-memory shard log for the local runtime: the records of a Kinesis data stream or of a
 * DynamoDB stream, as their event source mappings read them. No Kinesis or DynamoDB Streams
 * emulator with Lambda's mapping runs here, so the stream sources run on this log (the Kafka one is
 * `kafka/PartitionedLog.ts`).
 *
 * @module
 */
import { createHash, randomUUID } from 'node:crypto';
import type { AttributeValue } from 'aws-lambda';

/** Which stream a log stands for: the shape of its records and events. */
export type StreamKind = 'kinesis' | 'dynamodb-streams';

/** One record as the log stores it. */
export interface ShardRecord {
  /** The shard's position, from 0. */
  readonly shard: number;
  /** `shardId-000000000000` and so on, as Kinesis and DynamoDB Streams name shards. */
  readonly shardId: string;
  /** Decimal, growing within the log (Kinesis: 56 digits; DynamoDB Streams: 21), unique across logs. */
  readonly sequenceNumber: string;
  /** Kinesis: `<shardId>:<sequenceNumber>`; DynamoDB Streams: 32 hex digits. */
  readonly eventId: string;
  /** The key that chose the shard: Kinesis's partition key, or a DynamoDB item's partition key value. */
  readonly partitionKey: string;
  /** When the record was appended, in milliseconds since the epoch. */
  readonly arrivalMs: number;
  /** Kinesis: the data, as UTF-8 text. */
  readonly data?: string;
  /** DynamoDB Streams: the item's key attributes and its new image, in DynamoDB JSON. */
  readonly keys?: Readonly<Record<string, AttributeValue>>;
  readonly newImage?: Readonly<Record<string, AttributeValue>>;
}

/** Options of {@link ShardLog}. */
export interface ShardLogOptions {
  readonly kind: StreamKind;
  /** The stream's name (Kinesis) or the table's (DynamoDB Streams), in its ARN. */
  readonly name: string;
  /** Number of shards, from 1. */
  readonly shards: number;
  /** Clock in milliseconds since the epoch. @default Date.now */
  readonly now?: () => number;
}

const localRegion = 'us-east-1';
const localAccount = '000000000000';

/**
 * One stream with a fixed number of open shards, kept in memory.
 *
 * - A record goes to the shard whose hash key range holds the MD5 of its partition key (a 128-bit
 *   number), the shards splitting the range evenly, as Kinesis places records
 *   (https://docs.aws.amazon.com/kinesis/latest/APIReference/API_PutRecord.html); records of one key
 *   stay in order in one shard. A DynamoDB table's partition key places its items alike.
 * - Sequence numbers grow within the log and do not repeat across logs (they start with the
 *   log's creation time), so the consumer's attempt log never mistakes one run's records for another's.
 * - Nothing is removed (no retention): a mapping's position lives with the mapping.
 *
 * @example
 * const log = new ShardLog({ kind: 'kinesis', name: 'orders', shards: 2 });
 * const record = log.appendData('O-1', '{"eventId":"e-1"}');
 * log.read(record.shard, 0, 10); // [record]
 */
export class ShardLog {
  readonly kind: StreamKind;
  readonly name: string;
  readonly shards: number;
  /** The stream's ARN, as `eventSourceARN` in the events. */
  readonly arn: string;
  readonly #records: ShardRecord[][];
  readonly #now: () => number;
  readonly #epoch: string;
  #next = 0;

  /** @throws RangeError when `shards` is not a whole number from 1 or `name` is empty */
  constructor(options: ShardLogOptions) {
    if (!Number.isInteger(options.shards) || options.shards < 1) {
      throw new RangeError(`a stream needs a whole number of shards from 1, got ${options.shards}`);
    }
    if (options.name === '') throw new RangeError('the stream needs a name');
    this.kind = options.kind;
    this.name = options.name;
    this.shards = options.shards;
    this.#now = options.now ?? Date.now;
    this.#epoch = String(this.#now()).padStart(13, '0').slice(-13);
    this.#records = Array.from({ length: options.shards }, () => []);
    this.arn =
      options.kind === 'kinesis'
        ? `arn:aws:kinesis:${localRegion}:${localAccount}:stream/${options.name}`
        : `arn:aws:dynamodb:${localRegion}:${localAccount}:table/${options.name}/stream/${new Date(this.#now()).toISOString().slice(0, 23)}`;
  }

  /** The shard a partition key goes to. */
  shardFor(partitionKey: string): number {
    const hash = BigInt(`0x${createHash('md5').update(partitionKey, 'utf8').digest('hex')}`);
    return Number((hash * BigInt(this.shards)) >> 128n);
  }

  /**
   * Appends a Kinesis record (`PutRecord`) at the end of its partition key's shard.
   *
   * @throws Error when the log is not a Kinesis stream
   * @throws RangeError when `partitionKey` is not 1 to 256 characters
   */
  appendData(partitionKey: string, data: string): ShardRecord {
    if (this.kind !== 'kinesis') throw new Error('appendData is for a Kinesis stream; use appendItem');
    return this.#append(partitionKey, { data });
  }

  /**
   * Appends the `INSERT` of a DynamoDB item at the end of its partition key's shard.
   *
   * @param partitionKey - the item's partition key value, which places it
   * @param keys - the item's key attributes (DynamoDB JSON)
   * @param newImage - the item (DynamoDB JSON)
   * @throws Error when the log is not a DynamoDB stream
   */
  appendItem(
    partitionKey: string,
    keys: Readonly<Record<string, AttributeValue>>,
    newImage: Readonly<Record<string, AttributeValue>>,
  ): ShardRecord {
    if (this.kind !== 'dynamodb-streams') throw new Error('appendItem is for a DynamoDB stream; use appendData');
    return this.#append(partitionKey, { keys, newImage });
  }

  #append(partitionKey: string, content: Pick<ShardRecord, 'data' | 'keys' | 'newImage'>): ShardRecord {
    if (partitionKey.length < 1 || partitionKey.length > 256) {
      throw new RangeError(`a partition key has 1 to 256 characters, got ${partitionKey.length}`);
    }
    const shard = this.shardFor(partitionKey);
    const shardId = `shardId-${String(shard).padStart(12, '0')}`;
    this.#next += 1;
    const sequenceNumber =
      this.kind === 'kinesis'
        ? `49${this.#epoch}${String(this.#next).padStart(41, '0')}`
        : `${this.#epoch}${String(this.#next).padStart(8, '0')}`;
    const record: ShardRecord = {
      shard,
      shardId,
      sequenceNumber,
      eventId: this.kind === 'kinesis' ? `${shardId}:${sequenceNumber}` : randomUUID().replaceAll('-', ''),
      partitionKey,
      arrivalMs: this.#now(),
      ...content,
    };
    this.#records[shard]!.push(record);
    return record;
  }

  /**
   * Up to `maxRecords` records of `shard` from position `from` on, in sequence order.
   *
   * @throws RangeError when `shard` is not a shard of the stream
   */
  read(shard: number, from: number, maxRecords: number): readonly ShardRecord[] {
    const records = this.#records[shard];
    if (records === undefined) throw new RangeError(`shard ${shard} is not a shard of ${this.name}`);
    return records.slice(Math.max(0, from), Math.max(0, from) + Math.max(0, maxRecords));
  }

  /** The position the next record of `shard` will get (its record count). */
  endOf(shard: number): number {
    return this.#records[shard]?.length ?? 0;
  }
}

/**
 * A JSON value as a DynamoDB item attribute (DynamoDB JSON): string → `S`, number → `N`, boolean →
 * `BOOL`, `null` → `NULL`, array → `L`, object → `M`.
 *
 * @throws TypeError for a value JSON does not have (a function, `undefined`, a bigint)
 */
export function jsonToAttribute(value: unknown): AttributeValue {
  if (typeof value === 'string') return { S: value };
  if (typeof value === 'number' && Number.isFinite(value)) return { N: String(value) };
  if (typeof value === 'boolean') return { BOOL: value };
  if (value === null) return { NULL: true };
  if (Array.isArray(value)) return { L: value.map(jsonToAttribute) };
  if (typeof value === 'object') {
    return { M: Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, jsonToAttribute(v)])) };
  }
  throw new TypeError(`not a JSON value: ${typeof value}`);
}
