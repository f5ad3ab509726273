/**
 * The inbox window of `dlq redrive` and `dlq replay`: a message older than the consumer's inbox
 * TTL may have outlived the inbox row of its idempotency key, so the consumer would not recognise
 * it as a duplicate and would apply it again. Such a message is refused (left in the DLQ, or, for
 * a replay, the file is refused) unless `--allow-outside-window`.
 *
 * The window is `--inbox-ttl`, else the `INBOX_TTL_SECONDS` environment variable (the function's
 * own variable), else the library's default (`defaultSettings.idempotency.inboxTtlSeconds`, 30
 * days), which the output then says it assumed.
 *
 * @module
 */
import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { readDeadLetterAttributes } from 'idempotent-consumer/dlq';
import { defaultSettings, describeSeconds, SQS_MAX_RETENTION_SECONDS } from 'idempotent-consumer/settings';
import type { ArchiveEntry } from './archiveFormat.js';
import { formatDuration, parseDuration } from './duration.js';
import { type ArchiveLineProblem, DlqToolError, UsageError } from './errors.js';

/** The inbox TTL a command checks messages against, and where it came from. */
export interface InboxWindow {
  /** The inbox TTL, in seconds. */
  readonly seconds: number;
  /** `--inbox-ttl`, the `INBOX_TTL_SECONDS` environment variable, or the library's default. */
  readonly from: 'flag' | 'environment' | 'default';
}

/** The window check of a command: the window, and whether messages outside it go anyway. */
export interface InboxWindowOptions {
  /** The consumer's inbox window. @default the library's default inbox TTL (30 days) */
  readonly inboxWindow?: InboxWindow;
  /** Send messages older than the inbox window anyway (`--allow-outside-window`). @default false */
  readonly allowOutsideWindow?: boolean;
}

/** The library's default inbox TTL, as a window. */
export const DEFAULT_INBOX_WINDOW: InboxWindow = { seconds: defaultSettings.idempotency.inboxTtlSeconds, from: 'default' };

/**
 * The inbox window from the flag or the environment.
 *
 * @param flag - `--inbox-ttl`: a duration (`30d`, `720h`, `4w2d`)
 * @param env - the environment; `INBOX_TTL_SECONDS` is read, a whole number of seconds
 * @throws UsageError when the flag is not a duration, or the variable not a positive whole number
 */
export function inboxWindowFrom(flag: string | undefined, env: NodeJS.ProcessEnv): InboxWindow {
  if (flag !== undefined) {
    const ms = parseDuration(flag, '--inbox-ttl');
    if (ms < 1000) throw new UsageError(`--inbox-ttl must be at least 1s, not "${flag}"`);
    return { seconds: Math.floor(ms / 1000), from: 'flag' };
  }
  const variable = env.INBOX_TTL_SECONDS;
  if (variable !== undefined && variable !== '') {
    if (!/^\d+$/.test(variable) || Number(variable) < 1) {
      throw new UsageError(`INBOX_TTL_SECONDS must be a whole number of seconds (the function's variable), not "${variable}"`);
    }
    return { seconds: Number(variable), from: 'environment' };
  }
  return DEFAULT_INBOX_WINDOW;
}

/** The times a dead-letter message carries that tell how old it is (epoch milliseconds each). */
export interface MessageTimes {
  /** A Kafka dead letter's record timestamp (`ic.context.coordinates.timestamp`). */
  readonly recordTimestamp?: number;
  /** When the consumer dead-lettered it (`ic.context.failedAt`). */
  readonly failedAt?: number;
  /**
   * SQS's `SentTimestamp` of the DLQ message: when the consumer sent the dead letter, or, for a
   * message a standard queue's redrive policy moved, when it was first sent to the source queue
   * (SQS keeps the enqueue time on such a move).
   */
  readonly sentTimestamp?: number;
}

/** How old a message is, as far as its times tell. */
export interface MessageAge {
  /** The earliest of its {@link MessageTimes}. */
  readonly since: Date;
  /** Which time that is: `Kafka record timestamp`, `failedAt`, `SentTimestamp`. */
  readonly sinceWhat: string;
  /** Milliseconds from `since` to the time of the check (0 when negative: clock skew). */
  readonly ageMs: number;
}

/**
 * The times of a message, from its `ic.context` attribute and its system attributes (a received
 * message, or an archive line, which keeps both).
 *
 * @param messageAttributes - the message attributes (only `StringValue`s are read)
 * @param systemAttributes - SQS's system attributes (`SentTimestamp`)
 */
export function messageTimesOf(
  messageAttributes: Readonly<Record<string, { readonly StringValue?: string | undefined }>> | undefined,
  systemAttributes: Readonly<Record<string, string>> | undefined,
): MessageTimes {
  const info = readDeadLetterAttributes(messageAttributes ?? {});
  const timestamp = info?.context.coordinates?.timestamp;
  const recordTimestamp = typeof timestamp === 'number' ? timestamp : typeof timestamp === 'string' ? Number(timestamp) : Number.NaN;
  const sent = Number.parseInt(systemAttributes?.SentTimestamp ?? '', 10);
  return {
    ...(Number.isFinite(recordTimestamp) && recordTimestamp > 0 ? { recordTimestamp } : {}),
    ...(info?.failedAt !== undefined ? { failedAt: info.failedAt.getTime() } : {}),
    ...(Number.isFinite(sent) ? { sentTimestamp: sent } : {}),
  };
}

/**
 * How old a message is: measured from the earliest time it carries (its Kafka record's timestamp,
 * its failure time, its `SentTimestamp`), a lower bound of how long ago its idempotency key was
 * first seen. The dead letter does not keep the source queue's `SentTimestamp`: a consumer's SQS
 * dead letter may be up to the source's retention older than its `failedAt`.
 *
 * @returns `undefined` when the message carries no time
 */
