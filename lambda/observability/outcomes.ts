import type { FailureReason } from '../errors.js';

/** The outcomes of one delivery of one message. `applied`, `duplicate` and `dead-lettered` are final. */
export const Outcome = {
  Applied: 'applied',
  Duplicate: 'duplicate',
  Retried: 'retried',
  DeadLettered: 'dead-lettered',
} as const;
export type Outcome = (typeof Outcome)[keyof typeof Outcome];

/** What is known of one message's outcome: what logs, metrics and the local report are made of. */
export interface OutcomeRecord {
  readonly outcome: Outcome;
  /** The source's id of the message (SQS `messageId`, Kafka `<topic>-<partition>@<offset>`). */
  readonly messageId: string;
  /** The idempotency key, when the body had one. */
  readonly eventId: string | undefined;
  readonly orderId: string | undefined;
  readonly eventType: string | undefined;
  /** This delivery's attempt number, from 1, when the source counts them. */
  readonly attempt: number | undefined;
  /** Why it was dead-lettered. */
  readonly reason: FailureReason | undefined;
  /** The error of a retried or dead-lettered message. */
  readonly errorType: string | undefined;
  readonly errorMessage: string | undefined;
  /** Time spent on this message, in milliseconds. */
  readonly durationMs: number;
}

/** Receives every outcome, e.g. a logger, a metrics writer, the local runtime's report. */
export interface OutcomeObserver {
  onOutcome(record: OutcomeRecord): void;
}

/** Sends each outcome to several observers. */
export function combineObservers(...observers: readonly (OutcomeObserver | undefined)[]): OutcomeObserver {
  const present = observers.filter((o): o is OutcomeObserver => o !== undefined);
  return { onOutcome: (record) => present.forEach((o) => o.onOutcome(record)) };
}

/**
 * The ids of a body, read leniently (for logs of a message that may not parse); never throws.
 */
export function peekIds(body: string): { eventId?: string; orderId?: string; eventType?: string } {
  try {
    const json: unknown = JSON.parse(body);
    if (json === null || typeof json !== 'object') return {};
    const { eventId, orderId, type } = json as Record<string, unknown>;
    return {
      ...(typeof eventId === 'string' ? { eventId } : {}),
      ...(typeof orderId === 'string' ? { orderId } : {}),
      ...(typeof type === 'string' ? { eventType: type } : {}),
    };
  } catch {
    return {};
  }
}
