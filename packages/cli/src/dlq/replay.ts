import { readFile } from 'node:fs/promises';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import {
  type ArchiveEntry,
  buildReplayMessage,
  offloadedPayloadOf,
  type ParsedArchive,
  parseArchive,
  type TrailerCheck,
} from './archiveFormat.js';
import { clockOf, type DlqContext } from './context.js';
import { ArchiveFormatError, ArchiveIncompleteError, type ArchiveLineProblem } from './errors.js';
import { archiveEntriesWithinWindow, type InboxWindowOptions } from './inboxWindow.js';
import { assertDeadLetterQueue, inspectQueue } from './queueInspector.js';
import { isFifoQueueUrl } from './queueUrl.js';
import { createRateLimiter } from './timing.js';

/**
 * Options of {@link replayArchive}. A message older than the inbox window (`inboxWindow`, see
 * `inboxWindow.ts`) refuses the file unless `allowOutsideWindow` (or `skipInvalid`, which leaves it out).
 */
export interface ReplayOptions extends InboxWindowOptions {
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
  /**
   * Send a file that does not end with a valid final trailer: one written by hand, or one whose
   * `archive` stopped before its end. Without it such a file is refused. @default false
   */
  readonly noTrailerCheck?: boolean;
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
  /** What the file's trailer says (`complete` for an archive written to its end). */
  readonly trailer: TrailerCheck;
  readonly sent: number;
  /** Bad lines left out, and lines older than the inbox window (only with `skipInvalid`). */
  readonly invalid: readonly ArchiveLineProblem[];
  /** The line whose send failed; the replay stopped there. */
  readonly failed?: { readonly line: number; readonly error: string };
  /** When not every line was sent: the `--from-line` that resumes the replay. */
  readonly resumeFromLine?: number;
  /** Set when nothing was (or, on a dry run, would be) sent: the sentence saying why. The command line exits 1 then. */
  readonly nothingMoved?: string;
  readonly interrupted: boolean;
}

/**
 * Sends the messages of an archive to a queue, in file order: body and message attributes
 * exactly as archived, the FIFO group kept (see `buildReplayMessage`). A message whose body the
 * consumer had offloaded to S3 is sent as the pointer it was, after its body (`offloadedBody`)
 * is stored at its S3 key again (`context.payloads`), so the pointer never dangles.
 *
 * The whole file is checked first: its trailer must say it is whole (see `ArchiveTrailer`;
 * `noTrailerCheck` skips that), and if any line is bad, nothing is sent and the error lists
 * every bad line (file and line number), unless `skipInvalid`. Sending stops at the first
 * failed send; the result names the line to resume from. The file is only read, so nothing in
 * it can be lost.
 *
 * @throws ArchiveIncompleteError when the file does not end with a matching final trailer (cut,
 *   changed, or its writer stopped), unless `noTrailerCheck`
 * @throws ArchiveFormatError when the file cannot be read, or has bad lines (without `skipInvalid`)
 * @throws OutsideInboxWindowError when a message is older than the inbox window (without `allowOutsideWindow` or `skipInvalid`)
 * @throws QueueNotFoundError, NotADeadLetterQueueError; the SDK's errors otherwise
 */
