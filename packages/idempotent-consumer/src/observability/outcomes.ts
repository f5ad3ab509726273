/** What became of one delivery of a message, as logs, metrics and the local report see it. */
export const Outcome = {
  /** Its state change committed in this delivery. */
  Applied: 'applied',
  /** The inbox already had its idempotency key with the same payload: acknowledged, nothing written. */
  Duplicate: 'duplicate',
  /** Reported as a batch item failure: the source delivers it again. */
  Retried: 'retried',
  /** Sent to the dead-letter queue with its reason, then acknowledged. */
  DeadLettered: 'dead-lettered',
} as const;
/** One of the `Outcome` values: `applied`, `duplicate`, `retried` or `dead-lettered`. */
export type Outcome = (typeof Outcome)[keyof typeof Outcome];

/** One delivery's outcome: what logs, metrics and the local report are made of. Never holds the body. */
export interface OutcomeRecord {
  /** What became of the delivery: `applied`, `duplicate`, `retried` or `dead-lettered`. */
  readonly outcome: Outcome;
  /** The source's id of the message (SQS `messageId`, Kafka `<topic>-<partition>@<offset>`). */
  readonly messageId: string;
  /** The idempotency key, when the body had one. */
  readonly idempotencyKey: string | undefined;
  /** The ordering key, when the body had one. */
  readonly orderingKey: string | undefined;
  /** The consumer's `logFields` of the event (safe fields, capped). */
  readonly fields: Readonly<Record<string, string | number | boolean>>;
  /** This delivery's attempt number, from 1, when known. */
  readonly attempt: number | undefined;
  /** Why it was dead-lettered. */
  readonly reason: string | undefined;
  /**
   * The `name` of the error of a retried or dead-lettered delivery (at most 128 characters);
   * `undefined` for the other outcomes.
   */
  readonly errorType: string | undefined;
  /**
   * The message of the error of a retried or dead-lettered delivery, cut to at most 1,024
   * characters; `undefined` for the other outcomes.
   */
  readonly errorMessage: string | undefined;
  /** Whether a retried delivery used up an attempt (`false`: it was not attempted). */
  readonly countsAsAttempt: boolean | undefined;
  /** Time from the start of its batch to its outcome, in milliseconds. */
  readonly durationMs: number;
  /**
   * `true` on a retried delivery that was parked: it failed `PredecessorNotApplied` on a standard
   * queue with `retry.parkOutOfOrder` on, and its record now waits in the inbox table, to be decided
   * again as soon as a message of its ordering key is applied (the message is then deleted from the
   * queue: no redelivery), else when its visibility delay ends (its wake-up). Absent otherwise.
   */
  readonly parked?: true;
  /**
   * `true` when the delivery was settled from the park (the inbox table's copy of a parked
   * delivery, taken up by the invocation that applied a message of its ordering key: applied, a
   * duplicate, or dead-lettered), not from a receive of the source: it is not a redelivery. A
   * parked message decided again that still waits gives no outcome. Absent otherwise.
   */
  readonly fromPark?: true;
}

/** Receives every outcome: a logger, a metrics writer, the local runtime's report. */
export interface OutcomeObserver {
  /**
   * Called once per delivery, as soon as its outcome is known. It should not throw: what it
   * throws is caught and ignored (it never changes the message's outcome).
   */
  onOutcome(record: OutcomeRecord): void;
}

/** Sends each outcome to several observers; one that throws does not stop the others. */
export function combineObservers(...observers: readonly (OutcomeObserver | undefined)[]): OutcomeObserver {
  const present = observers.filter((o): o is OutcomeObserver => o !== undefined);
  return {
    onOutcome: (record) => {
      for (const observer of present) {
        try {
          observer.onOutcome(record);
        } catch {
          // an observer's fault never changes a message's outcome
        }
      }
    },
  };
}
