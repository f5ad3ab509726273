import { SendMessageBatchCommand, SendMessageCommand, type SendMessageBatchRequestEntry, type SQSClient } from '@aws-sdk/client-sqs';
import type { S3Client } from '@aws-sdk/client-s3';
import { DeadLetterSendError } from './deadLetterErrors.js';
import { buildDeadLetterMessage, type DeadLetterContext, type DeadLetterMessage } from './deadLetterMessage.js';
import { startOnce } from '../startOnce.js';

/** An S3 client, or a function that makes one when it is first needed (so `@aws-sdk/client-s3` is loaded only then). */
export type S3ClientSource = S3Client | (() => S3Client | Promise<S3Client>);

/** Options of {@link DeadLetterQueue}. */
export interface DeadLetterQueueOptions {
  readonly sqs: SQSClient;
  /**
   * The S3 client for offloaded bodies, or a factory of one.
   * @default a client with the SDK's default configuration, made when a body is first offloaded
   */
  readonly s3?: S3ClientSource;
  /** The dead-letter queue's URL. */
  readonly queueUrl: string;
  /** Whether it is a FIFO queue. @default the URL ends in `.fifo` */
  readonly fifo?: boolean;
  /** The dead-letter queue's maximum message size, in bytes (its `MaximumMessageSize`; also the `SendMessageBatch` total limit used). */
  readonly maxMessageSizeBytes: number;
  /**
   * The S3 bucket for bodies too large for the dead-letter queue (the `PAYLOAD_BUCKET_NAME`
   * environment variable). @default none: such a message fails with `DeadLetterTooLargeError`
   */
  readonly payloadBucket?: string;
}

/** The outcome of one entry of {@link DeadLetterQueue.sendBatch}, at the entry's index. */
export type DeadLetterSendResult = { readonly ok: true; readonly messageId: string } | { readonly ok: false; readonly error: Error };

/** The most entries SQS takes in one `SendMessageBatch`. */
const MAX_BATCH_ENTRIES = 10;

/**
 * The consumer's writer to the dead-letter queue: the original body, byte for byte, with the
 * reason and context in `ic.*` attributes and the producer's attributes kept (see
 * `deadLetterMessage.ts` for the layout). A body too large for the queue is stored in the payload
 * bucket first (the Amazon SQS Extended Client convention); `@aws-sdk/client-s3` is loaded only
 * then, so it costs nothing at cold start.
 *
 * A message the writer could not put in the DLQ must not be acknowledged: it is then retried,
 * and on SQS the queue's redrive policy is the safety net.
 */
