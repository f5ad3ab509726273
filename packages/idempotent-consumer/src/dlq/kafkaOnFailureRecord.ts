/**
 * The invocation record a Kafka event source mapping (Amazon MSK, self-managed Apache Kafka)
 * sends to its on-failure destination when it gives up on a batch (retries exhausted, records
 * older than the maximum age, an event too large), and how the DLQ tool reads it back.
 *
 * What each destination keeps:
 * - **SQS queue, SNS topic**: metadata only: why, and the records' coordinates (topic-partitions,
 *   first and last offsets and timestamps); the records themselves stay on the topic.
 * - **S3 bucket**: the same metadata and, in `payload`, the whole event of the last invocation
 *   (keys, values, headers) "as an escaped JSON string": nothing depends on the topic's retention.
 *
 * Source: "SNS and SQS example invocation record" and "S3 destination example invocation record",
 * https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure.html
 *
 * @module
 */
import type { KafkaEvent } from '../batch/kafkaEvent.js';

/** The offsets of one topic-partition that a Kafka on-failure record covers. */
export interface KafkaOnFailureRecordsInfo {
  /** The first offset given up, as a string (AWS writes offsets as strings). */
  readonly firstRecordOffset: string;
  /** The last offset given up, as a string. */
  readonly lastRecordOffset: string;
  /** The first record's timestamp, ISO 8601. */
  readonly firstRecordTimestamp: string;
  /** The last record's timestamp, ISO 8601. */
  readonly lastRecordTimestamp: string;
}

/** A Kafka event source mapping's on-failure invocation record (SQS, SNS or S3 destination). */
export interface KafkaOnFailureInvocationRecord {
  /** The last invocation's request id and function, why Lambda gave up, and how many times it invoked. */
  readonly requestContext: {
    readonly requestId: string;
    readonly functionArn: string;
    /** `RetryAttemptsExhausted`, `RecordAgeExceeded` or `MaximumPayloadSizeExceeded`. */
    readonly condition: string;
    readonly approximateInvokeCount: number;
  };
  /** `null` when the condition is `MaximumPayloadSizeExceeded` (the function was not invoked). */
  readonly responseContext: {
    readonly statusCode: number;
    readonly executedVersion: string;
    /** `Unhandled` when the last invocation threw or timed out. */
    readonly functionError?: string;
  } | null;
  /** The record format's version (`1.0`). */
  readonly version: string;
  /** When Lambda gave up (ISO 8601). */
  readonly timestamp: string;
  /** The batch given up: its size, its source, the last event's size, the offsets per topic-partition. */
  readonly KafkaBatchInfo: {
    readonly batchSize: number;
    /** The MSK cluster ARN; absent for self-managed Kafka. */
    readonly eventSourceArn?: string;
    readonly bootstrapServers: string;
    /** The last invocation's event size, in bytes. */
    readonly payloadSize: number;
    /** By `"<topic>-<partition>"`. */
    readonly recordsInfo: Readonly<Record<string, KafkaOnFailureRecordsInfo>>;
  };
  /** S3 destinations only: the last invocation's whole event, as JSON text. */
  readonly payload?: string;
}

/** An on-failure record read back: the record, and its event when the record kept it (S3). */
export interface ReadKafkaOnFailureRecord {
  /** The invocation record as Lambda wrote it. */
  readonly record: KafkaOnFailureInvocationRecord;
  /** The event of `payload`, parsed; `undefined` for a metadata-only record (SQS, SNS). */
  readonly event: KafkaEvent | undefined;
}

/** Thrown by {@link readKafkaOnFailureRecord} for text that is not a Kafka on-failure record. */
export class NotAKafkaOnFailureRecordError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotAKafkaOnFailureRecordError';
  }
}

/**
 * Reads a Kafka on-failure record (an S3 object's body, an SQS message's body). `payload` is read
 * as JSON text, as AWS documents it, or as an object.
 *
 * @throws NotAKafkaOnFailureRecordError when the text is not JSON, has no `KafkaBatchInfo` with
 *   `recordsInfo`, or has a `payload` that is not a Kafka event (`records` by topic-partition)
 */
export function readKafkaOnFailureRecord(text: string): ReadKafkaOnFailureRecord {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new NotAKafkaOnFailureRecordError(`not JSON: ${(error as Error).message}`);
  }
  const record = value as Partial<KafkaOnFailureInvocationRecord> | null;
  const info = record?.KafkaBatchInfo;
  if (typeof record !== 'object' || record === null || typeof info !== 'object' || info === null || typeof info.recordsInfo !== 'object') {
    throw new NotAKafkaOnFailureRecordError('no KafkaBatchInfo.recordsInfo: not the on-failure record of a Kafka event source mapping');
  }
  const payload = (record as { payload?: unknown }).payload;
  if (payload === undefined || payload === null) return { record: record as KafkaOnFailureInvocationRecord, event: undefined };
  let event: unknown = payload;
  if (typeof payload === 'string') {
    try {
      event = JSON.parse(payload);
    } catch (error) {
      throw new NotAKafkaOnFailureRecordError(`its payload is not JSON: ${(error as Error).message}`);
    }
  }
  const records = (event as { records?: unknown } | null)?.records;
  if (typeof records !== 'object' || records === null || Array.isArray(records)) {
    throw new NotAKafkaOnFailureRecordError('its payload is not a Kafka event (no records by topic-partition)');
  }
  return { record: record as KafkaOnFailureInvocationRecord, event: event as KafkaEvent };
}
