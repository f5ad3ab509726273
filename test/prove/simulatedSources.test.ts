/**
 * The proof suite's yardsticks, checked on their own: the in-memory SQS queue and Kafka topic
 * must behave as the sources do (receive counts, visibility, FIFO group order, the redrive
 * policy; committed offsets, both readings of the retry rule, the retry limit, rebalances),
 * the schedule reader must refuse a malformed replay clearly, and the in-order model must
 * follow the consumer's own rules. No emulator is needed.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cafeConsumerOptions } from '../../examples/cafe/consumer.js';
import { cafeWorkload } from '../../tools/prove/cafeWorkload.js';
import { parseSchedule, ScheduleError, scheduleArbitrary } from '../../tools/prove/schedule.js';
import { SimulatedKafkaTopic } from '../../tools/prove/SimulatedKafkaTopic.js';
import { SimulatedSqsQueue } from '../../tools/prove/SimulatedSqsQueue.js';
import type { VirtualClock } from '../../tools/prove/virtualClock.js';
import { inOrderModel } from '../../tools/prove/workload.js';

/** A clock of its own for each test (the suite's global one is not installed here). */
function testClock(): VirtualClock {
  let now = 1_800_000_000_000;
  return {
    now: () => now,
    advance: (ms) => {
      now += Math.max(0, ms);
    },
    advanceTo: (t) => {
      now = Math.max(now, t);
    },
    get offsetMs() {
      return now - 1_800_000_000_000;
    },
  };
}

const queue = (fifo: boolean, clock: VirtualClock, options: { maxReceiveCount?: number; staleReceiptDeletes?: boolean } = {}) =>
  new SimulatedSqsQueue({
    fifo,
    queueArn: `arn:aws:sqs:us-east-1:000000000000:q${fifo ? '.fifo' : ''}`,
    visibilityTimeoutSeconds: 180,
    maxReceiveCount: options.maxReceiveCount ?? 10,
    clock,
    seed: 1,
    staleReceiptDeletes: options.staleReceiptDeletes ?? false,
  });

