import { createHash } from 'node:crypto';
import type { MessageAttributeValue, SendMessageCommandInput } from '@aws-sdk/client-sqs';
import { REDRIVE_ATTRIBUTE } from 'idempotent-consumer/dlq';
import { attributesSize, DeadLetterAttribute, serializeAttributes, SQS_MAX_MESSAGE_ATTRIBUTES } from 'idempotent-consumer/dlq';
import type { DeadLetterRecord } from 'idempotent-consumer/dlq';
import { isTraceHeader, TRACE_HEADER_ATTRIBUTE } from 'idempotent-consumer/observability';
import { isFifoQueueUrl } from './queueUrl.js';

/** A dead-letter message that cannot be redriven as it is, and why. */
export class NotRedrivableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotRedrivableError';
  }
}

/**
 * The attributes a redriven message carries: the producer's, exactly as they were, and, for a
 * message the consumer dead-lettered, `ic.redrive` with its original message id — the mark by
 * which the consumer applies a key its inbox holds as dead-lettered (a producer's copy of it is a
 * duplicate). When the producer's attributes leave no room for it (SQS takes 10), they travel
 * packed in `ic.originalAttributes`, which the consumer unpacks if it dead-letters the message again.
 */
export function redriveAttributes(
  record: Pick<DeadLetterRecord, 'producerAttributes' | 'deadLettered' | 'originalMessageId'>,
): Record<string, MessageAttributeValue> {
  const producer = { ...record.producerAttributes };
  if (!record.deadLettered || record.originalMessageId === undefined || record.originalMessageId === '') return producer;
  const mark: MessageAttributeValue = { DataType: 'String', StringValue: record.originalMessageId };
  if (Object.keys(producer).length < SQS_MAX_MESSAGE_ATTRIBUTES) return { ...producer, [REDRIVE_ATTRIBUTE]: mark };
  return {
    [DeadLetterAttribute.originalAttributes]: { DataType: 'String', StringValue: serializeAttributes(producer) },
    [REDRIVE_ATTRIBUTE]: mark,
  };
}

/** Options of {@link buildRedriveMessage}. */
export interface RedriveMessageOptions {
  /** The original body, when the DLQ holds an S3 pointer in its place (read back by the caller). @default `record.body` */
  readonly body?: string;
  /** The target queue's `MaximumMessageSize`, in bytes, when known: a message that does not fit is refused. */
  readonly maxMessageSizeBytes?: number;
}

/**
 * Builds the `SendMessage` request that puts a dead-letter message back on a queue:
 *
 * - the original body, byte for byte (for a body the consumer offloaded to S3, the body read
 *   back, given as `options.body`);
 * - the producer's attributes exactly as they were (`record.producerAttributes`: every `ic.*`
 *   attribute dropped, those packed in `ic.originalAttributes` restored; a message moved by the
 *   redrive policy keeps all of its own), and for a message the consumer dead-lettered the
 *   redrive mark `ic.redrive` (see {@link redriveAttributes});
 * - the X-Ray trace header the dead letter carries (its `AWSTraceHeader` system attribute: the
 *   source message's, which the consumer carried on), as the same system attribute, so the
 *   redriven delivery joins the message's trace; one that is not well formed is left out;
 * - for a FIFO target, the original message group (the DLQ message's `MessageGroupId`, else
 *   `coordinates.messageGroupId`) and a deduplication id derived from the DLQ message id
 *   (SHA-256 of `redrive:<id>`, hex): a rerun after an interruption within SQS's 5-minute
 *   deduplication window does not enqueue the message twice, and the id differs from the one the
 *   message was first sent with, so SQS does not drop the redrive as a duplicate of it.
 *
 * @param record - the message as received from the dead-letter queue
 * @param targetQueueUrl - where it goes (the source queue, or `--to`)
 * @throws NotRedrivableError when it cannot go back as it was: its producer attributes cannot be
 *   read, its offloaded body was not given, its original body is not text SQS can hold (a Kafka
 *   value kept in base64, or empty), it does not fit the target, or the target is FIFO and it has no group
 */
export function buildRedriveMessage(
  record: DeadLetterRecord,
  targetQueueUrl: string,
  options: RedriveMessageOptions = {},
): SendMessageCommandInput {
  if (record.producerAttributes === undefined) {
    throw new NotRedrivableError(`its producer attributes cannot be restored (${record.problem ?? 'unreadable'})`);
  }
  if (record.bodyEncoding === 'base64') {
    throw new NotRedrivableError('its original body is bytes SQS cannot hold as text (the DLQ keeps them in base64); use archive');
  }
  if (record.bodyEncoding === 'empty') {
    throw new NotRedrivableError('its original body was empty, which SQS cannot hold; use archive');
  }
  if (record.offloaded !== undefined && options.body === undefined) {
    throw new NotRedrivableError(`its body is in s3://${record.offloaded.bucket}/${record.offloaded.key} and was not read`);
  }
  const body = options.body ?? record.body;
  const attributes = redriveAttributes(record);
  const size = Buffer.byteLength(body, 'utf8') + attributesSize(attributes);
  if (options.maxMessageSizeBytes !== undefined && size > options.maxMessageSizeBytes) {
    throw new NotRedrivableError(
      `its body with its attributes is ${size} bytes, more than the ${options.maxMessageSizeBytes} bytes ${targetQueueUrl} accepts`,
    );
  }
  const input: SendMessageCommandInput = {
    QueueUrl: targetQueueUrl,
    MessageBody: body,
    ...(Object.keys(attributes).length > 0 ? { MessageAttributes: attributes } : {}),
  };
  const traceHeader = record.systemAttributes[TRACE_HEADER_ATTRIBUTE];
  if (isTraceHeader(traceHeader)) {
    input.MessageSystemAttributes = { [TRACE_HEADER_ATTRIBUTE]: { DataType: 'String', StringValue: traceHeader } };
  }
  if (isFifoQueueUrl(targetQueueUrl)) {
    if (record.messageGroupId === undefined || record.messageGroupId === '') {
      throw new NotRedrivableError(`it has no message group, and ${targetQueueUrl} is a FIFO queue`);
    }
    input.MessageGroupId = record.messageGroupId;
    input.MessageDeduplicationId = createHash('sha256').update(`redrive:${record.messageId}`).digest('hex');
  }
  return input;
}
