/**
 * The dead-letter message: what the consumer sends to the dead-letter queue (DLQ) for a message
 * it gives up on, and how the DLQ tool reads it back.
 *
 * ## Layout
 *
 * - **Body**: the original body, byte for byte. When body and attributes together exceed the
 *   DLQ's maximum message size, the body is stored in S3 and the message body is the Amazon SQS
 *   Extended Client's pointer (see `payloadPointer.ts`), with its `ExtendedPayloadSize` attribute.
 * - **The consumer's attributes** all start with the reserved prefix `ic.` ({@link
 *   RESERVED_ATTRIBUTE_PREFIX}), so they cannot collide with a producer's attribute names (a
 *   producer must not use names starting with `ic.`; if one does, its attributes are packed, see
 *   below). There are four, always:
 *   - `ic.failureReason`: the reason (a built-in `FailureReason` or a user's own name);
 *   - `ic.errorType`: the error's `name`, at most {@link MAX_ERROR_TYPE_LENGTH} characters;
 *   - `ic.errorMessage`: the error's message, at most {@link MAX_ERROR_MESSAGE_LENGTH} characters;
 *   - `ic.context`: JSON of {@link DeadLetterContextAttribute}: source (queue ARN, Kafka event
 *     source ARN, or Kinesis / DynamoDB stream ARN), original message id, attempts, failure time,
 *     coordinates (FIFO message group; Kafka topic, partition, offset, timestamp, key; Kinesis shard
 *     id, sequence number, partition key; DynamoDB Streams event id, event name, sequence number,
 *     keys), body encoding when the body is not the
 *     plain original, and where the body is when it was offloaded.
 * - **The producer's attributes** stay real attributes, exactly as they were, when they fit
 *   beside the consumer's: SQS allows {@link SQS_MAX_MESSAGE_ATTRIBUTES} attributes per message,
 *   so that is up to 6 (5 when the body is offloaded, `ExtendedPayloadSize` taking one), and when
 *   none of their names is reserved (`ic.*`; `ExtendedPayloadSize` when the body is offloaded) or
 *   not one SQS accepts. Otherwise all of them are packed, losslessly, into one more attribute,
 *   `ic.originalAttributes` (JSON, binary values in base64; see {@link serializeAttributes}).
 *
 * - **The trace header**: the source message's X-Ray trace header (SQS's `AWSTraceHeader`; for a
 *   Kafka record, the invocation's) as the `AWSTraceHeader` message system attribute, so the dead
 *   letter continues the source message's trace. System attributes count toward neither the 10
 *   message attributes nor the size.
 *
 * Why this layout: the four consumer attributes are the fewest that keep what an operator filters
 * and reads at a glance (reason, error) apart from the rest, which leaves the most room for the
 * producer's attributes to stay real (so a message keeps them as its consumers and tools see
 * them), while the packed form keeps any number of them, under any name, bit for bit. A redrive
 * ({@link producerAttributesOf}) removes every `ic.*` attribute (and an `ExtendedPayloadSize` the
 * consumer added) and restores the producer's attributes exactly, from either form.
 *
 * Every value is text SQS accepts (see {@link isSqsSafeText}); JSON values escape any character
 * SQS refuses as `\uXXXX`, which JSON reads back unchanged.
 *
 * Sources: SQS message attributes (at most 10; names of `A-Za-z0-9_-.`, not starting with `AWS.`
 * or `Amazon.`; sizes count name, type and value):
 * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-message-metadata.html;
 * allowed characters:
 * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import type { MessageAttributeValue, SendMessageCommandInput } from '@aws-sdk/client-sqs';
import { DeadLetterTooLargeError, InvalidFailureReasonError } from './deadLetterErrors.js';
import { isValidFailureReason } from './failureReasons.js';
import { EXTENDED_PAYLOAD_SIZE_ATTRIBUTE, formatPayloadPointer } from './payloadPointer.js';
import { isTraceHeader, TRACE_HEADER_ATTRIBUTE } from '../observability/traceHeader.js';

/** The prefix of every message attribute the consumer adds to a dead-letter message. Reserved: producers must not use it. */
export const RESERVED_ATTRIBUTE_PREFIX = 'ic.';

