/**
 * Putting messages in the dead-letter queue: first each one's dead-letter marker in the inbox
 * (conditional: never over an applied row), then the send. Used after a batch settled, and during
 * it for a message of a FIFO group or Kafka partition whose successors are about to commit (so
 * that the group never has an applied message behind a dead letter that could not be sent).
 *
 * @module
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { type Classification, classify } from '../classifier.js';
import type { RuntimeConfig } from '../config/runtimeConfig.js';
import { FailureReason, IdempotencyConflict } from '../errors.js';
import { homeTargetOf, writeDeadLetterMarker } from '../inbox/writeDeadLetterMarker.js';
import type { ConsumerDefinition } from './ConsumerDefinition.js';
import type { ResolvedKey } from './itemKeys.js';
import { type SegmentTracer, TraceSegmentName, traced } from '../observability/traceSegments.js';
import type { DeadLetterOrigin, Delivery } from './Delivery.js';
import { describeError } from './describeError.js';

/** One message to put in the dead-letter queue, as the engine hands it to the writer. */
export interface DeadLetterRequest extends DeadLetterOrigin {
  /** The original body, byte for byte (in base64 when `bodyEncoding` says so). */
  readonly body: string;
  readonly failure: { readonly reason: string; readonly errorType: string; readonly errorMessage: string };
  /** Attempts so far, from 1. */
  readonly attempts: number;
  /** The source's id of the message. */
  readonly originalMessageId: string;
  readonly failedAt: Date;
  /**
   * The X-Ray trace header of the source message (or of the invocation, for a source that gives
   * none), for the dead letter's `AWSTraceHeader` system attribute.
   */
  readonly traceHeader?: string;
}

/** The outcome of one dead-letter send. */
export type DeadLetterResult = { readonly ok: true; readonly messageId?: string } | { readonly ok: false; readonly error: unknown };

/** Anything that can put messages in the dead-letter queue (the `DeadLetterQueue` writer). */
export interface DeadLetterSink {
  /** Sends each request; one result per request, in order. Never rejects for a single failed entry. */
  sendBatch(requests: readonly DeadLetterRequest[]): Promise<readonly DeadLetterResult[]>;
}

/** A message to dead-letter. */
export interface DeadLetterCandidate {
  readonly delivery: Delivery;
  /** The idempotency key, when the body had one (no key: no marker). */
  readonly idempotencyKey: string | undefined;
  readonly payloadHash: string | undefined;
  readonly failure: Classification;
  /** Attempts so far, from 1, when known. */
  readonly attempt: number | undefined;
  /** The inbox already holds this message's marker. */
  readonly alreadyMarked: boolean;
  /** Under `inboxHome`: its home item, where its marker is also written (none when its body could not be parsed). */
  readonly home?: ResolvedKey | undefined;
}

/** What became of a candidate. */
export type DeadLetterOutcome =
  /** In the dead-letter queue, with `failure` (an `IdempotencyConflict` when the marker found the key applied with another payload). */
  | { readonly kind: 'sent'; readonly failure: Classification }
  /** The marker found the key applied with the same payload (by a concurrent delivery): a duplicate, never dead-lettered. */
  | { readonly kind: 'duplicate'; readonly storedPayloadHash: string }
  /** The marker or the send failed: retried, not counted as an attempt. */
  | { readonly kind: 'retry'; readonly failure: Classification };

/** What {@link deadLetter} needs. */
export interface DeadLetterDeps {
  readonly client: DynamoDBDocumentClient;
  readonly config: Pick<RuntimeConfig, 'inboxTable' | 'consumerName' | 'inboxTtlSeconds'>;
  /** Loaded at the first dead letter. */
  readonly deadLetters: () => Promise<DeadLetterSink>;
  readonly logger?: Logger;
  readonly now: () => Date;
  /** The consumer's home-item settings and tables, for markers under `inboxHome`. @default none: rows only */
  readonly definition?: Pick<ConsumerDefinition<unknown>, 'home' | 'tables' | 'versionAttribute'>;
  /** Opens a `## deadLetter` subsegment around each call when given and tracing. @default none */
  readonly tracer?: SegmentTracer;
}

