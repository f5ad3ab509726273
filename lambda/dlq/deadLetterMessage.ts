import { createHash } from 'node:crypto';
import type { MessageAttributeValue, SendMessageCommandInput } from '@aws-sdk/client-sqs';
import type { Classification } from '../classifier.js';

/**
 * Names of the message attributes the consumer puts on a dead-letter message. The DLQ tool
 * (`cli/`) reads them back; a redrive removes them and restores `originalAttributes`.
 */
export const DeadLetterAttribute = {
  /** One of the `FailureReason` names, e.g. `ValidationError`, `RetriesExhausted`. */
  failureReason: 'failureReason',
  /** The `name` of the error that decided it, e.g. `ZodError`, `ProvisionedThroughputExceededException`. */
  errorType: 'errorType',
  /** The error's message, truncated to {@link MAX_ERROR_MESSAGE_LENGTH} characters. */
  errorMessage: 'errorMessage',
  /** When the consumer dead-lettered it (ISO 8601, UTC). */
  failedAt: 'failedAt',
  /** How many deliveries the message had had (SQS `ApproximateReceiveCount`; Kafka: attempts). */
  attempts: 'attempts',
  /** Where it came from: the source queue's ARN, or the Kafka event source ARN. */
  source: 'source',
  /** The source's id of the message: the SQS `messageId`, or `<topic>-<partition>@<offset>` for Kafka. */
  originalMessageId: 'originalMessageId',
  /** JSON of the original coordinates: `{messageGroupId}` for SQS FIFO; `{topic, partition, offset, timestamp, key}` for Kafka. */
  coordinates: 'coordinates',
  /** JSON of the original message attributes in SQS `SendMessage` form (binary values base64). */
  originalAttributes: 'originalAttributes',
  /**
   * Present only when the body could not be sent as it was: `empty` (SQS refuses an empty body,
   * so {@link EMPTY_BODY_PLACEHOLDER} stands in its place) or `base64` (a Kafka value that is
   * not UTF-8, or is text holding a character SQS refuses (see {@link isSqsSafeText}), sent in
   * base64).
   */
  bodyEncoding: 'bodyEncoding',
} as const;

/** The body sent in place of an empty one (SQS requires at least one character). */
export const EMPTY_BODY_PLACEHOLDER = '(empty body)';

/**
 * A character SQS does not allow in a message body or a `String` attribute value. SQS allows only
 * `#x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF` (XML 1.0's
 * `Char`); anything else, e.g. NUL, most C0 controls, U+FFFE, U+FFFF or
 * a lone surrogate, makes `SendMessage` fail with `InvalidMessageContents`.
 *
 * @see https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html
 */
