/**
 * Messages of a queue received and held invisible, then made visible again: how the DLQ tool and
 * the local run read a queue without consuming it.
 *
 * @module
 */
import { ChangeMessageVisibilityBatchCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { type DeadLetterRecord, toDeadLetterRecord } from 'idempotent-consumer/dlq';

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
 * flight, so one scan sees only what SQS lets it see: a receive may return several messages of a
 * group, in the group's order, and none of the group after that until they are deleted or made
 * visible again (fauxqs does the same).
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
