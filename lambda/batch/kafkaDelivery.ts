import { createHash } from 'node:crypto';
import type { MessageAttributeValue } from '@aws-sdk/client-sqs';
import { isSqsSafeText } from '../dlq/deadLetterMessage.js';
import { ValidationError } from '../errors.js';
import type { KafkaAttemptLog } from '../inbox/KafkaAttemptLog.js';
import { peekIds } from '../observability/outcomes.js';
import type { Delivery } from '../processing/MessageConsumer.js';
import { topicPartition } from './kafkaBatchResponse.js';
import type { KafkaRecord, KafkaRecordHeader } from './kafkaEvent.js';

/** Options of {@link kafkaDelivery}. */
export interface KafkaDeliveryOptions {
  /** Where the record came from (see `kafkaEventSource`): the DLQ's `source` attribute. */
  readonly source: string;
  /**
   * The attempt on which a retryable failure is dead-lettered as `RetriesExhausted`: the
   * mapping's `MaximumRetryAttempts` + 1 (`KAFKA_MAX_ATTEMPTS`).
   */
  readonly maxAttempts: number;
  /** Where failed attempts are counted; without it a failure is retried until AWS gives up. */
  readonly attemptLog?: KafkaAttemptLog;
  /** Told when the attempt log could not record a failure (the verdict then stands without it). */
  readonly onAttemptLogError?: (error: unknown, record: KafkaRecord) => void;
}

/** Longest record key kept in the dead-letter coordinates, in characters. */
export const MAX_COORDINATE_KEY_LENGTH = 512;

/**
 * The message id of a Kafka record: `<topic>-<partition>@<offset>`, e.g. `orders-0@12`. It
 * names the record in logs, outcomes, the inbox row and the dead-letter message.
 */
export function kafkaMessageId(record: Pick<KafkaRecord, 'topic' | 'partition' | 'offset'>): string {
  return `${topicPartition(record.topic, record.partition)}@${record.offset}`;
}

/**
 * Turns a record of a Kafka event into a source-neutral {@link Delivery}.
 *
 * - **Body**: the value, base64-decoded and then decoded as UTF-8, strictly: bytes that are not
 *   UTF-8 are not replaced. A value that is not UTF-8, or whose text holds a character SQS
 *   refuses (NUL and most other C0 controls, U+FFFE, U+FFFF: see `isSqsSafeText`), is not
 *   processed: it is dead-lettered as `ValidationError`, its body being the value in base64 with
 *   the dead-letter attribute `bodyEncoding: base64` (sent as text, SQS would refuse it and the
 *   record would be lost after the mapping's retries). A record without a value (`null`, a tombstone, or empty) is
 *   dead-lettered as `ValidationError` with an empty body, which the dead-letter writer sends
 *   as its placeholder with `bodyEncoding: empty` (SQS refuses empty bodies).
 * - **Attempt**: Kafka has no receive count. The delivery's `recordFailedAttempt` counts each
 *   failure in the attempt log by coordinates, with the record's identity
 *   ({@link kafkaRecordIdentity}) so a count left by another record at the same coordinates
 *   is not reused; the failure that reaches `maxAttempts` is
 *   dead-lettered as `RetriesExhausted` (see `MessageConsumer`).
 * - **Dead-letter context**: `source`; coordinates `{topic, partition, offset, timestamp
 *   (epoch milliseconds), timestampType, key}` (`key` as UTF-8 text SQS accepts, else base64 with
 *   `"keyEncoding":"base64"`, `null` when absent; cut to 512 characters); the message group of a
 *   FIFO dead-letter queue: the record key, else the body's `orderId`, else
 *   `<topic>-<partition>`; the record headers as original attributes where SQS allows them.
 *
 * Powertools' `kafkaConsumer` (`@aws-lambda-powertools/kafka`) is not used to decode: its
 * primitive decoder replaces invalid UTF-8 silently (the body would no longer be the record's
 * bytes), its JSON decoder logs the raw value when it is not JSON (bodies may hold personal
 * data), and it flattens the partition grouping that the per-partition stop needs. Its event
 * types are used (`kafkaEvent.ts`).
 */