/** Names of the message attributes the consumer puts on a dead-letter message (see the module's documentation). */
export const DeadLetterAttribute = {
  /** The failure reason, e.g. `ValidationError`, `RetriesExhausted`, or a user's own. */
  failureReason: 'ic.failureReason',
  /** The `name` of the error that decided it, e.g. `ZodError`, `ProvisionedThroughputExceededException`. */
  errorType: 'ic.errorType',
  /** The error's message, truncated to {@link MAX_ERROR_MESSAGE_LENGTH} characters. */
  errorMessage: 'ic.errorMessage',
  /** JSON of {@link DeadLetterContextAttribute}. */
  context: 'ic.context',
  /** JSON of the producer's attributes when they could not stay real attributes (see {@link serializeAttributes}). */
  originalAttributes: 'ic.originalAttributes',
} as const;

/** Every attribute name the consumer may add (the `ic.*` ones). A redrive drops every `ic.*` name, these and any other. */
export const deadLetterAttributeNames: readonly string[] = Object.values(DeadLetterAttribute);

/** The most message attributes SQS accepts on one message. */
export const SQS_MAX_MESSAGE_ATTRIBUTES = 10;

/** Longest `ic.errorMessage` kept, in characters (UTF-16 code units). */
export const MAX_ERROR_MESSAGE_LENGTH = 1024;

/** Longest `ic.errorType` kept, in characters (UTF-16 code units). */
export const MAX_ERROR_TYPE_LENGTH = 256;

/** The error message is cut to this many characters before a body is offloaded for want of a few bytes. */
const SHORT_ERROR_MESSAGE_LENGTH = 128;

/** The version written in `ic.context`'s `v`. */
export const DEAD_LETTER_FORMAT_VERSION = 1;

/** Prefix of the S3 keys of offloaded bodies (a lifecycle rule on it must keep them at least as long as the DLQ keeps messages). */
export const PAYLOAD_KEY_PREFIX = 'dead-letters/';

/** The body sent in place of an empty one (SQS requires at least one character). */
export const EMPTY_BODY_PLACEHOLDER = '(empty body)';

/**
 * A character SQS does not allow in a message body or a `String` attribute value. SQS allows only
 * `#x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF` (XML 1.0's
 * `Char`); anything else, e.g. NUL, most C0 controls, U+FFFE, U+FFFF or a lone surrogate, makes
 * `SendMessage` fail with `InvalidMessageContents`.
 *
 * @see https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html
 */
