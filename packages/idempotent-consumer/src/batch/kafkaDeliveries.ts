import { createHash } from 'node:crypto';
import type { MessageAttributeValue } from '@aws-sdk/client-sqs';
import { isSqsSafeText } from '../dlq/deadLetterMessage.js';
import type { Delivery } from '../engine/Delivery.js';
import { REDRIVE_ATTRIBUTE } from './sqsDeliveries.js';
import { ValidationError } from '../errors.js';
import { topicPartition } from './kafkaBatchResponse.js';
import type { KafkaRecord, KafkaRecordHeader } from './kafkaEvent.js';
import type { DecodedKafkaRecord } from './kafkaRecordDecoding.js';

/** Longest record key kept in the dead-letter coordinates, in characters. */
export const MAX_COORDINATE_KEY_LENGTH = 512;

/**
 * The message id of a Kafka record: `<topic>-<partition>@<offset>`, e.g. `events-0@12`. It
 * names the record in logs, outcomes, the inbox row and the dead-letter message.
 */
export function kafkaMessageId(record: Pick<KafkaRecord, 'topic' | 'partition' | 'offset'>): string {
  return `${topicPartition(record.topic, record.partition)}@${record.offset}`;
}

/**
 * Turns the records of a Kafka event into source-neutral deliveries, partition by partition in
 * offset order (records are regrouped by their own topic and partition, so the event's grouping
 * key and order do not matter).
 *
 * - **Scope**: the topic-partition: a partition stops at its first record that must come back,
 *   and every later record of it in the batch is reported too, unrun (case C12).
 * - **Body**: the value, base64-decoded and then decoded as UTF-8, strictly. A value that is not
 *   UTF-8, or whose text holds a character SQS refuses (see `isSqsSafeText`), is not processed: it
 *   is dead-lettered as `ValidationError` with the value in base64 as its body (`bodyEncoding:
 *   base64`; a body too large for the DLQ is offloaded, never cut). A record without a value (a
 *   tombstone, or empty) is dead-lettered as `ValidationError`.
 * - **Decoded by a schema format** (the consumer's `kafka` option, `decoded`): the body is the
 *   value in base64 (`bodyEncoding: base64`), so a dead letter keeps its bytes, and the decoded
 *   value is the event's input (`parsedBody`); a value the format could not decode fails with the
 *   decoder's error (`ValidationError`). A decoded key is added to the coordinates as `decodedKey`.
 * - **Attempts**: Kafka has no receive count: each failed attempt is counted in the attempt log by
 *   coordinates and record identity ({@link kafkaRecordIdentity}).
 * - **Dead-letter origin**: `source`; coordinates `{topic, partition, offset, timestamp (epoch
 *   milliseconds), timestampType, key}` (`key` as UTF-8 text SQS accepts, else base64 with
 *   `"keyEncoding":"base64"`, `null` when absent; cut to 512 characters); the record headers as
 *   original attributes where SQS allows them.
 *
 * Powertools' `kafkaConsumer` (`@aws-lambda-powertools/kafka`) is not used for the default JSON
 * values: its primitive and JSON decoders replace invalid UTF-8 silently (the body would no longer
 * be the record's bytes) and hand on text that is not JSON. It decodes the Avro and Protobuf
 * values of the schema formats (`kafkaValueDecoder.ts`), record by record, before this runs; the
 * partition grouping stays ours. Its event types are used (`kafkaEvent.ts`).
 *
 * @param records - the event's `records`, by `"<topic>-<partition>"`
 * @param source - where the records came from (`kafkaEventSource(event)`)
 * @param decoded - what the schema formats made of the records (`decodeKafkaRecords`), by record
 */
