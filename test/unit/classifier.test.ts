import { describe, expect, it } from 'vitest';
import { classify } from '../../lambda/classifier.js';
import {
  BusinessRuleViolation,
  IdempotencyConflict,
  MissingIdempotencyKey,
  PredecessorNotApplied,
  TransactionConflict,
  UnknownMessageType,
  ValidationError,
} from '../../lambda/errors.js';

const awsError = (name: string, status: number) =>
  Object.assign(new Error(`${name} happened`), { name, $metadata: { httpStatusCode: status }, $fault: status >= 500 ? 'server' : 'client' });

describe('classify', () => {
  it.each([
    [new ValidationError('bad'), 'ValidationError'],
    [new MissingIdempotencyKey('no key'), 'MissingIdempotencyKey'],
    [new IdempotencyConflict('e-1', 'aaa', 'bbb'), 'IdempotencyConflict'],
    [new UnknownMessageType('OrderRefunded'), 'UnknownMessageType'],
    [new BusinessRuleViolation('never'), 'BusinessRuleViolation'],
  ])('dead-letters %s at once, with its name as the reason', (error, reason) => {
    const verdict = classify(error, { attempt: 1, maxAttempts: 5 });
    expect(verdict).toEqual({ disposition: 'dead-letter', reason, errorType: reason, errorMessage: error.message });
  });

  it.each([
    ['a predecessor not applied', new PredecessorNotApplied('wait')],
    ['a transaction conflict', new TransactionConflict('conflict')],
    ['throttling', awsError('ProvisionedThroughputExceededException', 400)],
    ['a 5xx', awsError('InternalServerError', 500)],
    ['a network timeout', Object.assign(new Error('socket hang up'), { name: 'TimeoutError' })],
    ['a side-effect lock held elsewhere', Object.assign(new Error('in progress'), { name: 'IdempotencyAlreadyInProgressError' })],
    ['an unknown error', new TypeError('x is undefined')],
    ['a thrown string', 'boom'],
  ])('retries %s before the last attempt', (_what, error) => {
    const verdict = classify(error, { attempt: 4, maxAttempts: 5 });
    expect(verdict.disposition).toBe('retry');
    expect(verdict.reason).toBeUndefined();
  });

  it('dead-letters a retryable failure on the last attempt as RetriesExhausted, keeping the last error', () => {
    const verdict = classify(awsError('ThrottlingException', 400), { attempt: 5, maxAttempts: 5 });
    expect(verdict).toEqual({
      disposition: 'dead-letter',
      reason: 'RetriesExhausted',
      errorType: 'ThrottlingException',
      errorMessage: 'ThrottlingException happened',
    });
  });

  it('treats a receive count above the maximum as the last attempt too', () => {
    expect(classify(new PredecessorNotApplied('wait'), { attempt: 7, maxAttempts: 5 }).reason).toBe('RetriesExhausted');
  });

  it('retries without an attempt count (sources that do not count)', () => {
    expect(classify(new TransactionConflict('c')).disposition).toBe('retry');
  });
});