const sqsDisallowedCharacter = /[^\t\n\r\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;
const sqsDisallowedCharacters = new RegExp(sqsDisallowedCharacter.source, 'gu');

/**
 * Whether SQS accepts `text` as a message body or a `String` message attribute value: every
 * character is one of `#x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to
 * #x10FFFF`, as listed in the SQS `SendMessage` API reference
 * (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html).
 * A lone surrogate (a string that is not well-formed UTF-16) is refused too. The empty string is
 * "safe" here; that SQS refuses an empty body is a separate rule.
 *
 * @example
 * isSqsSafeText('{"eventId":"e-1"} 🎉'); // true
 * isSqsSafeText('\u0000nul body');        // false
 * isSqsSafeText('\uFFFE');               // false
 */
export function isSqsSafeText(text: string): boolean {
  return !sqsDisallowedCharacter.test(text);
}

/**
 * `text` with every character SQS refuses (see {@link isSqsSafeText}) replaced by U+FFFD, for
 * diagnostic attribute values (error messages) that must not make the dead-letter send fail.
 */
export function toSqsSafeText(text: string): string {
  return isSqsSafeText(text) ? text : text.replace(sqsDisallowedCharacters, '\uFFFD');
}

/**
 * `JSON.stringify(value)` with every character SQS refuses written as a `\uXXXX` escape, so the
 * JSON is SQS-safe text and `JSON.parse` gives back exactly `value`. (Such characters can only
 * occur inside JSON strings, where the escape means the same character.)
 */
export function toSqsSafeJson(value: unknown): string {
  return JSON.stringify(value).replace(sqsDisallowedCharacters, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * Whether SQS accepts `name` as a message attribute name: 1 to 256 of `A-Za-z0-9_-.`, not
 * starting or ending with `.`, no `..`, not starting with `AWS.` or `Amazon.` (any case).
 */
export function isValidSqsAttributeName(name: string): boolean {
  return /^(?!\.)(?!.*\.\.)(?!.*\.$)(?!(?:aws|amazon)\.)[A-Za-z0-9_.-]{1,256}$/i.test(name);
}

/** Why a message is dead-lettered: the classifier's verdict (its `disposition`, if any, is not needed here). */
export interface DeadLetterFailure {
  /** The classifier's disposition, when a whole verdict is passed; not used. */
  readonly disposition?: string;
  /** The failure reason: a built-in `FailureReason` or a user's own; see `isValidFailureReason`. */
  readonly reason: string | undefined;
  /** The error's `name`; cut to {@link MAX_ERROR_TYPE_LENGTH} characters. */
  readonly errorType: string;
  /** The error's message; cut to {@link MAX_ERROR_MESSAGE_LENGTH} characters. */
  readonly errorMessage: string;
}

/** What the consumer knows of a message it dead-letters. */
export interface DeadLetterContext {
  /** The original body, sent byte for byte (an empty one as {@link EMPTY_BODY_PLACEHOLDER}). */
  readonly body: string;
  /** `base64` when `body` holds, in base64, a value SQS could not take as text (a Kafka value). */
  readonly bodyEncoding?: 'base64';
  /** Why it is dead-lettered: the reason (required: one {@link isValidFailureReason} accepts) and the error. */
  readonly failure: DeadLetterFailure;
  /** Attempts so far, from 1. */
  readonly attempts: number;
  /** Source queue ARN, Kafka event source ARN, or the Kinesis or DynamoDB stream's ARN. */
  readonly source: string;
  /** SQS `messageId`, `<topic>-<partition>@<offset>` for Kafka, the record's `eventID` for Kinesis and DynamoDB Streams. */
  readonly originalMessageId: string;
  /**
   * Original coordinates: `{messageGroupId}` for SQS FIFO; `{topic, partition, offset, timestamp, key, …}` for Kafka;
   * `{shardId, sequenceNumber, partitionKey, approximateArrivalTimestamp}` for Kinesis; `{eventID, eventName,
   * sequenceNumber, keys, approximateCreationDateTime}` for DynamoDB Streams (docs/streams.md).
   */
  readonly coordinates?: Readonly<Record<string, string | number | null>>;
  /** The FIFO message group: required when the dead-letter queue is FIFO. */
  readonly messageGroupId?: string;
  /** The producer's message attributes (SQS `SendMessage` form; Kafka headers as attributes). */
  readonly originalAttributes?: Readonly<Record<string, MessageAttributeValue>>;
  /** When the consumer gave up on it; written to `ic.context` as ISO 8601 in UTC. */
  readonly failedAt: Date;
  /**
   * The X-Ray trace header the dead letter carries on (the source message's `AWSTraceHeader`),
   * sent as its `AWSTraceHeader` message system attribute, which counts toward neither the message's
   * size nor its 10 attributes. Left out when absent or malformed (see `isTraceHeader`).
   */
  readonly traceHeader?: string;
}

/** Where an offloaded body is, and how to check it. */
export interface OffloadedPayload {
  /** The S3 bucket's name (the consumer's payload bucket). */
  readonly bucket: string;
  /** The object's key: {@link PAYLOAD_KEY_PREFIX} then a SHA-256 (hex) of the source, the original message id and the body's hash. */
  readonly key: string;
  /** The body's size, in UTF-8 bytes. */
  readonly bytes: number;
  /** SHA-256 of the body's UTF-8 bytes, hex. */
  readonly sha256: string;
}

/** The JSON in `ic.context`. */
export interface DeadLetterContextAttribute {
  /** The version of this format: {@link DEAD_LETTER_FORMAT_VERSION} (1) when this library wrote it. */
  readonly v: number;
  /** Source queue ARN, Kafka event source ARN, or the Kinesis or DynamoDB stream's ARN. */
  readonly source: string;
  /** SQS `messageId`, `<topic>-<partition>@<offset>` for Kafka, the record's `eventID` for Kinesis and DynamoDB Streams. */
  readonly originalMessageId: string;
  /** Attempts the consumer made, from 1. */
  readonly attempts: number;
  /** When the consumer gave up (ISO 8601, UTC). */
  readonly failedAt: string;
  /**
   * `{messageGroupId}` for SQS FIFO; `{topic, partition, offset, timestamp, timestampType, key, keyEncoding?}` for Kafka;
   * `{shardId, sequenceNumber, partitionKey, approximateArrivalTimestamp}` for Kinesis; `{eventID, eventName,
   * sequenceNumber, keys, approximateCreationDateTime}` for DynamoDB Streams.
   */
  readonly coordinates?: Readonly<Record<string, string | number | null>>;
  /**
   * Present only when the body is not the plain original: `empty` (SQS refuses an empty body, so
   * {@link EMPTY_BODY_PLACEHOLDER} stands in its place) or `base64` (a Kafka value that is not
   * UTF-8, or text holding a character SQS refuses, in base64).
   */
  readonly bodyEncoding?: 'empty' | 'base64';
  /** Present only when the body was offloaded to S3 (the message body is then the pointer). */
  readonly payload?: OffloadedPayload;
}

/** Options of {@link buildDeadLetterMessage}. */
export interface DeadLetterMessageOptions {
  /** Whether the dead-letter queue is FIFO. */
  readonly fifo: boolean;
  /** The dead-letter queue's maximum message size, in bytes (its `MaximumMessageSize`). */
  readonly maxMessageSizeBytes: number;
  /** The S3 bucket for bodies too large for the DLQ. @default none: such a message is a {@link DeadLetterTooLargeError} */
  readonly payloadBucket?: string;
}

/** What to send: the `SendMessage` request, and the body to store in S3 first when it was offloaded. */
export interface DeadLetterMessage {
  /**
   * The `SendMessage` request: the dead-letter queue's URL, the body (or the S3 pointer), the
   * attributes, and on a FIFO queue the message group and deduplication ids.
   */
  readonly input: SendMessageCommandInput;
  /** Present when the body goes to S3: put `body` (UTF-8) at `bucket`/`key` before sending `input`. */
  readonly offload?: { readonly bucket: string; readonly key: string; readonly body: string };
  /** The message's size as SQS counts it (body + attributes), in bytes. */
  readonly sizeBytes: number;
}

/**
 * Builds the `SendMessage` request that puts a failed message in the dead-letter queue, laid out
 * as the module's documentation describes.
 *
 * Size: if body and attributes exceed `maxMessageSizeBytes`, the error message is first cut to
 * 128 characters; if that is not enough, the body is offloaded to `payloadBucket` (with the error
 * message whole again) at a key derived from the source, the original message id and the body
 * (so a retry writes the same object). The body is never cut and nothing is dropped.
 *
 * FIFO (`fifo: true`): the original message group is kept and the deduplication id is derived
 * from the source and the original message id (SHA-256, hex), so a consumer that sends the same
 * failure twice within SQS's 5-minute deduplication window puts it there once.
 *
 * @param queueUrl - the dead-letter queue's URL
 * @param context - the failed message and why it failed
 * @throws InvalidFailureReasonError when the failure has no valid reason
 * @throws DeadLetterTooLargeError when the message does not fit and cannot be offloaded (no
 *   `payloadBucket`), or does not fit even with the body offloaded (the attributes alone are too large)
 * @throws Error when a FIFO message has no `messageGroupId`
 */
export function buildDeadLetterMessage(queueUrl: string, context: DeadLetterContext, options: DeadLetterMessageOptions): DeadLetterMessage {
  const reason = context.failure.reason;
  if (reason === undefined || !isValidFailureReason(reason)) {
    throw new InvalidFailureReasonError(
      `a dead-letter message needs a failure reason of 1 to 64 letters, digits, '_', '.' or '-' (not "none"); ` +
        `got ${reason === undefined ? 'none' : JSON.stringify(reason.slice(0, 80))} for message ${context.originalMessageId}`,
    );
  }
  const body = context.body === '' ? EMPTY_BODY_PLACEHOLDER : context.body;
  const bodyEncoding = context.body === '' ? 'empty' : context.bodyEncoding;
  // A message the queue's own redrive moved back from a dead-letter queue carries that dead
  // letter's `ic.*` attributes: its producer's attributes are what they stand for.
  const producer = restoredProducerAttributes(context.originalAttributes ?? {});
  const str = (value: string): MessageAttributeValue => ({ DataType: 'String', StringValue: value });

  const assemble = (errorMessageLength: number, payload?: OffloadedPayload): Record<string, MessageAttributeValue> => {
    const contextAttribute: DeadLetterContextAttribute = {
      v: DEAD_LETTER_FORMAT_VERSION,
      source: context.source,
      originalMessageId: context.originalMessageId,
      attempts: context.attempts,
      failedAt: context.failedAt.toISOString(),
      ...(context.coordinates !== undefined ? { coordinates: context.coordinates } : {}),
      ...(bodyEncoding !== undefined ? { bodyEncoding } : {}),
      ...(payload !== undefined ? { payload } : {}),
    };
    const attributes: Record<string, MessageAttributeValue> = {
      [DeadLetterAttribute.failureReason]: str(reason),
      [DeadLetterAttribute.errorType]: str(nonEmpty(toSqsSafeText(truncate(context.failure.errorType, MAX_ERROR_TYPE_LENGTH)))),
      [DeadLetterAttribute.errorMessage]: str(nonEmpty(toSqsSafeText(truncate(context.failure.errorMessage, errorMessageLength)))),
      [DeadLetterAttribute.context]: str(toSqsSafeJson(contextAttribute)),
    };
    if (payload !== undefined) {
      attributes[EXTENDED_PAYLOAD_SIZE_ATTRIBUTE] = { DataType: 'Number', StringValue: String(payload.bytes) };
    }
    if (Object.keys(producer).length > 0) {
      if (canStayReal(producer, Object.keys(attributes))) Object.assign(attributes, producer);
      else attributes[DeadLetterAttribute.originalAttributes] = str(toSqsSafeJson(toPlainAttributes(producer)));
    }
    return attributes;
  };

  const bodyBytes = Buffer.byteLength(body, 'utf8');
  let attributes = assemble(MAX_ERROR_MESSAGE_LENGTH);
  let size = bodyBytes + attributesSize(attributes);
  if (size > options.maxMessageSizeBytes) {
    attributes = assemble(SHORT_ERROR_MESSAGE_LENGTH);
    size = bodyBytes + attributesSize(attributes);
  }
  let messageBody = body;
  let offload: DeadLetterMessage['offload'];
  if (size > options.maxMessageSizeBytes) {
    if (options.payloadBucket === undefined || options.payloadBucket === '') {
      throw new DeadLetterTooLargeError(
        `dead-letter message of ${context.originalMessageId} is ${size} bytes (body ${bodyBytes}), more than the ` +
          `dead-letter queue's ${options.maxMessageSizeBytes}, and there is no payload bucket to offload the body to ` +
          '(set PAYLOAD_BUCKET_NAME); the message is not acknowledged, so nothing is lost',
        size,
        options.maxMessageSizeBytes,
      );
    }
    const sha256 = createHash('sha256').update(body, 'utf8').digest('hex');
    const key = `${PAYLOAD_KEY_PREFIX}${createHash('sha256').update(`${context.source}\n${context.originalMessageId}\n${sha256}`).digest('hex')}`;
    const payload: OffloadedPayload = { bucket: options.payloadBucket, key, bytes: bodyBytes, sha256 };
    messageBody = formatPayloadPointer(payload);
    const pointerBytes = Buffer.byteLength(messageBody, 'utf8');
    attributes = assemble(MAX_ERROR_MESSAGE_LENGTH, payload);
    size = pointerBytes + attributesSize(attributes);
    if (size > options.maxMessageSizeBytes) {
      attributes = assemble(SHORT_ERROR_MESSAGE_LENGTH, payload);
      size = pointerBytes + attributesSize(attributes);
    }
    if (size > options.maxMessageSizeBytes) {
      throw new DeadLetterTooLargeError(
        `dead-letter message of ${context.originalMessageId} does not fit the dead-letter queue's ` +
          `${options.maxMessageSizeBytes} bytes even with its body offloaded: its attributes alone take ` +
          `${attributesSize(attributes)} bytes; the message is not acknowledged, so nothing is lost`,
        size,
        options.maxMessageSizeBytes,
      );
    }
    offload = { bucket: payload.bucket, key, body };
  }

  const input: SendMessageCommandInput = { QueueUrl: queueUrl, MessageBody: messageBody, MessageAttributes: attributes };
  if (isTraceHeader(context.traceHeader)) {
    input.MessageSystemAttributes = { [TRACE_HEADER_ATTRIBUTE]: { DataType: 'String', StringValue: context.traceHeader } };
  }
  if (options.fifo) {
    if (context.messageGroupId === undefined || context.messageGroupId === '') {
      throw new Error(`a FIFO dead-letter queue needs a message group id (message ${context.originalMessageId})`);
    }
    input.MessageGroupId = context.messageGroupId;
    input.MessageDeduplicationId = createHash('sha256').update(`${context.source}\n${context.originalMessageId}`).digest('hex');
  }
  return { input, sizeBytes: size, ...(offload !== undefined ? { offload } : {}) };
}

/** Whether the producer's attributes can be real attributes beside `consumerNames` (see the module's documentation). */
function canStayReal(producer: Readonly<Record<string, MessageAttributeValue>>, consumerNames: readonly string[]): boolean {
  const names = Object.keys(producer);
  if (names.length + consumerNames.length > SQS_MAX_MESSAGE_ATTRIBUTES) return false;
  return names.every((name) => {
    const value = producer[name];
    if (name.startsWith(RESERVED_ATTRIBUTE_PREFIX) || consumerNames.includes(name) || !isValidSqsAttributeName(name)) return false;
    if (value === undefined || value.DataType === undefined || value.DataType === '') return false;
    if (value.StringValue !== undefined)
      return value.StringValue !== '' && isSqsSafeText(value.StringValue) && value.BinaryValue === undefined;
    return value.BinaryValue !== undefined && value.BinaryValue.byteLength > 0;
  });
}

/** What the consumer's attributes of a dead-letter message say, read back. */
export interface DeadLetterInfo {
  /** `ic.failureReason`; `undefined` when the attribute is missing. */
  readonly failureReason: string | undefined;
  /** `ic.errorType`: the `name` of the error that decided it; `undefined` when the attribute is missing. */
  readonly errorType: string | undefined;
  /** `ic.errorMessage`: the error's message, as cut when sent; `undefined` when the attribute is missing. */
  readonly errorMessage: string | undefined;
  /** `ic.context`, parsed; fields that are missing or of the wrong type are left out. */
  readonly context: Partial<DeadLetterContextAttribute>;
  /** Why `ic.context` could not be read, when it could not. */
  readonly contextProblem?: string;
  /** `ic.context.failedAt` as a date, when valid. */
  readonly failedAt: Date | undefined;
}

/**
 * Reads the consumer's attributes of a dead-letter message.
 *
 * @param attributes - the message's attributes as received (`ReceiveMessage` with `MessageAttributeNames: ['All']`);
 *   only their `StringValue`s are read
 * @returns `undefined` when the message carries no `ic.*` attribute: the queue's redrive policy
 *   moved it (or someone sent it there by hand)
 */
export function readDeadLetterAttributes(
  attributes: Readonly<Record<string, { readonly StringValue?: string | undefined }>>,
): DeadLetterInfo | undefined {
  if (!Object.keys(attributes).some((name) => name.startsWith(RESERVED_ATTRIBUTE_PREFIX))) return undefined;
  const text = (name: string): string | undefined => attributes[name]?.StringValue;
  const raw = text(DeadLetterAttribute.context);
  let context: Partial<DeadLetterContextAttribute> = {};
  let contextProblem: string | undefined;
  if (raw === undefined) {
    contextProblem = `no ${DeadLetterAttribute.context} attribute`;
  } else {
    try {
      context = readContext(JSON.parse(raw));
    } catch (error) {
      contextProblem = `${DeadLetterAttribute.context} is not JSON (${(error as Error).message})`;
    }
  }
  const failedAt = context.failedAt !== undefined ? new Date(context.failedAt) : undefined;
  return {
    failureReason: text(DeadLetterAttribute.failureReason),
    errorType: text(DeadLetterAttribute.errorType),
    errorMessage: text(DeadLetterAttribute.errorMessage),
    context,
    ...(contextProblem !== undefined ? { contextProblem } : {}),
    failedAt: failedAt !== undefined && !Number.isNaN(failedAt.getTime()) ? failedAt : undefined,
  };
}

function readContext(value: unknown): Partial<DeadLetterContextAttribute> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return {};
  const v = value as Record<string, unknown>;
  const string = (key: string): string | undefined => (typeof v[key] === 'string' ? (v[key] as string) : undefined);
  const result: Record<string, unknown> = {};
  if (typeof v.v === 'number') result.v = v.v;
  for (const key of ['source', 'originalMessageId', 'failedAt'] as const) {
    const s = string(key);
    if (s !== undefined) result[key] = s;
  }
  if (typeof v.attempts === 'number' && Number.isFinite(v.attempts)) result.attempts = v.attempts;
  if (typeof v.coordinates === 'object' && v.coordinates !== null && !Array.isArray(v.coordinates)) result.coordinates = v.coordinates;
  if (v.bodyEncoding === 'empty' || v.bodyEncoding === 'base64') result.bodyEncoding = v.bodyEncoding;
  const p = v.payload as Record<string, unknown> | null | undefined;
  if (
    typeof p === 'object' &&
    p !== null &&
    typeof p.bucket === 'string' &&
    typeof p.key === 'string' &&
    typeof p.bytes === 'number' &&
    typeof p.sha256 === 'string'
  ) {
    result.payload = { bucket: p.bucket, key: p.key, bytes: p.bytes, sha256: p.sha256 };
  }
  return result as Partial<DeadLetterContextAttribute>;
}

/**
 * The producer's attributes of a message received from the source: for a dead letter that the
 * queue's own redrive moved back as it was (it carries `ic.failureReason` and `ic.context`), or a
 * redrive whose producer attributes travel packed (`ic.originalAttributes`),
 * {@link producerAttributesOf}; any other message's attributes as they are.
 */
function restoredProducerAttributes(attributes: Readonly<Record<string, MessageAttributeValue>>): Record<string, MessageAttributeValue> {
  const movedBack = attributes[DeadLetterAttribute.failureReason] !== undefined && attributes[DeadLetterAttribute.context] !== undefined;
  if (!movedBack && attributes[DeadLetterAttribute.originalAttributes] === undefined) return { ...attributes };
  try {
    return producerAttributesOf(attributes);
  } catch {
    return { ...attributes };
  }
}

/**
 * The producer's attributes of a dead-letter message: what a redrive sends with the body.
 *
 * - A message without `ic.*` attributes (moved by the redrive policy): all its attributes, as they are.
 * - A message the consumer dead-lettered: every attribute that does not start with `ic.` (and not
 *   the `ExtendedPayloadSize` the consumer added when it offloaded the body), plus those packed
 *   in `ic.originalAttributes`.
 *
 * @throws Error when `ic.originalAttributes` is present but cannot be read (restoring without it would lose them)
 */
export function producerAttributesOf(attributes: Readonly<Record<string, MessageAttributeValue>>): Record<string, MessageAttributeValue> {
  const info = readDeadLetterAttributes(attributes);
  if (info === undefined) return { ...attributes };
  const result: Record<string, MessageAttributeValue> = {};
  for (const [name, value] of Object.entries(attributes)) {
    if (name.startsWith(RESERVED_ATTRIBUTE_PREFIX)) continue;
    if (name === EXTENDED_PAYLOAD_SIZE_ATTRIBUTE && info.context.payload !== undefined) continue;
    result[name] = value;
  }
  const packed = attributes[DeadLetterAttribute.originalAttributes]?.StringValue;
  if (packed !== undefined) {
    try {
      Object.assign(result, deserializeAttributes(packed));
    } catch (error) {
      throw new Error(`${DeadLetterAttribute.originalAttributes} cannot be read: ${(error as Error).message}`, { cause: error });
    }
  }
  return result;
}

/** The SQS size of message attributes: names, data types and values, in bytes. */
export function attributesSize(attributes: Readonly<Record<string, MessageAttributeValue>>): number {
  let size = 0;
  for (const [name, value] of Object.entries(attributes)) {
    size += Buffer.byteLength(name) + Buffer.byteLength(value.DataType ?? '');
    if (value.StringValue !== undefined) size += Buffer.byteLength(value.StringValue);
    if (value.BinaryValue !== undefined) size += value.BinaryValue.byteLength;
  }
  return size;
}

/** A message attribute as plain JSON: binary values in base64. */
export interface PlainAttribute {
  /** The SQS data type: `String`, `Number` or `Binary`, optionally with a custom suffix (`String.json`). */
  readonly DataType: string;
  /** The value of a `String` or `Number` attribute, as is. */
  readonly StringValue?: string;
  /** The value of a `Binary` attribute: its bytes in base64. */
  readonly BinaryValue?: string;
}

/** Message attributes as plain JSON values, binary values in base64; the inverse of {@link fromPlainAttributes}. */
export function toPlainAttributes(attributes: Readonly<Record<string, MessageAttributeValue>>): Record<string, PlainAttribute> {
  const plain: Record<string, PlainAttribute> = {};
  for (const [name, value] of Object.entries(attributes)) {
    plain[name] = {
      DataType: value.DataType ?? 'String',
      ...(value.StringValue !== undefined ? { StringValue: value.StringValue } : {}),
      ...(value.BinaryValue !== undefined ? { BinaryValue: Buffer.from(value.BinaryValue).toString('base64') } : {}),
    };
  }
  return plain;
}

/** `SendMessage` attributes from their plain JSON form ({@link toPlainAttributes}). */
export function fromPlainAttributes(plain: Readonly<Record<string, PlainAttribute>>): Record<string, MessageAttributeValue> {
  const attributes: Record<string, MessageAttributeValue> = {};
  for (const [name, value] of Object.entries(plain)) {
    attributes[name] = {
      DataType: value.DataType,
      ...(value.StringValue !== undefined ? { StringValue: value.StringValue } : {}),
      ...(value.BinaryValue !== undefined ? { BinaryValue: Buffer.from(value.BinaryValue, 'base64') } : {}),
    };
  }
  return attributes;
}

/** JSON of message attributes, binary values as base64; the inverse is {@link deserializeAttributes}. */
export function serializeAttributes(attributes: Readonly<Record<string, MessageAttributeValue>>): string {
  return toSqsSafeJson(toPlainAttributes(attributes));
}

/**
 * Reads the JSON written by {@link serializeAttributes} back into `SendMessage` attributes.
 *
 * @throws SyntaxError when `json` is not JSON; Error when it is not an object of attributes
 */
export function deserializeAttributes(json: string): Record<string, MessageAttributeValue> {
  const plain: unknown = JSON.parse(json);
  if (typeof plain !== 'object' || plain === null || Array.isArray(plain)) throw new Error('not a JSON object of attributes');
  for (const [name, value] of Object.entries(plain)) {
    const v = value as Partial<PlainAttribute> | null;
    if (typeof v !== 'object' || v === null || typeof v.DataType !== 'string') throw new Error(`attribute ${name} has no DataType`);
  }
  return fromPlainAttributes(plain as Record<string, PlainAttribute>);
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** SQS rejects empty attribute values. */
function nonEmpty(text: string): string {
  return text === '' ? '(empty)' : text;
}
