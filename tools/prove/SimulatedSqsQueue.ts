/**
 * An SQS source queue (standard or FIFO) and the receiving side of Lambda's SQS event source
 * mapping, in memory and on the suite's clock: receive counts, visibility timeouts, receipt
 * handles, `ChangeMessageVisibility`, FIFO message-group order, and the redrive policy. The
 * dead-letter queue stays the real one (the consumer writes to it); what the redrive policy
 * moves is recorded here (it carries no reason).
 *
 * Semantics, from the SQS developer guide
 * (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/):
 * - a received message is invisible for the visibility timeout, then visible again with its
 *   receive count grown at the next receive; each receive gives a new receipt handle;
 * - a standard queue returns visible messages in no guaranteed order (here: a seeded choice);
 * - a FIFO queue returns the messages of a group in order and none of a group while one of it is
 *   in flight; one receive may return several messages of one group (in order);
 * - a delete with an older receipt handle "succeeds, but the message might not be deleted"
 *   (a schedule says which), both for the event source mapping's deletes and for the consumer's
 *   own `DeleteMessage(Batch)` (a parked message settled by another invocation);
 * - a message received `maxReceiveCount` times is moved to the dead-letter queue at its next receive.
 *
 * @module
 */
import type { SQSRecord } from 'aws-lambda';
import type { VirtualClock } from './virtualClock.js';

/** A message as the queue keeps it. */
interface QueuedMessage {
  readonly messageId: string;
  readonly body: string;
  readonly groupId: string | undefined;
  /** String message attributes the producer sent (e.g. `ic.redrive` on a redriven dead letter). */
  readonly attributes: Readonly<Record<string, string>>;
  readonly sentAt: number;
  readonly sequence: number;
  receiveCount: number;
  visibleAt: number;
  receiptHandle: string | undefined;
  firstReceivedAt: number | undefined;
}

/** A message moved by the redrive policy. */
export interface PolicyMove {
  readonly messageId: string;
  readonly body: string;
  readonly receiveCount: number;
}

/** Options of {@link SimulatedSqsQueue}. */
export interface SimulatedSqsQueueOptions {
  readonly fifo: boolean;
  readonly queueArn: string;
  readonly visibilityTimeoutSeconds: number;
  readonly maxReceiveCount: number;
  readonly clock: VirtualClock;
  /** Seed of the standard queue's choices. */
  readonly seed: number;
  /** Whether a delete with a stale receipt handle deletes. */
  readonly staleReceiptDeletes: boolean;
}

/** One received batch: the records and when they were received. */
export interface ReceivedBatch {
  readonly records: readonly SQSRecord[];
}

/** See the module comment. */
export class SimulatedSqsQueue {
  readonly #options: SimulatedSqsQueueOptions;
  readonly #messages = new Map<string, QueuedMessage>();
  readonly #moved: PolicyMove[] = [];
  #random: () => number;
  #sequence = 0;
  #receipts = 0;
  /** Every receipt handle the queue gave, with its message's id (a handle stays a valid handle of its message). */
  readonly #handles = new Map<string, string>();
  /** Receives of a message in all. */
  deliveries = 0;
  /** Messages the consumer deleted itself (`DeleteMessage(Batch)`: parked messages another invocation settled). */
  deletedByConsumer = 0;

  constructor(options: SimulatedSqsQueueOptions) {
    this.#options = options;
    this.#random = mulberry32(options.seed);
  }

  /**
   * Sends a message (visible at once).
   *
   * @param attributes - string message attributes, as the record's `messageAttributes` carries them
   */
  send(messageId: string, body: string, groupId?: string, attributes: Readonly<Record<string, string>> = {}): void {
    if (this.#messages.has(messageId)) throw new Error(`message ${messageId} is already on the queue`);
    const now = this.#options.clock.now();
    this.#messages.set(messageId, {
      messageId,
      body,
      groupId: this.#options.fifo ? groupId : undefined,
      attributes,
      sentAt: now,
      sequence: (this.#sequence += 1),
      receiveCount: 0,
      visibleAt: now,
      receiptHandle: undefined,
      firstReceivedAt: undefined,
    });
  }

  /** Whether every message was deleted (or moved). */
  get drained(): boolean {
    return this.#messages.size === 0;
  }

  /** Messages still on the queue. */
  get size(): number {
    return this.#messages.size;
  }

  /** What the redrive policy moved. */
  get moved(): readonly PolicyMove[] {
    return this.#moved;
  }

