/**
 * The shapes of the event that a Kafka event source mapping sends to the function, for Amazon
 * MSK (`eventSource: "aws:kafka"`, with `eventSourceArn`) and self-managed Apache Kafka
 * (`eventSource: "SelfManagedKafka"`, no ARN), as AWS documents them (the same shapes as
 * Powertools' `MSKEvent`, written here so that the package's types need no optional peer).
 *
 * - `records` groups the records by `"<topic>-<partition>"` (e.g. `"orders-0"`), each group in
 *   offset order.
 * - `key` and `value` are base64; either may be absent or `null` (a record without a key, a
 *   tombstone).
 * - `headers` is a list of one-entry objects, header name → value as an array of bytes
 *   (`[{ "traceparent": [48, 48, 45, ...] }]`); names may repeat.
 * - `timestamp` is in milliseconds since the epoch.
 *
 * Sources: https://docs.aws.amazon.com/lambda/latest/dg/with-msk.html,
 * https://docs.aws.amazon.com/lambda/latest/dg/with-kafka.html
 *
 * @module
 */

/** One Kafka record header: its name → its value's bytes. */
export interface KafkaRecordHeader {
  readonly [name: string]: number[];
}

/** A record's schema-registry metadata: the registry's data format and the schema's id. */
export interface KafkaSchemaMetadata {
  /** `AVRO`, `PROTOBUF` or `JSON`. */
  readonly dataFormat: string;
  /** A Confluent numeric id, or an AWS Glue schema version UUID. */
  readonly schemaId?: string;
}

/** One record of a Kafka event. */
export interface KafkaRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  /** Milliseconds since the epoch. */
  readonly timestamp: number;
  readonly timestampType: 'CREATE_TIME' | 'LOG_APPEND_TIME';
  /** Base64; absent or `null` for a record without a key. */
  readonly key?: string | null;
  /** Base64; absent or `null` for a tombstone. */
  readonly value?: string | null;
  readonly headers: readonly KafkaRecordHeader[] | null;
  /** Present only when the mapping has a schema registry. */
  readonly valueSchemaMetadata?: KafkaSchemaMetadata;
  readonly keySchemaMetadata?: KafkaSchemaMetadata;
}

/** The event of an Amazon MSK or a self-managed Apache Kafka event source mapping. */
export interface KafkaEvent {
  /** `aws:kafka` (Amazon MSK) or `SelfManagedKafka`. */
  readonly eventSource: 'aws:kafka' | 'SelfManagedKafka';
  /** The MSK cluster's ARN; absent for self-managed Kafka. */
  readonly eventSourceArn?: string;
  /** The brokers, comma-separated (`host:port,host:port`). */
  readonly bootstrapServers: string;
  /** The records, grouped by `"<topic>-<partition>"`. */
  readonly records: Readonly<Record<string, readonly KafkaRecord[]>>;
}

/**
 * Where a record came from, for the dead-letter queue's `source` attribute and the attempt log:
 * the MSK cluster ARN, or `SelfManagedKafka:<bootstrapServers>` for self-managed Kafka.
 */
export function kafkaEventSource(event: Pick<KafkaEvent, 'eventSource' | 'eventSourceArn' | 'bootstrapServers'>): string {
  if (event.eventSourceArn !== undefined && event.eventSourceArn !== '') return event.eventSourceArn;
  return `${event.eventSource}:${event.bootstrapServers}`;
}