describe('the simulated SQS queue', () => {
  it('hides a received message for the visibility timeout, then gives it again with the next receive count and a new receipt handle', () => {
    const clock = testClock();
    const q = queue(false, clock);
    q.send('m-1', 'body');
    const [first] = q.receive(10);
    expect(first?.attributes.ApproximateReceiveCount).toBe('1');
    expect(q.receive(10)).toEqual([]);
    clock.advance(179_999);
    expect(q.receive(10)).toEqual([]);
    clock.advance(1);
    const [second] = q.receive(10);
    expect(second?.attributes.ApproximateReceiveCount).toBe('2');
    expect(second?.receiptHandle).not.toBe(first?.receiptHandle);
  });

  it('deletes what an invocation did not report, keeps what it reported, and ignores a stale receipt handle unless told otherwise', () => {
    const clock = testClock();
    const q = queue(false, clock);
    q.send('m-1', 'a');
    q.send('m-2', 'b');
    const records = q.receive(10);
    q.acknowledge(records, new Set(['m-2']), false);
    expect(q.size).toBe(1);
    q.expireVisibility(['m-2']);
    const again = q.receive(10);
    q.acknowledge(records, new Set(), false); // the old batch's delete of m-2: stale
    expect(q.size).toBe(1);
    q.acknowledge(again, new Set(), true); // the acknowledgement is lost
    expect(q.size).toBe(1);
    q.acknowledge(again, new Set(), false);
    expect(q.drained).toBe(true);

    const lenient = queue(false, clock, { staleReceiptDeletes: true });
    lenient.send('m-3', 'c');
    const stale = lenient.receive(1);
    lenient.expireVisibility(['m-3']);
    lenient.receive(1);
    lenient.acknowledge(stale, new Set(), false);
    expect(lenient.drained).toBe(true);
  });

  it("deletes on the consumer's own DeleteMessage with the latest receipt handle; a stale one succeeds but deletes only when the schedule says so", () => {
    const clock = testClock();
    const q = queue(false, clock);
    q.send('m-1', 'a');
    const [parked] = q.receive(1);
    expect(q.deleteMessage('rh-never-given')).toBe('invalid');
    q.expireVisibility(['m-1']);
    const [again] = q.receive(1);
    expect(q.deleteMessage(parked!.receiptHandle)).toBe('not deleted');
    expect(q.size).toBe(1);
    expect(q.deleteMessage(again!.receiptHandle)).toBe('deleted');
    expect(q.drained).toBe(true);
    expect(q.deleteMessage(again!.receiptHandle)).toBe('not deleted');
    expect(q.deletedByConsumer).toBe(1);

    const lenient = queue(false, clock, { staleReceiptDeletes: true });
    lenient.send('m-2', 'b');
    const [stale] = lenient.receive(1);
    lenient.expireVisibility(['m-2']);
    lenient.receive(1);
    expect(lenient.deleteMessage(stale!.receiptHandle)).toBe('deleted');
    expect(lenient.drained).toBe(true);
  });

  it('changes the visibility of the latest receipt handle only', () => {
    const clock = testClock();
    const q = queue(false, clock);
    q.send('m-1', 'a');
    const [record] = q.receive(1);
    expect(q.changeVisibility(record!.receiptHandle, 2)).toBe(true);
    expect(q.nextVisibleAt()).toBe(clock.now() + 2_000);
    clock.advance(2_000);
    q.receive(1);
    expect(q.changeVisibility(record!.receiptHandle, 2)).toBe(false);
  });

  it('FIFO: gives a group in order, several messages per receive, and none of it while one of it is in flight', () => {
    const clock = testClock();
    const q = queue(true, clock);
    q.send('a-1', '1', 'A');
    q.send('b-1', '1', 'B');
    q.send('a-2', '2', 'A');
    q.send('a-3', '3', 'A');
    const batch = q.receive(10);
    expect(batch.filter((r) => r.attributes.MessageGroupId === 'A').map((r) => r.messageId)).toEqual(['a-1', 'a-2', 'a-3']);
    q.acknowledge(batch, new Set(['a-2', 'a-3']), false);
    expect(q.receive(10)).toEqual([]); // a-2 in flight blocks A
    clock.advance(180_000);
    expect(q.receive(10).map((r) => r.messageId)).toEqual(['a-2', 'a-3']);
  });

  it('moves a message to the dead-letter queue at the receive after its maxReceiveCount-th', () => {
    const clock = testClock();
    const q = queue(false, clock, { maxReceiveCount: 2 });
    q.send('m-1', 'a');
    q.receive(1);
    clock.advance(180_000);
    q.receive(1);
    clock.advance(180_000);
    expect(q.receive(1)).toEqual([]);
    expect(q.moved).toEqual([{ messageId: 'm-1', body: 'a', receiveCount: 2 }]);
  });
});

