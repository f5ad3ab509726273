import { describe, expect, it } from 'vitest';
import { FailureReason } from '../../packages/idempotent-consumer/src/dlq/failureReasons.js';
import {
  declaredKinds,
  foreignErrorType,
  foreignErrorTypes,
  INJECTED_TRANSIENT_FAILURE,
  judgeDeadLetter,
} from '../../packages/local/src/deadLetterCause.js';

const none = {};

describe('judgeDeadLetter: whose fault a dead letter is', () => {
  it.each([
    FailureReason.ValidationError,
    FailureReason.MissingIdempotencyKey,
    FailureReason.IdempotencyConflict,
    FailureReason.UnknownMessageType,
    FailureReason.BusinessRuleViolation,
    FailureReason.ConditionalWriteFailed,
    FailureReason.InvalidWrite,
    'OutOfStock', // a user's own NonRetryableError
    'inventory.reserve', // a user's classifyError reason
  ])('a non-retryable reason (%s) is the message own', (reason) => {
    expect(judgeDeadLetter({ reason, errorType: reason }, none)).toMatchObject({ verdict: 'own', cause: 'message' });
  });

  it('a non-retryable reason stays the message own whatever the error name behind it', () => {
    expect(judgeDeadLetter({ reason: 'Throttled', errorType: 'ThrottlingException' }, none)).toMatchObject({
      verdict: 'own',
      cause: 'message',
    });
  });

  it.each(['PredecessorNotApplied', 'DownstreamUnavailable', 'Error', 'TypeError', 'ConsumerDefinitionError'])(
    'RetriesExhausted after the consumer own error (%s) is the message own',
    (errorType) => {
      expect(judgeDeadLetter({ reason: 'RetriesExhausted', errorType }, none)).toMatchObject({ verdict: 'own', cause: 'consumer-code' });
    },
  );

  it.each([
    ['TransactionConflict', 'contention'],
    ['TransactionCanceledException', 'contention'],
    ['NotAttempted', 'library'],
    ['IdempotencyAlreadyInProgressError', 'library'],
    ['IdempotencyPersistenceLayerError', 'library'],
    ['IdempotencyInconsistentStateError', 'library'],
    ['ProvisionedThroughputExceededException', 'throttling'],
    ['ThrottlingException', 'throttling'],
    ['RequestThrottled', 'throttling'],
    ['InternalServerError', 'service-error'],
    ['ServiceUnavailable', 'service-error'],
    ['TimeoutError', 'timeout-or-network'],
    ['InvocationStoppedError', 'timeout-or-network'],
    ['ResourceNotFoundException', 'aws-refused'],
    [INJECTED_TRANSIENT_FAILURE, 'injected'],
  ] as const)('RetriesExhausted after %s is not the message own (%s) and fails the check', (errorType, cause) => {
    const judgement = judgeDeadLetter({ reason: 'RetriesExhausted', errorType }, none);
    expect(judgement).toMatchObject({ verdict: 'not-own', cause });
    expect(judgement.explanation).toContain(`RetriesExhausted after ${errorType}`);
  });

  it('the issue: "the batch did not settle" (TransactionConflict) with a downstream that never failed is not the message own', () => {
    const judgement = judgeDeadLetter({ reason: 'RetriesExhausted', errorType: 'TransactionConflict' }, { transientFailureRate: 0.05 });
    expect(judgement.verdict).toBe('not-own');
    expect(judgement.explanation).toMatch(/contention or rounds of the library's batch commit/);
  });

  it('RetriesExhausted without a last error, and a dead letter without a reason (redrive policy), are not the message own', () => {
    expect(judgeDeadLetter({ reason: 'RetriesExhausted', errorType: undefined }, none)).toMatchObject({
      verdict: 'not-own',
      cause: 'unknown',
    });
    expect(judgeDeadLetter({ reason: undefined, errorType: undefined }, none)).toMatchObject({ verdict: 'not-own', cause: 'no-reason' });
  });

  describe('excused only by the kind of fault the run declares', () => {
    it('TransactionConflict: by --fault transaction-conflict or throttle, not by 5xx nor transient failures', () => {
      const conflict = { reason: 'RetriesExhausted', errorType: 'TransactionConflict' };
      expect(judgeDeadLetter(conflict, { faults: { 'transaction-conflict': 0.05 } })).toEqual(
        expect.objectContaining({ verdict: 'excused', excusedBy: ['transaction-conflict'] }),
      );
      expect(judgeDeadLetter(conflict, { faults: { throttle: 0.02 } })).toEqual(
        expect.objectContaining({ verdict: 'excused', excusedBy: ['throttle'] }),
      );
      expect(judgeDeadLetter(conflict, { faults: { 'sqs-5xx': 0.1, 'dynamodb-5xx': 0.1 }, transientFailureRate: 0.5 }).verdict).toBe(
        'not-own',
      );
    });

    it('a rate of 0 declares nothing', () => {
      expect(
        judgeDeadLetter({ reason: 'RetriesExhausted', errorType: 'TransactionConflict' }, { faults: { 'transaction-conflict': 0 } })
          .verdict,
      ).toBe('not-own');
    });

    it('throttling by --fault throttle; 5xx by the service it names', () => {
      expect(judgeDeadLetter({ reason: 'RetriesExhausted', errorType: 'ThrottlingException' }, { faults: { throttle: 0.1 } }).verdict).toBe(
        'excused',
      );
      expect(
        judgeDeadLetter({ reason: 'RetriesExhausted', errorType: 'InternalServerError' }, { faults: { 'dynamodb-5xx': 0.1 } }).verdict,
      ).toBe('excused');
      expect(
        judgeDeadLetter({ reason: 'RetriesExhausted', errorType: 'InternalServerError' }, { faults: { 'sqs-5xx': 0.1 } }).verdict,
      ).toBe('not-own');
      expect(judgeDeadLetter({ reason: 'RetriesExhausted', errorType: 'InternalFailure' }, { faults: { 'sqs-5xx': 0.1 } }).verdict).toBe(
        'excused',
      );
    });

    it('the injected transient failure by --transient-failure-rate only', () => {
      const transient = { reason: 'RetriesExhausted', errorType: INJECTED_TRANSIENT_FAILURE }; // the name runLocal's InjectedTransientFailure carries
      expect(judgeDeadLetter(transient, { transientFailureRate: 0.05 })).toEqual(
        expect.objectContaining({ verdict: 'excused', excusedBy: ['transient-failure'] }),
      );
      expect(judgeDeadLetter(transient, { faults: { throttle: 1 } }).verdict).toBe('not-own');
    });

    it('a dead letter without a reason by any --fault, not by transient failures', () => {
      expect(judgeDeadLetter({ reason: undefined, errorType: undefined }, { faults: { 'sqs-5xx': 0.1 } })).toEqual(
        expect.objectContaining({ verdict: 'excused', excusedBy: ['sqs-5xx'] }),
      );
      expect(judgeDeadLetter({ reason: undefined, errorType: undefined }, { transientFailureRate: 0.05 }).verdict).toBe('not-own');
    });

    it('never: NotAttempted, the library errors, timeouts, refused requests', () => {
      const everything = { faults: { throttle: 1, 'transaction-conflict': 1, 'dynamodb-5xx': 1, 'sqs-5xx': 1 }, transientFailureRate: 1 };
      for (const errorType of [
        'NotAttempted',
        'DeadLetterTooLargeError',
        'TimeoutError',
        'ValidationException',
        'TransactionInProgressException',
      ]) {
        expect(judgeDeadLetter({ reason: 'RetriesExhausted', errorType }, everything).verdict, errorType).toBe('not-own');
      }
    });

    it('own dead letters stay own whatever the run injects', () => {
      expect(judgeDeadLetter({ reason: 'RetriesExhausted', errorType: 'PredecessorNotApplied' }, { faults: { throttle: 1 } }).verdict).toBe(
        'own',
      );
    });
  });
});

describe('foreignErrorType and declaredKinds', () => {
  it('knows the library and AWS names, and any Powertools idempotency error; not the consumer own names', () => {
    expect(foreignErrorType('TransactionConflict')).toEqual({ cause: 'contention', injectedBy: ['transaction-conflict', 'throttle'] });
    expect(foreignErrorType('IdempotencyKeyError')?.cause).toBe('library');
    expect(foreignErrorType('IdempotencyConflict')).toBeUndefined(); // the library's non-retryable reason, never a last error of RetriesExhausted
    expect(foreignErrorType('PredecessorNotApplied')).toBeUndefined();
    expect(foreignErrorType('transactionconflict')).toBeUndefined(); // exact names
  });

  it('lists only names that no consumer error of the library carries', () => {
    for (const name of ['ValidationError', 'PredecessorNotApplied', 'BusinessRuleViolation', 'ConsumerDefinitionError'])
      expect(foreignErrorTypes.has(name), name).toBe(false);
  });

  it('declares the kinds with a rate above 0, and transient failures', () => {
    expect(declaredKinds({})).toEqual([]);
    expect(declaredKinds({ faults: { throttle: 0.1, 'sqs-5xx': 0 }, transientFailureRate: 0.05 })).toEqual([
      'throttle',
      'transient-failure',
    ]);
  });
});
