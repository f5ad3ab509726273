import { createHash } from 'node:crypto';
import type { DynamoDBRecord, KinesisStreamRecord } from 'aws-lambda';
import { isSqsSafeText } from '../dlq/deadLetterMessage.js';
import type { Delivery } from '../engine/Delivery.js';
import { ValidationError } from '../errors.js';
import { decodeUtf8, MAX_COORDINATE_KEY_LENGTH } from './kafkaDeliveries.js';
import { REDRIVE_ATTRIBUTE } from './sqsDeliveries.js';
import { type StreamImage, streamImageToJson } from './streamImage.js';

/**
 * One record of a Kinesis or DynamoDB Streams batch, in stream order: its sequence number (the
 * `itemIdentifier` of a batch item failure), its shard (its scope), and the delivery the engine
 * works on; `delivery` is `undefined` for a record the consumer does not process (a DynamoDB
 * `REMOVE`), which is acknowledged unless an earlier record of its shard must come back.
 */
export interface StreamEntry {
  readonly sequenceNumber: string;
  readonly scope: string;
  readonly delivery: Delivery | undefined;
}

/** An SQS `MessageGroupId`: 1 to 128 characters, letters, digits and ASCII punctuation. */
const messageGroupIdPattern = /^[\x21-\x7e]{1,128}$/;

/**
 * The shard id of a Kinesis record: the part of its `eventID` before the `:`
 * (`shardId-000000000006:49545…` → `shardId-000000000006`); `unknown-shard` when it has none.
 */
export function kinesisShardId(record: Pick<KinesisStreamRecord, 'eventID'>): string {
  const id = typeof record.eventID === 'string' ? record.eventID : '';
  const colon = id.indexOf(':');
  return colon > 0 ? id.slice(0, colon) : 'unknown-shard';
}

/** The stream's name from its ARN (`arn:aws:kinesis:…:stream/<name>` → `<name>`); the ARN itself when it has no `/`. */
function streamNameOf(arn: string): string {
  const slash = arn.indexOf('/');
  return slash < 0 ? arn : (arn.slice(slash + 1).split('/')[0] ?? arn);
}

/**
 * The id of the dead letter a stream record redrives: its `"ic.redrive"` field, beside the fields
 * Lambda sets. A stream record has no attributes or headers; Lambda never sets this field, so only
 * an invocation made by a redrive (the function invoked with the record, as the DLQ tool redrives a
 * Kafka dead letter) carries it. `undefined` for any other record.
 */