describe('the simulated Kafka topic', () => {
  const topic = (reading: 'resume-from-lowest-offset' | 'retry-reported-records', retryAttempts = 3) => {
    const t = new SimulatedKafkaTopic({
      topic: 'orders',
      partitions: 1,
      batchSize: 10,
      retryAttempts,
      retryReading: reading,
      clock: testClock(),
    });
    for (let i = 0; i < 4; i += 1) t.append('k', `v${i}`, 0);
    return t;
  };
  const failing = (...offsets: number[]) => ({
    kind: 'returned' as const,
    response: { batchItemFailures: offsets.map((offset) => ({ itemIdentifier: { partition: 'orders-0', offset } })) },
  });

  it('resumes a partition from its lowest reported offset', () => {
    const t = topic('resume-from-lowest-offset');
    const batch = t.poll()!;
    t.settle(batch, failing(2, 3), false);
    expect(t.poll()!.records.map((r) => r.offset)).toEqual([2, 3]);
  });

  it('retries only the reported records under the other reading', () => {
    const t = topic('retry-reported-records');
    const batch = t.poll()!;
    t.settle(batch, failing(1, 3), false);
    expect(t.poll()!.records.map((r) => r.offset)).toEqual([1, 3]);
  });

  it('gives a partition up after retryAttempts + 1 failing invocations at one offset, and keeps one batch per partition in flight', () => {
    const t = topic('resume-from-lowest-offset', 1);
    const first = t.poll()!;
    expect(t.poll()).toBeUndefined();
    t.settle(first, { kind: 'failed' }, false);
    t.settle(t.poll()!, failing(0, 1, 2, 3), false);
    expect(t.gaveUp.map((r) => r.offset)).toEqual([0, 1, 2, 3]);
    expect(t.drained).toBe(true);
  });

  it('refuses the commit of a poller whose partition was rebalanced away, and redelivers a batch whose commit was lost', () => {
    const t = topic('resume-from-lowest-offset');
    const first = t.poll()!;
    t.rebalance(first);
    const second = t.poll()!;
    t.settle(first, failing(), false);
    expect(t.drained).toBe(false);
    t.settle(second, failing(), true);
    expect(t.drained).toBe(false);
    t.settle(t.poll()!, failing(), false);
    expect(t.drained).toBe(true);
  });
});

describe('schedules and the in-order model', () => {
  it('refuses a malformed replay, naming the field', () => {
    expect(() => parseSchedule({ version: 1, source: 'sns' })).toThrow(
      new ScheduleError('schedule.source must be one of sqs, fifo, kafka, kinesis, dynamodb-streams'),
    );
    expect(() => parseSchedule('{}')).toThrow(ScheduleError);
    const [sqsSchedule] = fc.sample(scheduleArbitrary({ source: 'sqs' }), { seed: 7, numRuns: 1 });
    expect(typeof sqsSchedule!.parkOutOfOrder).toBe('boolean');
    expect(() => parseSchedule({ ...sqsSchedule, parkOutOfOrder: 'yes' })).toThrow(
      new ScheduleError('schedule.parkOutOfOrder must be true or false (or absent)'),
    );
    expect(() => parseSchedule({ ...sqsSchedule, source: 'fifo', parkOutOfOrder: true })).toThrow(
      new ScheduleError('schedule.parkOutOfOrder must be false or absent unless source is "sqs" (the park is for standard queues)'),
    );
    const [fifoSchedule] = fc.sample(scheduleArbitrary({ source: 'fifo' }), { seed: 7, numRuns: 1 });
    expect(fifoSchedule!.parkOutOfOrder).toBeUndefined();
  });

  it('applies a valid café stream in producer order, and runs out of attempts behind a malformed predecessor', () => {
    const good = cafeWorkload(
      { kind: 'cafe', orders: [{ path: 'paid-cancelled', points: 7, duplicates: [1] }], strayPoison: ['unknown-type'] },
      't',
    );
    const model = inOrderModel(good.options, good.messages);
    expect([...model.outcomes.values()].map((o) => o.kind)).toEqual(['applied', 'applied', 'applied']);
    const order = [...model.items.values()].find((item) => item.sk === 'ORDER');
    expect(order).toMatchObject({ status: 'Cancelled', pointsAwarded: 7 });
    expect(good.messages.filter((m) => m.role === 'poison').map((m) => m.expectedReason)).toEqual(['UnknownMessageType']);

    const blocked = cafeWorkload(
      { kind: 'cafe', orders: [{ path: 'shipped', points: 1, duplicates: [], poisonAt: 0, poisonKind: 'not-json' }], strayPoison: [] },
      't',
    );
    expect([...inOrderModel(blocked.options, blocked.messages).outcomes.values()]).toEqual([
      { kind: 'dead-lettered', reason: 'RetriesExhausted' },
      { kind: 'dead-lettered', reason: 'RetriesExhausted' },
    ]);
    expect(blocked.options.decide).toBe(cafeConsumerOptions.decide);
  });
});
