import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backoffSeconds } from '../../lambda/batch/retryBackoff.js';
import { serializeByKey } from '../../lambda/batch/serializeByKey.js';
import { sqsDelivery, toSendMessageAttributes } from '../../lambda/batch/sqsDelivery.js';
import { sqsRecord } from '../support/sqsEvents.js';

describe('serializeByKey', () => {
  it('runs tasks of one key in submission order and never two at once (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.constantFrom('a', 'b', 'c'), fc.nat({ max: 5 })), { maxLength: 30 }), async (tasks) => {
        const run = serializeByKey();
        const started: Record<string, number[]> = {};
        const running: Record<string, number> = {};
        let overlap = false;
        await Promise.all(
          tasks.map(([key, delay], index) =>
            run(key, async () => {
              running[key] = (running[key] ?? 0) + 1;
              if ((running[key] ?? 0) > 1) overlap = true;
              (started[key] ??= []).push(index);
              await new Promise((resolve) => setTimeout(resolve, delay));
              running[key] = (running[key] ?? 1) - 1;
            }),
          ),
        );
        expect(overlap).toBe(false);
        for (const order of Object.values(started)) expect(order).toEqual([...order].sort((x, y) => x - y));
      }),
      { numRuns: 50 },
    );
  });

  it('goes on with the next task of a key after one fails', async () => {
    const run = serializeByKey();
    const first = run('k', async () => {
      throw new Error('first');
    });
    const second = run('k', async () => 'second');
    await expect(first).rejects.toThrow('first');
    await expect(second).resolves.toBe('second');
  });
});

describe('backoffSeconds', () => {
  it('doubles from the base by receive count, up to the maximum', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => backoffSeconds(n, 2, 60))).toEqual([2, 4, 8, 16, 32, 60, 60]);
  });

  it('is 0 when the base is 0, and never above SQS maximum', () => {
    expect(backoffSeconds(3, 0, 60)).toBe(0);
    expect(backoffSeconds(100, 10, 1_000_000)).toBe(43_200);
  });
});

describe('sqsDelivery', () => {
  it('takes the attempt from ApproximateReceiveCount and keeps group and attributes for the DLQ', () => {
    const record = sqsRecord('m-1', '{}', { receiveCount: 3, groupId: 'O-1' });
    record.messageAttributes = {
      traceId: { dataType: 'String', stringValue: 't-1', stringListValues: [], binaryListValues: [] },
      blob: { dataType: 'Binary', binaryValue: Buffer.from([1, 2]).toString('base64'), stringListValues: [], binaryListValues: [] },
    };
    const delivery = sqsDelivery(record, 5);
    expect(delivery.attempt).toEqual({ attempt: 3, maxAttempts: 5 });
    expect(delivery.message).toEqual({ body: '{}', messageId: 'm-1' });
    expect(delivery.deadLetter.messageGroupId).toBe('O-1');
    expect(delivery.deadLetter.source).toBe(record.eventSourceARN);
    expect(delivery.deadLetter.originalAttributes?.traceId).toEqual({ DataType: 'String', StringValue: 't-1' });
    expect([...(delivery.deadLetter.originalAttributes?.blob?.BinaryValue ?? [])]).toEqual([1, 2]);
  });

  it('converts no attributes to none', () => {
    expect(toSendMessageAttributes(undefined)).toEqual({});
    expect(sqsDelivery(sqsRecord('m-2', '{}'), 5).deadLetter.originalAttributes).toBeUndefined();
  });
});
