import { toPlainAttributes, type PlainAttribute } from 'idempotent-consumer/dlq';
import type { DlqContext } from './context.js';
import type { DeadLetterRecord } from 'idempotent-consumer/dlq';
import { MessageNotFoundError } from './errors.js';
import { readOffloadedBody } from './offloadedBody.js';
import { assertDeadLetterQueue, inspectQueue, MessageHold, type ReceiveOptions } from './queueInspector.js';

/** Options of {@link showDeadLetter}. */
export interface ShowOptions extends ReceiveOptions {
  readonly queueUrl: string;
  /** The dead-letter queue's message id, or the consumer's `originalMessageId`. */
  readonly id: string;
  /** @default true */
  readonly dlqCheck?: boolean;
}

/** One dead-letter message in full. */
export interface DeadLetterDetail {
  readonly messageId: string;
  /** The body as the DLQ holds it (the S3 pointer when offloaded; the original is {@link offloaded}.body). */
  readonly body: string;
  readonly md5OfBody: string | undefined;
  /** Every message attribute (binary values in base64). */
  readonly messageAttributes: Readonly<Record<string, PlainAttribute>>;
  /** SQS system attributes. */
  readonly systemAttributes: Readonly<Record<string, string>>;
  /** When the consumer offloaded the body to S3: where, and the body read back (or why it could not be). */
  readonly offloaded?: {
    readonly location: string;
    readonly bytes: number;
    readonly sha256: string;
    /** The original body, checked against its size and SHA-256. */
    readonly body?: string;
    readonly error?: string;
  };
  /** The consumer's dead-letter attributes, read back. */
  readonly deadLetter: {
    /** `false`: no `ic.*` attributes, moved by the queue's redrive policy. */
    readonly deadLettered: boolean;
    readonly failureReason: string | undefined;
    readonly errorType: string | undefined;
    readonly errorMessage: string | undefined;
    readonly failedAt: string | undefined;
    readonly attempts: number | undefined;
    readonly source: string | undefined;
    readonly originalMessageId: string | undefined;
    readonly messageGroupId: string | undefined;
    readonly coordinates: Readonly<Record<string, unknown>> | undefined;
    readonly bodyEncoding: string | undefined;
    /** The producer's attributes a redrive restores (binary values in base64); `undefined` when unreadable. */
    readonly producerAttributes: Readonly<Record<string, PlainAttribute>> | undefined;
    /** What is wrong with the consumer's attributes, if anything. */
    readonly problem: string | undefined;
  };
}

/** What {@link showDeadLetter} found. */
export interface ShowResult {
  readonly queueUrl: string;
  readonly message: DeadLetterDetail;
}

/**
 * Finds one dead-letter message by id and returns it in full, with a body the consumer offloaded
 * to S3 read back (`context.payloads`). Every message received on the way is made visible again.
 *
 * @throws MessageNotFoundError when no visible message has that id
 * @throws QueueNotFoundError, NotADeadLetterQueueError; the SDK's errors otherwise
 */
export async function showDeadLetter(context: DlqContext, options: ShowOptions): Promise<ShowResult> {
  const info = await inspectQueue(context.sqs, options.queueUrl);
  if (options.dlqCheck !== false) assertDeadLetterQueue(info);
  const hold = new MessageHold(context.sqs, options.queueUrl);
  let found: DeadLetterRecord | undefined;
  let seen = 0;
  try {
    for (;;) {
      if (context.signal?.aborted === true) break;
      const batch = await hold.scan({ ...options, maxMessages: 10 });
      if (seen === 0 && options.dlqCheck !== false) assertDeadLetterQueue(info, batch);
      seen += batch.length;
      found = batch.find((record) => record.messageId === options.id || record.originalMessageId === options.id);
      if (found !== undefined || batch.length === 0) break;
    }
  } finally {
    await hold.release();
  }
  if (found === undefined) {
    throw new MessageNotFoundError(
      `no message ${options.id} among the ${seen} visible message(s) of ${options.queueUrl}` +
        (info.fifo ? ' (on a FIFO queue, messages behind a held message of the same group are hidden)' : ''),
    );
  }
  let offloaded: DeadLetterDetail['offloaded'];
  if (found.offloaded !== undefined) {
    const { bucket, key, bytes, sha256 } = found.offloaded;
    const read = await readOffloadedBody(context, found.offloaded);
    offloaded = { location: `s3://${bucket}/${key}`, bytes, sha256, ...read };
  }
  return { queueUrl: options.queueUrl, message: { ...toDetail(found), ...(offloaded !== undefined ? { offloaded } : {}) } };
}

/** A record in full, binary values in base64 (an offloaded body is not read). */
export function toDetail(record: DeadLetterRecord): DeadLetterDetail {
  return {
    messageId: record.messageId,
    body: record.body,
    md5OfBody: record.md5OfBody,
    messageAttributes: toPlainAttributes(record.messageAttributes),
    systemAttributes: record.systemAttributes,
    deadLetter: {
      deadLettered: record.deadLettered,
      failureReason: record.failureReason,
      errorType: record.errorType,
      errorMessage: record.errorMessage,
      failedAt: record.failedAt?.toISOString(),
      attempts: record.attempts,
      source: record.source,
      originalMessageId: record.originalMessageId,
      messageGroupId: record.messageGroupId,
      coordinates: record.coordinates,
      bodyEncoding: record.bodyEncoding,
      producerAttributes: record.producerAttributes !== undefined ? toPlainAttributes(record.producerAttributes) : undefined,
      problem: record.problem,
    },
  };
}
