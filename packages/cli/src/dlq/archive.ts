import { access } from 'node:fs/promises';
import { DeleteMessageBatchCommand } from '@aws-sdk/client-sqs';
import { arrivalCutoff } from './arrivalCutoff.js';
import { ArchiveWriter } from './archiveFile.js';
import { toArchiveLine } from './archiveFormat.js';
import { clockOf, confirmed, type ConfirmOptions, type DlqContext } from './context.js';
import type { DeadLetterRecord } from 'idempotent-consumer/dlq';
import { ArchiveFileError } from './errors.js';
import { scanWarnings } from './list.js';
import { readOffloadedBody } from './offloadedBody.js';
import { assertDeadLetterQueue, inspectQueue, MessageHold, type ReceiveOptions } from './queueInspector.js';
import { matchesSelection, reasonWarnings, type MessageSelection } from './selection.js';

/** Options of {@link archiveDeadLetters}. */
export interface ArchiveOptions extends ReceiveOptions, ConfirmOptions {
  readonly queueUrl: string;
  /** The JSON Lines file to write. */
  readonly out: string;
  /** Delete the archived messages from the queue once the file is on disk. @default false */
  readonly delete?: boolean;
  /** Overwrite `out` if it exists. @default false */
  readonly force?: boolean;
  /** Which messages to archive. @default all */
  readonly selection?: MessageSelection;
  /** @default true */
  readonly dlqCheck?: boolean;
}

/** What {@link archiveDeadLetters} did (or, with `dryRun`, would do). */
export interface ArchiveResult {
  readonly queueUrl: string;
  readonly file: string;
  readonly dryRun: boolean;
  /** Lines written (dry run: that would be written). */
  readonly archived: number;
  /** Messages deleted from the queue (all of them archived first). */
  readonly deleted: number;
  /** Archived, but the delete failed: still in the queue. */
  readonly notDeleted: readonly { readonly messageId: string; readonly error: string }[];
  /** Not archived (nor deleted): the body the consumer offloaded to S3 could not be read back. */
  readonly notArchived: readonly { readonly messageId: string; readonly error: string }[];
  /** With `delete`: messages that entered the queue after the start, left for a later run. */
  readonly arrivedDuringRun: number;
  /** The operator declined the deletion: the file is written, nothing was deleted. */
  readonly cancelled: boolean;
  readonly interrupted: boolean;
  readonly warnings: readonly string[];
  /**
   * The file holds fewer messages than the queue: a FIFO queue without `delete`, where SQS shows
   * only the first message of each group while it is held (the command exits 1; archive a FIFO
   * queue with `--delete`, which goes round by round).
   */
  readonly incomplete: boolean;
}

/**
 * Writes dead-letter messages to a JSON Lines file (see `ArchivedMessage`), ending with a
 * trailer line (count and SHA-256 of the lines, see `ArchiveTrailer`) that `replay` checks, and
 * with `delete` deletes them from the queue, never before the file holding them is complete on disk:
 *
 * 1. receive what is visible (held invisible), keep what the selection matches; read back the
 *    bodies the consumer offloaded to S3 (a message whose body cannot be read is not archived
 *    and not deleted);
 * 2. write those lines and a trailer (a new file: temporary file, `fsync`, link into place; then
 *    appends, each `fsync`ed);
 * 3. with `delete`: ask once, then delete exactly the messages written; on a FIFO queue this
 *    reveals the next messages of their groups, so steps 1–3 repeat until nothing new comes
 *    (messages sent to the queue after the first deletion, by the SQS server's clock, are left
 *    for a later run).
 *
 * The final trailer is written when the command ends, also when it is interrupted. Every message
 * still held at the end is made visible again. With `dryRun` nothing is written and nothing deleted.
 *
 * @throws ArchiveFileError when `out` exists (without `force`) or cannot be written; nothing is deleted then
 * @throws QueueNotFoundError, NotADeadLetterQueueError; the SDK's errors otherwise
 */
