import { REDRIVE_ATTRIBUTE, type DeadLetterRecord } from 'idempotent-consumer/dlq';
import type { KafkaEvent, KafkaRecord, KafkaRecordHeader } from 'idempotent-consumer/kafka';
import { topicPartition } from 'idempotent-consumer/kafka';
import { NotRedrivableError } from './redriveMessage.js';

/** A Kafka record's original coordinates, as a dead letter keeps them (`ic.context.coordinates`). */
export interface KafkaCoordinates {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
}

/**
 * The original coordinates of a Kafka dead letter (`ic.context.coordinates` with a string `topic`
 * and whole-number `partition` and `offset`), or `undefined` for any other message (an SQS dead
 * letter, a message the queue's redrive policy moved, a Lambda on-failure record).
 */
export function kafkaCoordinatesOf(record: Pick<DeadLetterRecord, 'coordinates'>): KafkaCoordinates | undefined {
  const c = record.coordinates;
  if (c === undefined) return undefined;
  const { topic, partition, offset } = c;
  if (typeof topic !== 'string' || topic === '') return undefined;
  if (typeof partition !== 'number' || !Number.isInteger(partition) || partition < 0) return undefined;
  if (typeof offset !== 'number' || !Number.isInteger(offset) || offset < 0) return undefined;
  return { topic, partition, offset };
}

/** Options of {@link kafkaRedriveEvent}. */
export interface KafkaRedriveEventOptions {
  /** The original body when the DLQ holds an S3 pointer in its place (read back by the caller). @default `record.body` */
  readonly body?: string;
}

/**
 * The Kafka event that redrives one Kafka dead letter by invoking the consumer's function (Lambda
 * `Invoke`): the event an Amazon MSK or self-managed Kafka event source mapping would have sent
 * with that one record, so the consumer decides it with its normal code path.
 *
 * - `eventSource`: the dead letter's `source` is the MSK cluster ARN (`aws:kafka`, with
 *   `eventSourceArn`; `bootstrapServers` is then empty: the dead letter does not keep it), or
 *   `SelfManagedKafka:<bootstrap servers>` (`SelfManagedKafka`).
 * - The record keeps its original coordinates (`topic`, `partition`, `offset`, `timestamp`,
 *   `timestampType`), so its message id (`<topic>-<partition>@<offset>`) and the outcome name
 *   the record the producer wrote.
 * - `value`: the original bytes, in base64 (a body kept in base64, `bodyEncoding: base64`, is
 *   used as it is; a text body is encoded as UTF-8). `key`: the coordinates' `key` (UTF-8 text,
 *   or base64 with `keyEncoding: base64`; none when `null`). A key longer than 512 characters was
 *   cut when dead-lettered: the cut key is sent (keys only route records to partitions, and the
 *   consumer reads its ordering key from the value).
 * - `headers`: the producer's headers as the dead letter kept them (`record.producerAttributes`:
 *   string values as their UTF-8 bytes, binary values as they are), then the redrive mark
 *   `ic.redrive` (`REDRIVE_ATTRIBUTE`) with the original message id: the consumer applies a key its
 *   inbox holds as dead-lettered only for a record that carries it.
 *
 * Sources: the event's shape, https://docs.aws.amazon.com/lambda/latest/dg/with-msk.html and
 * https://docs.aws.amazon.com/lambda/latest/dg/with-kafka.html.
 *
 * @throws NotRedrivableError when the message is not a Kafka dead letter of the consumer (no
 *   coordinates, no source, or moved by a redrive policy), its value was empty or a tombstone
 *   (nothing to decide), its offloaded body was not given, or its producer attributes cannot be read
 */
export function kafkaRedriveEvent(record: DeadLetterRecord, options: KafkaRedriveEventOptions = {}): KafkaEvent {
  const coordinates = kafkaCoordinatesOf(record);
  if (coordinates === undefined || !record.deadLettered) {
    throw new NotRedrivableError('it is not a Kafka dead letter of the consumer (no topic, partition and offset in ic.context)');
  }
  const source = record.source ?? '';
  if (source === '') throw new NotRedrivableError('it has no source (the Kafka event source) in ic.context');
  if (record.bodyEncoding === 'empty') {
    throw new NotRedrivableError('its record had no value (empty, or a tombstone): there is nothing to redrive; use archive');
  }
  if (record.offloaded !== undefined && options.body === undefined) {
    throw new NotRedrivableError(`its body is in s3://${record.offloaded.bucket}/${record.offloaded.key} and was not read`);
  }
  if (record.producerAttributes === undefined) {
    throw new NotRedrivableError(`its producer attributes cannot be restored (${record.problem ?? 'unreadable'})`);
  }
  const body = options.body ?? record.body;
  const value = record.bodyEncoding === 'base64' ? body : Buffer.from(body, 'utf8').toString('base64');
  const c = record.coordinates ?? {};
  const key =
    typeof c.key === 'string' && c.key !== ''
      ? c.keyEncoding === 'base64'
        ? c.key
        : Buffer.from(c.key, 'utf8').toString('base64')
      : undefined;
  const headers: KafkaRecordHeader[] = [];
  for (const [name, attribute] of Object.entries(record.producerAttributes)) {
    const bytes =
      attribute.BinaryValue !== undefined
        ? Buffer.from(attribute.BinaryValue)
        : attribute.StringValue !== undefined
          ? Buffer.from(attribute.StringValue, 'utf8')
          : undefined;
    if (bytes !== undefined) headers.push({ [name]: [...bytes] });
  }
  headers.push({ [REDRIVE_ATTRIBUTE]: [...Buffer.from(record.originalMessageId ?? kafkaMessageIdOf(coordinates), 'utf8')] });
  const kafkaRecord: KafkaRecord = {
    topic: coordinates.topic,
    partition: coordinates.partition,
    offset: coordinates.offset,
    timestamp: typeof c.timestamp === 'number' ? c.timestamp : (record.failedAt?.getTime() ?? 0),
    timestampType: c.timestampType === 'LOG_APPEND_TIME' ? 'LOG_APPEND_TIME' : 'CREATE_TIME',
    ...(key !== undefined ? { key } : {}),
    value,
    headers,
  };
  const records = { [topicPartition(coordinates.topic, coordinates.partition)]: [kafkaRecord] };
  const selfManaged = /^SelfManagedKafka:(.*)$/s.exec(source);
  return selfManaged !== null
    ? { eventSource: 'SelfManagedKafka', bootstrapServers: selfManaged[1] ?? '', records }
    : { eventSource: 'aws:kafka', eventSourceArn: source, bootstrapServers: '', records };
}

/** `<topic>-<partition>@<offset>`, the consumer's message id of a Kafka record. */
export function kafkaMessageIdOf(coordinates: KafkaCoordinates): string {
  return `${topicPartition(coordinates.topic, coordinates.partition)}@${coordinates.offset}`;
}