/** A failure of the consumer's own dead-letter path: retried without using up the message's attempts. */
export function notCounted(error: unknown): Classification {
  return { ...classify(error), retryable: true, reason: undefined, countsAsAttempt: false };
}

/**
 * Marks, then sends, each candidate (one `SendMessageBatch` per ten); never rejects. Each dead
 * letter carries its delivery's trace header. With a tracer, in a `## deadLetter` subsegment
 * annotated with the counts (`messages`, `sent`, `duplicates`, `retried`).
 *
 * @returns one outcome per candidate, in order
 */
export function deadLetter(candidates: readonly DeadLetterCandidate[], deps: DeadLetterDeps): Promise<DeadLetterOutcome[]> {
  return traced(deps.tracer, TraceSegmentName.DeadLetter, async (annotate) => {
    const outcomes = await markAndSend(candidates, deps);
    const count = (kind: DeadLetterOutcome['kind']) => outcomes.filter((outcome) => outcome.kind === kind).length;
    annotate({ messages: candidates.length, sent: count('sent'), duplicates: count('duplicate'), retried: count('retry') });
    return outcomes;
  });
}

async function markAndSend(candidates: readonly DeadLetterCandidate[], deps: DeadLetterDeps): Promise<DeadLetterOutcome[]> {
  const { client, config, logger, now } = deps;
  const at = now();
  const outcomes: (DeadLetterOutcome | undefined)[] = await Promise.all(
    candidates.map(async (candidate): Promise<DeadLetterOutcome | undefined> => {
      const { idempotencyKey, payloadHash, failure } = candidate;
      if (idempotencyKey === undefined || payloadHash === undefined || candidate.alreadyMarked) return undefined;
      if (failure.reason === FailureReason.IdempotencyConflict) return undefined; // an applied row is there: nothing to mark
      try {
        const result = await writeDeadLetterMarker(
          client,
          config,
          { idempotencyKey, payloadHash, messageId: candidate.delivery.messageId, failure },
          at,
          homeTargetOf(deps.definition, candidate.home),
        );
        if (result.kind === 'marked') return undefined;
        // Applied meanwhile by another delivery: never dead-letter an applied message.
        if (result.row.payloadHash === payloadHash) return { kind: 'duplicate', storedPayloadHash: payloadHash };
        return { kind: 'sent', failure: classify(new IdempotencyConflict(idempotencyKey, result.row.payloadHash, payloadHash)) };
      } catch (error) {
        logger?.warn('could not mark a message as dead-lettered; it will be retried', {
          messageId: candidate.delivery.messageId,
          error: describeError(error),
        });
        return { kind: 'retry', failure: notCounted(error) };
      }
    }),
  );
  const toSend = candidates.flatMap((candidate, index) => {
    const outcome = outcomes[index];
    if (outcome?.kind === 'duplicate' || outcome?.kind === 'retry') return [];
    return [{ candidate, index, failure: outcome?.failure ?? candidate.failure }];
  });
  if (toSend.length > 0) {
    let results: readonly DeadLetterResult[];
    try {
      const sink = await deps.deadLetters();
      results = await sink.sendBatch(
        toSend.map(({ candidate, failure }) => ({
          ...candidate.delivery.deadLetter,
          body: candidate.delivery.body,
          failure: { reason: failure.reason ?? 'Unknown', errorType: failure.errorType, errorMessage: failure.errorMessage },
          attempts: candidate.attempt ?? 1,
          originalMessageId: candidate.delivery.messageId,
          failedAt: at,
          ...(candidate.delivery.traceHeader === undefined ? {} : { traceHeader: candidate.delivery.traceHeader }),
        })),
      );
    } catch (error) {
      results = toSend.map(() => ({ ok: false as const, error }));
    }
    toSend.forEach(({ candidate, index, failure }, i) => {
      const result = results[i];
      if (result?.ok === true) {
        outcomes[index] = { kind: 'sent', failure };
        return;
      }
      const error = result === undefined ? new Error('no result for this dead letter') : result.error;
      logger?.warn('could not send a message to the dead-letter queue; it will be retried', {
        messageId: candidate.delivery.messageId,
        error: describeError(error),
      });
      outcomes[index] = { kind: 'retry', failure: notCounted(error) };
    });
  }
  return outcomes.map((outcome) => outcome!);
}
