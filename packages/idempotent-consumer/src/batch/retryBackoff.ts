import { ChangeMessageVisibilityBatchCommand, DeleteMessageBatchCommand, GetQueueUrlCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { MAX_VISIBILITY_SECONDS } from './backoffSeconds.js';

export { backoffSeconds } from './backoffSeconds.js';

/** One failed record to delay. */
export interface DelayedRecord {
  readonly receiptHandle: string;
  /** The source queue's ARN (the SQS record's `eventSourceARN`). */
  readonly eventSourceARN: string;
  /** How long it stays invisible, in seconds. */
  readonly delaySeconds: number;
}

/** Options of {@link RetryBackoff}. */
export interface RetryBackoffOptions {
  readonly sqs: SQSClient;
}

/**
 * Delays the redelivery of failed messages with `ChangeMessageVisibility`, so a retryable
 * failure (a predecessor not applied yet, throttling) comes back after a growing delay instead
 * of after the whole visibility timeout, and does not spin through its receives at once.
 * Without it a failed message simply returns when its visibility timeout expires.
 *
 * The source queue's URL is looked up once per queue ARN with `GetQueueUrl`.
 */
export class RetryBackoff {
  readonly #options: RetryBackoffOptions;
  readonly #queueUrls = new Map<string, Promise<string>>();

  constructor(options: RetryBackoffOptions) {
    this.#options = options;
  }

  /**
   * Sets the visibility of each failed record to its delay, 10 records per request.
   *
   * @returns how many records' visibility was changed
   * @throws the SQS client's error; the caller should log it and carry on (the message then
   *   returns after the visibility timeout: later, but not lost)
   */
  async delay(records: readonly DelayedRecord[]): Promise<number> {
    const { sqs } = this.#options;
    if (records.length === 0) return 0;
    let changed = 0;
    for (const [queueArn, group] of groupBy(records, (r) => r.eventSourceARN)) {
      const queueUrl = await this.#queueUrl(queueArn);
      for (let i = 0; i < group.length; i += 10) {
        const chunk = group.slice(i, i + 10);
        const output = await sqs.send(
          new ChangeMessageVisibilityBatchCommand({
            QueueUrl: queueUrl,
            Entries: chunk.map((record, index) => ({
              Id: String(index),
              ReceiptHandle: record.receiptHandle,
              VisibilityTimeout: Math.max(0, Math.min(Math.ceil(record.delaySeconds), MAX_VISIBILITY_SECONDS)),
            })),
          }),
        );
        changed += output.Successful?.length ?? 0;
      }
    }
    return changed;
  }

  /**
   * Deletes messages from their source queues by receipt handle, 10 per request: the parked
   * messages another delivery settled (see `ParkedMessages`). A receipt handle of an earlier
   * receive deletes nothing once the message was received again (SQS then answers success or an
   * entry error; either way the message comes back, and its inbox row makes it a duplicate).
   *
   * @returns how many deletions SQS reported successful
   * @throws the SQS client's error
   */
  async deleteMessages(records: readonly { readonly receiptHandle: string; readonly eventSourceARN: string }[]): Promise<number> {
    const { sqs } = this.#options;
    let deleted = 0;
    for (const [queueArn, group] of groupBy(records, (r) => r.eventSourceARN)) {
      const queueUrl = await this.#queueUrl(queueArn);
      for (let i = 0; i < group.length; i += 10) {
        const chunk = group.slice(i, i + 10);
        const output = await sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: chunk.map((record, index) => ({ Id: String(index), ReceiptHandle: record.receiptHandle })),
          }),
        );
        deleted += output.Successful?.length ?? 0;
      }
    }
    return deleted;
  }

  #queueUrl(queueArn: string): Promise<string> {
    let url = this.#queueUrls.get(queueArn);
    if (url === undefined) {
      const [, , , , account, name] = queueArn.split(':');
      url = this.#options.sqs.send(new GetQueueUrlCommand({ QueueName: name, QueueOwnerAWSAccountId: account })).then((output) => {
        if (output.QueueUrl === undefined) throw new Error(`no URL for queue ${queueArn}`);
        return output.QueueUrl;
      });
      url.catch(() => this.#queueUrls.delete(queueArn));
      this.#queueUrls.set(queueArn, url);
    }
    return url;
  }
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    groups.set(k, [...(groups.get(k) ?? []), item]);
  }
  return groups;
}
