import { GetQueueAttributesCommand, ListDeadLetterSourceQueuesCommand, ListQueuesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { type DeadLetterRecord, looksDeadLettered } from 'idempotent-consumer/dlq';
import { isQueueDoesNotExist, isUnsupportedOperation, NotADeadLetterQueueError, QueueNotFoundError } from './errors.js';
import { isFifoQueueUrl } from './queueUrl.js';

export { MessageHold, type ReceiveOptions } from '@idempotent-consumer/local';

/** What the tool knows of a queue before it touches its messages. */
export interface QueueInfo {
  readonly queueUrl: string;
  readonly queueArn: string;
  readonly fifo: boolean;
  /** `ApproximateNumberOfMessages`: visible messages, as SQS estimates them. */
  readonly approximateNumberOfMessages: number;
  /** `ApproximateNumberOfMessagesNotVisible`: in flight (someone holds them). */
  readonly approximateNumberOfMessagesNotVisible: number;
  /** The queue's own redrive policy, if it has one (then it is a source queue). */
  readonly redrivePolicy: { readonly deadLetterTargetArn?: string; readonly maxReceiveCount?: number } | undefined;
  /**
   * URLs of the queues whose redrive policy names this queue: `ListDeadLetterSourceQueues`, or,
   * where the server does not support it (fauxqs), the redrive policies of the first
   * {@link MAX_QUEUES_SCANNED} queues `ListQueues` returns. `undefined` when neither works (say,
   * access denied).
   */
  readonly deadLetterSources: readonly string[] | undefined;
  /** Why `deadLetterSources` is `undefined`. */
  readonly deadLetterSourcesUnavailable?: string;
}

/**
 * Reads a queue's attributes and the queues that use it as their dead-letter queue.
 *
 * @throws QueueNotFoundError when the queue does not exist
 * @throws the SDK's error for anything else (credentials, network): see `toDlqToolError`
 */
export async function inspectQueue(sqs: SQSClient, queueUrl: string): Promise<QueueInfo> {
  let attributes: Record<string, string>;
  try {
    const output = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['All'] }));
    attributes = output.Attributes ?? {};
  } catch (error) {
    if (isQueueDoesNotExist(error)) throw new QueueNotFoundError(queueUrl, { cause: error });
    throw error;
  }
  const queueArn = attributes.QueueArn ?? '';
  let deadLetterSources: string[] | undefined;
  let deadLetterSourcesUnavailable: string | undefined;
  try {
    deadLetterSources = await listDeadLetterSources(sqs, queueUrl);
  } catch (error) {
    if (isQueueDoesNotExist(error)) throw new QueueNotFoundError(queueUrl, { cause: error });
    if (isUnsupportedOperation(error)) {
      deadLetterSources = await findSourcesByRedrivePolicy(sqs, queueArn).catch(() => undefined);
      if (deadLetterSources === undefined) {
        deadLetterSourcesUnavailable = "the server supports neither ListDeadLetterSourceQueues nor reading every queue's redrive policy";
      }
    } else {
      deadLetterSourcesUnavailable = `ListDeadLetterSourceQueues failed: ${(error as Error).name}: ${(error as Error).message}`;
    }
  }
  return {
    queueUrl,
    queueArn,
    fifo: attributes.FifoQueue === 'true' || isFifoQueueUrl(queueUrl),
    approximateNumberOfMessages: Number(attributes.ApproximateNumberOfMessages ?? 0),
    approximateNumberOfMessagesNotVisible: Number(attributes.ApproximateNumberOfMessagesNotVisible ?? 0),
    redrivePolicy: parseRedrivePolicy(attributes.RedrivePolicy),
    deadLetterSources,
    ...(deadLetterSourcesUnavailable !== undefined ? { deadLetterSourcesUnavailable } : {}),
  };
}

/**
 * Decides whether a queue is a dead-letter queue, and throws if it is not:
 *
 * 1. a queue that some queue's redrive policy names (`QueueInfo.deadLetterSources`) is one;
 * 2. otherwise a queue with a redrive policy of its own is a source queue, not a DLQ (the usual
 *    mistake: passing the consumer's queue);
 * 3. otherwise (no source found: a DLQ that only the consumer writes to, as for Kafka, or
 *    sources that cannot be listed) the messages decide: if the sample has messages and none of them
 *    carries the consumer's `failureReason`/`source` attributes or SQS's
 *    `DeadLetterQueueSourceArn`, it is not a DLQ. An empty sample passes.
 *
 * @param sample - messages already received from the queue; omit it to check only 1 and 2
 * @throws NotADeadLetterQueueError
 */
export function assertDeadLetterQueue(info: QueueInfo, sample?: readonly DeadLetterRecord[]): void {
  if (info.deadLetterSources !== undefined && info.deadLetterSources.length > 0) return;
  if (info.redrivePolicy !== undefined) {
    throw new NotADeadLetterQueueError(
      info.queueUrl,
      `it has a redrive policy of its own (its dead-letter queue is ${info.redrivePolicy.deadLetterTargetArn ?? 'unknown'}), ` +
        'so it is a source queue; pass the URL of its dead-letter queue',
    );
  }
  if (sample !== undefined && sample.length > 0 && !sample.some(looksDeadLettered)) {
    throw new NotADeadLetterQueueError(
      info.queueUrl,
      `${info.deadLetterSources === undefined ? 'its source queues cannot be listed' : 'no queue names it in a redrive policy'}` +
        ` and none of the ${sample.length} message(s) read carries a failureReason`,
    );
  }
}

/** How many queues the `ListQueues` fallback of {@link inspectQueue} reads at most. */
export const MAX_QUEUES_SCANNED = 1000;

async function listDeadLetterSources(sqs: SQSClient, queueUrl: string): Promise<string[]> {
  const sources: string[] = [];
  let nextToken: string | undefined;
  do {
    const output = await sqs.send(new ListDeadLetterSourceQueuesCommand({ QueueUrl: queueUrl, MaxResults: 1000, NextToken: nextToken }));
    sources.push(...(output.queueUrls ?? []));
    nextToken = output.NextToken;
  } while (nextToken !== undefined);
  return sources;
}

/** What `ListDeadLetterSourceQueues` answers, found by reading the redrive policy of every queue. */
async function findSourcesByRedrivePolicy(sqs: SQSClient, queueArn: string): Promise<string[]> {
  const urls: string[] = [];
  let nextToken: string | undefined;
  do {
    const output = await sqs.send(new ListQueuesCommand({ MaxResults: 1000, NextToken: nextToken }));
    urls.push(...(output.QueueUrls ?? []));
    nextToken = output.NextToken;
  } while (nextToken !== undefined && urls.length < MAX_QUEUES_SCANNED);
  const sources: string[] = [];
  for (const url of urls.slice(0, MAX_QUEUES_SCANNED)) {
    try {
      const output = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['RedrivePolicy'] }));
      if (parseRedrivePolicy(output.Attributes?.RedrivePolicy)?.deadLetterTargetArn === queueArn) sources.push(url);
    } catch (error) {
      if (!isQueueDoesNotExist(error)) throw error;
    }
  }
  return sources;
}

function parseRedrivePolicy(json: string | undefined): QueueInfo['redrivePolicy'] {
  if (json === undefined || json === '') return undefined;
  try {
    return JSON.parse(json) as QueueInfo['redrivePolicy'];
  } catch {
    return {};
  }
}
