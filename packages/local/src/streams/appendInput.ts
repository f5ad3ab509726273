/**
 * How a local run writes its input to a stream: one Kinesis record, or one DynamoDB item change,
 * per input line.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import type { AttributeValue } from 'aws-lambda';
import type { InputMessage } from '../inputFile.js';
import type { SentMessage } from '../report.js';
import { jsonToAttribute, type ShardLog } from './ShardLog.js';

/** The stream sources of a local run. */
export const STREAM_SOURCES = ['kinesis', 'dynamodb-streams'] as const;
/** A stream source of a local run: Kinesis Data Streams or DynamoDB Streams. */
export type StreamSource = (typeof STREAM_SOURCES)[number];

/** Whether `source` is a stream source. */
export function isStreamSource(source: string): source is StreamSource {
  return (STREAM_SOURCES as readonly string[]).includes(source);
}

/** What {@link appendInput} needs to know of the consumer. */
export interface StreamInputKeys {
  /** An input message's ordering key (the Kafka key, the FIFO group), or `undefined`. */
  readonly orderingKeyOf: (message: InputMessage) => string | undefined;
  /** The body field that holds the idempotency key, when the consumer names one. */
  readonly idempotencyKeyField?: string | undefined;
}

/**
 * Writes each input message to the log, in order, and returns what was sent (the report matches
 * outcomes by `messageId`, the record's `eventID`, and dead letters by body).
 *
 * - **Kinesis**: `PutRecord` with the body as data; partition key = the ordering key (the
 *   consumer's order holds per key), else `line-<n>`; a key longer than 256 characters is replaced
 *   by its SHA-256.
 * - **DynamoDB Streams**: the `INSERT` of an item whose attributes are the body's fields (a body
 *   that is not a JSON object becomes `{"body": "<text>"}`), placed by the ordering key as a table's
 *   partition key places items. Its `Keys`: the top-level attribute that holds the ordering key as
 *   the partition key and the idempotency key field as the sort key, as an event table keyed
 *   `(aggregate id, event id)` has them (else `{"pk": "<ordering key or line-<n>>"}`). A line that
 *   writes an item again is a `MODIFY`-like second record of the same keys (DynamoDB writes no
 *   record for a write that changes nothing; here every line is a change). The body sent (and
 *   dead-lettered) is the item's new image in DynamoDB JSON.
 */
export function appendInput(log: ShardLog, messages: readonly InputMessage[], keys: StreamInputKeys): SentMessage[] {
  return messages.map((message) => {
    const orderingKey = keys.orderingKeyOf(message);
    const partitionKey = partitionKeyOf(orderingKey ?? `line-${message.line}`);
    if (log.kind === 'kinesis') {
      const record = log.appendData(partitionKey, message.body);
      return { messageId: record.eventId, line: message.line, body: message.body };
    }
    const image = imageOf(message.body);
    const record = log.appendItem(partitionKey, keysOf(image, orderingKey, partitionKey, keys.idempotencyKeyField), image);
    return { messageId: record.eventId, line: message.line, body: JSON.stringify(image) };
  });
}

function partitionKeyOf(key: string): string {
  return key.length >= 1 && key.length <= 256 ? key : createHash('sha256').update(key).digest('hex');
}

function imageOf(body: string): Record<string, AttributeValue> {
  try {
    const json: unknown = JSON.parse(body);
    if (json !== null && typeof json === 'object' && !Array.isArray(json)) {
      return (jsonToAttribute(json) as { M: Record<string, AttributeValue> }).M;
    }
  } catch {
    // not JSON: kept as text
  }
  return { body: { S: body } };
}

function keysOf(
  image: Record<string, AttributeValue>,
  orderingKey: string | undefined,
  partitionKey: string,
  idempotencyKeyField: string | undefined,
): Record<string, AttributeValue> {
  const partitionName =
    orderingKey === undefined
      ? undefined
      : Object.keys(image).find((name) => image[name]?.S === orderingKey && name !== idempotencyKeyField);
  if (partitionName === undefined) return { pk: { S: partitionKey } };
  const sort = idempotencyKeyField === undefined ? undefined : image[idempotencyKeyField];
  return {
    [partitionName]: image[partitionName]!,
    ...(sort?.S !== undefined && idempotencyKeyField !== undefined ? { [idempotencyKeyField]: sort } : {}),
  };
}