  /**
   * When the next message in flight becomes visible again (epoch ms), or `undefined` when none
   * is in flight. (A visible message that a receive did not return belongs to a FIFO group
   * blocked by one in flight: it waits for that one.)
   */
  nextVisibleAt(): number | undefined {
    const now = this.#options.clock.now();
    let next: number | undefined;
    for (const message of this.#messages.values())
      if (message.visibleAt > now && (next === undefined || message.visibleAt < next)) next = message.visibleAt;
    return next;
  }

  /**
   * Receives up to `batchSize` messages as the event source mapping does, as Lambda SQS records.
   * @returns the records (empty when nothing is visible)
   */
  receive(batchSize: number): SQSRecord[] {
    const now = this.#options.clock.now();
    const chosen: QueuedMessage[] = [];
    const take = (message: QueuedMessage): boolean => {
      if (message.receiveCount >= this.#options.maxReceiveCount) {
        this.#messages.delete(message.messageId);
        this.#moved.push({ messageId: message.messageId, body: message.body, receiveCount: message.receiveCount });
        return false;
      }
      chosen.push(message);
      return true;
    };
    const ordered = [...this.#messages.values()].sort((a, b) => a.sequence - b.sequence);
    if (!this.#options.fifo) {
      const visible = ordered.filter((message) => message.visibleAt <= now);
      while (visible.length > 0 && chosen.length < batchSize) {
        const [message] = visible.splice(Math.floor(this.#random() * visible.length), 1);
        take(message!);
      }
    } else {
      const groups = new Map<string, QueuedMessage[]>();
      for (const message of ordered) {
        const group = message.groupId ?? '';
        groups.set(group, [...(groups.get(group) ?? []), message]);
      }
      // A group is blocked while one of its messages is in flight (received, invisible).
      const open = [...groups.values()].filter((messages) => !messages.some((message) => message.visibleAt > now));
      for (let i = open.length - 1; i > 0; i -= 1) {
        const j = Math.floor(this.#random() * (i + 1));
        [open[i], open[j]] = [open[j]!, open[i]!];
      }
      for (const messages of open) {
        for (const message of messages) {
          if (chosen.length >= batchSize) break;
          if (!take(message)) continue;
        }
        if (chosen.length >= batchSize) break;
      }
    }
    return chosen.map((message) => {
      message.receiveCount += 1;
      message.visibleAt = now + this.#options.visibilityTimeoutSeconds * 1_000;
      message.receiptHandle = `rh-${message.messageId}-${(this.#receipts += 1)}`;
      this.#handles.set(message.receiptHandle, message.messageId);
      message.firstReceivedAt ??= now;
      this.deliveries += 1;
      return this.#record(message);
    });
  }

  /**
   * What the event source mapping does after an invocation: deletes the records that are not
   * failed (with the receipt handles of this batch); failed ones stay invisible until their
   * visibility timeout (or a visibility change) ends. `acknowledgementLost`: the deletes fail.
   */
  acknowledge(records: readonly SQSRecord[], failedIds: ReadonlySet<string>, acknowledgementLost: boolean): void {
    if (acknowledgementLost) return;
    for (const record of records) {
      if (failedIds.has(record.messageId)) continue;
      const message = this.#messages.get(record.messageId);
      if (message === undefined) continue;
      const current = message.receiptHandle === record.receiptHandle;
      if (current || this.#options.staleReceiptDeletes) this.#messages.delete(record.messageId);
    }
  }

  /**
   * `DeleteMessage` with a receipt handle, as SQS answers it: the handle of the message's latest
   * receive deletes it; an older handle of the message "succeeds, but the message might not be
   * deleted" (it is deleted when the schedule's `staleReceiptDeletes` says so); a handle of a
   * message already deleted succeeds. See
   * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_DeleteMessage.html
   *
   * @returns `'deleted'`, `'not deleted'` (a stale handle, the message stays), or `'invalid'` when
   *   the queue never gave this handle (SQS: `ReceiptHandleIsInvalid`)
   */
  deleteMessage(receiptHandle: string): 'deleted' | 'not deleted' | 'invalid' {
    const messageId = this.#handles.get(receiptHandle);
    if (messageId === undefined) return 'invalid';
    const message = this.#messages.get(messageId);
    if (message === undefined) return 'not deleted';
    if (message.receiptHandle !== receiptHandle && !this.#options.staleReceiptDeletes) return 'not deleted';
    this.#messages.delete(messageId);
    this.deletedByConsumer += 1;
    return 'deleted';
  }

  /**
   * `ChangeMessageVisibility` with a receipt handle: the message becomes visible `seconds` from
   * now. Refused (`false`) when the handle is not the message's latest or the message is not in flight.
   */
  changeVisibility(receiptHandle: string, seconds: number): boolean {
    const now = this.#options.clock.now();
    for (const message of this.#messages.values()) {
      if (message.receiptHandle !== receiptHandle) continue;
      if (message.visibleAt <= now) return false;
      message.visibleAt = now + Math.max(0, seconds) * 1_000;
      return true;
    }
    return false;
  }

  /** Makes these messages visible now, as when their visibility timeout ends early (a concurrent delivery). */
  expireVisibility(messageIds: readonly string[]): void {
    const now = this.#options.clock.now();
    for (const id of messageIds) {
      const message = this.#messages.get(id);
      if (message !== undefined && message.visibleAt > now) message.visibleAt = now;
    }
  }

  #record(message: QueuedMessage): SQSRecord {
    const [, , , region = 'us-east-1'] = this.#options.queueArn.split(':');
    return {
      messageId: message.messageId,
      receiptHandle: message.receiptHandle!,
      body: message.body,
      attributes: {
        ApproximateReceiveCount: String(message.receiveCount),
        SentTimestamp: String(message.sentAt),
        SenderId: 'AIDAPROVESUITE',
        ApproximateFirstReceiveTimestamp: String(message.firstReceivedAt ?? message.sentAt),
        ...(message.groupId !== undefined
          ? {
              MessageGroupId: message.groupId,
              MessageDeduplicationId: message.messageId,
              SequenceNumber: String(message.sequence).padStart(20, '0'),
            }
          : {}),
      },
      messageAttributes: Object.fromEntries(
        Object.entries(message.attributes).map(([name, stringValue]) => [
          name,
          { stringValue, stringListValues: [], binaryListValues: [], dataType: 'String' },
        ]),
      ),
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: this.#options.queueArn,
      awsRegion: region,
    } as SQSRecord;
  }
}

/** A small seeded generator of fractions in [0, 1). */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
