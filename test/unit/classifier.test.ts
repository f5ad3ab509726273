import { describe, expect, it, vi } from 'vitest';
import { classify } from '../../packages/idempotent-consumer/src/classifier.js';
import {
  BusinessRuleViolation,
  ConditionalWriteFailed,
  IdempotencyConflict,
  InvalidWrite,
  MissingIdempotencyKey,
  NonRetryableError,
  NotAttempted,
  PredecessorNotApplied,
  RetryableError,
  TransactionConflict,
  UnknownMessageType,
  ValidationError,
} from '../../packages/idempotent-consumer/src/errors.js';

const awsError = (name: string, status: number) =>
  Object.assign(new Error(`${name} happened`), { name, $metadata: { httpStatusCode: status } });

class OutOfStock extends NonRetryableError {}
class StockLedgerBehind extends RetryableError {}

describe('classify: the one place that decides', () => {
  it.each([
    [new ValidationError('bad'), 'ValidationError'],
    [new MissingIdempotencyKey('no key'), 'MissingIdempotencyKey'],
    [new IdempotencyConflict('e-1', 'aaa', 'bbb'), 'IdempotencyConflict'],
    [new UnknownMessageType('OrderRefunded'), 'UnknownMessageType'],
    [new BusinessRuleViolation('never'), 'BusinessRuleViolation'],
    [new ConditionalWriteFailed('taken'), 'ConditionalWriteFailed'],
    [new InvalidWrite('too big'), 'InvalidWrite'],
  ])('dead-letters %s at once with its reason', (error, reason) => {
    expect(classify(error)).toEqual({ retryable: false, reason, errorType: reason, errorMessage: error.message, countsAsAttempt: true });
  });

  it('marks a wait for a predecessor (PredecessorNotApplied and its subclasses) so that it may be parked, and no other retryable error', () => {
    class ReservationNotKnownYet extends PredecessorNotApplied {}
    expect(classify(new PredecessorNotApplied('order not placed yet'))).toMatchObject({ retryable: true, waitsForPredecessor: true });
    expect(classify(new ReservationNotKnownYet('r-1'))).toMatchObject({ retryable: true, waitsForPredecessor: true });
    expect(classify(new StockLedgerBehind('later'))).not.toHaveProperty('waitsForPredecessor');
    expect(classify(new TransactionConflict('lost'))).not.toHaveProperty('waitsForPredecessor');
    expect(classify(awsError('ThrottlingException', 400))).not.toHaveProperty('waitsForPredecessor');
  });

  it("takes a user's reason from the subclass name, or from the reason it was given", () => {
    expect(classify(new OutOfStock('sku-1 has 0 left'))).toMatchObject({ retryable: false, reason: 'OutOfStock' });
    expect(classify(new BusinessRuleViolation('x', { cause: 1 }))).toMatchObject({ reason: 'BusinessRuleViolation' });
    class Minified extends NonRetryableError {
      constructor() {
        super('renamed by a bundler', { reason: 'Quota exceeded!' });
      }
    }
    expect(classify(new Minified()).reason).toBe('Quota_exceeded_');
  });

  it.each([
    ['a predecessor not applied', new PredecessorNotApplied('wait')],
    ['a transaction conflict', new TransactionConflict('conflict')],
    ["a user's retryable error", new StockLedgerBehind('later')],
    ['throttling', awsError('ProvisionedThroughputExceededException', 400)],
    ['a 5xx', awsError('InternalServerError', 500)],
    ['a network timeout', Object.assign(new Error('socket hang up'), { name: 'TimeoutError' })],
    ['an unknown error', new TypeError('x is undefined')],
    ['a thrown string', 'boom'],
  ])('retries %s, counting an attempt', (_what, error) => {
    expect(classify(error)).toMatchObject({ retryable: true, reason: undefined, countsAsAttempt: true });
  });

  it("retries a side-effect lock held elsewhere without counting an attempt, not before the lock's expiry", () => {
    const error = Object.assign(new Error('in progress'), {
      name: 'IdempotencyAlreadyInProgressError',
      existingRecord: { inProgressExpiryTimestamp: 1_767_268_830_000 },
    });
    expect(classify(error)).toMatchObject({ retryable: true, countsAsAttempt: false, retryAt: 1_767_268_830_000 });
    expect(classify(new NotAttempted('too late'))).toMatchObject({ retryable: true, countsAsAttempt: false });
  });

  it("asks the user's classifyError about errors it does not know, and ignores one that throws", () => {
    const error = Object.assign(new Error('card declined'), { name: 'CardDeclined' });
    expect(
      classify(error, (e) => (e instanceof Error && e.name === 'CardDeclined' ? { retryable: false, reason: 'CardDeclined' } : undefined)),
    ).toMatchObject({ retryable: false, reason: 'CardDeclined' });
    expect(
      classify(error, () => {
        throw new Error('bug');
      }),
    ).toMatchObject({ retryable: true });
  });

  it('caps the error message at 1,024 characters', () => {
    expect(classify(new Error('x'.repeat(5000))).errorMessage).toHaveLength(1024);
  });
});

describe('errors from another copy of the library', () => {
  // A second copy (a bundle beside a tool, a loader's namespace) has its own classes: `instanceof`
  // says no, the marks say yes, and the classifier must treat its errors as the library's.
  it('classifies a non-retryable error of another copy as non-retryable, with its reason', async () => {
    vi.resetModules();
    const copy = await import('../../packages/idempotent-consumer/src/errors.js');
    class OutOfStock extends copy.NonRetryableError {
      constructor(message: string) {
        super(message);
        this.name = 'OutOfStock';
      }
    }
    const error = new OutOfStock('sku A has 0 left');
    expect(error instanceof NonRetryableError).toBe(false);
    expect(classify(error)).toMatchObject({ retryable: false, reason: 'OutOfStock', countsAsAttempt: true });
  });

  it('classifies NotAttempted of another copy as not counting an attempt', async () => {
    vi.resetModules();
    const copy = await import('../../packages/idempotent-consumer/src/errors.js');
    const error = new copy.NotAttempted('lock held', 1234);
    expect(error instanceof NotAttempted).toBe(false);
    expect(classify(error)).toMatchObject({ retryable: true, countsAsAttempt: false, retryAt: 1234 });
  });

  it('leaves a plain error with a retryable flag of its own to the default rule', () => {
    const lookalike = Object.assign(new Error('x'), { retryable: false, reason: 'Fake' });
    expect(classify(lookalike)).toMatchObject({ retryable: true, countsAsAttempt: true });
  });
});
