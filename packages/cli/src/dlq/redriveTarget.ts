import { GetQueueAttributesCommand, GetQueueUrlCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { DeadLetterRecord } from 'idempotent-consumer/dlq';
import { isQueueDoesNotExist } from './errors.js';
import { parseSqsQueueArn, sameQueue } from './queueUrl.js';

/** Where a dead-letter message goes on redrive, or why it cannot go anywhere. */
export type RedriveTarget = { readonly queueUrl: string } | { readonly skip: string };

/**
 * Finds each dead-letter message's destination on redrive:
 *
 * 1. `--to`, when given, for every message;
 * 2. else the message's `source` attribute (or SQS's `DeadLetterQueueSourceArn`), an SQS queue
 *    ARN, resolved with `GetQueueUrl` (name and owner account from the ARN; results cached);
 * 3. else the dead-letter queue's only source queue (`ListDeadLetterSourceQueues`).
 *
 * A message whose source is not an SQS queue (a Kafka topic), is in another region, no longer
 * exists, or is the dead-letter queue itself is skipped with the reason: it stays in the DLQ.
 */
export class RedriveTargetResolver {
  readonly #sqs: SQSClient;
  readonly #to: string | undefined;
  readonly #deadLetterQueueUrl: string;
  readonly #onlySource: string | undefined;
  readonly #cache = new Map<string, Promise<RedriveTarget>>();
  readonly #sizes = new Map<string, Promise<number | undefined>>();

  /**
   * @param options.to - the `--to` queue URL
   * @param options.deadLetterQueueUrl - the queue being redriven (never a destination)
   * @param options.deadLetterSources - the queues whose redrive policy names the DLQ, if known
   */
  constructor(
    sqs: SQSClient,
    options: { readonly to?: string; readonly deadLetterQueueUrl: string; readonly deadLetterSources?: readonly string[] },
  ) {
    this.#sqs = sqs;
    this.#to = options.to;
    this.#deadLetterQueueUrl = options.deadLetterQueueUrl;
    this.#onlySource = options.deadLetterSources?.length === 1 ? options.deadLetterSources[0] : undefined;
  }

  /** The destination of one message. Throws only what `GetQueueUrl` throws besides "no such queue". */
  async resolve(record: DeadLetterRecord): Promise<RedriveTarget> {
    if (this.#to !== undefined) return { queueUrl: this.#to };
    if (record.source === undefined || record.source === '') {
      return this.#onlySource !== undefined ? { queueUrl: this.#onlySource } : { skip: 'it has no source attribute; pass --to URL' };
    }
    let pending = this.#cache.get(record.source);
    if (pending === undefined) {
      pending = this.#resolveArn(record.source);
      this.#cache.set(record.source, pending);
    }
    return pending;
  }

  /**
   * A target queue's `MaximumMessageSize`, in bytes (cached); `undefined` when the server does
   * not say. Throws what `GetQueueAttributes` throws.
   */
  maxMessageSizeOf(queueUrl: string): Promise<number | undefined> {
    let pending = this.#sizes.get(queueUrl);
    if (pending === undefined) {
      pending = this.#sqs
        .send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['MaximumMessageSize'] }))
        .then((output) => {
          const size = Number.parseInt(output.Attributes?.MaximumMessageSize ?? '', 10);
          return Number.isFinite(size) && size > 0 ? size : undefined;
        });
      this.#sizes.set(queueUrl, pending);
    }
    return pending;
  }

  async #resolveArn(source: string): Promise<RedriveTarget> {
    const arn = parseSqsQueueArn(source);
    if (arn === undefined) {
      return { skip: `its source ${source} is not an SQS queue; pass --to URL to send it to a queue` };
    }
    const region = await this.#sqs.config.region();
    if (arn.region !== region) {
      return { skip: `its source queue ${source} is in ${arn.region}, not ${region}; pass --to URL or --region` };
    }
    try {
      const output = await this.#sqs.send(new GetQueueUrlCommand({ QueueName: arn.name, QueueOwnerAWSAccountId: arn.account }));
      const queueUrl = output.QueueUrl;
      if (queueUrl === undefined) return { skip: `GetQueueUrl returned no URL for ${source}` };
      if (sameQueue(queueUrl, this.#deadLetterQueueUrl)) return { skip: `its source ${source} is this dead-letter queue` };
      return { queueUrl };
    } catch (error) {
      if (isQueueDoesNotExist(error)) return { skip: `its source queue ${source} does not exist any more; pass --to URL` };
      throw error;
    }
  }
}
