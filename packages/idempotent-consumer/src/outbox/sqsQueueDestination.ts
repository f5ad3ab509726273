import type { SQSClient } from '@aws-sdk/client-sqs';
import {
  fifoMessageGroupId,
  messageAttributes,
  type OutboxDestination,
  type OutboxMessage,
  type PublishReceipt,
} from './OutboxDestination.js';
import { lazyClient } from './lazyClient.js';
import { TRACE_HEADER_ATTRIBUTE, traceHeaderOrUndefined } from '../observability/traceHeader.js';

/** Options of {@link sqsQueueDestination}. */
export interface SqsQueueDestinationOptions {
  /** The queue's URL; a name ending in `.fifo` is a FIFO queue. */
  readonly queueUrl: string;
  /**
   * The SQS client, or a function that gives it (called once, at the first publish).
   * @default a new `SQSClient({})` (region and credentials from the environment), created at the first publish
   */
  readonly client?: SQSClient | (() => SQSClient | Promise<SQSClient>);
}

/**
 * An SQS queue as the outbox relay's destination: one `SendMessage` per message, the body as
 * `MessageBody`, the decision's attributes and `outboxMessageId` as string message attributes.
 * On a FIFO queue (`.fifo`) the message id is the `MessageDeduplicationId` (SQS accepts a second
 * send with the same id within its 5-minute deduplication interval but does not deliver it) and
 * the item's group the `MessageGroupId` (see `fifoMessageGroupId`). The message's X-Ray trace
 * header (`OutboxMessage.traceHeader`, when well formed) is the `AWSTraceHeader` message system
 * attribute, so the message continues the trace of the message that emitted it.
 *
 * `@aws-sdk/client-sqs` is loaded at the first publish. Rules:
 * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html and
 * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/using-messagededuplicationid-property.html
 */
export function sqsQueueDestination(options: SqsQueueDestinationOptions): OutboxDestination {
  const { queueUrl } = options;
  const fifo = queueUrl.endsWith('.fifo');
  const load = lazyClient(options.client, async () => new (await import('@aws-sdk/client-sqs')).SQSClient({}));
  return {
    target: queueUrl,
    async publish(message: OutboxMessage): Promise<PublishReceipt> {
      const [{ SendMessageCommand }, sqs] = await Promise.all([import('@aws-sdk/client-sqs'), load()]);
      const traceHeader = traceHeaderOrUndefined(message.traceHeader);
      const output = await sqs.send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: message.body,
          MessageAttributes: messageAttributes(message),
          ...(traceHeader === undefined
            ? {}
            : { MessageSystemAttributes: { [TRACE_HEADER_ATTRIBUTE]: { DataType: 'String', StringValue: traceHeader } } }),
          ...(fifo ? { MessageGroupId: fifoMessageGroupId(message.messageGroupId), MessageDeduplicationId: message.messageId } : {}),
        }),
      );
      return output.MessageId === undefined ? {} : { destinationMessageId: output.MessageId };
    },
  };
}
