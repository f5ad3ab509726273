import { DeleteMessageBatchCommand, type Message, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { MESSAGE_ID_ATTRIBUTE } from 'idempotent-consumer/outbox';

/** What a destination queue received from the relay. */
export interface OutboxDeliveries {
  /** Messages received. */
  readonly delivered: number;
  /** Deliveries per outbox message id (the `outboxMessageId` attribute): 1 each when every message arrived once. */
  readonly byMessageId: ReadonlyMap<string, number>;
  /** Messages without the `outboxMessageId` attribute (not from the relay). */
  readonly withoutMessageId: number;
  /** The messages, in the order received. */
  readonly messages: readonly Message[];
}

/**
 * Receives and deletes every message of a destination queue (an SQS destination, or a queue
 * subscribed to an SNS destination with raw message delivery) and counts them by their
 * `outboxMessageId` attribute: the local check that each outbox message was delivered once.
 * Messages are deleted as they come, so a FIFO queue (which holds back the rest of a message group
 * while one of its messages is in flight) yields them all.
 *
 * @param options.emptyReceives - receives in a row that find nothing before it stops (each waits
 *   up to 1 second, long polling). @default 2
 */
export async function receiveOutboxDeliveries(
  sqs: SQSClient,
  queueUrl: string,
  options: { readonly emptyReceives?: number } = {},
): Promise<OutboxDeliveries> {
  const messages: Message[] = [];
  const byMessageId = new Map<string, number>();
  let withoutMessageId = 0;
  let empty = 0;
  while (empty < (options.emptyReceives ?? 2)) {
    const output = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
        MessageAttributeNames: ['All'],
        VisibilityTimeout: 30,
      }),
    );
    const received = output.Messages ?? [];
    if (received.length === 0) {
      empty += 1;
      continue;
    }
    empty = 0;
    for (const message of received) {
      messages.push(message);
      const id = message.MessageAttributes?.[MESSAGE_ID_ATTRIBUTE]?.StringValue;
      if (id === undefined) withoutMessageId += 1;
      else byMessageId.set(id, (byMessageId.get(id) ?? 0) + 1);
    }
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: received.map((message, index) => ({ Id: String(index), ReceiptHandle: message.ReceiptHandle! })),
      }),
    );
  }
  return { delivered: messages.length, byMessageId, withoutMessageId, messages };
}
