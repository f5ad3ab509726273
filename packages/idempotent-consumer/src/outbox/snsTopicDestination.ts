import type { SNSClient } from '@aws-sdk/client-sns';
import {
  fifoMessageGroupId,
  messageAttributes,
  type OutboxDestination,
  type OutboxMessage,
  type PublishReceipt,
} from './OutboxDestination.js';
import { lazyClient } from './lazyClient.js';
import { TRACE_HEADER_HTTP_HEADER, traceHeaderOrUndefined } from '../observability/traceHeader.js';

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
 * The message's X-Ray trace header (`OutboxMessage.traceHeader`, when well formed) goes as the
 * `Publish` request's `X-Amzn-Trace-Id` HTTP header: SNS has no message system attribute for it
 * (`Publish` takes none), and passes the request's trace header on to its subscribers, an SQS
 * subscriber receiving it as `AWSTraceHeader`
 * (https://docs.aws.amazon.com/xray/latest/devguide/xray-services-sns.html). It replaces the header
 * the SDK would send by itself (the relay invocation's, or, with a client captured by the X-Ray SDK,
 * that of the call's subsegment), so the message continues the trace of the message that emitted it.
 * It is not one of the message's attributes: those stay for the decision's own (SNS and SQS allow 10).
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
      const command = new PublishCommand({
        TopicArn: topicArn,
        Message: message.body,
        MessageAttributes: messageAttributes(message),
        ...(fifo ? { MessageGroupId: fifoMessageGroupId(message.messageGroupId), MessageDeduplicationId: message.messageId } : {}),
      });
      const traceHeader = traceHeaderOrUndefined(message.traceHeader);
      if (traceHeader !== undefined) withTraceHeader(command, traceHeader);
      const output = await sns.send(command);
      return output.MessageId === undefined ? {} : { destinationMessageId: output.MessageId };
    },
  };
}

/** What a command's middleware stack takes: a handler wrapper at a step. */
interface CommandWithMiddleware {
  readonly middlewareStack: {
    add(
      middleware: (next: (args: { request: unknown }) => Promise<unknown>) => (args: { request: unknown }) => Promise<unknown>,
      options: { step: 'build'; priority: 'low'; name: string; override: boolean },
    ): void;
  };
}

/**
 * Sets the `X-Amzn-Trace-Id` header of one command's HTTP request. Added at the end of the `build`
 * step (priority `low`), after the X-Ray SDK's middleware of a captured client, whose header it
 * replaces; the SDK's recursion detection (also `low`) adds Lambda's own only when none is set.
 * The header is not signed (SigV4 never signs `X-Amzn-Trace-Id`).
 */
function withTraceHeader(command: unknown, traceHeader: string): void {
  (command as CommandWithMiddleware).middlewareStack.add(
    (next) => async (args) => {
      const request = args.request as { headers?: Record<string, string> } | undefined;
      const headers = request?.headers;
      if (headers !== undefined) {
        for (const name of Object.keys(headers)) if (name.toLowerCase() === TRACE_HEADER_HTTP_HEADER.toLowerCase()) delete headers[name];
        headers[TRACE_HEADER_HTTP_HEADER] = traceHeader;
      }
      return next(args);
    },
    { step: 'build', priority: 'low', name: 'outboxTraceHeader', override: true },
  );
}
