/**
 * The proof suite's simulated Kinesis and DynamoDB Streams shards, checked on their own: one shard
 * per batch, the checkpoint moved to the lowest reported sequence number, the retry limit, a lost
 * checkpoint, a lease moved away, the redrive mark, and the response contract check. No emulator.
 */
import type { DynamoDBStreamEvent, KinesisStreamEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { dynamoDbImageOf, SimulatedStreamShards, streamResponseProblem } from '../../tools/prove/SimulatedStreamShards.js';
import type { VirtualClock } from '../../tools/prove/virtualClock.js';

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

const shardsOf = (kind: 'kinesis' | 'dynamodb-streams', retryAttempts = 2) =>
  new SimulatedStreamShards({ kind, name: 'orders', shards: 2, batchSize: 10, retryAttempts, clock: testClock() });

const bodiesOf = (event: KinesisStreamEvent) => event.Records.map((r) => Buffer.from(r.kinesis.data, 'base64').toString('utf8'));

describe('SimulatedStreamShards', () => {
  it('delivers one shard per batch, resumes from the lowest reported sequence number, and gives up after the retries', () => {
    const shards = shardsOf('kinesis', 1);
    for (const body of ['a', 'b', 'c']) shards.append('K', body, body);
    const first = shards.poll()!;
    expect(bodiesOf(first.event as KinesisStreamEvent)).toEqual(['a', 'b', 'c']);
    expect(shards.poll()).toBeUndefined(); // the shard is in flight
    const reportFrom = (batch: typeof first, index: number) => ({
      kind: 'returned' as const,
      response: { batchItemFailures: batch.records.slice(index).map((r) => ({ itemIdentifier: r.sequenceNumber })) },
    });
    shards.settle(first, reportFrom(first, 1), false);
    const second = shards.poll()!;
    expect(bodiesOf(second.event as KinesisStreamEvent)).toEqual(['b', 'c']);
    shards.settle(second, reportFrom(second, 0), false); // 'b' failed twice: retryAttempts 1 is spent
    expect(shards.gaveUp.map((r) => r.data)).toEqual(['b', 'c']);
    expect(shards.drained).toBe(true);
  });

  it('brings a batch back when its checkpoint is lost, and refuses the checkpoint of a poller whose lease moved', () => {
    const shards = shardsOf('kinesis');
    shards.append('K', 'a', 'a');
    const batch = shards.poll()!;
    shards.settle(batch, { kind: 'returned', response: { batchItemFailures: [] } }, true);
    const again = shards.poll()!;
    expect(bodiesOf(again.event as KinesisStreamEvent)).toEqual(['a']);
    shards.rebalance(again);
    const stolen = shards.poll()!;
    shards.settle(again, { kind: 'returned', response: {} }, false);
    expect(shards.lag).toBe(1);
    shards.settle(stolen, { kind: 'returned', response: {} }, false);
    expect(shards.drained).toBe(true);
  });

  it('writes DynamoDB items and marks a redrive on its record', () => {
    const shards = shardsOf('dynamodb-streams');
    const id = shards.append('O-1', '{"eventId":"e-1","n":2}', 'm-1', 'earlier-event-id');
    const batch = shards.poll()!;
    const [record] = (batch.event as DynamoDBStreamEvent).Records;
    expect(record?.eventID).toBe(id);
    expect(record?.dynamodb?.NewImage).toEqual({ eventId: { S: 'e-1' }, n: { N: '2' } });
    expect((record as unknown as Record<string, unknown>)['ic.redrive']).toBe('earlier-event-id');
    expect(dynamoDbImageOf('"not-json"')).toEqual({ body: { S: '"not-json"' } });
  });
});

describe('streamResponseProblem', () => {
  it('accepts a response that reports the first failed record and every later one, and nothing else', () => {
    expect(streamResponseProblem({ batchItemFailures: [] }, ['1', '2'])).toBeUndefined();
    expect(
      streamResponseProblem({ batchItemFailures: [{ itemIdentifier: '2' }, { itemIdentifier: '3' }] }, ['1', '2', '3']),
    ).toBeUndefined();
    expect(streamResponseProblem({ batchItemFailures: [{ itemIdentifier: '2' }] }, ['1', '2', '3'])).toMatch(/3 follow a reported one/);
    expect(streamResponseProblem({ batchItemFailures: [{ itemIdentifier: '9' }] }, ['1'])).toMatch(/not a sequence number of the batch/);
    expect(streamResponseProblem({ batchItemFailures: [{ itemIdentifier: '1' }, { itemIdentifier: '1' }] }, ['1'])).toMatch(/twice/);
    expect(streamResponseProblem([], ['1'])).toMatch(/not an object/);
  });
});
