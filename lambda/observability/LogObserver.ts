import type { Logger } from '@aws-lambda-powertools/logger';
import { Outcome, type OutcomeObserver, type OutcomeRecord } from './outcomes.js';

/**
 * Writes one structured JSON log line per outcome with `messageId`, `eventId`, `orderId`,
 * `outcome`, `reason`, the error and the attempt. Message bodies are never logged: they may
 * hold personal data. Applied and duplicate messages log at INFO, retries at WARN,
 * dead-lettered messages at ERROR; the level comes from `POWERTOOLS_LOG_LEVEL`.
 */
export class LogObserver implements OutcomeObserver {
  constructor(private readonly logger: Logger) {}

  onOutcome(record: OutcomeRecord): void {
    const fields = {
      outcome: record.outcome,
      messageId: record.messageId,
      eventId: record.eventId,
      orderId: record.orderId,
      eventType: record.eventType,
      attempt: record.attempt,
      reason: record.reason,
      errorType: record.errorType,
      errorMessage: record.errorMessage,
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
