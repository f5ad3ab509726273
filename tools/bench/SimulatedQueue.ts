/**
 * An in-memory standard SQS queue and the Lambda event source mapping that drains it, as far as
 * the benchmark needs them: messages are delivered in order in batches of `batchSize`, each
 * delivery a Lambda SQS record with the next `ApproximateReceiveCount`; a reported batch item
 * failure (or every record of an invocation that threw) comes back after what is already queued
 * (as after its visibility timeout), and after `maxReceiveCount` receives it is moved to the
 * dead-letter queue (the redrive policy), as SQS does. The queue's own requests (receives,
 * deletes) are the event source mapping's, billed to nobody here, so none are sent.
 *
 * Several execution environments may drain it at once ({@link SimulatedQueue.receiveBatch}: each
 * batch in flight settles on its own), as the event source mapping invokes several environments
 * of a standard queue concurrently; the next batch is always the next messages visible. A failure
 * of such a batch comes back once every batch that was in flight when it failed has settled: on
 * AWS it stays invisible for its visibility timeout (or the consumer's backoff, 2 s at least by
 * the settings' default), longer than the invocations running beside it take.
 *
 * **Deletes by receipt handle** ({@link SimulatedQueue.deleteMessage}): the consumer's own
 * `DeleteMessage(Batch)` of a message it settled outside its batch (a parked message taken up by
 * the invocation that applied its predecessor, docs/parking.md) is answered here, as SQS answers
 * it: the receipt handle of a message's latest receive deletes it wherever it is (waiting to come
 * back, visible again, or in flight in a batch, which then settles without it); the handle of an
 * earlier receive (the message was received again since) deletes nothing, and SQS still answers
 * success ("the request succeeds, but the message might not be deleted":
 * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_DeleteMessage.html).
 * Receipt handles are `bench-<messageId>-<n>`, `n` unique in the process, so a handle names one
 * receive of one queue.
 *
 * @module
 */
import type { SQSRecord } from 'aws-lambda';

/** A message to put on the queue. */
export interface QueuedMessage {
  readonly messageId: string;
  readonly body: string;
  /** Receives before this run (a redelivery of a message already received once: 1). @default 0 */
  readonly previousReceives?: number;
}

interface Entry extends QueuedMessage {
  receiveCount: number;
  /** The receipt handle of its latest receive (`undefined` before its first). */
  receiptHandle?: string;
  /** Deleted by its receipt handle ({@link SimulatedQueue.deleteMessage}): a batch it is in flight in settles without it. */
  deletedByReceiptHandle?: boolean;
}

/** The prefix of the simulated queue's receipt handles. */
export const SIMULATED_RECEIPT_HANDLE_PREFIX = 'bench-';

/** Receipts made in this process, for receipt handles unique across the simulated queues. */
let receipts = 0;

/** What the queue did with one message in the end. */
export interface QueueTotals {
  /** Deleted: after an invocation that did not report it, or by its receipt handle. */
  readonly deleted: number;
  /** Of those, deleted by the consumer with the receipt handle of its latest receive ({@link SimulatedQueue.deleteMessage}). */
  readonly deletedByReceiptHandle: number;
  /** Moved to the dead-letter queue by the redrive policy. */
  readonly redriven: number;
  /** Deliveries in all (first deliveries and redeliveries). */
  readonly deliveries: number;
}

/** Options of {@link SimulatedQueue}. */
export interface SimulatedQueueOptions {
  /** The ARN put in each record's `eventSourceARN` (a real queue's, so that `GetQueueUrl` finds it). */
  readonly queueArn: string;
  /** Receives after which a failed message is moved to the dead-letter queue (the redrive policy's `maxReceiveCount`). */
  readonly maxReceiveCount: number;
  /** Region in each record's `awsRegion`. @default 'us-east-1' */
  readonly region?: string;
}

/** See the module comment. */
export class SimulatedQueue {
  readonly #options: SimulatedQueueOptions;
  readonly #visible: Entry[] = [];
  readonly #inFlight = new Map<string, Entry>();
  /** Batches of {@link receiveBatch} not yet settled, by id, with their messages. */
  readonly #batches = new Map<number, readonly Entry[]>();
  #nextBatch = 0;
  /** Failures of such batches waiting for the batches that were in flight beside them to settle. */
  #waiting: { readonly entry: Entry; readonly until: Set<number> }[] = [];
  /** The entries still in the queue, by the receipt handle of their latest receive. */
  readonly #byReceiptHandle = new Map<string, Entry>();
  #deleted = 0;
  #deletedByReceiptHandle = 0;
  #redriven = 0;
  #deliveries = 0;

  /**
   * @throws Error when a message id is given twice
   */
  constructor(messages: readonly QueuedMessage[], options: SimulatedQueueOptions) {
    this.#options = options;
    const ids = new Set<string>();
    for (const message of messages) {
      if (ids.has(message.messageId)) throw new Error(`message id ${message.messageId} is queued twice`);
      ids.add(message.messageId);
      this.#visible.push({ messageId: message.messageId, body: message.body, receiveCount: message.previousReceives ?? 0 });
    }
  }

  /** Whether messages are waiting. */
  get isEmpty(): boolean {
    return this.#visible.length === 0 && this.#inFlight.size === 0 && this.#batches.size === 0 && this.#waiting.length === 0;
  }

  /** Messages that can be received now (not in flight). */
  get visibleCount(): number {
    return this.#visible.length;
  }

