import type { Logger } from '@aws-lambda-powertools/logger';
import { Outcome, type OutcomeObserver, type OutcomeRecord } from './outcomes.js';

/** Longest error message in a log line, in characters: a line stays well under 4 KB. */
const MAX_LOGGED_MESSAGE = 512;
/** Longest id in a log line, in characters. */
const MAX_LOGGED_ID = 256;

/**
 * Writes one structured JSON log line per outcome (Powertools Logger) with `messageId`,
 * `idempotencyKey`, `orderingKey`, the consumer's `logFields`, `outcome`, `attempt`, `reason`,
 * `errorType`, `errorMessage` and `durationMs`. Message bodies are never logged (they may hold
 * personal data), and every value is capped, so no line grows with the message. Applied and
 * duplicate messages log at INFO, retries at WARN, dead letters at ERROR.
 */
export class LogObserver implements OutcomeObserver {
  constructor(private readonly logger: Logger) {}

  onOutcome(record: OutcomeRecord): void {
    const fields = {
      outcome: record.outcome,
      messageId: cap(record.messageId, MAX_LOGGED_ID),
      idempotencyKey: record.idempotencyKey === undefined ? undefined : cap(record.idempotencyKey, MAX_LOGGED_ID),
      orderingKey: record.orderingKey === undefined ? undefined : cap(record.orderingKey, MAX_LOGGED_ID),
      ...(Object.keys(record.fields).length > 0 ? { event: record.fields } : {}),
      attempt: record.attempt,
      reason: record.reason,
      errorType: record.errorType,
      errorMessage: record.errorMessage === undefined ? undefined : cap(record.errorMessage, MAX_LOGGED_MESSAGE),
      ...(record.countsAsAttempt === false ? { attemptCounted: false } : {}),
      durationMs: Math.round(record.durationMs * 100) / 100,
    };
    switch (record.outcome) {
      case Outcome.Applied:
      case Outcome.Duplicate:
        this.logger.info('message processed', fields);
        break;
      case Outcome.Retried:
        this.logger.warn('message will be retried', fields);
        break;
      case Outcome.DeadLettered:
        this.logger.error('message dead-lettered', fields);
        break;
    }
  }
}

function cap(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
