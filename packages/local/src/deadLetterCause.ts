/**
 * Whose fault a dead letter is: the one rule the local run's exactly-once check uses to tell a
 * message dead-lettered for a reason of its own (its data, or the consumer's own code) from a
 * valid message the service lost (contention, rounds of the batch commit, the library's own
 * errors, throttling, a failing AWS service). Pure: no I/O.
 *
 * ## The rule
 *
 * A dead letter is judged on its failure reason (`ic.failureReason`) and, for
 * `RetriesExhausted`, on its last error's name (`ic.errorType`, the outcome's `errorType`):
 *
 * 1. **A reason other than `RetriesExhausted` is the message's own**: the library's
 *    non-retryable reasons (`ValidationError`, `MissingIdempotencyKey`, `IdempotencyConflict`,
 *    `UnknownMessageType`, `BusinessRuleViolation`, `ConditionalWriteFailed`, `InvalidWrite`)
 *    and every reason of the consumer's own (a `NonRetryableError` subclass, a `classifyError`
 *    verdict) say the message can never apply as it is.
 * 2. **`RetriesExhausted` is the message's own only when its last error was the consumer's**:
 *    a `RetryableError` of its own (`PredecessorNotApplied`, a user's subclass) or any error its
 *    code threw that is not in {@link foreignErrorTypes}. When the last error is one of
 *    {@link foreignErrorTypes} (the library's `TransactionConflict` — contention, or a batch that
 *    did not settle in its rounds —, `NotAttempted`, Powertools' idempotency errors, the
 *    dead-letter writer's errors; AWS throttling, transaction conflicts, 5xx, timeouts, network
 *    errors, refused requests), or there is none, it is **not** the message's own.
 * 3. **No reason at all** (moved by the queue's redrive policy: the consumer never gave its
 *    verdict, its receives ran out through crashes, timeouts or failed dead-letter sends) is not
 *    the message's own.
 *
 * A dead letter that is not the message's own **is excused** only when the run said it injects,
 * on purpose, a kind of fault that produces it (`--fault KIND=RATE` with a rate above 0, or
 * `--transient-failure-rate` above 0): each foreign error name lists the kinds that produce it
 * (e.g. `TransactionConflict` ← `transaction-conflict` or `throttle`, since the engine reports a
 * commit that kept losing to conflicts or throttling, and a read throttled out, under that name;
 * `InternalServerError` ← `dynamodb-5xx`); a dead letter without a reason is excused by any
 * `--fault`; `InjectedTransientFailure` by `--transient-failure-rate`. Everything else fails the
 * check.
 *
 * The judgement is by name: an error the consumer's own code throws under one of these names
 * (e.g. an error named `TransactionConflict` thrown by a side effect, or an AWS SDK error its
 * side effect lets through) counts as foreign, and a network error whose `name` is only `Error`
 * counts as the consumer's own.
 *
 * @module
 */
import type { FaultKind } from './faultInjection.js';

/** The `name` of the error `--transient-failure-rate` throws from `decide` (`InjectedTransientFailure`). */
export const INJECTED_TRANSIENT_FAILURE = 'InjectedTransientFailure';

/** The failure reason of a message whose retryable failures ran out. */
const RETRIES_EXHAUSTED = 'RetriesExhausted';

/** A kind of fault a local run injects on purpose: a `--fault` kind, or `transient-failure` (`--transient-failure-rate`). */
export type InjectedKind = FaultKind | 'transient-failure';

/** What a run says it injects on purpose. */
export interface InjectedFaults {
  /** The `--fault` rates (a kind with a rate of 0, or left out, is not injected). */
  readonly faults?: Readonly<Partial<Record<FaultKind, number>>>;
  /** The `--transient-failure-rate` (0 to 1). @default 0 */
  readonly transientFailureRate?: number;
}

/** Why a dead letter is not the message's own. */
export type ForeignCause =
  /** The batch commit lost to conflicts, or did not settle in its rounds (`TransactionConflict`, AWS transaction conflicts). */
  | 'contention'
  /** AWS refused a call for its rate (`ProvisionedThroughputExceededException`, `ThrottlingException`, …). */
  | 'throttling'
  /** An AWS service failed (5xx: `InternalServerError`, `ServiceUnavailable`, …). */
  | 'service-error'
  /** A call or the invocation ran out of time, or the network failed (`TimeoutError`, `ECONNRESET`, …). */
  | 'timeout-or-network'
  /** The library's own error (`NotAttempted`, Powertools idempotency, the dead-letter writer). */
  | 'library'
  /** AWS refused a request as invalid or not allowed, or a resource is missing (`ValidationException`, `ResourceNotFoundException`, …). */
  | 'aws-refused'
  /** The run's own injected transient failure (`InjectedTransientFailure`). */
  | 'injected'
  /** No reason: the queue's redrive policy moved it. */
  | 'no-reason'
  /** `RetriesExhausted` without a last error. */
  | 'unknown';

