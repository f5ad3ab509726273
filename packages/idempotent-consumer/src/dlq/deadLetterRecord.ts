import type { Message, MessageAttributeValue } from '@aws-sdk/client-sqs';
import { producerAttributesOf, readDeadLetterAttributes, RESERVED_ATTRIBUTE_PREFIX, type OffloadedPayload } from './deadLetterMessage.js';
import { NO_FAILURE_REASON } from './failureReasons.js';

/** The reason the tool gives messages without `ic.failureReason`: moved by the queue's redrive policy. */
export const NO_REASON = NO_FAILURE_REASON;

/**
 * A message received from the dead-letter queue, with the consumer's `ic.*` attributes (see
 * `dlq/deadLetterMessage.ts`) read back.
 */
export interface DeadLetterRecord {
  /** The dead-letter queue's id of the message. */
  readonly messageId: string;
  /** The receipt handle of the latest receive: needed to delete it or restore its visibility. */
  readonly receiptHandle: string;
  /** The body, exactly as received (the S3 pointer when the consumer offloaded it: see `offloaded`). */
  readonly body: string;
  /** SQS's MD5 of the body, if the server sent it. */
  readonly md5OfBody: string | undefined;
  /** Every message attribute, in `SendMessage` form (binary values as bytes). */
  readonly messageAttributes: Readonly<Record<string, MessageAttributeValue>>;
  /** The system attributes (`SentTimestamp`, `MessageGroupId`, `ApproximateReceiveCount`, ...). */
  readonly systemAttributes: Readonly<Record<string, string>>;
  /** Whether the consumer dead-lettered it (it has `ic.*` attributes); `false`: the queue's redrive policy moved it. */
  readonly deadLettered: boolean;
  /** `ic.failureReason`; `undefined` for a message moved by the redrive policy. */
  readonly failureReason: string | undefined;
  /** `ic.errorType`: the `name` of the error that decided it; `undefined` for a message moved by the redrive policy. */
  readonly errorType: string | undefined;
  /** `ic.errorMessage`: the error's message (at most 1,024 characters); `undefined` for a message moved by the redrive policy. */
  readonly errorMessage: string | undefined;
  /** `ic.context.failedAt`, if present and a valid date. */
  readonly failedAt: Date | undefined;
  /** `ic.context.attempts`. */
  readonly attempts: number | undefined;
  /** The source: `ic.context.source` (a queue ARN or a Kafka event source ARN), else SQS's `DeadLetterQueueSourceArn`. */
  readonly source: string | undefined;
  /** `ic.context.originalMessageId`. */
  readonly originalMessageId: string | undefined;
  /** `ic.context.coordinates`. */
  readonly coordinates: Readonly<Record<string, unknown>> | undefined;
  /** `ic.context.bodyEncoding`: `base64` or `empty` when the body is not the plain original. */
  readonly bodyEncoding: 'base64' | 'empty' | undefined;
  /** `ic.context.payload`: where the consumer offloaded the body, when it did. */
  readonly offloaded: OffloadedPayload | undefined;
  /**
   * The producer's attributes, as a redrive restores them (see `producerAttributesOf`);
   * `undefined` when `ic.originalAttributes` cannot be read (`problem` says why).
   */
  readonly producerAttributes: Readonly<Record<string, MessageAttributeValue>> | undefined;
  /** The FIFO message group: the system attribute, else `coordinates.messageGroupId`. */
  readonly messageGroupId: string | undefined;
  /** When SQS accepted the message into this queue (`SentTimestamp`, the server's clock). */
  readonly sentAt: Date | undefined;
  /** What is wrong with the consumer's attributes, if anything (`ic.context` not JSON, ...). */
  readonly problem: string | undefined;
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
  const info = readDeadLetterAttributes(messageAttributes);
  const context = info?.context ?? {};
  let producerAttributes: Record<string, MessageAttributeValue> | undefined;
  let problem = info?.contextProblem;
  try {
    producerAttributes = producerAttributesOf(messageAttributes);
  } catch (error) {
    problem = (error as Error).message;
  }
  const sent = Number.parseInt(systemAttributes.SentTimestamp ?? '', 10);
  const groupFromCoordinates = context.coordinates?.messageGroupId;
  return {
    messageId: message.MessageId,
    receiptHandle: message.ReceiptHandle,
    body: message.Body ?? '',
    md5OfBody: message.MD5OfBody,
    messageAttributes,
    systemAttributes,
    deadLettered: info !== undefined,
    failureReason: info?.failureReason,
    errorType: info?.errorType,
    errorMessage: info?.errorMessage,
    failedAt: info?.failedAt,
    attempts: context.attempts,
    source: context.source ?? systemAttributes.DeadLetterQueueSourceArn,
    originalMessageId: context.originalMessageId,
    coordinates: context.coordinates,
    bodyEncoding: context.bodyEncoding,
    offloaded: context.payload,
    producerAttributes,
    messageGroupId: systemAttributes.MessageGroupId ?? (typeof groupFromCoordinates === 'string' ? groupFromCoordinates : undefined),
    sentAt: Number.isFinite(sent) ? new Date(sent) : undefined,
    problem,
  };
}

/** The reason a record is grouped under: its `ic.failureReason`, or {@link NO_REASON} (`none`). */
export function reasonOf(record: DeadLetterRecord): string {
  return record.failureReason ?? NO_REASON;
}

/** When the message failed: `ic.context.failedAt`, else when it entered the dead-letter queue (`SentTimestamp`). */
export function failedAtOf(record: DeadLetterRecord): Date | undefined {
  return record.failedAt ?? record.sentAt;
}

/** Whether the record carries the consumer's `ic.*` attributes or SQS's redrive mark. */
export function looksDeadLettered(record: DeadLetterRecord): boolean {
  return (
    Object.keys(record.messageAttributes).some((name) => name.startsWith(RESERVED_ATTRIBUTE_PREFIX)) ||
    record.systemAttributes.DeadLetterQueueSourceArn !== undefined
  );
}