export function kafkaDeliveries(
  records: Readonly<Record<string, readonly KafkaRecord[]>> | undefined,
  source: string,
  decoded: ReadonlyMap<KafkaRecord, DecodedKafkaRecord> = new Map(),
): Delivery[] {
  const byPartition = new Map<string, KafkaRecord[]>();
  for (const group of Object.values(records ?? {})) {
    for (const record of group) {
      const key = topicPartition(record.topic, record.partition);
      byPartition.set(key, [...(byPartition.get(key) ?? []), record]);
    }
  }
  const deliveries: Delivery[] = [];
  for (const [partition, partitionRecords] of byPartition) {
    for (const record of [...partitionRecords].sort((a, b) => a.offset - b.offset)) {
      deliveries.push(kafkaDelivery(record, partition, source, decoded.get(record)));
    }
  }
  return deliveries;
}

function kafkaDelivery(record: KafkaRecord, partition: string, source: string, decoded: DecodedKafkaRecord | undefined): Delivery {
  const messageId = kafkaMessageId(record);
  const value = decoded?.value !== undefined ? schemaDecodedValue(record.value ?? '', decoded.value) : decodeValue(record.value);
  const key = decodeKey(record.key);
  const { [REDRIVE_ATTRIBUTE]: redrive, ...originalAttributes } = kafkaHeadersAsAttributes(record.headers);
  // A Kafka redrive is produced at its record's own coordinates (docs/kafka.md): a mark naming
  // another record (a copy at another offset carrying the header) is no redrive, and such a copy
  // of a dead-lettered event is a duplicate of it (case C27).
  const redriveOf = redrive?.StringValue === messageId ? redrive.StringValue : undefined;
  return {
    messageId,
    body: value.body,
    ...(value.parsed !== undefined ? { parsedBody: value.parsed } : {}),
    ...(value.rejection !== undefined ? { rejection: value.rejection } : {}),
    scope: `partition:${partition}`,
    // A redrive (an explicit `dlq redrive`, at the record's own coordinates) counts its attempts
    // apart from the mapping's deliveries, as an SQS redrive does under its new message id: a
    // record dead-lettered `RetriesExhausted` is not refused again on its redrive's first failure.
    attempts: {
      kind: 'log',
      sourceId: redriveOf === undefined || redriveOf === '' ? `kafka:${messageId}` : `kafka:${messageId}#redrive`,
      recordIdentity: kafkaRecordIdentity(record),
      source,
    },
    deadLetter: {
      source,
      ...(value.encoding === 'base64' ? { bodyEncoding: 'base64' as const } : {}),
      coordinates: {
        topic: record.topic,
        partition: record.partition,
        offset: record.offset,
        timestamp: record.timestamp,
        timestampType: record.timestampType,
        key: key.coordinate,
        ...(key.encoding !== undefined ? { keyEncoding: key.encoding } : {}),
        ...(decoded?.decodedKey !== undefined ? { decodedKey: decoded.decodedKey } : {}),
      },
      messageGroupId: key.text !== undefined && messageGroupIdPattern.test(key.text) ? key.text : partition,
      ...(Object.keys(originalAttributes).length > 0 ? { originalAttributes } : {}),
    },
    ...(redriveOf === undefined || redriveOf === '' ? {} : { redriveOf }),
  };
}

/**
 * What tells two records at the same coordinates apart (a topic recreated on AWS; a fresh local
 * log that starts again at offset 0): `<timestamp in ms>:<SHA-256 of key and value, hex>`, e.g.
 * `1767268800012:9f86d0…`. The same record redelivered always has the same identity.
 */
export function kafkaRecordIdentity(record: Pick<KafkaRecord, 'timestamp' | 'key' | 'value'>): string {
  const hash = createHash('sha256')
    .update(JSON.stringify([record.key ?? null, record.value ?? null]))
    .digest('hex');
  return `${record.timestamp}:${hash}`;
}

