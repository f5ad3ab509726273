import { readFile } from 'node:fs/promises';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { buildReplayMessage, parseArchive } from './archiveFormat.js';
import type { DlqContext } from './context.js';
import { ArchiveFormatError, type ArchiveLineProblem } from './errors.js';
import { assertDeadLetterQueue, inspectQueue } from './queueInspector.js';
import { isFifoQueueUrl } from './sqsClient.js';
import { createRateLimiter } from './timing.js';

/** Options of {@link replayArchive}. */
export interface ReplayOptions {
  /** The archive file (JSON Lines written by `archive`). */
  readonly in: string;
  /** Where the messages go: the dead-letter queue, or `--to`. */
  readonly queueUrl: string;
  /** Check that `queueUrl` is a dead-letter queue (off for `--to`). @default true */
  readonly dlqCheck?: boolean;
  /** Send from this line on (numbered from 1), to resume an interrupted replay. @default 1 */
  readonly fromLine?: number;
  /** Send the good lines of a file that has bad ones (and report the bad ones). @default false */
  readonly skipInvalid?: boolean;
  /** Check the file and the queue, send nothing. @default false */
  readonly dryRun?: boolean;
  /** Messages sent per second. @default as fast as SQS goes */
  readonly ratePerSecond?: number;
}

/** What {@link replayArchive} did (or, with `dryRun`, would do). */
export interface ReplayResult {
  readonly file: string;
  readonly queueUrl: string;
  readonly dryRun: boolean;
  /** Good lines at or after `fromLine`. */
  readonly toSend: number;
  readonly sent: number;
  /** Bad lines left out (only with `skipInvalid`). */
  readonly invalid: readonly ArchiveLineProblem[];
  /** The line whose send failed; the replay stopped there. */
  readonly failed?: { readonly line: number; readonly error: string };
  /** When not every line was sent: the `--from-line` that resumes the replay. */
  readonly resumeFromLine?: number;
  readonly interrupted: boolean;
}

/**
 * Sends the messages of an archive to a queue, in file order: body and message attributes
 * exactly as archived, the FIFO group kept (see `buildReplayMessage`).
 *
 * The whole file is checked first: if any line is bad, nothing is sent and the error lists
 * every bad line (file and line number), unless `skipInvalid`. Sending stops at the first
 * failed send; the result names the line to resume from. The file is only read, so nothing in
 * it can be lost.
 *
 * @throws ArchiveFormatError when the file cannot be read, or has bad lines (without `skipInvalid`)
 * @throws QueueNotFoundError, NotADeadLetterQueueError; the SDK's errors otherwise
 */
export async function replayArchive(context: DlqContext, options: ReplayOptions): Promise<ReplayResult> {
  let text: string;
  try {
    text = await readFile(options.in, 'utf8');
  } catch (error) {
    throw new ArchiveFormatError(options.in, [{ line: 0, message: `cannot read the file: ${(error as Error).message}` }], {
      cause: error,
    });
  }
  const parsed = parseArchive(text, { fifoTarget: isFifoQueueUrl(options.queueUrl) });
  if (parsed.problems.length > 0 && options.skipInvalid !== true) throw new ArchiveFormatError(options.in, parsed.problems);
  const info = await inspectQueue(context.sqs, options.queueUrl);
  if (options.dlqCheck !== false) assertDeadLetterQueue(info);
  const fromLine = options.fromLine ?? 1;
  const entries = parsed.entries.filter((entry) => entry.line >= fromLine);
  const base = { file: options.in, queueUrl: options.queueUrl, toSend: entries.length, invalid: parsed.problems };
  if (options.dryRun === true) return { ...base, dryRun: true, sent: 0, interrupted: false };

  const limit = createRateLimiter(options.ratePerSecond);
  let sent = 0;
  for (const entry of entries) {
    if (context.signal?.aborted === true) {
      return { ...base, dryRun: false, sent, resumeFromLine: entry.line, interrupted: true };
    }
    await limit();
    try {
      await context.sqs.send(new SendMessageCommand(buildReplayMessage(entry, options.queueUrl)));
    } catch (error) {
      const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      return { ...base, dryRun: false, sent, failed: { line: entry.line, error: message }, resumeFromLine: entry.line, interrupted: false };
    }
    sent += 1;
  }
  return { ...base, dryRun: false, sent, interrupted: false };
}