/** How a foreign error name is judged: its cause, and the injected kinds that produce it. */
export interface ForeignErrorType {
  readonly cause: ForeignCause;
  /** The kinds of injected fault that produce this error; empty: no injected fault excuses it. */
  readonly injectedBy: readonly InjectedKind[];
}

const entry = (cause: ForeignCause, ...injectedBy: InjectedKind[]): ForeignErrorType => ({ cause, injectedBy });

/**
 * The error names (`errorType`) that are not the consumer's own, with what they mean and which
 * injected faults produce them. Exact, case-sensitive names; Powertools' idempotency errors
 * (`Idempotency…Error`) are matched by `foreignErrorType` as well.
 */
export const foreignErrorTypes: ReadonlyMap<string, ForeignErrorType> = new Map<string, ForeignErrorType>([
  // The library's contention and rounds: the engine folds lost commits, throttled reads and
  // batches that did not settle into TransactionConflict.
  ['TransactionConflict', entry('contention', 'transaction-conflict', 'throttle')],
  ['TransactionCanceledException', entry('contention', 'transaction-conflict')],
  ['TransactionConflictException', entry('contention', 'transaction-conflict')],
  ['TransactionInProgressException', entry('contention')],
  // Throttling (DynamoDB, SQS, S3, KMS).
  ['ProvisionedThroughputExceededException', entry('throttling', 'throttle')],
  ['ThrottlingException', entry('throttling', 'throttle')],
  ['RequestThrottled', entry('throttling', 'throttle')],
  ['RequestLimitExceeded', entry('throttling', 'throttle')],
  ['Throttling', entry('throttling', 'throttle')],
  ['TooManyRequestsException', entry('throttling', 'throttle')],
  ['SlowDown', entry('throttling')],
  ['KMSThrottlingException', entry('throttling')],
  // AWS service failures (5xx).
  ['InternalServerError', entry('service-error', 'dynamodb-5xx')],
  ['InternalFailure', entry('service-error', 'sqs-5xx')],
  ['ServiceUnavailable', entry('service-error', 'dynamodb-5xx', 'sqs-5xx')],
  ['ServiceUnavailableException', entry('service-error')],
  ['InternalError', entry('service-error')],
  ['InternalServerErrorException', entry('service-error')],
  // Time and network.
  ['TimeoutError', entry('timeout-or-network')],
  ['RequestTimeout', entry('timeout-or-network')],
  ['RequestTimeoutException', entry('timeout-or-network')],
  ['AbortError', entry('timeout-or-network')],
  ['InvocationStoppedError', entry('timeout-or-network')],
  ['NetworkingError', entry('timeout-or-network')],
  ['ECONNRESET', entry('timeout-or-network')],
  ['ECONNREFUSED', entry('timeout-or-network')],
  ['ETIMEDOUT', entry('timeout-or-network')],
  ['EPIPE', entry('timeout-or-network')],
  // The library's own errors.
  ['NotAttempted', entry('library')],
  ['IdempotencyAlreadyInProgressError', entry('library')],
  ['IdempotencyPersistenceLayerError', entry('library', 'throttle', 'transaction-conflict', 'dynamodb-5xx')],
  ['DeadLetterTooLargeError', entry('library')],
  ['DeadLetterSendError', entry('library', 'sqs-5xx', 'throttle')],
  ['InvalidFailureReasonError', entry('library')],
  ['EnvironmentError', entry('library')],
  // AWS refused the request.
  ['ValidationException', entry('aws-refused')],
  ['ResourceNotFoundException', entry('aws-refused')],
  ['AccessDeniedException', entry('aws-refused')],
  ['UnrecognizedClientException', entry('aws-refused')],
  ['QueueDoesNotExist', entry('aws-refused')],
  ['AWS.SimpleQueueService.NonExistentQueue', entry('aws-refused')],
  ['NoSuchBucket', entry('aws-refused')],
  // The run's own injected failure.
  [INJECTED_TRANSIENT_FAILURE, entry('injected', 'transient-failure')],
]);

/**
 * How an error name is judged, when it is not the consumer's own: an entry of
 * {@link foreignErrorTypes}, or any other Powertools idempotency error (`Idempotency…Error`,
 * the library's). `undefined`: the consumer's own error.
 *
 * @example
 * foreignErrorType('TransactionConflict');   // { cause: 'contention', injectedBy: ['transaction-conflict', 'throttle'] }
 * foreignErrorType('PredecessorNotApplied'); // undefined: the consumer's own
 */
export function foreignErrorType(errorType: string): ForeignErrorType | undefined {
  return foreignErrorTypes.get(errorType) ?? (/^Idempotency\w*Error$/.test(errorType) ? entry('library') : undefined);
}

