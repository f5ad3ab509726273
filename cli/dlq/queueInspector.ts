import {
  ChangeMessageVisibilityBatchCommand,
  GetQueueAttributesCommand,
  ListDeadLetterSourceQueuesCommand,
  ListQueuesCommand,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { looksDeadLettered, toDeadLetterRecord, type DeadLetterRecord } from './deadLetterRecord.js';
import { isQueueDoesNotExist, isUnsupportedOperation, NotADeadLetterQueueError, QueueNotFoundError } from './errors.js';
import { isFifoQueueUrl } from './queueUrl.js';

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
        deadLetterSourcesUnavailable = 'the server supports neither ListDeadLetterSourceQueues nor reading every queue\'s redrive policy';
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

/** How messages are received for inspection. */
export interface ReceiveOptions {
  /**
   * How long received messages stay hidden from other readers while the tool holds them, in
   * seconds; the tool makes them visible again when it is done.
   * @default 120
   */
  readonly visibilityTimeoutSeconds?: number;
  /**
   * Long-poll wait of each receive, in seconds. An empty long poll ends a scan (on AWS a long
   * poll asks every server, so an empty one means nothing is visible).
   * @default 1
   */
  readonly waitTimeSeconds?: number;
  /** Stop after this many messages. @default no limit */
  readonly maxMessages?: number;
}

/**
 * Messages received and held invisible by the tool. `release()` makes every one still held
 * visible again (`ChangeMessageVisibilityBatch` to 0), so a command that only reads leaves the
 * queue as it found it; `forget()` drops a message that was deleted.
 *
 * On FIFO queues SQS hides the later messages of a message group while one of the group is in
 * flight, so one scan sees only what SQS lets it see (fauxqs: one message per group).
 */
export class MessageHold {
  readonly #sqs: SQSClient;
  readonly #queueUrl: string;
  readonly #held = new Map<string, DeadLetterRecord>();
  readonly #seen = new Set<string>();

  constructor(sqs: SQSClient, queueUrl: string) {
    this.#sqs = sqs;
    this.#queueUrl = queueUrl;
  }

  /** Number of messages held now. */
  get size(): number {
    return this.#held.size;
  }

  /** Whether the message was received in this hold's life (held now or forgotten since). */
  hasSeen(messageId: string): boolean {
    return this.#seen.has(messageId);
  }

  /**
   * Receives until an empty receive, a batch of messages all seen before (their visibility ran
   * out and they came round again), `maxMessages`, or `signal` aborts.
   *
   * @returns the messages first seen in this scan, in the order received
   */
  async scan(options: ReceiveOptions & { readonly signal?: AbortSignal } = {}): Promise<DeadLetterRecord[]> {
    const found: DeadLetterRecord[] = [];
    const max = options.maxMessages ?? Number.POSITIVE_INFINITY;
    while (found.length < max && options.signal?.aborted !== true) {
      const batch = await this.receive({ ...options, maxMessages: Math.min(10, max - found.length) });
      if (batch.length === 0) break;
      const unseen = batch.filter((record) => !this.#seen.has(record.messageId));
      // Everything came round again: the visibility timeout ran out during the scan.
      if (unseen.length === 0) break;
      for (const record of unseen) {
        this.#seen.add(record.messageId);
        found.push(record);
      }
    }
    return found;
  }

  /**
   * One `ReceiveMessage` of up to 10 messages, with every attribute; the messages are held. It
   * is never aborted half-way: a receive cut off by Ctrl-C would hide messages the tool never
   * learnt of (until their visibility timeout ends).
   */
  async receive(options: ReceiveOptions = {}): Promise<DeadLetterRecord[]> {
    const output = await this.#sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: this.#queueUrl,
        MaxNumberOfMessages: Math.max(1, Math.min(10, options.maxMessages ?? 10)),
        VisibilityTimeout: options.visibilityTimeoutSeconds ?? 120,
        WaitTimeSeconds: options.waitTimeSeconds ?? 1,
        MessageAttributeNames: ['All'],
        MessageSystemAttributeNames: ['All'],
      }),
    );
    const records = (output.Messages ?? []).map(toDeadLetterRecord);
    for (const record of records) this.#held.set(record.messageId, record);
    return records;
  }

  /** The latest receipt handle of a held message. */
  receiptHandleOf(messageId: string): string | undefined {
    return this.#held.get(messageId)?.receiptHandle;
  }

  /** Stops holding a message (it was deleted). */
  forget(messageId: string): void {
    this.#held.delete(messageId);
  }

  /**
   * Makes every held message visible again, 10 per `ChangeMessageVisibilityBatch`. Never
   * throws: a message whose receipt handle expired is visible already.
   *
   * @returns how many were released and the errors met (message id and error)
   */
  async release(): Promise<{ released: number; failed: { messageId: string; error: string }[] }> {
    const records = [...this.#held.values()];
    const failed: { messageId: string; error: string }[] = [];
    let released = 0;
    for (let i = 0; i < records.length; i += 10) {
      const chunk = records.slice(i, i + 10);
      try {
        const output = await this.#sqs.send(
          new ChangeMessageVisibilityBatchCommand({
            QueueUrl: this.#queueUrl,
            Entries: chunk.map((record, index) => ({
              Id: String(index),
              ReceiptHandle: record.receiptHandle,
              VisibilityTimeout: 0,
            })),
          }),
        );
        released += output.Successful?.length ?? 0;
        for (const failure of output.Failed ?? []) {
          const record = chunk[Number(failure.Id)];
          failed.push({ messageId: record?.messageId ?? '?', error: `${failure.Code ?? 'Error'}: ${failure.Message ?? ''}` });
        }
      } catch (error) {
        for (const record of chunk) failed.push({ messageId: record.messageId, error: String(error) });
      }
    }
    this.#held.clear();
    return { released, failed };
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
