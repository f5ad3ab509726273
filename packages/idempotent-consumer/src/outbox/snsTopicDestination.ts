import type { SNSClient } from '@aws-sdk/client-sns';
import {
  fifoMessageGroupId,
  messageAttributes,
  type OutboxDestination,
  type OutboxMessage,
  type PublishReceipt,
} from './OutboxDestination.js';
import { lazyClient } from './lazyClient.js';

/** Options of {@link snsTopicDestination}. */
export interface SnsTopicDestinationOptions {
  /** The topic's ARN; a name ending in `.fifo` is a FIFO topic. */
  readonly topicArn: string;
  /**
   * The SNS client, or a function that gives it (called once, at the first publish).
   * @default a new `SNSClient({})` (region and credentials from the environment), created at the first publish
   */
  readonly client?: SNSClient | (() => SNSClient | Promise<SNSClient>);
}

/**
 * An SNS topic as the outbox relay's destination: one `Publish` per message, the body as
 * `Message`, the decision's attributes and `outboxMessageId` as string message attributes. On a
 * FIFO topic (`.fifo`) the message id is the `MessageDeduplicationId` (SNS drops a second publish
 * with the same id within its 5-minute deduplication interval, and FIFO SQS subscribers receive it
 * once) and the item's group the `MessageGroupId` (see `fifoMessageGroupId`).
 *
 * `@aws-sdk/client-sns` is loaded at the first publish, so a relay that does not use SNS never
 * loads it. Rules: https://docs.aws.amazon.com/sns/latest/api/API_Publish.html and
 * https://docs.aws.amazon.com/sns/latest/dg/fifo-message-dedup.html
 */
export function snsTopicDestination(options: SnsTopicDestinationOptions): OutboxDestination {
  const { topicArn } = options;
  const fifo = topicArn.endsWith('.fifo');
  const load = lazyClient(options.client, async () => new (await import('@aws-sdk/client-sns')).SNSClient({}));
  return {
    target: topicArn,
    async publish(message: OutboxMessage): Promise<PublishReceipt> {
      const [{ PublishCommand }, sns] = await Promise.all([import('@aws-sdk/client-sns'), load()]);
      const output = await sns.send(
        new PublishCommand({
          TopicArn: topicArn,
          Message: message.body,
          MessageAttributes: messageAttributes(message),
          ...(fifo ? { MessageGroupId: fifoMessageGroupId(message.messageGroupId), MessageDeduplicationId: message.messageId } : {}),
        }),
      );
      return output.MessageId === undefined ? {} : { destinationMessageId: output.MessageId };
    },
  };
}