export function messageAge(times: MessageTimes, now: Date): MessageAge | undefined {
  const candidates: [number | undefined, string][] = [
    [times.recordTimestamp, 'Kafka record timestamp'],
    [times.failedAt, 'failedAt'],
    [times.sentTimestamp, 'SentTimestamp'],
  ];
  let earliest: [number, string] | undefined;
  for (const [ms, what] of candidates) {
    if (ms !== undefined && (earliest === undefined || ms < earliest[0])) earliest = [ms, what];
  }
  if (earliest === undefined) return undefined;
  return { since: new Date(earliest[0]), sinceWhat: earliest[1], ageMs: Math.max(0, now.getTime() - earliest[0]) };
}

/**
 * Why a message is outside the inbox window, or `undefined` when it is inside (or carries no
 * time): how old it is, the window, and what would happen.
 *
 * @param allowed - `--allow-outside-window` was given: the sentence says it goes anyway
 */
export function outsideInboxWindow(times: MessageTimes, now: Date, window: InboxWindow, allowed = false): string | undefined {
  const age = messageAge(times, now);
  if (age === undefined || age.ageMs <= window.seconds * 1000) return undefined;
  return (
    `outside the inbox window: ${formatDuration(age.ageMs)} old (${age.sinceWhat} ${age.since.toISOString()}), ` +
    `the inbox keeps a key ${describeWindow(window)}; its inbox row, if it had one, has expired, so the consumer would apply it again` +
    (allowed ? ' (sent anyway: --allow-outside-window)' : '; pass --allow-outside-window to send it anyway')
  );
}

/** The window for a sentence: `2592000 s (30 days, the library's default: pass --inbox-ttl)`. */
export function describeWindow(window: InboxWindow): string {
  const text = describeSeconds(window.seconds);
  const from =
    window.from === 'flag'
      ? '--inbox-ttl'
      : window.from === 'environment'
        ? 'INBOX_TTL_SECONDS'
        : "the library's default; pass --inbox-ttl if the consumer's differs";
  return text.endsWith(')') ? `${text.slice(0, -1)}, ${from})` : `${text} (${from})`;
}

/**
 * For a message move task, which moves every message as it is and cannot leave one behind: why
 * the dead-letter queue may hold a message older than the inbox window, or `undefined` when it
 * cannot. Every message in the queue is younger than its retention, counted from its
 * `SentTimestamp` (the consumer's dead letter) or its first enqueue time (a standard queue's
 * redrive policy keeps it), so a retention within the window is enough.
 *
 * @returns the sentence, or `undefined`
 */
export async function moveTaskOutsideWindow(
  sqs: SQSClient,
  queueUrl: string,
  window: InboxWindow,
  allowed: boolean,
): Promise<string | undefined> {
  if (allowed) return undefined;
  const output = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['MessageRetentionPeriod'] }));
  const stated = Number(output?.Attributes?.MessageRetentionPeriod);
  const retention = Number.isFinite(stated) && stated > 0 ? stated : SQS_MAX_RETENTION_SECONDS;
  if (retention <= window.seconds) return undefined;
  return (
    `the dead-letter queue keeps messages ${describeSeconds(retention)}, longer than the inbox window ${describeWindow(window)}: ` +
    'it may hold messages the consumer would apply again, and a message move task cannot leave them behind. ' +
    'Redrive without --move-task (messages outside the window stay in the DLQ), or pass --allow-outside-window'
  );
}

/**
 * An archive holds messages older than the inbox window, and neither `--allow-outside-window` nor
 * `--skip-invalid` was given: nothing was sent. Exit code 1.
 */
export class OutsideInboxWindowError extends DlqToolError {
  constructor(
    public readonly file: string,
    /** One per message outside the window: its line and why. */
    public readonly lines: readonly ArchiveLineProblem[],
  ) {
    super(
      `${file}: ${lines.length} message(s) older than the inbox window; nothing was sent ` +
        '(pass --allow-outside-window to send them anyway, or --skip-invalid to send the others):\n' +
        lines.map((p) => `  ${file}:${p.line}: ${p.message}`).join('\n'),
    );
  }
}

/**
 * The archive lines a replay may send, as far as the inbox window goes: those inside it, or all
 * of them with `allowOutsideWindow`. The others are refused: the whole file
 * ({@link OutsideInboxWindowError}), or, with `skipInvalid`, only those lines (returned in
 * `outside`, reported like bad lines).
 *
 * @param now - the time of the check (the SQS server's)
 * @throws OutsideInboxWindowError when a line is outside the window, without `allowOutsideWindow` or `skipInvalid`
 */
export function archiveEntriesWithinWindow(
  file: string,
  entries: readonly ArchiveEntry[],
  now: Date,
  options: InboxWindowOptions & { readonly skipInvalid?: boolean },
): { readonly entries: readonly ArchiveEntry[]; readonly outside: readonly ArchiveLineProblem[] } {
  if (options.allowOutsideWindow === true) return { entries, outside: [] };
  const window = options.inboxWindow ?? DEFAULT_INBOX_WINDOW;
  const inside: ArchiveEntry[] = [];
  const outside: ArchiveLineProblem[] = [];
  for (const entry of entries) {
    const times = messageTimesOf(entry.message.messageAttributes, entry.message.attributes);
    const why = outsideInboxWindow(times, now, window);
    if (why === undefined) inside.push(entry);
    else outside.push({ line: entry.line, message: why });
  }
  if (outside.length > 0 && options.skipInvalid !== true) throw new OutsideInboxWindowError(file, outside);
  return { entries: inside, outside };
}
