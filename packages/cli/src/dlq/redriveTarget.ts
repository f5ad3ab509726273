import { GetQueueAttributesCommand, GetQueueUrlCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { DeadLetterRecord } from 'idempotent-consumer/dlq';
import { isQueueDoesNotExist } from './errors.js';
import { kafkaCoordinatesOf } from './kafkaRedriveEvent.js';
import { parseSqsQueueArn, sameQueue } from './queueUrl.js';

/**
 * Where a dead-letter message goes on redrive, or why it cannot go anywhere: an SQS queue (sent
 * there), the consumer's Lambda function (a Kafka dead letter: invoked with the record), or nowhere.
 */
export type RedriveTarget = { readonly queueUrl: string } | { readonly functionName: string } | { readonly skip: string };

/** How a target is named in a redrive's result: the queue URL, or `lambda:<function>`. */
export function targetLabel(target: RedriveTarget): string | undefined {
  if ('queueUrl' in target) return target.queueUrl;
  if ('functionName' in target) return `lambda:${target.functionName}`;
  return undefined;
}

/**
 * Finds each dead-letter message's destination on redrive:
 *
 * 1. `--to`, when given, for every message;
 * 2. else, for a Kafka dead letter of the consumer (its `ic.context` holds the record's topic,
 *    partition and offset), the consumer's function (`--function`): a Kafka topic takes no
 *    `SendMessage`, so the record is redriven by invoking the function (see `kafkaRedriveEvent`);
 *    without `--function` it is skipped;
 * 3. else the message's `source` attribute (or SQS's `DeadLetterQueueSourceArn`), an SQS queue
 *    ARN, resolved with `GetQueueUrl` (name and owner account from the ARN; results cached);
 * 4. else the dead-letter queue's only source queue (`ListDeadLetterSourceQueues`).
 *
 * A message whose source is not an SQS queue (a Kafka topic), is in another region, no longer
 * exists, or is the dead-letter queue itself is skipped with the reason: it stays in the DLQ.
 */
export class RedriveTargetResolver {
  readonly #sqs: SQSClient;
  readonly #to: string | undefined;
  readonly #deadLetterQueueUrl: string;
  readonly #onlySource: string | undefined;
  readonly #functionName: string | undefined;
  readonly #cache = new Map<string, Promise<RedriveTarget>>();
  readonly #sizes = new Map<string, Promise<number | undefined>>();

  /**
   * @param options.to - the `--to` queue URL
   * @param options.deadLetterQueueUrl - the queue being redriven (never a destination)
   * @param options.deadLetterSources - the queues whose redrive policy names the DLQ, if known
   * @param options.functionName - the consumer's function (`--function`): where Kafka dead letters go
   */
  constructor(
    sqs: SQSClient,
    options: {
      readonly to?: string;
      readonly deadLetterQueueUrl: string;
      readonly deadLetterSources?: readonly string[];
      readonly functionName?: string;
    },
  ) {
    this.#functionName = options.functionName;
    this.#sqs = sqs;
    this.#to = options.to;
    this.#deadLetterQueueUrl = options.deadLetterQueueUrl;
    this.#onlySource = options.deadLetterSources?.length === 1 ? options.deadLetterSources[0] : undefined;
  }

  /** The destination of one message. Throws only what `GetQueueUrl` throws besides "no such queue". */
  async resolve(record: DeadLetterRecord): Promise<RedriveTarget> {
    if (this.#to !== undefined) return { queueUrl: this.#to };
    if (record.deadLettered && kafkaCoordinatesOf(record) !== undefined && parseSqsQueueArn(record.source ?? '') === undefined) {
      return this.#functionName !== undefined
        ? { functionName: this.#functionName }
        : {
            skip:
              `its source ${record.source ?? '(none)'} is not an SQS queue but a Kafka event source: pass --function NAME ` +
              "(the consumer's function) to redrive it by invoking the function with the record, or --to URL to send it to a queue",
          };
    }
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
