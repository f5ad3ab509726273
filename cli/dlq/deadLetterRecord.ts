import type { Message, MessageAttributeValue } from '@aws-sdk/client-sqs';
import { DeadLetterAttribute, deserializeAttributes } from '../../lambda/dlq/deadLetterMessage.js';

/** The group of dead-letter messages that carry no `failureReason` (moved by the queue's redrive policy). */
export const NO_REASON = '(none)';

/**
 * A message received from the dead-letter queue, with the consumer's dead-letter attributes
 * (see `DeadLetterAttribute` in `lambda/dlq/deadLetterMessage.ts`) read back.
 */
export interface DeadLetterRecord {
  /** The dead-letter queue's id of the message. */
  readonly messageId: string;
  /** The receipt handle of the latest receive: needed to delete it or restore its visibility. */
  readonly receiptHandle: string;
  /** The body, exactly as received. */
  readonly body: string;
  /** SQS's MD5 of the body, if the server sent it. */
  readonly md5OfBody: string | undefined;
  /** Every message attribute, in `SendMessage` form (binary values as bytes). */
  readonly messageAttributes: Readonly<Record<string, MessageAttributeValue>>;
  /** The system attributes (`SentTimestamp`, `MessageGroupId`, `ApproximateReceiveCount`, ...). */
  readonly systemAttributes: Readonly<Record<string, string>>;
  /** `failureReason`, or `undefined` for a message moved by the redrive policy. */
  readonly failureReason: string | undefined;
  readonly errorType: string | undefined;
  readonly errorMessage: string | undefined;
  /** `failedAt`, if present and a valid date. */
  readonly failedAt: Date | undefined;
  readonly attempts: number | undefined;
  /** The source: a queue ARN, or a Kafka event source ARN. */
  readonly source: string | undefined;
  readonly originalMessageId: string | undefined;
  /** `coordinates`, parsed; `undefined` when absent or not JSON. */
  readonly coordinates: Readonly<Record<string, unknown>> | undefined;
  /** `originalAttributes`, deserialized; `undefined` when absent or not readable. */
  readonly originalAttributes: Readonly<Record<string, MessageAttributeValue>> | undefined;
  /** The FIFO message group: the system attribute, else `coordinates.messageGroupId`. */
  readonly messageGroupId: string | undefined;
  /** When SQS accepted the message into this queue (`SentTimestamp`). */
  readonly sentAt: Date | undefined;
}

/**
 * Reads a received message. It must have been received with `MessageAttributeNames: ['All']`
 * and `MessageSystemAttributeNames: ['All']`.
 *
 * @throws Error when the message has no `MessageId` or `ReceiptHandle` (never from SQS)
 */
export function toDeadLetterRecord(message: Message): DeadLetterRecord {
  if (message.MessageId === undefined || message.ReceiptHandle === undefined) {
    throw new Error('received a message without MessageId or ReceiptHandle');
  }
  const messageAttributes: Record<string, MessageAttributeValue> = {};
  for (const [name, value] of Object.entries(message.MessageAttributes ?? {})) {
    messageAttributes[name] = {
      DataType: value.DataType ?? 'String',
      ...(value.StringValue !== undefined ? { StringValue: value.StringValue } : {}),
      ...(value.BinaryValue !== undefined ? { BinaryValue: Uint8Array.from(value.BinaryValue) } : {}),
    };
  }
  const systemAttributes: Record<string, string> = { ...(message.Attributes ?? {}) };
  const text = (name: string): string | undefined => messageAttributes[name]?.StringValue;
  const coordinates = parseJsonObject(text(DeadLetterAttribute.coordinates));
  const failedAt = parseDate(text(DeadLetterAttribute.failedAt));
  const attempts = Number.parseInt(text(DeadLetterAttribute.attempts) ?? '', 10);
  const sent = Number.parseInt(systemAttributes.SentTimestamp ?? '', 10);
  const groupFromCoordinates = coordinates?.messageGroupId;
  return {
    messageId: message.MessageId,
    receiptHandle: message.ReceiptHandle,
    body: message.Body ?? '',
    md5OfBody: message.MD5OfBody,
    messageAttributes,
    systemAttributes,
    failureReason: text(DeadLetterAttribute.failureReason),
    errorType: text(DeadLetterAttribute.errorType),
    errorMessage: text(DeadLetterAttribute.errorMessage),
    failedAt,
    attempts: Number.isFinite(attempts) ? attempts : undefined,
    source: text(DeadLetterAttribute.source) ?? systemAttributes.DeadLetterQueueSourceArn,
    originalMessageId: text(DeadLetterAttribute.originalMessageId),
    coordinates,
    originalAttributes: readOriginalAttributes(text(DeadLetterAttribute.originalAttributes)),
    messageGroupId:
      systemAttributes.MessageGroupId ?? (typeof groupFromCoordinates === 'string' ? groupFromCoordinates : undefined),
    sentAt: Number.isFinite(sent) ? new Date(sent) : undefined,
  };
}

/** The reason a record is grouped under: its `failureReason`, or {@link NO_REASON}. */
export function reasonOf(record: DeadLetterRecord): string {
  return record.failureReason ?? NO_REASON;
}

/** When the message failed: `failedAt`, else when it entered the dead-letter queue (`SentTimestamp`). */
export function failedAtOf(record: DeadLetterRecord): Date | undefined {
  return record.failedAt ?? record.sentAt;
}

/** Whether the record carries the consumer's dead-letter attributes or SQS's redrive mark. */
export function looksDeadLettered(record: DeadLetterRecord): boolean {
  return (
    record.failureReason !== undefined ||
    record.messageAttributes[DeadLetterAttribute.source] !== undefined ||
    record.systemAttributes.DeadLetterQueueSourceArn !== undefined
  );
}

function readOriginalAttributes(json: string | undefined): Record<string, MessageAttributeValue> | undefined {
  if (json === undefined) return undefined;
  try {
    return deserializeAttributes(json);
  } catch {
    return undefined;
  }
}

function parseJsonObject(json: string | undefined): Record<string, unknown> | undefined {
  if (json === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(json);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function parseDate(text: string | undefined): Date | undefined {
  if (text === undefined) return undefined;
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? undefined : date;
}
