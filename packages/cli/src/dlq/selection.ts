import { builtInFailureReasons, FAILURE_REASON_PATTERN, NO_FAILURE_REASON } from 'idempotent-consumer/dlq';
import { failedAtOf, reasonOf, type DeadLetterRecord } from 'idempotent-consumer/dlq';
import { UsageError } from './errors.js';

/** Which dead-letter messages a command acts on. Criteria combine with AND; an empty selection takes all. */
export interface MessageSelection {
  /** `ic.failureReason` values (`none` selects messages without one: moved by the redrive policy). @default any */
  readonly reasons?: readonly string[];
  /** Dead-letter queue message ids, or the consumer's `originalMessageId`s. @default any */
  readonly ids?: readonly string[];
  /**
   * Only messages that failed longer ago than this, in milliseconds (age from `ic.context.failedAt`,
   * else from the message's `SentTimestamp` in the DLQ, measured on the SQS server's clock).
   * @default any age
   */
  readonly olderThanMs?: number;
}

/**
 * Reads `--reason` values. Reasons are open: any name of 1 to 64 letters, digits, `_`, `.` or `-`
 * is accepted, so a user's own reason works; `none` selects the messages moved by the redrive
 * policy. A built-in reason or `none` written in another case is corrected
 * (`validationerror` → `ValidationError`); other names are taken as written.
 *
 * @returns the reasons as they appear in `ic.failureReason` (`none` for the no-reason group)
 * @throws UsageError for a value that cannot be a reason name (it could never match)
 */
export function parseReasons(values: readonly string[]): string[] {
  return values.map((value) => {
    const known = [...builtInFailureReasons, NO_FAILURE_REASON].find((reason) => reason.toLowerCase() === value.toLowerCase());
    if (known !== undefined) return known;
    if (!FAILURE_REASON_PATTERN.test(value)) {
      throw new UsageError(
        `--reason "${value}" cannot be a failure reason: a reason is 1 to 64 letters, digits, '_', '.' or '-' (or none)`,
      );
    }
    return value;
  });
}

/**
 * Warnings for `--reason` values that match none of the messages seen, naming the reasons that
 * are present (an unknown reason is warned about, never refused: it may be a user's own reason
 * that is simply not in the queue now).
 *
 * @param seen - every message the command looked at, before selection
 */
export function reasonWarnings(selection: MessageSelection, seen: readonly DeadLetterRecord[]): string[] {
  if (selection.reasons === undefined || selection.reasons.length === 0) return [];
  const counts = new Map<string, number>();
  for (const record of seen) counts.set(reasonOf(record), (counts.get(reasonOf(record)) ?? 0) + 1);
  const present = [...counts.entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([reason, count]) => `${reason} (${count})`)
    .join(', ');
  return selection.reasons
    .filter((reason) => !counts.has(reason))
    .map((reason) => {
      const sameWord = [...counts.keys()].find((r) => r.toLowerCase() === reason.toLowerCase());
      return (
        `--reason ${reason} matches no message seen; ${present === '' ? 'no message was seen' : `reasons present: ${present}`}` +
        (sameWord !== undefined ? `. Reasons are case-sensitive: did you mean ${sameWord}?` : '')
      );
    });
}

/** Whether the selection selects nothing in particular. */
export function selectsAll(selection: MessageSelection): boolean {
  return (
    (selection.reasons === undefined || selection.reasons.length === 0) &&
    (selection.ids === undefined || selection.ids.length === 0) &&
    selection.olderThanMs === undefined
  );
}

/**
 * Whether a record matches the selection.
 *
 * @param now - the time ages are measured at: the SQS server's time (see `ServerClock`)
 */
export function matchesSelection(record: DeadLetterRecord, selection: MessageSelection, now: Date): boolean {
  if (selection.reasons !== undefined && selection.reasons.length > 0 && !selection.reasons.includes(reasonOf(record))) {
    return false;
  }
  if (
    selection.ids !== undefined &&
    selection.ids.length > 0 &&
    !selection.ids.includes(record.messageId) &&
    (record.originalMessageId === undefined || !selection.ids.includes(record.originalMessageId))
  ) {
    return false;
  }
  if (selection.olderThanMs !== undefined) {
    const failedAt = failedAtOf(record);
    if (failedAt === undefined || now.getTime() - failedAt.getTime() <= selection.olderThanMs) return false;
  }
  return true;
}
