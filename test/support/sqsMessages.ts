/**
 * Small SQS helpers for tests: send bodies in order, and read what a queue holds.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { ReceiveMessageCommand, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { Message, MessageAttributeValue, SQSClient } from '@aws-sdk/client-sqs';

/** Options of {@link sendMessages}. */
export interface SendMessagesOptions {
  /** FIFO: the message group of every message (required by FIFO queues). */
  readonly messageGroupId?: string;
  /** FIFO: deduplication id per body, same order. @default a random UUID each */
  readonly deduplicationIds?: readonly string[];
  /** Message attributes of every message. */
  readonly messageAttributes?: Record<string, MessageAttributeValue>;
}

/**
 * Sends `bodies` in order (SendMessageBatch, 10 at a time) and returns their message ids in the
 * same order.
 *
 * @throws {Error} when SQS refuses any entry
 */
export async function sendMessages(
  sqs: SQSClient,
  queueUrl: string,
  bodies: readonly string[],
  options: SendMessagesOptions = {},
): Promise<string[]> {
  const ids: string[] = [];
  for (let start = 0; start < bodies.length; start += 10) {
    const chunk = bodies.slice(start, start + 10);
    const { Successful = [], Failed = [] } = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: chunk.map((body, index) => ({
          Id: String(index),
          MessageBody: body,
          ...(options.messageAttributes ? { MessageAttributes: options.messageAttributes } : {}),
          ...(options.messageGroupId === undefined
            ? {}
            : {
                MessageGroupId: options.messageGroupId,
                MessageDeduplicationId: options.deduplicationIds?.[start + index] ?? randomUUID(),
              }),
        })),
      }),
    );
    if (Failed.length > 0) throw new Error(`SendMessageBatch refused: ${JSON.stringify(Failed)}`);
    const byEntry = new Map(Successful.map((entry) => [entry.Id, entry.MessageId]));
    chunk.forEach((_, index) => ids.push(byEntry.get(String(index)) ?? ''));
  }
  return ids;
}

/**
 * Receives every message a queue holds right now (with all attributes), 10 at a time, until a
 * receive returns nothing. The messages stay in flight for the queue's visibility timeout.
 */
export async function receiveAll(sqs: SQSClient, queueUrl: string, waitTimeSeconds = 1): Promise<Message[]> {
  const messages: Message[] = [];
  for (;;) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: waitTimeSeconds,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
    );
    if (Messages.length === 0) return messages;
    messages.push(...Messages);
  }
}