export function kafkaDelivery(record: KafkaRecord, options: KafkaDeliveryOptions): Delivery {
  const messageId = kafkaMessageId(record);
  const value = decodeValue(record.value);
  const key = decodeKey(record.key);
  const { attemptLog } = options;

  const coordinates: Record<string, string | number | null> = {
    topic: record.topic,
    partition: record.partition,
    offset: record.offset,
    timestamp: record.timestamp,
    timestampType: record.timestampType,
    key: key.coordinate,
    ...(key.encoding !== undefined ? { keyEncoding: key.encoding } : {}),
  };
  const originalAttributes = kafkaHeadersAsAttributes(record.headers);

  return {
    message: { body: value.body, messageId },
    attempt: undefined,
    ...(value.rejection !== undefined ? { rejection: value.rejection } : {}),
    deadLetter: {
      attempts: 1,
      source: options.source,
      ...(value.encoding === 'base64' ? { bodyEncoding: 'base64' as const } : {}),
      coordinates,
      messageGroupId: messageGroupOf(key.text, value.body, record),
      ...(Object.keys(originalAttributes).length > 0 ? { originalAttributes } : {}),
    },
    ...(attemptLog !== undefined
      ? {
          recordFailedAttempt: async (failure) => {
            try {
              const attempts = await attemptLog.recordFailure({
                topic: record.topic,
                partition: record.partition,
                offset: record.offset,
                recordIdentity: kafkaRecordIdentity(record),
                source: options.source,
                errorType: failure.errorType,
                errorMessage: failure.errorMessage,
                reason: failure.reason,
              });
              return { attempt: attempts, maxAttempts: options.maxAttempts };
            } catch (error) {
              options.onAttemptLogError?.(error, record);
              throw error;
            }
          },
        }
      : {}),
  } satisfies Delivery;
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
  readonly rejection: ValidationError | undefined;
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

function messageGroupOf(keyText: string | undefined, body: string, record: KafkaRecord): string {
  if (keyText !== undefined && messageGroupIdPattern.test(keyText)) return keyText;
  const orderId = peekIds(body).orderId;
  if (orderId !== undefined && messageGroupIdPattern.test(orderId)) return orderId;
  return topicPartition(record.topic, record.partition);
}

/** SQS message attribute names: up to 256 of `A-Za-z0-9_-.`, not starting `AWS.`/`Amazon.`, no `..`. */
const attributeNamePattern = /^(?!\.)(?!.*\.\.)(?!.*\.$)(?!(?:aws|amazon)\.)[A-Za-z0-9_.-]{1,256}$/i;

/**
 * Kafka record headers in SQS `SendMessage` form, to keep in the dead-letter message's
 * `originalAttributes`: a UTF-8 value SQS accepts as text as `String`, any other as `Binary`. SQS's rules decide
 * what is kept: at most 10 headers, names SQS accepts, non-empty values, the first of
 * repeated names.
 */
export function kafkaHeadersAsAttributes(
  headers: readonly KafkaRecordHeader[] | null | undefined,
): Record<string, MessageAttributeValue> {
  const attributes: Record<string, MessageAttributeValue> = {};
  for (const header of headers ?? []) {
    for (const [name, bytes] of Object.entries(header)) {
      if (Object.keys(attributes).length >= 10) return attributes;
      if (!attributeNamePattern.test(name) || Object.hasOwn(attributes, name) || !Array.isArray(bytes) || bytes.length === 0) {
        continue;
      }
      const buffer = Buffer.from(bytes);
      const text = decodeUtf8(buffer.toString('base64'));
      attributes[name] = text !== undefined && isSqsSafeText(text) ? { DataType: 'String', StringValue: text } : { DataType: 'Binary', BinaryValue: buffer };
    }
  }
  return attributes;
}
