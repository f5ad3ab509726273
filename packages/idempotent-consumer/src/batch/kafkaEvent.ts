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
  /** The header's value as an array of bytes (numbers from 0 to 255), under its name; one name per object. */
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
  /** The topic the record was read from. */
  readonly topic: string;
  /** The record's partition of the topic, from 0. */
  readonly partition: number;
  /** The record's offset in its partition. */
  readonly offset: number;
  /** Milliseconds since the epoch. */
  readonly timestamp: number;
  /** What `timestamp` is: set by the producer (`CREATE_TIME`) or by the broker when it appended the record (`LOG_APPEND_TIME`). */
  readonly timestampType: 'CREATE_TIME' | 'LOG_APPEND_TIME';
  /** Base64; absent or `null` for a record without a key. */
  readonly key?: string | null;
  /** Base64; absent or `null` for a tombstone. */
  readonly value?: string | null;
  /** The record's headers, in order, one single-entry object per header (names may repeat); `null` or empty when it has none. */
  readonly headers: readonly KafkaRecordHeader[] | null;
  /** Present only when the mapping has a schema registry. */
  readonly valueSchemaMetadata?: KafkaSchemaMetadata;
  /** The key's schema-registry metadata; present only when the mapping has a schema registry. */
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