export async function replayArchive(context: DlqContext, options: ReplayOptions): Promise<ReplayResult> {
  const clock = clockOf(context); // attached before the first request: the window is checked on the server's clock
  const { parsed, entries: readable } = await readArchive(options);
  const info = await inspectQueue(context.sqs, options.queueUrl);
  if (options.dlqCheck !== false) assertDeadLetterQueue(info);
  const { entries, outside } = archiveEntriesWithinWindow(options.in, readable, clock.now(), options);
  const invalid = [...parsed.problems, ...outside];
  const base = { file: options.in, queueUrl: options.queueUrl, toSend: entries.length, invalid, trailer: parsed.trailer };
  if (entries.length === 0) {
    return { ...base, dryRun: options.dryRun === true, sent: 0, interrupted: false, nothingMoved: nothingToSend(options, parsed) };
  }
  if (options.dryRun === true) return { ...base, dryRun: true, sent: 0, interrupted: false };

  const limit = createRateLimiter(options.ratePerSecond);
  let sent = 0;
  for (const entry of entries) {
    if (context.signal?.aborted === true) {
      return { ...base, dryRun: false, sent, resumeFromLine: entry.line, interrupted: true };
    }
    await limit();
    try {
      const payload = entry.message.offloadedBody !== undefined ? offloadedPayloadOf(entry.message) : undefined;
      if (payload !== undefined && entry.message.offloadedBody !== undefined) {
        if (context.payloads === undefined)
          throw new Error(`its body must be stored at s3://${payload.bucket}/${payload.key} again, and this command has no S3 access`);
        await context.payloads.put(payload, entry.message.offloadedBody);
      }
      await context.sqs.send(new SendMessageCommand(buildReplayMessage(entry, options.queueUrl)));
    } catch (error) {
      const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      return { ...base, dryRun: false, sent, failed: { line: entry.line, error: message }, resumeFromLine: entry.line, interrupted: false };
    }
    sent += 1;
  }
  return { ...base, dryRun: false, sent, interrupted: false };
}

/**
 * Reads and checks an archive as {@link replayArchive} does before it sends anything: the
 * trailer must say the file is whole (unless `noTrailerCheck`), and no line may be bad (unless
 * `skipInvalid`).
 *
 * @returns what the file holds, and its good lines at or after `fromLine`
 * @throws ArchiveIncompleteError, ArchiveFormatError as {@link replayArchive}
 */
export async function readArchive(
  options: Pick<ReplayOptions, 'in' | 'queueUrl' | 'fromLine' | 'skipInvalid' | 'noTrailerCheck'>,
): Promise<{ readonly parsed: ParsedArchive; readonly entries: readonly ArchiveEntry[] }> {
  let text: string;
  try {
    text = await readFile(options.in, 'utf8');
  } catch (error) {
    throw new ArchiveFormatError(options.in, [{ line: 0, message: `cannot read the file: ${(error as Error).message}` }], {
      cause: error,
    });
  }
  const parsed = parseArchive(text, { fifoTarget: isFifoQueueUrl(options.queueUrl) });
  if (parsed.trailer.status !== 'complete' && options.noTrailerCheck !== true) {
    throw new ArchiveIncompleteError(describeIncomplete(options.in, parsed.trailer));
  }
  if (parsed.problems.length > 0 && options.skipInvalid !== true) throw new ArchiveFormatError(options.in, parsed.problems);
  const fromLine = options.fromLine ?? 1;
  return { parsed, entries: parsed.entries.filter((entry) => entry.line >= fromLine) };
}

/** Why an archive has nothing to send at or after `fromLine`. */
export function nothingToSend(options: Pick<ReplayOptions, 'in' | 'fromLine'>, parsed: ParsedArchive): string {
  return parsed.entries.length === 0
    ? `nothing to send: ${options.in} holds no message${parsed.problems.length > 0 ? ' that is not bad' : ''}`
    : `nothing to send: ${options.in} has no message at or after line ${options.fromLine ?? 1} (its last is line ${parsed.entries.at(-1)?.line ?? 0})`;
}

/** The operator's sentence for an archive whose trailer does not say it is whole. */
function describeIncomplete(file: string, trailer: TrailerCheck): string {
  switch (trailer.status) {
    case 'missing':
      return (
        `${file} does not end with the trailer line that archive writes (its count and SHA-256): the file was cut ` +
        `(${trailer.messages} message line(s) are there) or written by hand. Nothing was sent. ` +
        'For a file written by hand, pass --no-trailer-check.'
      );
    case 'unfinished':
      return (
        `${file} ends with an intermediate trailer (line ${trailer.line}): the archive command that wrote it stopped before ` +
        `its end (a crash or a kill); the ${trailer.messages} message(s) before it are whole. Nothing was sent. ` +
        'Pass --no-trailer-check to replay them.'
      );
    case 'mismatch':
      return `${file}:${trailer.line}: ${trailer.detail}: the file was changed or cut. Nothing was sent.`;
    default:
      return `${file} is complete`;
  }
}