export class DeadLetterQueue {
  readonly #options: DeadLetterQueueOptions;
  readonly #fifo: boolean;
  /** The S3 client, made at the first body too large for the queue (a failure to make it is not remembered). */
  readonly #s3Client = startOnce(async (): Promise<S3Client> => {
    const source = this.#options.s3;
    if (source === undefined) {
      const { S3Client: Client } = await import('@aws-sdk/client-s3');
      return new Client({});
    }
    return typeof source === 'function' ? source() : source;
  });

  constructor(options: DeadLetterQueueOptions) {
    this.#options = options;
    this.#fifo = options.fifo ?? options.queueUrl.endsWith('.fifo');
  }

  /**
   * Sends one failed message to the dead-letter queue (`SendMessage`), its body offloaded first
   * when too large.
   *
   * @returns the dead-letter message's id
   * @throws DeadLetterTooLargeError, InvalidFailureReasonError (see `buildDeadLetterMessage`);
   *   the S3 or SQS client's error when a request fails. The caller must then NOT acknowledge the message.
   */
  async send(context: DeadLetterContext): Promise<string | undefined> {
    const message = this.#build(context);
    await this.#offload(message);
    const output = await this.#options.sqs.send(new SendMessageCommand(message.input));
    return output.MessageId;
  }

  /**
   * Sends failed messages to the dead-letter queue with `SendMessageBatch`: up to 10 entries per
   * request, the request's total within `maxMessageSizeBytes` (a message too large to share a
   * request goes alone), requests in order. Bodies too large for the queue are offloaded first.
   *
   * Every entry gets its own outcome, at its index: `{ ok: true, messageId }`, or `{ ok: false,
   * error }` when it could not be built (see {@link send}), its offload failed, SQS refused it
   * (`DeadLetterSendError` with SQS's code) or its request failed as a whole. An entry that is not
   * `ok` must not be acknowledged. On a FIFO queue a request holds at most one entry of each
   * message group (SQS takes a request's entries independently), and an entry after a failed one
   * of the same group is not sent (it would overtake it): it fails too.
   *
   * Never throws.
   */
  async sendBatch(contexts: readonly DeadLetterContext[]): Promise<DeadLetterSendResult[]> {
    const results: (DeadLetterSendResult | undefined)[] = new Array(contexts.length).fill(undefined);
    const built: { index: number; message: DeadLetterMessage; group: string | undefined }[] = [];
    contexts.forEach((context, index) => {
      try {
        built.push({ index, message: this.#build(context), group: this.#fifo ? context.messageGroupId : undefined });
      } catch (error) {
        results[index] = { ok: false, error: asError(error) };
      }
    });
    await Promise.all(
      built.map(async ({ index, message }) => {
        try {
          await this.#offload(message);
        } catch (error) {
          results[index] = { ok: false, error: asError(error) };
        }
      }),
    );

    const failedGroups = new Set<string>();
    for (const { index, group } of built) {
      if (results[index]?.ok === false && group !== undefined) failedGroups.add(group);
    }
    let batch: typeof built = [];
    let batchBytes = 0;
    const flush = async (): Promise<void> => {
      if (batch.length === 0) return;
      const entries = batch;
      batch = [];
      batchBytes = 0;
      await this.#sendEntries(entries, results);
      for (const { index, group } of entries) {
        if (results[index]?.ok === false && group !== undefined) failedGroups.add(group);
      }
    };
    for (const entry of built) {
      if (results[entry.index] !== undefined) continue;
      const groupQueued = entry.group !== undefined && batch.some((queued) => queued.group === entry.group);
      if (groupQueued || batch.length >= MAX_BATCH_ENTRIES || batchBytes + entry.message.sizeBytes > this.#options.maxMessageSizeBytes) {
        await flush();
      }
      if (entry.group !== undefined && failedGroups.has(entry.group)) {
        results[entry.index] = {
          ok: false,
          error: new DeadLetterSendError(`not sent: an earlier dead letter of message group ${entry.group} failed`, 'GroupBlocked', false),
        };
        continue;
      }
      batch.push(entry);
      batchBytes += entry.message.sizeBytes;
    }
    await flush();
    return results.map((result) => result ?? { ok: false, error: new Error('not sent') });
  }

  async #sendEntries(
    entries: readonly { index: number; message: DeadLetterMessage }[],
    results: (DeadLetterSendResult | undefined)[],
  ): Promise<void> {
    const requestEntries: SendMessageBatchRequestEntry[] = entries.map(({ message }, position) => {
      const { QueueUrl: _queueUrl, ...rest } = message.input;
      return { Id: `e${position}`, ...rest } as SendMessageBatchRequestEntry;
    });
    try {
      const output = await this.#options.sqs.send(
        new SendMessageBatchCommand({ QueueUrl: this.#options.queueUrl, Entries: requestEntries }),
      );
      for (const success of output.Successful ?? []) {
        const entry = entries[Number((success.Id ?? '').slice(1))];
        if (entry !== undefined && success.MessageId !== undefined) results[entry.index] = { ok: true, messageId: success.MessageId };
      }
      for (const failure of output.Failed ?? []) {
        const entry = entries[Number((failure.Id ?? '').slice(1))];
        if (entry === undefined) continue;
        const code = failure.Code ?? 'Error';
        results[entry.index] = {
          ok: false,
          error: new DeadLetterSendError(
            `SQS refused the dead letter: ${code}: ${failure.Message ?? ''}`,
            code,
            failure.SenderFault === true,
          ),
        };
      }
      for (const { index } of entries) {
        results[index] ??= {
          ok: false,
          error: new DeadLetterSendError('SQS reported neither success nor failure for the entry', 'NoResult', false),
        };
      }
    } catch (error) {
      const e = asError(error);
      for (const { index } of entries) {
        results[index] = {
          ok: false,
          error: new DeadLetterSendError(`SendMessageBatch failed: ${e.name}: ${e.message}`, e.name, false, { cause: error }),
        };
      }
    }
  }

  #build(context: DeadLetterContext): DeadLetterMessage {
    return buildDeadLetterMessage(this.#options.queueUrl, context, {
      fifo: this.#fifo,
      maxMessageSizeBytes: this.#options.maxMessageSizeBytes,
      ...(this.#options.payloadBucket !== undefined ? { payloadBucket: this.#options.payloadBucket } : {}),
    });
  }

  async #offload(message: DeadLetterMessage): Promise<void> {
    if (message.offload === undefined) return;
    const s3 = await this.#s3Client();
    const { PutObjectCommand } = await import('@aws-sdk/client-s3');
    await s3.send(
      new PutObjectCommand({
        Bucket: message.offload.bucket,
        Key: message.offload.key,
        Body: message.offload.body,
        ContentType: 'text/plain; charset=utf-8',
      }),
    );
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
