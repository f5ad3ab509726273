import { failureReasons } from '../../lambda/errors.js';
import { failedAtOf, NO_REASON, reasonOf, type DeadLetterRecord } from './deadLetterRecord.js';
import { UsageError } from './errors.js';

/** Which dead-letter messages a command acts on. Criteria combine with AND; an empty selection takes all. */
export interface MessageSelection {
  /** `failureReason` values (`none` selects messages without one). @default any */
  readonly reasons?: readonly string[];
  /** Dead-letter queue message ids, or the consumer's `originalMessageId`s. @default any */
  readonly ids?: readonly string[];
  /**
   * Only messages that failed longer ago than this, in milliseconds (age from `failedAt`, else
   * from the message's `SentTimestamp` in the DLQ).
   * @default any age
   */
  readonly olderThanMs?: number;
}

/** The values `--reason` accepts: the consumer's failure reasons, `Unknown`, and `none`. */
export const selectableReasons: readonly string[] = [...failureReasons, 'Unknown', 'none'];

/**
 * Checks `--reason` values against {@link selectableReasons}.
 *
 * @returns the reasons as they appear in `failureReason` (`none` becomes the no-reason group)
 * @throws UsageError naming the unknown value and listing the valid ones
 */
export function parseReasons(values: readonly string[]): string[] {
  return values.map((value) => {
    const known = selectableReasons.find((reason) => reason.toLowerCase() === value.toLowerCase());
    if (known === undefined) {
      throw new UsageError(`unknown --reason "${value}"; one of: ${selectableReasons.join(', ')}`);
    }
    return known === 'none' ? NO_REASON : known;
  });
}

/** Whether the selection selects nothing in particular (then a redrive may use a message move task). */
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
 * @param now - the time ages are measured at
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
