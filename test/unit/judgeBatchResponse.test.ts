import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { judgeBatchResponse } from '../../packages/local/src/judgeBatchResponse.js';
import type { InvocationOutcome } from '../../packages/local/src/judgeBatchResponse.js';

const batch = ['m-1', 'm-2', 'm-3'] as const;
const returned = (response: unknown): InvocationOutcome => ({ kind: 'returned', response });

describe('judgeBatchResponse', () => {
  describe('a valid partial batch response (C5)', () => {
    it('leaves exactly the reported message when the response is {"batchItemFailures":[{"itemIdentifier":"m-2"}]}', () => {
      // Arrange
      const response: unknown = JSON.parse('{"batchItemFailures":[{"itemIdentifier":"m-2"}]}');

      // Act
      const judgement = judgeBatchResponse(returned(response), batch);

      // Assert
      expect(judgement.kind).toBe('partial');
      expect(judgement.failedIds).toEqual(['m-2']);
    });

    it('lists failed ids once each, in batch order, whatever the order and repeats of the response', () => {
      const response = { batchItemFailures: [{ itemIdentifier: 'm-3' }, { itemIdentifier: 'm-1' }, { itemIdentifier: 'm-3' }] };

      const judgement = judgeBatchResponse(returned(response), batch);

      expect(judgement).toMatchObject({ kind: 'partial', failedIds: ['m-1', 'm-3'] });
    });

    it('ignores keys beside itemIdentifier in an entry', () => {
      const response = { batchItemFailures: [{ itemIdentifier: 'm-2', reason: 'retryable' }] };

      const judgement = judgeBatchResponse(returned(response), batch);

      expect(judgement).toMatchObject({ kind: 'partial', failedIds: ['m-2'] });
    });

    it('calls the batch all-failed when every message is reported', () => {
      const response = { batchItemFailures: batch.map((itemIdentifier) => ({ itemIdentifier })) };

      const judgement = judgeBatchResponse(returned(response), batch);

      expect(judgement).toMatchObject({ kind: 'all-failed', failedIds: [...batch] });
    });
  });

  describe('responses AWS treats as a complete success', () => {
    it.each([
      ['undefined (no return value)', undefined],
      ['null', null],
      ['an empty object {}', {}],
      ['an empty list {"batchItemFailures":[]}', { batchItemFailures: [] }],
      ['a null list {"batchItemFailures":null}', { batchItemFailures: null }],
      ['an object without the key', { statusCode: 200 }],
    ])('deletes every message for %s', (_label, response) => {
      const judgement = judgeBatchResponse(returned(response), batch);

      expect(judgement.kind).toBe('all-succeeded');
      expect(judgement.failedIds).toEqual([]);
    });

    it.each([
      ['BatchItemFailures', { BatchItemFailures: [{ itemIdentifier: 'm-2' }] }],
      ['batchitemfailures', { batchitemfailures: [{ itemIdentifier: 'm-2' }] }],
      ['BATCHITEMFAILURES', { BATCHITEMFAILURES: [{ itemIdentifier: 'm-2' }] }],
    ])('loses the failures of a wrong key case (%s): the whole batch counts as a success', (key, response) => {
      const judgement = judgeBatchResponse(returned(response), batch);

      expect(judgement.kind).toBe('all-succeeded');
      expect(judgement.failedIds).toEqual([]);
      expect(judgement.reason).toContain(key);
      expect(judgement.reason).toContain('lost');
    });
  });

  describe('responses AWS treats as a complete failure', () => {
    it.each([
      ['an entry with the key ItemIdentifier', { batchItemFailures: [{ ItemIdentifier: 'm-2' }] }],
      ['an entry without itemIdentifier', { batchItemFailures: [{}] }],
      ['an entry whose itemIdentifier is undefined (dropped by JSON)', { batchItemFailures: [{ itemIdentifier: undefined }] }],
      ['an empty itemIdentifier', { batchItemFailures: [{ itemIdentifier: '' }] }],
      ['a null itemIdentifier', { batchItemFailures: [{ itemIdentifier: null }] }],
      ['an unknown itemIdentifier', { batchItemFailures: [{ itemIdentifier: 'm-404' }] }],
      ['a receipt handle instead of the messageId', { batchItemFailures: [{ itemIdentifier: 'rh-2' }] }],
      ['a number itemIdentifier', { batchItemFailures: [{ itemIdentifier: 2 }] }],
      ['an object itemIdentifier (the Kafka shape)', { batchItemFailures: [{ itemIdentifier: { partition: 'orders-0', offset: 2 } }] }],
      ['a bare string entry', { batchItemFailures: ['m-2'] }],
      ['a batchItemFailures that is not a list', { batchItemFailures: 'm-2' }],
      ['one invalid entry after a valid one', { batchItemFailures: [{ itemIdentifier: 'm-2' }, { itemIdentifier: '' }] }],
      ['a string response', 'OK'],
      ['a list response', [{ itemIdentifier: 'm-2' }]],
    ])('replays every message for %s', (_label, response) => {
      const judgement = judgeBatchResponse(returned(response), batch);

      expect(judgement.kind).toBe('all-failed');
      expect(judgement.failedIds).toEqual([...batch]);
    });

    it('replays every message when the response cannot be serialized to JSON', () => {
      const response = { batchItemFailures: [{ itemIdentifier: 'm-2', attempt: 1n }] };

      const judgement = judgeBatchResponse(returned(response), batch);

      expect(judgement).toMatchObject({ kind: 'all-failed', failedIds: [...batch] });
      expect(judgement.reason).toContain('serialized');
    });

    it('replays every message when the handler threw', () => {
      const judgement = judgeBatchResponse({ kind: 'threw', error: new TypeError('boom') }, batch);

      expect(judgement).toMatchObject({ kind: 'all-failed', failedIds: [...batch] });
      expect(judgement.reason).toContain('TypeError: boom');
    });

    it('replays every message when the invocation ran past the function timeout', () => {
      const judgement = judgeBatchResponse({ kind: 'timed-out', timeoutSeconds: 30 }, batch);

      expect(judgement).toMatchObject({ kind: 'all-failed', failedIds: [...batch] });
      expect(judgement.reason).toContain('30 s');
    });
  });

  describe('invariants', () => {
    const messageIds = fc.uniqueArray(fc.string({ minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 10 });

    it('never reports an id outside the batch, and all-succeeded exactly when nothing is left', () => {
      fc.assert(
        fc.property(messageIds, fc.jsonValue(), (ids, response) => {
          const judgement = judgeBatchResponse(returned(response), ids);

          expect(judgement.failedIds.every((id) => ids.includes(id))).toBe(true);
          expect(judgement.kind === 'all-succeeded').toBe(judgement.failedIds.length === 0);
          expect(judgement.kind === 'all-failed').toBe(judgement.failedIds.length === ids.length);
        }),
      );
    });

    it('leaves exactly the reported subset when every identifier is a messageId of the batch', () => {
      fc.assert(
        fc.property(
          messageIds.chain((ids) => fc.tuple(fc.constant(ids), fc.subarray(ids))),
          ([ids, reported]) => {
            const response = { batchItemFailures: reported.map((itemIdentifier) => ({ itemIdentifier })) };

            const judgement = judgeBatchResponse(returned(response), ids);

            expect(judgement.failedIds).toEqual(ids.filter((id) => reported.includes(id)));
          },
        ),
      );
    });
  });
});