/** What is known of one dead letter: its reason and its last error's name. */
export interface DeadLetterFacts {
  /** The failure reason; `undefined` when the queue's redrive policy moved it (no reason). */
  readonly reason: string | undefined;
  /** The last error's `name` (`ic.errorType`); `undefined` when unknown. */
  readonly errorType: string | undefined;
}

/** The verdict on one dead letter. */
export type DeadLetterJudgement =
  | {
      /** The message's own: its data, or the consumer's own verdict or code. Passes the check. */
      readonly verdict: 'own';
      /** `message`: a non-retryable reason; `consumer-code`: `RetriesExhausted` after the consumer's own error. */
      readonly cause: 'message' | 'consumer-code';
      readonly explanation: string;
    }
  | {
      /** Not the message's own, but produced by a fault the run injects on purpose. Passes the check, with a note. */
      readonly verdict: 'excused';
      readonly cause: ForeignCause;
      readonly explanation: string;
      /** The injected kinds the run declared that produce it. */
      readonly excusedBy: readonly InjectedKind[];
    }
  | {
      /** Not the message's own: fails the check. */
      readonly verdict: 'not-own';
      readonly cause: ForeignCause;
      readonly explanation: string;
    };

const causeText: Readonly<Record<ForeignCause, string>> = {
  contention: "contention or rounds of the library's batch commit, not the message's data nor the consumer's code",
  throttling: 'AWS throttled a call',
  'service-error': 'an AWS service failed (5xx)',
  'timeout-or-network': 'a call or the invocation ran out of time, or the network failed',
  library: "the library's own error",
  'aws-refused': 'AWS refused a request (invalid, not allowed, or a missing resource)',
  injected: "the run's injected transient failure",
  'no-reason': "no reason: the queue's redrive policy moved it (crashes, timeouts or failed dead-letter sends used up its receives)",
  unknown: 'its retries ran out with no last error recorded',
};

/** The injected kinds the run declares (a rate above 0). */
export function declaredKinds(injected: InjectedFaults): InjectedKind[] {
  const kinds: InjectedKind[] = Object.entries(injected.faults ?? {})
    .filter(([, rate]) => typeof rate === 'number' && rate > 0)
    .map(([kind]) => kind as FaultKind);
  if ((injected.transientFailureRate ?? 0) > 0) kinds.push('transient-failure');
  return kinds;
}

/**
 * Judges one dead letter by the rule of this module: the message's own (`own`), not its own but
 * produced by a fault the run declared (`excused`), or not its own (`not-own`, which fails the
 * local run's check).
 *
 * @param deadLetter - its reason and last error's name (from the DLQ's `ic.*` attributes, else the outcome)
 * @param injected - what the run injects on purpose (`--fault`, `--transient-failure-rate`)
 * @example
 * judgeDeadLetter({ reason: 'ValidationError', errorType: 'ValidationError' }, {});            // { verdict: 'own', cause: 'message', … }
 * judgeDeadLetter({ reason: 'RetriesExhausted', errorType: 'PredecessorNotApplied' }, {});      // { verdict: 'own', cause: 'consumer-code', … }
 * judgeDeadLetter({ reason: 'RetriesExhausted', errorType: 'TransactionConflict' }, {});        // { verdict: 'not-own', cause: 'contention', … }
 * judgeDeadLetter({ reason: 'RetriesExhausted', errorType: 'TransactionConflict' }, { faults: { 'transaction-conflict': 0.05 } });
 * //                                                                                            // { verdict: 'excused', excusedBy: ['transaction-conflict'], … }
 */
export function judgeDeadLetter(deadLetter: DeadLetterFacts, injected: InjectedFaults): DeadLetterJudgement {
  const declared = declaredKinds(injected);
  const foreign = (cause: ForeignCause, producedBy: readonly InjectedKind[], detail: string): DeadLetterJudgement => {
    const excusedBy = producedBy.filter((kind) => declared.includes(kind));
    const explanation = `${detail}: ${causeText[cause]}`;
    return excusedBy.length > 0 ? { verdict: 'excused', cause, explanation, excusedBy } : { verdict: 'not-own', cause, explanation };
  };
  const { reason, errorType } = deadLetter;
  if (reason === undefined || reason === '') {
    return foreign(
      'no-reason',
      declared.filter((kind) => kind !== 'transient-failure'),
      'moved without a reason',
    );
  }
  if (reason !== RETRIES_EXHAUSTED)
    return {
      verdict: 'own',
      cause: 'message',
      explanation: `${reason}: the message can never apply as it is (its data, or the consumer's own verdict)`,
    };
  if (errorType === undefined || errorType === '') return foreign('unknown', [], `${RETRIES_EXHAUSTED}, last error unknown`);
  const known = foreignErrorType(errorType);
  if (known === undefined)
    return { verdict: 'own', cause: 'consumer-code', explanation: `${RETRIES_EXHAUSTED} after ${errorType}: the consumer's own error` };
  return foreign(known.cause, known.injectedBy, `${RETRIES_EXHAUSTED} after ${errorType}`);
}