export async function archiveDeadLetters(context: DlqContext, options: ArchiveOptions): Promise<ArchiveResult> {
  const clock = clockOf(context);
  const info = await inspectQueue(context.sqs, options.queueUrl);
  const now = clock.now();
  if (options.dlqCheck !== false) assertDeadLetterQueue(info);
  if (options.force !== true && options.dryRun !== true && (await exists(options.out))) {
    throw new ArchiveFileError(`${options.out} exists; pass --force to overwrite it`);
  }
  const hold = new MessageHold(context.sqs, options.queueUrl);
  const writer = new ArchiveWriter(options.out, options.force === true);
  let archived = 0;
  let deleted = 0;
  let seen = 0;
  let arrivedDuringRun = 0;
  let cancelled = false;
  let interrupted = false;
  let remaining = options.maxMessages ?? Number.POSITIVE_INFINITY;
  const notDeleted: { messageId: string; error: string }[] = [];
  const notArchived: { messageId: string; error: string }[] = [];
  let firstScan: DeadLetterRecord[] = [];
  let cutoff: number | undefined;
  let releaseFailures = 0;
  try {
    for (let round = 0; ; round += 1) {
      if (context.signal?.aborted === true) {
        interrupted = true;
        break;
      }
      const records = remaining > 0 ? await hold.scan({ ...options, maxMessages: remaining }) : [];
      remaining -= records.length;
      seen += records.length;
      if (round === 0) firstScan = records;
      if (round === 0 && options.dlqCheck !== false) assertDeadLetterQueue(info, records);
      const batch: DeadLetterRecord[] = [];
      for (const record of records) {
        if (round > 0 && cutoff !== undefined && record.sentAt !== undefined && record.sentAt.getTime() > cutoff) {
          arrivedDuringRun += 1;
        } else if (matchesSelection(record, options.selection ?? {}, now)) {
          batch.push(record);
        }
      }
      if (options.dryRun === true) {
        archived = batch.length;
        break;
      }
      if (batch.length === 0 && writer.created) break;
      const archivedAt = new Date();
      const lines: string[] = [];
      const written: DeadLetterRecord[] = [];
      for (const record of batch) {
        let offloadedBody: string | undefined;
        if (record.offloaded !== undefined) {
          const read = await readOffloadedBody(context, record.offloaded);
          if ('error' in read) {
            notArchived.push({ messageId: record.messageId, error: read.error });
            continue;
          }
          offloadedBody = read.body;
        }
        lines.push(toArchiveLine(record, options.queueUrl, archivedAt, offloadedBody));
        written.push(record);
      }
      const last = options.delete !== true || written.length === 0;
      await writer.write(lines, last);
      archived += written.length;
      if (last) break;
      if (round === 0) {
        cutoff = arrivalCutoff(clock, firstScan);
        const go = await confirmed(
          options,
          `Delete the ${written.length} archived message(s) from ${options.queueUrl}` +
            `${info.fifo ? ' (and archive and delete the messages of their groups revealed behind them)' : ''}? ` +
            `They are in ${options.out}.`,
        );
        if (!go) {
          cancelled = true;
          break;
        }
      }
      const failures = await deleteMessages(context, options.queueUrl, hold, written);
      notDeleted.push(...failures);
      deleted += written.length - failures.length;
    }
  } finally {
    try {
      await writer.finish();
    } finally {
      releaseFailures = (await hold.release()).failed.length;
    }
  }
  const warnings = [
    ...reasonWarnings(options.selection ?? {}, firstScan),
    ...(options.delete === true ? [] : scanWarnings(info, seen, releaseFailures)),
  ];
  if (interrupted) warnings.push('interrupted: everything written to the file is on disk; messages not deleted are still in the queue');
  const incomplete = options.delete !== true && options.dryRun !== true && info.fifo && seen < info.approximateNumberOfMessages;
  if (incomplete)
    warnings.push(
      'the archive is incomplete: on a FIFO queue only --delete archives every message (it deletes each round to reveal the next messages of the groups)',
    );
  return {
    queueUrl: options.queueUrl,
    file: options.out,
    dryRun: options.dryRun === true,
    archived,
    deleted,
    notDeleted,
    notArchived,
    arrivedDuringRun,
    cancelled,
    interrupted,
    warnings,
    incomplete,
  };
}

/** Deletes held messages, 10 per `DeleteMessageBatch`; returns those not deleted. */
async function deleteMessages(
  context: DlqContext,
  queueUrl: string,
  hold: MessageHold,
  records: readonly DeadLetterRecord[],
): Promise<{ messageId: string; error: string }[]> {
  const failures: { messageId: string; error: string }[] = [];
  for (let i = 0; i < records.length; i += 10) {
    const chunk = records.slice(i, i + 10);
    try {
      const output = await context.sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: chunk.map((record, index) => ({
            Id: String(index),
            ReceiptHandle: hold.receiptHandleOf(record.messageId) ?? record.receiptHandle,
          })),
        }),
      );
      const failed = new Map((output.Failed ?? []).map((f) => [Number(f.Id), `${f.Code ?? 'Error'}: ${f.Message ?? ''}`]));
      chunk.forEach((record, index) => {
        const error = failed.get(index);
        if (error !== undefined) failures.push({ messageId: record.messageId, error });
        else hold.forget(record.messageId);
      });
    } catch (error) {
      for (const record of chunk) failures.push({ messageId: record.messageId, error: String(error) });
    }
  }
  return failures;
}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}