export function streamRedriveOf(record: object): string | undefined {
  const value = (record as Record<string, unknown>)[REDRIVE_ATTRIBUTE];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** Compares two sequence numbers (decimal strings of up to 128 bits) numerically. */
export function compareSequenceNumbers(a: string, b: string): number {
  if (/^\d+$/.test(a) && /^\d+$/.test(b)) return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Groups entries by scope (first seen first), each scope in sequence-number order. */
function inShardOrder(entries: StreamEntry[]): StreamEntry[] {
  const byScope = new Map<string, StreamEntry[]>();
  for (const entry of entries) byScope.set(entry.scope, [...(byScope.get(entry.scope) ?? []), entry]);
  return [...byScope.values()].flatMap((group) => [...group].sort((a, b) => compareSequenceNumbers(a.sequenceNumber, b.sequenceNumber)));
}

/**
 * Turns the records of a Kinesis Data Streams event into source-neutral deliveries, shard by shard
 * in sequence-number order (a Lambda batch holds one shard's records; with a parallelization
 * factor above 1, those of some partition keys of it).
 *
 * - **Message id**: the record's `eventID`, `<shard id>:<sequence number>`.
 * - **Scope**: the shard: it stops at its first record that must come back, and that record and
 *   every later one of the shard in the batch are reported by sequence number.
 * - **Body**: `kinesis.data`, base64-decoded and then decoded as UTF-8, strictly. Data that is not
 *   UTF-8, or holds a character SQS refuses, is dead-lettered as `ValidationError` with the data in
 *   base64 as its body (`bodyEncoding: base64`); empty data is dead-lettered as `ValidationError`.
 * - **Attempts**: Kinesis has no receive count: each failed attempt is counted in the attempt log
 *   (`kinesis:<stream name>/<eventID>`), with the record's identity (arrival time and a hash of its
 *   partition key and data).
 * - **Redrive**: a record with an `"ic.redrive"` field ({@link streamRedriveOf}) redrives that dead letter.
 * - **Dead-letter origin**: `source` = the stream ARN; coordinates `{shardId, sequenceNumber,
 *   partitionKey (cut to 512 characters), approximateArrivalTimestamp (epoch milliseconds)}`; the
 *   message group (FIFO DLQ) is the partition key when SQS accepts it, else the shard id.
 *
 * Sources: https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html,
 * https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-batchfailurereporting.html
 */
export function kinesisEntries(records: readonly KinesisStreamRecord[]): StreamEntry[] {
  return inShardOrder(
    records.map((record) => {
      const shardId = kinesisShardId(record);
      const scope = `shard:${record.eventSourceARN}/${shardId}`;
      return { sequenceNumber: record.kinesis.sequenceNumber, scope, delivery: kinesisDelivery(record, shardId, scope) };
    }),
  );
}

function kinesisDelivery(record: KinesisStreamRecord, shardId: string, scope: string): Delivery {
  const { data, partitionKey, sequenceNumber, approximateArrivalTimestamp } = record.kinesis;
  const messageId = typeof record.eventID === 'string' && record.eventID !== '' ? record.eventID : `${shardId}:${sequenceNumber}`;
  const value = decodeData(data);
  const arrivalMs = Math.round(Number(approximateArrivalTimestamp) * 1000);
  const identity = createHash('sha256')
    .update(JSON.stringify([partitionKey ?? null, data ?? null]))
    .digest('hex');
  return {
    messageId,
    body: value.body,
    ...(value.rejection !== undefined ? { rejection: value.rejection } : {}),
    scope,
    attempts: {
      kind: 'log',
      sourceId: `kinesis:${streamNameOf(record.eventSourceARN)}/${messageId}`,
      recordIdentity: `${arrivalMs}:${identity}`,
      source: record.eventSourceARN,
    },
    deadLetter: {
      source: record.eventSourceARN,
      ...(value.encoding === 'base64' ? { bodyEncoding: 'base64' as const } : {}),
      coordinates: {
        shardId,
        sequenceNumber,
        partitionKey: cut(partitionKey ?? ''),
        approximateArrivalTimestamp: Number.isFinite(arrivalMs) ? arrivalMs : null,
      },
      messageGroupId: messageGroupIdPattern.test(partitionKey ?? '') ? partitionKey : shardId,
    },
    ...(streamRedriveOf(record) === undefined ? {} : { redriveOf: streamRedriveOf(record) }),
  };
}

function decodeData(data: string | undefined): { body: string; encoding: 'base64' | undefined; rejection: Error | undefined } {
  if (data === undefined || data === null || data === '') {
    return { body: '', encoding: undefined, rejection: new ValidationError('the record data is empty') };
  }
  const text = decodeUtf8(data);
  if (text === undefined) {
    return {
      body: data,
      encoding: 'base64',
      rejection: new ValidationError('the record data is not valid UTF-8; the dead-letter body holds it in base64'),
    };
  }
  if (!isSqsSafeText(text)) {
    return {
      body: data,
      encoding: 'base64',
      rejection: new ValidationError(
        'the record data holds a character SQS does not allow (e.g. NUL, U+FFFE); the dead-letter body holds it in base64',
      ),
    };
  }
  return { body: text, encoding: undefined, rejection: undefined };
}

/**
 * Turns the records of a DynamoDB Streams event into source-neutral deliveries, in sequence-number
 * order (a Lambda batch holds one shard's records; a DynamoDB stream record does not name its shard,
 * so the scope is the batch's stream).
 *
 * **The consumer's event** is the record's `NewImage` as plain JSON ({@link streamImageToJson}):
 * a table whose items are the events (each `INSERT` or `MODIFY` a message). The idempotency key
 * and the ordering key are the consumer's own, read from that image (an attribute the producer
 * sets, as on any source), not the record's `eventID`: `eventID` is unique per change, so a producer
 * that writes the same business event twice (a retry that puts a second item) would make two
 * changes with two `eventID`s and apply it twice; a stream record delivered again keeps its
 * `eventID` and its image, and the inbox absorbs it under either key. The `eventID` names the
 * record instead (message id, attempt log), and the event name and keys go with the dead letter.
 *
 * - **Not processed**: a `REMOVE` (no new image: an item deleted, or expired by TTL) is acknowledged
 *   without running the consumer (filter it out in the event source mapping to save the invocation:
 *   `{"eventName":["INSERT","MODIFY"]}`). An `INSERT` or `MODIFY` without a `NewImage` (a stream
 *   view type `KEYS_ONLY` or `OLD_IMAGE`) is dead-lettered as `ValidationError`.
 * - **Body** (what a dead letter keeps): the `NewImage` in DynamoDB JSON, as the event holds it
 *   (lossless: types, sets, binary; `aws dynamodb put-item --item` takes it as it is).
 * - **Scope**: the shard (the batch): it stops at its first record that must come back, and that
 *   record and every later one in the batch are reported by `SequenceNumber`.
 * - **Attempts**: counted in the attempt log as `dynamodb:<eventID>`, with the record's identity
 *   (`<ApproximateCreationDateTime>:<SequenceNumber>`).
 * - **Redrive**: a record with an `"ic.redrive"` field ({@link streamRedriveOf}) redrives that dead letter.
 * - **Dead-letter origin**: `source` = the stream ARN; coordinates `{eventID, eventName,
 *   sequenceNumber, keys (DynamoDB JSON, cut to 512 characters), approximateCreationDateTime (epoch
 *   seconds)}`; the message group (FIFO DLQ) is the keys' JSON when SQS accepts it, else its SHA-256.
 *
 * Sources: https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html,
 * https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-batchfailurereporting.html,
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Streams.html
 */
export function dynamoDbStreamEntries(records: readonly DynamoDBRecord[]): StreamEntry[] {
  return inShardOrder(
    records.map((record) => {
      const scope = `shard:${record.eventSourceARN ?? 'unknown-stream'}`;
      const sequenceNumber = record.dynamodb?.SequenceNumber ?? '';
      return { sequenceNumber, scope, delivery: record.eventName === 'REMOVE' ? undefined : dynamoDbStreamDelivery(record, scope) };
    }),
  );
}

function dynamoDbStreamDelivery(record: DynamoDBRecord, scope: string): Delivery {
  const stream = record.dynamodb ?? {};
  const source = record.eventSourceARN ?? 'unknown-stream';
  const sequenceNumber = stream.SequenceNumber ?? '';
  const messageId = typeof record.eventID === 'string' && record.eventID !== '' ? record.eventID : `${source}@${sequenceNumber}`;
  const keys = JSON.stringify(stream.Keys ?? {});
  const image = stream.NewImage as StreamImage | undefined;
  let body = '';
  let parsed: { value: unknown } | undefined;
  let rejection: Error | undefined;
  if (image === undefined) {
    rejection = new ValidationError(
      `the ${record.eventName ?? 'stream'} record has no NewImage: the stream's view type must be NEW_IMAGE or NEW_AND_OLD_IMAGES`,
    );
  } else {
    body = JSON.stringify(image);
    try {
      parsed = { value: streamImageToJson(image) };
    } catch (error) {
      rejection = new ValidationError(`the NewImage is not DynamoDB JSON: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return {
    messageId,
    body,
    ...(parsed !== undefined && rejection === undefined ? { parsedBody: parsed } : {}),
    ...(rejection !== undefined ? { rejection } : {}),
    scope,
    attempts: {
      kind: 'log',
      sourceId: `dynamodb:${messageId}`,
      recordIdentity: `${stream.ApproximateCreationDateTime ?? 0}:${sequenceNumber}`,
      source,
    },
    deadLetter: {
      source,
      coordinates: {
        eventID: record.eventID ?? null,
        eventName: record.eventName ?? null,
        sequenceNumber,
        keys: cut(keys),
        approximateCreationDateTime: stream.ApproximateCreationDateTime ?? null,
      },
      messageGroupId: messageGroupIdPattern.test(keys) ? keys : createHash('sha256').update(keys).digest('hex'),
    },
    ...(streamRedriveOf(record) === undefined ? {} : { redriveOf: streamRedriveOf(record) }),
  };
}

function cut(text: string): string {
  return text.length <= MAX_COORDINATE_KEY_LENGTH ? text : `${text.slice(0, MAX_COORDINATE_KEY_LENGTH - 1)}…`;
}
