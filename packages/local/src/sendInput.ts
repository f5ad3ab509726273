/**
 * Sends the local run's input to the source queue, in `SendMessageBatch` requests that SQS
 * accepts: at most 10 entries and at most 1 MiB of messages per request.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { SendMessageBatchRequestEntry, SQSClient } from '@aws-sdk/client-sqs';
import { sqsLimits, sqsMessageSize } from './aws/sqsRules.js';
import type { InputMessage } from './inputFile.js';

/** A message that was sent: its SQS `messageId`, input line and body. */
export interface SentInputMessage {
  /** The `MessageId` SQS gave the message. */
  readonly messageId: string;
  /** The message's 1-based line in the input file. */
  readonly line: number;
  /** The body as sent. */
  readonly body: string;
  /** When its `SendMessageBatch` request returned it as sent (`Date.now()`, milliseconds since the epoch). */
  readonly sentAtMs: number;
}

/** Options of {@link sendInput}. */
export interface SendInputOptions {
  /** The source queue is FIFO: every message needs a message group and a deduplication id. */
  readonly fifo: boolean;
  /**
   * FIFO: the message group of a message (as its producer would set it, e.g. the aggregate id
   * read from the body): 1 to 128 letters, digits or punctuation. Required when `fifo`.
   */
  readonly messageGroupId?: (message: InputMessage) => string;
  /**
   * FIFO: the deduplication id. The default, a SHA-256 of the line number, makes a duplicate line
   * of the file reach the consumer, as a producer retry after SQS's 5-minute deduplication window
   * would.
   * @default SHA-256 of `line:<line number>`
   */
  readonly deduplicationId?: (message: InputMessage) => string;
  /**
   * Times an entry that SQS failed on its side (`SenderFault: false`, e.g. an internal error) is
   * sent again before giving up. Entries refused for their content fail at once.
   * @default 3
   */
  readonly entryRetries?: number;
}

/** Input that cannot be sent; the message names the input line. */
export class SendInputError extends Error {
  constructor(
    message: string,
    /** The input line of the message SQS refused, when one was refused. */
    public readonly line?: number,
  ) {
    super(message);
    this.name = 'SendInputError';
  }
}

/**
 * SQS's rule for a message group and a deduplication id: 1 to 128 characters, letters, digits and
 * ASCII punctuation
 * (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html).
 */
export const fifoIdPattern = /^[A-Za-z0-9!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]{1,128}$/;

/**
 * Splits messages into batches SQS accepts: at most 10 entries and at most 1 MiB
 * (`sqsLimits.maxBatchBytes`) of messages (body + attributes) per batch, keeping their order.
 * A single message larger than the batch limit gets a batch of its own (SQS then refuses it
 * with its own error).
 */
export function batchBySize<
  T extends { readonly MessageBody?: string; readonly MessageAttributes?: SendMessageBatchRequestEntry['MessageAttributes'] },
>(entries: readonly T[], maxBatchBytes: number = sqsLimits.maxBatchBytes): T[][] {
  const batches: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const entry of entries) {
    const size = sqsMessageSize(entry.MessageBody ?? '', entry.MessageAttributes ?? {});
    if (current.length > 0 && (current.length >= sqsLimits.maxBatchEntries || bytes + size > maxBatchBytes)) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(entry);
    bytes += size;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}

/**
 * Sends `input` to the queue in order, in batches of at most 10 messages and 1 MiB
 * (`batchBySize`). On a FIFO queue each message gets the group `messageGroupId(message)`
 * and the deduplication id `deduplicationId(message)`; messages of one group are sent in input
 * order, so SQS keeps that order.
 *
 * @returns each sent message with its SQS `messageId`, in input order
 * @throws SendInputError when `fifo` is set without `messageGroupId`, a group or deduplication id
 *   breaks SQS's rules, or SQS refuses a message (the error names its line)
 * @throws the SDK's error when a whole request fails
 */
export async function sendInput(
  sqs: SQSClient,
  queueUrl: string,
  input: readonly InputMessage[],
  options: SendInputOptions,
): Promise<SentInputMessage[]> {
  if (options.fifo && options.messageGroupId === undefined) {
    throw new SendInputError('A FIFO queue needs a message group for every message: pass messageGroupId.');
  }
  const retries = options.entryRetries ?? 3;
  const deduplicationId =
    options.deduplicationId ?? ((message: InputMessage) => createHash('sha256').update(`line:${message.line}`).digest('hex'));

  const entries = input.map((message, index) => {
    const entry: SendMessageBatchRequestEntry & { readonly message: InputMessage } = {
      Id: String(index),
      MessageBody: message.body,
      message,
    };
    if (!options.fifo) return entry;
    const group = options.messageGroupId!(message);
    const deduplication = deduplicationId(message);
    for (const [what, value] of [
      ['message group', group],
      ['deduplication id', deduplication],
    ] as const) {
      if (typeof value !== 'string' || !fifoIdPattern.test(value)) {
        throw new SendInputError(
          `Input line ${message.line}: the ${what} ${JSON.stringify(value)} breaks SQS's rule (1 to 128 letters, digits or ASCII punctuation).`,
          message.line,
        );
      }
    }
    return { ...entry, MessageGroupId: group, MessageDeduplicationId: deduplication };
  });

  const sent = new Map<number, SentInputMessage>();
  for (const batch of batchBySize(entries)) {
    let pending = batch;
    for (let attempt = 0; pending.length > 0; attempt += 1) {
      const output = await sqs.send(
        new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: pending.map(({ message: _message, ...entry }) => entry) }),
      );
      const byId = new Map(pending.map((entry) => [entry.Id, entry]));
      const sentAtMs = Date.now();
      for (const success of output.Successful ?? []) {
        const entry = byId.get(success.Id);
        if (entry !== undefined && success.MessageId !== undefined) {
          sent.set(Number(entry.Id), { messageId: success.MessageId, line: entry.message.line, body: entry.message.body, sentAtMs });
        }
      }
      const failed = output.Failed ?? [];
      const refused = failed.find((failure) => failure.SenderFault !== false);
      if (refused !== undefined || (failed.length > 0 && attempt >= retries)) {
        const failure = refused ?? failed[0]!;
        const line = byId.get(failure.Id)?.message.line;
        throw new SendInputError(
          `SQS refused the message of input line ${String(line)}: ${failure.Code ?? 'Unknown'} ${failure.Message ?? ''}`.trim(),
          line,
        );
      }
      pending = failed.map((failure) => byId.get(failure.Id)!).filter((entry) => entry !== undefined);
    }
  }
  return input.map((_, index) => sent.get(index)).filter((message): message is SentInputMessage => message !== undefined);
}