const sqsDisallowedCharacter = /[^\t\n\r\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;

/**
 * Whether SQS accepts `text` as a message body or a `String` message attribute value: every
 * character is one of `#x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to
 * #x10FFFF`, as listed in the SQS `SendMessage` API reference
 * (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html).
 * A lone surrogate (a string that is not well-formed UTF-16) is refused too. The empty string is
 * "safe" here; that SQS refuses an empty body is a separate rule.
 *
 * This is the one place that rule lives: the Kafka path base64-encodes a value that fails it
 * (`bodyEncoding: base64`), and the local runtime's input reader is to check its input with it.
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
  return isSqsSafeText(text) ? text : text.replace(new RegExp(sqsDisallowedCharacter.source, 'gu'), '\uFFFD');
}

/** Every attribute name the consumer adds; the DLQ tool strips these on redrive. */
export const deadLetterAttributeNames: readonly string[] = Object.values(DeadLetterAttribute);

/** Longest `errorMessage` attribute kept, in characters. */
export const MAX_ERROR_MESSAGE_LENGTH = 1024;

/** What the consumer knows of a message it dead-letters. */
export interface DeadLetterContext {
  /** The original body, sent byte for byte (an empty one as {@link EMPTY_BODY_PLACEHOLDER}). */
  readonly body: string;
  /** `base64` when `body` holds, in base64, a value SQS could not take as text. */
  readonly bodyEncoding?: 'base64';
  readonly failure: Classification;
  /** Deliveries so far, from 1. */
  readonly attempts: number;
  /** Source queue ARN, or Kafka event source ARN. */
  readonly source: string;
  /** SQS `messageId`, or `<topic>-<partition>@<offset>`. */
  readonly originalMessageId: string;
  /** Original coordinates, written as JSON in the `coordinates` attribute. */
  readonly coordinates?: Readonly<Record<string, string | number | null>>;
  /** The FIFO message group: required when the dead-letter queue is FIFO. */
  readonly messageGroupId?: string;
  /** The original message attributes (SQS `SendMessage` form). */
  readonly originalAttributes?: Readonly<Record<string, MessageAttributeValue>>;
  readonly failedAt: Date;
}

/**
 * Builds the `SendMessage` request that puts a failed message in the dead-letter queue.
 *
 * The body is the original body; the reason and the context go in at most 10 message
 * attributes (SQS's limit). An empty body, which SQS refuses, is sent as
 * {@link EMPTY_BODY_PLACEHOLDER} with `bodyEncoding: empty`. If body and attributes together exceed `maxMessageSizeBytes`,
 * the original attributes are dropped first, then the error message is shortened; the body is
 * never cut (the dead-letter queue is sized for the source's largest body: see
 * `deadLetterMaxMessageSizeBytes` in `config/settings.ts`).
 *
 * For a FIFO dead-letter queue (`fifo: true`) the original message group is kept and the
 * deduplication id is derived from `originalMessageId` (SHA-256, hex), so a consumer that sends
 * the same failure twice within SQS's 5-minute deduplication window puts it there once.
 *
 * @param queueUrl - the dead-letter queue's URL
 * @param context - the failed message and why it failed
 * @param options.fifo - whether the dead-letter queue is FIFO
 * @param options.maxMessageSizeBytes - the dead-letter queue's maximum message size, in bytes
 * @throws Error when a FIFO message has no `messageGroupId`
 */
export function buildDeadLetterMessage(
  queueUrl: string,
  context: DeadLetterContext,
  options: { readonly fifo: boolean; readonly maxMessageSizeBytes: number },
): SendMessageCommandInput {
  const str = (value: string): MessageAttributeValue => ({ DataType: 'String', StringValue: value });
  const attributes: Record<string, MessageAttributeValue> = {
    [DeadLetterAttribute.failureReason]: str(context.failure.reason ?? 'Unknown'),
    [DeadLetterAttribute.errorType]: str(nonEmpty(context.failure.errorType)),
    [DeadLetterAttribute.errorMessage]: str(nonEmpty(toSqsSafeText(truncate(context.failure.errorMessage, MAX_ERROR_MESSAGE_LENGTH)))),
    [DeadLetterAttribute.failedAt]: str(context.failedAt.toISOString()),
    [DeadLetterAttribute.attempts]: { DataType: 'Number', StringValue: String(context.attempts) },
    [DeadLetterAttribute.source]: str(nonEmpty(context.source)),
    [DeadLetterAttribute.originalMessageId]: str(nonEmpty(context.originalMessageId)),
  };
  if (context.coordinates !== undefined) {
    attributes[DeadLetterAttribute.coordinates] = str(JSON.stringify(context.coordinates));
  }
  const body = context.body === '' ? EMPTY_BODY_PLACEHOLDER : context.body;
  const bodyEncoding = context.body === '' ? 'empty' : context.bodyEncoding;
  if (bodyEncoding !== undefined) attributes[DeadLetterAttribute.bodyEncoding] = str(bodyEncoding);
  if (context.originalAttributes !== undefined && Object.keys(context.originalAttributes).length > 0) {
    attributes[DeadLetterAttribute.originalAttributes] = str(serializeAttributes(context.originalAttributes));
  }

  const bodyBytes = Buffer.byteLength(body, 'utf8');
  if (bodyBytes + attributesSize(attributes) > options.maxMessageSizeBytes) {
    delete attributes[DeadLetterAttribute.originalAttributes];
  }
  if (bodyBytes + attributesSize(attributes) > options.maxMessageSizeBytes) {
    attributes[DeadLetterAttribute.errorMessage] = str(nonEmpty(toSqsSafeText(truncate(context.failure.errorMessage, 128))));
  }

  const input: SendMessageCommandInput = { QueueUrl: queueUrl, MessageBody: body, MessageAttributes: attributes };
  if (options.fifo) {
    if (context.messageGroupId === undefined || context.messageGroupId === '') {
      throw new Error(`a FIFO dead-letter queue needs a message group id (message ${context.originalMessageId})`);
    }
    input.MessageGroupId = context.messageGroupId;
    input.MessageDeduplicationId = createHash('sha256').update(context.originalMessageId).digest('hex');
  }
  return input;
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

/** JSON of message attributes, binary values as base64; the inverse is {@link deserializeAttributes}. */
export function serializeAttributes(attributes: Readonly<Record<string, MessageAttributeValue>>): string {
  const plain: Record<string, { DataType: string; StringValue?: string; BinaryValue?: string }> = {};
  for (const [name, value] of Object.entries(attributes)) {
    plain[name] = {
      DataType: value.DataType ?? 'String',
      ...(value.StringValue !== undefined ? { StringValue: value.StringValue } : {}),
      ...(value.BinaryValue !== undefined ? { BinaryValue: Buffer.from(value.BinaryValue).toString('base64') } : {}),
    };
  }
  return JSON.stringify(plain);
}

/**
 * Reads the JSON written by {@link serializeAttributes} back into `SendMessage` attributes.
 *
 * @throws SyntaxError when `json` is not JSON
 */
export function deserializeAttributes(json: string): Record<string, MessageAttributeValue> {
  const plain = JSON.parse(json) as Record<string, { DataType: string; StringValue?: string; BinaryValue?: string }>;
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

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** SQS rejects empty attribute values. */
function nonEmpty(text: string): string {
  return text === '' ? '(empty)' : text;
}