  /**
   * Receives up to `batchSize` messages as a batch that settles on its own, while other batches
   * are in flight (several execution environments at once). Its `settle` works as
   * {@link settle} does for this batch's messages only, once, except that a failure comes back
   * only when the batches in flight at that moment have settled too (see the module comment).
   *
   * @throws Error from `settle` when the batch is settled twice
   */
  receiveBatch(batchSize: number): { readonly records: SQSRecord[]; settle(failedMessageIds: ReadonlySet<string>): string[] } {
    const entries = this.#visible.splice(0, batchSize);
    const id = this.#nextBatch++;
    this.#batches.set(id, entries);
    const records = entries.map((entry) => {
      entry.receiveCount += 1;
      this.#deliveries += 1;
      return this.#record(entry);
    });
    let settled = false;
    return {
      records,
      settle: (failedMessageIds) => {
        if (settled) throw new Error('the batch is already settled');
        settled = true;
        this.#batches.delete(id);
        for (const waiting of this.#waiting) waiting.until.delete(id);
        const failed: Entry[] = [];
        const redriven = this.#settleEntries(entries, failedMessageIds, failed);
        for (const entry of failed) this.#waiting.push({ entry, until: new Set(this.#batches.keys()) });
        const back = this.#waiting.filter((waiting) => waiting.until.size === 0);
        this.#waiting = this.#waiting.filter((waiting) => waiting.until.size > 0);
        this.#visible.push(...back.map((waiting) => waiting.entry));
        return redriven;
      },
    };
  }

  /**
   * Receives up to `batchSize` messages as Lambda SQS records.
   * @throws Error while the previous batch is in flight (call {@link settle} first)
   */
  receive(batchSize: number): SQSRecord[] {
    if (this.#inFlight.size > 0) throw new Error('the previous batch is still in flight');
    const entries = this.#visible.splice(0, batchSize);
    return entries.map((entry) => {
      entry.receiveCount += 1;
      this.#deliveries += 1;
      this.#inFlight.set(entry.messageId, entry);
      return this.#record(entry);
    });
  }

  /**
   * Settles the batch in flight: every record not in `failedMessageIds` is deleted; the others
   * come back at the end of the queue, or go to the dead-letter queue after `maxReceiveCount`
   * receives.
   *
   * @returns the ids moved to the dead-letter queue now
   */
  settle(failedMessageIds: ReadonlySet<string>): string[] {
    const redriven = this.#settleEntries([...this.#inFlight.values()], failedMessageIds);
    this.#inFlight.clear();
    return redriven;
  }

  /** Deletes or redrives `entries`; the failures that come back go to `comeBack`, or else to the end of the visible messages. */
  #settleEntries(entries: readonly Entry[], failedMessageIds: ReadonlySet<string>, comeBack: Entry[] = this.#visible): string[] {
    const redriven: string[] = [];
    for (const entry of entries) {
      if (entry.deletedByReceiptHandle === true) continue; // deleted while in flight: gone
      if (!failedMessageIds.has(entry.messageId)) {
        this.#deleted += 1;
        this.#forget(entry);
      } else if (entry.receiveCount >= this.#options.maxReceiveCount) {
        this.#redriven += 1;
        this.#forget(entry);
        redriven.push(entry.messageId);
      } else {
        comeBack.push(entry);
      }
    }
    return redriven;
  }

  /** The entry left the queue: its receipt handle deletes nothing any more. */
  #forget(entry: Entry): void {
    if (entry.receiptHandle !== undefined) this.#byReceiptHandle.delete(entry.receiptHandle);
  }

  get totals(): QueueTotals {
    return {
      deleted: this.#deleted,
      deletedByReceiptHandle: this.#deletedByReceiptHandle,
      redriven: this.#redriven,
      deliveries: this.#deliveries,
    };
  }

  /**
   * Deletes a message by receipt handle, as SQS's `DeleteMessage` does (see the module comment):
   * the handle of the message's latest receive deletes it wherever it waits (back among the
   * visible messages, waiting for the batches beside it to settle, or in flight in a batch, which
   * then settles without it: neither deleted again nor back); the handle of an earlier receive, or
   * one this queue never made, deletes nothing.
   *
   * @param receiptHandle - a record's `receiptHandle`
   * @returns whether a message was deleted (SQS answers success either way)
   */
  deleteMessage(receiptHandle: string): boolean {
    const entry = this.#byReceiptHandle.get(receiptHandle);
    if (entry === undefined) return false;
    this.#byReceiptHandle.delete(receiptHandle);
    entry.deletedByReceiptHandle = true;
    this.#deleted += 1;
    this.#deletedByReceiptHandle += 1;
    const visible = this.#visible.indexOf(entry);
    if (visible >= 0) this.#visible.splice(visible, 1);
    this.#waiting = this.#waiting.filter((waiting) => waiting.entry !== entry);
    return true;
  }

  /** A receive of `entry`: its record, with a new receipt handle (the earlier one goes stale). */
  #record(entry: Entry): SQSRecord {
    receipts += 1;
    const region = this.#options.region ?? 'us-east-1';
    if (entry.receiptHandle !== undefined) this.#byReceiptHandle.delete(entry.receiptHandle);
    entry.receiptHandle = `${SIMULATED_RECEIPT_HANDLE_PREFIX}${entry.messageId}-${receipts}`;
    this.#byReceiptHandle.set(entry.receiptHandle, entry);
    return {
      messageId: entry.messageId,
      receiptHandle: entry.receiptHandle,
      body: entry.body,
      attributes: {
        ApproximateReceiveCount: String(entry.receiveCount),
        SentTimestamp: '1767268800000',
        SenderId: 'AIDABENCHMARK',
        ApproximateFirstReceiveTimestamp: '1767268800001',
      },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: this.#options.queueArn,
      awsRegion: region,
    };
  }
}
