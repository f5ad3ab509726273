import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  kafkaBatchResponse,
  readKafkaBatchResponse,
  topicPartition,
} from '../../packages/idempotent-consumer/src/batch/kafkaBatchResponse.js';

/** The offsets of a batch: orders-0 has 10..13, orders-1 has 5..6. */
const batch = { 'orders-0': [{ offset: 10 }, { offset: 11 }, { offset: 12 }, { offset: 13 }], 'orders-1': [{ offset: 5 }, { offset: 6 }] };

describe('kafkaBatchResponse: the response a Kafka handler returns', () => {
  it('case C8: writes exactly the AWS format, partition as "<topic>-<partition>" and offset as a number', () => {
    const response = kafkaBatchResponse([{ topic: 'orders', partition: 0, offset: 12 }]);
    expect(JSON.stringify(response)).toBe('{"batchItemFailures":[{"itemIdentifier":{"partition":"orders-0","offset":12}}]}');
  });

  it('writes full success as an empty list', () => {
    expect(JSON.stringify(kafkaBatchResponse([]))).toBe('{"batchItemFailures":[]}');
  });

  it('keeps dashes of the topic name: the partition number is what follows the last dash', () => {
    expect(topicPartition('cafe-orders-v2', 11)).toBe('cafe-orders-v2-11');
  });
});

describe('readKafkaBatchResponse: the response as the event source mapping reads it', () => {
  it.each([
    ['null', null],
    ['undefined (no return value)', undefined],
    ['an empty object', {}],
    ['an empty list', { batchItemFailures: [] }],
    ['a null list', { batchItemFailures: null }],
    [
      'a wrongly cased key (the failures it lists are lost, as for SQS)',
      { BatchItemFailures: [{ itemIdentifier: { partition: 'orders-0', offset: 12 } }] },
    ],
  ])('treats %s as full success', (_, response) => {
    expect(readKafkaBatchResponse(response, batch)).toEqual({ kind: 'success' });
  });

  it('resumes each reported partition from its lowest reported offset', () => {
    const verdict = readKafkaBatchResponse(
      {
        batchItemFailures: [
          { itemIdentifier: { partition: 'orders-0', offset: 13 } },
          { itemIdentifier: { partition: 'orders-0', offset: 11 } },
          { itemIdentifier: { partition: 'orders-1', offset: 6 } },
        ],
      },
      batch,
    );
    expect(verdict).toEqual({
      kind: 'partial',
      resumeAt: new Map([
        ['orders-0', 11],
        ['orders-1', 6],
      ]),
    });
  });

  it.each([
    ['a partition not in the batch', { batchItemFailures: [{ itemIdentifier: { partition: 'orders-7', offset: 12 } }] }, /orders-7/],
    ['an offset not in the batch', { batchItemFailures: [{ itemIdentifier: { partition: 'orders-0', offset: 99 } }] }, /offset 99/],
    ['an offset as a string', { batchItemFailures: [{ itemIdentifier: { partition: 'orders-0', offset: '12' } }] }, /offset "12"/],
    ['the partition as a number', { batchItemFailures: [{ itemIdentifier: { partition: 0, offset: 12 } }] }, /partition 0/],
    ['an SQS-style string identifier', { batchItemFailures: [{ itemIdentifier: 'orders-0@12' }] }, /itemIdentifier/],
    ['a null identifier', { batchItemFailures: [{ itemIdentifier: null }] }, /itemIdentifier/],
    [
      'a wrongly cased identifier key',
      { batchItemFailures: [{ ItemIdentifier: { partition: 'orders-0', offset: 12 } }] },
      /itemIdentifier/,
    ],
    ['an item that is not an object', { batchItemFailures: ['orders-0'] }, /itemIdentifier/],
    ['a list that is not a list', { batchItemFailures: { partition: 'orders-0', offset: 12 } }, /not a list/],
    ['a response that is not an object', 'ok', /not a JSON object/],
    ['a response that is a list', [], /not a JSON object/],
  ])('fails the whole batch for %s', (_, response, reason) => {
    const verdict = readKafkaBatchResponse(response, batch);
    expect(verdict.kind).toBe('failure');
    expect(verdict.kind === 'failure' && verdict.reason).toMatch(reason);
  });

  it('reads back what kafkaBatchResponse writes: each partition resumes at its lowest failed offset (property)', () => {
    const records = fc.uniqueArray(fc.record({ partition: fc.integer({ min: 0, max: 3 }), offset: fc.integer({ min: 0, max: 50 }) }), {
      selector: (r) => `${r.partition}@${r.offset}`,
      minLength: 1,
      maxLength: 30,
    });
    fc.assert(
      fc.property(records, fc.array(fc.nat()), (all, picks) => {
        const eventBatch: Record<string, { offset: number }[]> = {};
        for (const r of all) (eventBatch[topicPartition('orders', r.partition)] ??= []).push({ offset: r.offset });
        const failed = picks.map((i) => all[i % all.length]!).map((r) => ({ topic: 'orders', ...r }));

        const verdict = readKafkaBatchResponse(JSON.parse(JSON.stringify(kafkaBatchResponse(failed))), eventBatch);

        const expected = new Map<string, number>();
        for (const r of failed) {
          const key = topicPartition('orders', r.partition);
          expected.set(key, Math.min(expected.get(key) ?? r.offset, r.offset));
        }
        expect(verdict).toEqual(expected.size === 0 ? { kind: 'success' } : { kind: 'partial', resumeAt: expected });
      }),
    );
  });
});
