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
}

/** What the queue did with one message in the end. */
export interface QueueTotals {
  /** Deleted after an invocation that did not report it. */
  readonly deleted: number;
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
  #deleted = 0;
  #redriven = 0;
  #deliveries = 0;
  #receipt = 0;

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
      if (!failedMessageIds.has(entry.messageId)) {
        this.#deleted += 1;
      } else if (entry.receiveCount >= this.#options.maxReceiveCount) {
        this.#redriven += 1;
        redriven.push(entry.messageId);
      } else {
        comeBack.push(entry);
      }
    }
    return redriven;
  }

  get totals(): QueueTotals {
    return { deleted: this.#deleted, redriven: this.#redriven, deliveries: this.#deliveries };
  }

  #record(entry: Entry): SQSRecord {
    this.#receipt += 1;
    const region = this.#options.region ?? 'us-east-1';
    return {
      messageId: entry.messageId,
      receiptHandle: `bench-${entry.messageId}-${this.#receipt}`,
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
