/**
 * An in-memory Kafka topic for the local runtime: no broker can be installed on the machines
 * this project targets, so the Kafka path runs on this log instead.
 *
 * @module
 */

/** One record as the log stores it. */
export interface LogRecord {
  readonly topic: string;
  readonly partition: number;
  /** Position in its partition, from 0, without gaps. */
  readonly offset: number;
  /** Producer time, in milliseconds since the epoch (`CREATE_TIME`). */
  readonly timestamp: number;
  /** `null` for a record without a key. */
  readonly key: Uint8Array | null;
  /** `null` for a tombstone. */
  readonly value: Uint8Array | null;
  /** Headers in order; names may repeat, as in Kafka. */
  readonly headers: readonly { readonly name: string; readonly value: Uint8Array }[];
}

/** What a producer appends; strings are written as UTF-8. */
export interface ProducerRecord {
  /** The partitioning key; `null` or absent: partitions are taken in turn. */
  readonly key?: string | Uint8Array | null;
  readonly value: string | Uint8Array | null;
  readonly headers?: readonly { readonly name: string; readonly value: string | Uint8Array }[];
  /** @default the log's clock */
  readonly timestamp?: number;
  /** Write to this partition instead of the key's. */
  readonly partition?: number;
}

/** Options of {@link PartitionedLog}. */
export interface PartitionedLogOptions {
  readonly topic: string;
  /** Number of partitions, from 1. */
  readonly partitions: number;
  /** Clock in milliseconds since the epoch. @default Date.now */
  readonly now?: () => number;
}

/**
 * One topic with a fixed number of partitions, kept in memory.
 *
 * - A keyed record goes to `murmur2(key) & 0x7fffffff % partitions`, the partition Kafka's
 *   default partitioner (Java client) picks, so records of one key (one aggregate) stay in
 *   order in one partition; records without a key are spread in turn.
 * - Offsets start at 0 in each partition and grow by one per record.
 * - Nothing is ever removed (no retention): a consumer's position lives with the consumer.
 *
 * @example
 * const log = new PartitionedLog({ topic: 'orders', partitions: 3 });
 * const { partition, offset } = log.append({ key: 'O-1', value: '{"eventId":"e-1"}' });
 * log.read(partition, offset, 10); // [the record]
 */
export class PartitionedLog {
  readonly topic: string;
  readonly partitions: number;
  readonly #records: LogRecord[][];
  readonly #now: () => number;
  #nextUnkeyed = 0;

  /** @throws RangeError when `partitions` is not a positive integer or `topic` is empty */
  constructor(options: PartitionedLogOptions) {
    if (!Number.isInteger(options.partitions) || options.partitions < 1) {
      throw new RangeError(`a topic needs a whole number of partitions from 1, got ${options.partitions}`);
    }
    if (options.topic === '') throw new RangeError('the topic needs a name');
    this.topic = options.topic;
    this.partitions = options.partitions;
    this.#records = Array.from({ length: options.partitions }, () => []);
    this.#now = options.now ?? Date.now;
  }

  /** The partition a key goes to; for `null` (no key), the next partition in turn. */
  partitionFor(key: string | Uint8Array | null | undefined): number {
    if (key === null || key === undefined) {
      const partition = this.#nextUnkeyed;
      this.#nextUnkeyed = (this.#nextUnkeyed + 1) % this.partitions;
      return partition;
    }
    return (murmur2(bytesOf(key)) & 0x7fffffff) % this.partitions;
  }

  /**
   * Appends one record at the end of its partition.
   *
   * @returns where it was written
   * @throws RangeError when `record.partition` is not a partition of the topic
   */
  append(record: ProducerRecord): { readonly partition: number; readonly offset: number } {
    const partition = record.partition ?? this.partitionFor(record.key);
    const log = this.#records[partition];
    if (log === undefined || !Number.isInteger(partition)) {
      throw new RangeError(`partition ${partition} is not a partition of ${this.topic} (0..${this.partitions - 1})`);
    }
    const offset = log.length;
    log.push({
      topic: this.topic,
      partition,
      offset,
      timestamp: record.timestamp ?? this.#now(),
      key: record.key === null || record.key === undefined ? null : bytesOf(record.key),
      value: record.value === null ? null : bytesOf(record.value),
      headers: (record.headers ?? []).map((header) => ({ name: header.name, value: bytesOf(header.value) })),
    });
    return { partition, offset };
  }

  /**
   * Up to `maxRecords` records of `partition` from `fromOffset` on, in offset order.
   *
   * @throws RangeError when `partition` is not a partition of the topic
   */
  read(partition: number, fromOffset: number, maxRecords: number): readonly LogRecord[] {
    const log = this.#records[partition];
    if (log === undefined) throw new RangeError(`partition ${partition} is not a partition of ${this.topic}`);
    return log.slice(Math.max(0, fromOffset), Math.max(0, fromOffset) + Math.max(0, maxRecords));
  }

  /** The offset the next record of `partition` will get (the log end offset). */
  endOffset(partition: number): number {
    return this.#records[partition]?.length ?? 0;
  }
}

/**
 * Kafka's murmur2 hash (the Java client's `Utils.murmur2`), as a signed 32-bit integer. Kafka's
 * default partitioner picks `(murmur2(keyBytes) & 0x7fffffff) % numPartitions`.
 */
export function murmur2(data: Uint8Array): number {
  const length = data.length;
  const m = 0x5bd1e995;
  let h = 0x9747b28c ^ length;
  const whole = length - (length % 4);
  for (let i = 0; i < whole; i += 4) {
    let k = (data[i] ?? 0) | ((data[i + 1] ?? 0) << 8) | ((data[i + 2] ?? 0) << 16) | ((data[i + 3] ?? 0) << 24);
    k = Math.imul(k, m);
    k ^= k >>> 24;
    k = Math.imul(k, m);
    h = Math.imul(h, m) ^ k;
  }
  const rest = length % 4;
  if (rest === 3) h ^= (data[whole + 2] ?? 0) << 16;
  if (rest >= 2) h ^= (data[whole + 1] ?? 0) << 8;
  if (rest >= 1) {
    h ^= data[whole] ?? 0;
    h = Math.imul(h, m);
  }
  h ^= h >>> 13;
  h = Math.imul(h, m);
  h ^= h >>> 15;
  return h | 0;
}

function bytesOf(value: string | Uint8Array): Uint8Array {
  return typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
}
