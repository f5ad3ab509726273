import { access } from 'node:fs/promises';
import { DeleteMessageBatchCommand } from '@aws-sdk/client-sqs';
import { appendArchiveLines, writeArchiveFile } from './archiveFile.js';
import { toArchiveLine } from './archiveFormat.js';
import { confirmed, type ConfirmOptions, type DlqContext } from './context.js';
import type { DeadLetterRecord } from './deadLetterRecord.js';
import { ArchiveFileError } from './errors.js';
import { scanWarnings } from './list.js';
import { assertDeadLetterQueue, inspectQueue, MessageHold, type ReceiveOptions } from './queueInspector.js';
import { matchesSelection, type MessageSelection } from './selection.js';

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
  /** With `delete`: messages that entered the queue after the start, left for a later run. */
  readonly arrivedDuringRun: number;
  /** The operator declined the deletion: the file is written, nothing was deleted. */
  readonly cancelled: boolean;
  readonly interrupted: boolean;
  readonly warnings: readonly string[];
}

/**
 * Writes dead-letter messages to a JSON Lines file (see `ArchivedMessage`), and with `delete`
 * deletes them from the queue, never before the file holding them is complete on disk:
 *
 * 1. receive what is visible (held invisible), keep what the selection matches;
 * 2. write those lines (a new file: temporary file, `fsync`, link into place; then appends,
 *    each `fsync`ed);
 * 3. with `delete`: ask once, then delete exactly the messages written; on a FIFO queue this
 *    reveals the next messages of their groups, so steps 1–3 repeat until nothing new comes.
 *
 * Every message still held at the end is made visible again. With `dryRun` nothing is written
 * and nothing deleted.
 *
 * @throws ArchiveFileError when `out` exists (without `force`) or cannot be written; nothing is deleted then
 * @throws QueueNotFoundError, NotADeadLetterQueueError; the SDK's errors otherwise
 */
export async function archiveDeadLetters(context: DlqContext, options: ArchiveOptions): Promise<ArchiveResult> {
  const now = context.now ?? (() => new Date());
  const startedAt = now();
  const info = await inspectQueue(context.sqs, options.queueUrl);
  if (options.dlqCheck !== false) assertDeadLetterQueue(info);
  if (options.force !== true && options.dryRun !== true && (await exists(options.out))) {
    throw new ArchiveFileError(`${options.out} exists; pass --force to overwrite it`);
  }
  const hold = new MessageHold(context.sqs, options.queueUrl);
  let archived = 0;
  let deleted = 0;
  let seen = 0;
  let arrivedDuringRun = 0;
  let cancelled = false;
  let interrupted = false;
  let fileWritten = false;
  let remaining = options.maxMessages ?? Number.POSITIVE_INFINITY;
  const notDeleted: { messageId: string; error: string }[] = [];
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
      if (round === 0 && options.dlqCheck !== false) assertDeadLetterQueue(info, records);
      const batch: DeadLetterRecord[] = [];
      for (const record of records) {
        if (options.delete === true && record.sentAt !== undefined && record.sentAt.getTime() > startedAt.getTime()) {
          arrivedDuringRun += 1;
        } else if (matchesSelection(record, options.selection ?? {}, startedAt)) {
          batch.push(record);
        }
      }
      if (options.dryRun === true) {
        archived = batch.length;
        break;
      }
      if (batch.length === 0 && fileWritten) break;
      const archivedAt = now();
      const lines = batch.map((record) => toArchiveLine(record, options.queueUrl, archivedAt));
      if (!fileWritten) await writeArchiveFile(options.out, lines, options.force === true);
      else await appendArchiveLines(options.out, lines);
      fileWritten = true;
      archived += batch.length;
      if (options.delete !== true || batch.length === 0) break;
      if (round === 0) {
        const go = await confirmed(
          options,
          `Delete the ${batch.length} archived message(s) from ${options.queueUrl}` +
            `${info.fifo ? ' (and archive and delete the messages of their groups revealed behind them)' : ''}? ` +
            `They are in ${options.out}.`,
        );
        if (!go) {
          cancelled = true;
          break;
        }
      }
      const failures = await deleteMessages(context, options.queueUrl, hold, batch);
      notDeleted.push(...failures);
      deleted += batch.length - failures.length;
    }
  } finally {
    releaseFailures = (await hold.release()).failed.length;
  }
  const warnings = options.delete === true ? [] : scanWarnings(info, seen, releaseFailures);
  if (interrupted) warnings.push('interrupted: everything written to the file is on disk; messages not deleted are still in the queue');
  return {
    queueUrl: options.queueUrl,
    file: options.out,
    dryRun: options.dryRun === true,
    archived,
    deleted,
    notDeleted,
    arrivedDuringRun,
    cancelled,
    interrupted,
    warnings,
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
          Entries: chunk.map((record, index) => ({ Id: String(index), ReceiptHandle: hold.receiptHandleOf(record.messageId) ?? record.receiptHandle })),
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
