import { createHash } from 'node:crypto';
import type { MessageAttributeValue, SendMessageCommandInput } from '@aws-sdk/client-sqs';
import { deadLetterAttributeNames } from '../../lambda/dlq/deadLetterMessage.js';
import type { DeadLetterRecord } from './deadLetterRecord.js';
import { isFifoQueueUrl } from './sqsClient.js';

/** A dead-letter message that cannot be redriven as it is, and why. */
export class NotRedrivableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotRedrivableError';
  }
}

/**
 * Builds the `SendMessage` request that puts a dead-letter message back on a queue:
 *
 * - the body, byte for byte;
 * - the original message attributes: those packed in `originalAttributes`, plus any attribute
 *   of the dead-letter message that is not one of the consumer's (`deadLetterAttributeNames`),
 *   which is how a message moved by SQS's redrive policy carries its own; the consumer's failure
 *   attributes are dropped;
 * - for a FIFO target, the original message group (the DLQ message's `MessageGroupId`, else
 *   `coordinates.messageGroupId`) and a deduplication id derived from the DLQ message id
 *   (SHA-256 of `redrive:<id>`, hex): a rerun after an interruption within SQS's 5-minute
 *   deduplication window does not enqueue the message twice, and the id differs from the one the
 *   message was first sent with, so SQS does not drop the redrive as a duplicate of it.
 *
 * @param record - the message as received from the dead-letter queue
 * @param targetQueueUrl - where it goes (the source queue, or `--to`)
 * @throws NotRedrivableError when the target is FIFO and the message has no message group
 */
export function buildRedriveMessage(record: DeadLetterRecord, targetQueueUrl: string): SendMessageCommandInput {
  const attributes: Record<string, MessageAttributeValue> = {};
  for (const [name, value] of Object.entries(record.messageAttributes)) {
    if (!deadLetterAttributeNames.includes(name)) attributes[name] = value;
  }
  Object.assign(attributes, record.originalAttributes ?? {});
  const input: SendMessageCommandInput = {
    QueueUrl: targetQueueUrl,
    MessageBody: record.body,
    ...(Object.keys(attributes).length > 0 ? { MessageAttributes: attributes } : {}),
  };
  if (isFifoQueueUrl(targetQueueUrl)) {
    if (record.messageGroupId === undefined || record.messageGroupId === '') {
      throw new NotRedrivableError(`it has no message group, and ${targetQueueUrl} is a FIFO queue`);
    }
    input.MessageGroupId = record.messageGroupId;
    input.MessageDeduplicationId = createHash('sha256').update(`redrive:${record.messageId}`).digest('hex');
  }
  return input;
}