/** Decodes base64 bytes as UTF-8; `undefined` when they are not valid UTF-8. A BOM is kept. */
export function decodeUtf8(base64: string): string | undefined {
  try {
    return strictUtf8.decode(Buffer.from(base64, 'base64'));
  } catch {
    return undefined;
  }
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

interface DecodedValue {
  readonly body: string;
  readonly encoding: 'base64' | undefined;
  readonly rejection: Error | undefined;
  /** The value a schema format decoded, when it did. */
  readonly parsed?: { readonly value: unknown };
}

/** A value a schema format decoded (or failed to): its bytes stay the body, in base64. */
function schemaDecodedValue(base64: string, result: NonNullable<DecodedKafkaRecord['value']>): DecodedValue {
  return result.ok
    ? { body: base64, encoding: 'base64', rejection: undefined, parsed: { value: result.json } }
    : { body: base64, encoding: 'base64', rejection: result.error };
}

function decodeValue(value: string | null | undefined): DecodedValue {
  if (value === null || value === undefined || value === '') {
    return {
      body: '',
      encoding: undefined,
      rejection: new ValidationError(value === '' ? 'the record value is empty' : 'the record has no value (null: a tombstone)'),
    };
  }
  const text = decodeUtf8(value);
  if (text === undefined) {
    return {
      body: value,
      encoding: 'base64',
      rejection: new ValidationError('the record value is not valid UTF-8; the dead-letter body holds it in base64'),
    };
  }
  if (!isSqsSafeText(text)) {
    return {
      body: value,
      encoding: 'base64',
      rejection: new ValidationError(
        'the record value holds a character SQS does not allow (e.g. NUL, U+FFFE); the dead-letter body holds it in base64',
      ),
    };
  }
  return { body: text, encoding: undefined, rejection: undefined };
}

interface DecodedKey {
  /** The key as text, when it has one, it is UTF-8 and SQS accepts it. */
  readonly text: string | undefined;
  readonly coordinate: string | null;
  readonly encoding: 'base64' | undefined;
}

function decodeKey(key: string | null | undefined): DecodedKey {
  if (key === null || key === undefined || key === '') return { text: undefined, coordinate: null, encoding: undefined };
  const decoded = decodeUtf8(key);
  const text = decoded !== undefined && isSqsSafeText(decoded) ? decoded : undefined;
  const cut = (s: string) => (s.length <= MAX_COORDINATE_KEY_LENGTH ? s : `${s.slice(0, MAX_COORDINATE_KEY_LENGTH - 1)}…`);
  return text === undefined
    ? { text: undefined, coordinate: cut(key), encoding: 'base64' }
    : { text, coordinate: cut(text), encoding: undefined };
}

/** An SQS `MessageGroupId`: 1 to 128 characters, letters, digits and ASCII punctuation. */
const messageGroupIdPattern = /^[\x21-\x7e]{1,128}$/;

/** SQS message attribute names: up to 256 of `A-Za-z0-9_-.`, not starting `AWS.`/`Amazon.`, no `..`. */
const attributeNamePattern = /^(?!\.)(?!.*\.\.)(?!.*\.$)(?!(?:aws|amazon)\.)[A-Za-z0-9_.-]{1,256}$/i;

/**
 * Kafka record headers in SQS `SendMessage` form, to keep in the dead-letter message's
 * `originalAttributes`: a UTF-8 value SQS accepts as text as `String`, any other as `Binary`. SQS's rules decide
 * what is kept: at most 10 headers, names SQS accepts, non-empty values, the first of
 * repeated names.
 */
export function kafkaHeadersAsAttributes(headers: readonly KafkaRecordHeader[] | null | undefined): Record<string, MessageAttributeValue> {
  const attributes: Record<string, MessageAttributeValue> = {};
  for (const header of headers ?? []) {
    for (const [name, bytes] of Object.entries(header)) {
      if (Object.keys(attributes).length >= 10) return attributes;
      if (!attributeNamePattern.test(name) || Object.hasOwn(attributes, name) || !Array.isArray(bytes) || bytes.length === 0) {
        continue;
      }
      const buffer = Buffer.from(bytes);
      const text = decodeUtf8(buffer.toString('base64'));
      attributes[name] =
        text !== undefined && isSqsSafeText(text) ? { DataType: 'String', StringValue: text } : { DataType: 'Binary', BinaryValue: buffer };
    }
  }
  return attributes;
}
