import { type AttemptInfo, type Classification, classify, Disposition } from '../classifier.js';
import type { DeadLetterContext } from '../dlq/deadLetterMessage.js';
import { Outcome, type OutcomeObserver, peekIds } from '../observability/outcomes.js';
import type { InboundMessage, OrderEventProcessor } from './OrderEventProcessor.js';

/** One delivery of one message, from any event source. */
export interface Delivery {
  readonly message: InboundMessage;
  /** Where the delivery stands in its attempts; `undefined` when the source does not count them. */
  readonly attempt: AttemptInfo | undefined;
  /** How to dead-letter it: its source, coordinates, FIFO group and original attributes. */
  readonly deadLetter: Omit<DeadLetterContext, 'body' | 'failure' | 'failedAt' | 'originalMessageId'>;
  /**
   * A failure known before processing (e.g. a Kafka value that is not UTF-8). When set, the
   * processor is not called: this error is classified as if the processor had thrown it.
   */
  readonly rejection?: Error;
  /**
   * For a source that does not count deliveries itself (Kafka records have no receive count):
   * records this failed attempt and resolves with where the message now stands. The failure is
   * then classified again with that attempt, so the attempt that reaches `maxAttempts` is
   * dead-lettered as `RetriesExhausted`, and the dead-letter message carries the count.
   * Called once per failure, before the verdict is carried out. If it rejects, the verdict
   * stands as first classified (the source's own retry limit remains the safety net).
   */
  readonly recordFailedAttempt?: (failure: Classification) => Promise<AttemptInfo>;
}

/** Anything that can put a message in the dead-letter queue (the `DeadLetterQueue` class). */
export interface DeadLetterSink {
  send(context: DeadLetterContext): Promise<unknown>;
}

/** What a {@link MessageConsumer} needs. */
export interface MessageConsumerDeps {
  readonly processor: Pick<OrderEventProcessor, 'process'>;
  readonly deadLetterQueue: DeadLetterSink;
  readonly observer: OutcomeObserver;
  /** The clock. @default () => new Date() */
  readonly now?: () => Date;
}

/**
 * Thrown by {@link MessageConsumer.consume} for a failure that must be retried; the batch
 * processor reports the message as a batch item failure. `cause` is the original error.
 */
export class RetryableFailure extends Error {
  constructor(
    public readonly messageId: string,
    cause: unknown,
  ) {
    super(`message ${messageId} failed and will be retried: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
    });
    this.name = 'RetryableFailure';
  }
}

/**
 * Runs one delivery through the processor and carries out the classifier's verdict on a
 * failure. The same for every event source:
 *
 * - processed (applied now, or a duplicate): resolves with the outcome: acknowledge it;
 * - non-retryable, or retryable on the last attempt: sends the message to the dead-letter
 *   queue with its reason, then resolves with `dead-lettered`: acknowledge it;
 * - retryable: rejects with {@link RetryableFailure}: report it as a batch item failure.
 *
 * If the send to the dead-letter queue fails, it rejects with {@link RetryableFailure} too, so
 * the message is retried rather than lost.
 *
 * A source without a receive count (Kafka) sets `Delivery.recordFailedAttempt`: each failure
 * is counted before the verdict, so the attempt that reaches the maximum is dead-lettered as
 * `RetriesExhausted` here too. A failure known before processing (`Delivery.rejection`) skips
 * the processor and is classified like any other error.
 */
export class MessageConsumer {
  readonly #deps: MessageConsumerDeps;
  readonly #now: () => Date;

  constructor(deps: MessageConsumerDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? (() => new Date());
  }

  /**
   * @returns the final outcome: `applied`, `duplicate` or `dead-lettered`
   * @throws RetryableFailure when the message must be retried, or could not be dead-lettered
   */
  async consume(delivery: Delivery): Promise<Outcome> {
    const started = performance.now();
    const { message } = delivery;
    let attempt = delivery.attempt;
    const observe = (outcome: Outcome, failure?: Pick<Classification, 'reason' | 'errorType' | 'errorMessage'>): Outcome => {
      this.#deps.observer.onOutcome({
        outcome,
        messageId: message.messageId,
        ...idsOf(message.body),
        attempt: attempt?.attempt,
        reason: failure?.reason,
        errorType: failure?.errorType,
        errorMessage: failure?.errorMessage,
        durationMs: performance.now() - started,
      });
      return outcome;
    };

    let verdict: Classification;
    let counted: AttemptInfo | undefined;
    try {
      if (delivery.rejection !== undefined) throw delivery.rejection;
      const result = await this.#deps.processor.process(message);
      return observe(result.outcome === 'applied' ? Outcome.Applied : Outcome.Duplicate);
    } catch (error) {
      verdict = classify(error, attempt);
      counted = await recordFailedAttempt(delivery, verdict);
      if (counted !== undefined) {
        attempt = counted;
        verdict = classify(error, counted);
      }
      if (verdict.disposition === Disposition.Retry) {
        observe(Outcome.Retried, verdict);
        throw new RetryableFailure(message.messageId, error);
      }
    }
    try {
      await this.#deps.deadLetterQueue.send({
        ...delivery.deadLetter,
        ...(counted !== undefined ? { attempts: counted.attempt } : {}),
        body: message.body,
        originalMessageId: message.messageId,
        failure: verdict,
        failedAt: this.#now(),
      });
    } catch (error) {
      observe(Outcome.Retried, classify(error));
      throw new RetryableFailure(message.messageId, error);
    }
    return observe(Outcome.DeadLettered, verdict);
  }
}

/** The delivery's own failure count, or `undefined` when it keeps none or could not record it. */
async function recordFailedAttempt(delivery: Delivery, failure: Classification): Promise<AttemptInfo | undefined> {
  if (delivery.recordFailedAttempt === undefined) return undefined;
  try {
    return await delivery.recordFailedAttempt(failure);
  } catch {
    return undefined;
  }
}

function idsOf(body: string): { eventId: string | undefined; orderId: string | undefined; eventType: string | undefined } {
  const ids = peekIds(body);
  return { eventId: ids.eventId, orderId: ids.orderId, eventType: ids.eventType };
}
