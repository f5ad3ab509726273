import type { DynamoDBStreamEvent, KinesisStreamEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { PollerIdleTimeoutError } from '../../packages/local/src/errors.js';
import { appendInput } from '../../packages/local/src/streams/appendInput.js';
import { jsonToAttribute, ShardLog } from '../../packages/local/src/streams/ShardLog.js';
import {
  StreamEventSourcePoller,
  type StreamEventSourcePollerOptions,
  type StreamOnFailureRecord,
} from '../../packages/local/src/streams/StreamEventSourcePoller.js';

const T0 = 1_767_268_800_000;

/** A one-shard Kinesis log holding `bodies`. */
function kinesisLog(bodies: readonly string[], shards = 1): ShardLog {
  const log = new ShardLog({ kind: 'kinesis', name: 'orders', shards, now: () => T0 });
  for (const body of bodies) log.appendData('O-1', body);
  return log;
}

/** A poller whose handler answers with `respond(event, invocation)`; it records every event's bodies. */
function pollerWith(
  log: ShardLog,
  respond: (event: KinesisStreamEvent, invocation: number) => unknown,
  options: Partial<StreamEventSourcePollerOptions> = {},
) {
  const batches: string[][] = [];
  const onFailure: StreamOnFailureRecord[] = [];
  const poller = new StreamEventSourcePoller({
    log,
    createHandler: () => async (event: KinesisStreamEvent) => {
      batches.push(event.Records.map((r) => Buffer.from(r.kinesis.data, 'base64').toString('utf8')));
      return respond(event, batches.length);
    },
    batchSize: 10,
    retryAttempts: 2,
    onFailure: (record) => void onFailure.push(record),
    ...(options as object),
  });
  return { poller, batches, onFailure };
}

const failAt = (event: KinesisStreamEvent, index: number) => ({
  batchItemFailures: event.Records.slice(index).map((r) => ({ itemIdentifier: r.kinesis.sequenceNumber })),
});

describe('ShardLog', () => {
  it('places a partition key on one shard, with growing sequence numbers and Kinesis event ids', () => {
    const log = new ShardLog({ kind: 'kinesis', name: 'orders', shards: 4, now: () => T0 });
    const a = log.appendData('O-1', 'a');
    const b = log.appendData('O-1', 'b');
    expect(b.shard).toBe(a.shard);
    expect(a.sequenceNumber).toHaveLength(56);
    expect(BigInt(b.sequenceNumber) > BigInt(a.sequenceNumber)).toBe(true);
    expect(a.eventId).toBe(`${a.shardId}:${a.sequenceNumber}`);
    expect(log.arn).toBe('arn:aws:kinesis:us-east-1:000000000000:stream/orders');
    const shards = new Set(Array.from({ length: 200 }, (_, i) => log.shardFor(`key-${i}`)));
    expect(shards).toEqual(new Set([0, 1, 2, 3]));
  });

  it('refuses what a stream refuses', () => {
    expect(() => new ShardLog({ kind: 'kinesis', name: 'x', shards: 0 })).toThrow(RangeError);
    expect(() => kinesisLog([]).appendData('', 'x')).toThrow(RangeError);
    expect(() => kinesisLog([]).appendItem('k', {}, {})).toThrow(/DynamoDB stream/);
  });

  it('writes DynamoDB items: the image in DynamoDB JSON, keyed by the ordering key and the idempotency key field', () => {
    const log = new ShardLog({ kind: 'dynamodb-streams', name: 'events', shards: 2, now: () => T0 });
    const body = '{"eventId":"e-1","orderId":"O-1","points":3,"tags":["a"],"paid":true,"note":null}';
    const [sent, poison] = appendInput(
      log,
      [
        { line: 1, body },
        { line: 2, body: 'not-json' },
      ],
      { orderingKeyOf: (m) => (m.line === 1 ? 'O-1' : undefined), idempotencyKeyField: 'eventId' },
    );
    const [record] = log.read(log.shardFor('O-1'), 0, 1);
    expect(record?.keys).toEqual({ orderId: { S: 'O-1' }, eventId: { S: 'e-1' } });
    expect(record?.newImage).toEqual((jsonToAttribute(JSON.parse(body)) as { M: unknown }).M);
    expect(sent).toEqual({ messageId: record?.eventId, line: 1, body: JSON.stringify(record?.newImage) });
    expect(JSON.parse(poison!.body)).toEqual({ body: { S: 'not-json' } });
    expect(record?.sequenceNumber).toHaveLength(21);
  });
});

describe('StreamEventSourcePoller', () => {
  it('checkpoints past a batch that succeeded, one shard per batch', async () => {
    const log = kinesisLog(['a', 'b'], 1);
    log.appendData('other-key-placed-elsewhere', 'c');
    const { poller, batches } = pollerWith(log, () => ({ batchItemFailures: [] }));
    await poller.runUntilIdle();
    expect(batches.flat().sort()).toEqual(['a', 'b', 'c']);
    expect(poller.lag()).toBe(0);
  });

  it('resumes a shard from the lowest reported sequence number, with what follows it', async () => {
    const log = kinesisLog(['a', 'b', 'c', 'd']);
    const { poller, batches } = pollerWith(log, (event, n) => (n === 1 ? failAt(event, 2) : null), { batchSize: 3 });
    await poller.runUntilIdle();
    expect(batches).toEqual([
      ['a', 'b', 'c'],
      ['c', 'd'],
    ]);
  });

  it('retries the whole batch on a function error or an unknown identifier', async () => {
    const log = kinesisLog(['a', 'b']);
    const { poller, batches } = pollerWith(log, (_event, n) => {
      if (n === 1) throw new Error('boom');
      if (n === 2) return { batchItemFailures: [{ itemIdentifier: 'not-a-sequence-number' }] };
      return {};
    });
    await poller.runUntilIdle();
    expect(batches).toEqual([
      ['a', 'b'],
      ['a', 'b'],
      ['a', 'b'],
    ]);
  });

  it('gives up after retryAttempts + 1 invocations from the same record: metadata only to onFailure, then moves on', async () => {
    const log = kinesisLog(['a', 'b', 'c']);
    const { poller, batches, onFailure } = pollerWith(log, (event) =>
      event.Records.length === 2 || event.Records.length === 3 ? failAt(event, event.Records.length - 2) : null,
    );
    await poller.runUntilIdle();
    expect(batches).toEqual([
      ['a', 'b', 'c'],
      ['b', 'c'],
      ['b', 'c'],
    ]);
    expect(onFailure).toHaveLength(1);
    const [first, , last] = log.read(0, 0, 3);
    expect(onFailure[0]).toMatchObject({
      requestContext: { condition: 'RetryAttemptsExhausted', approximateInvokeCount: 3 },
      KinesisBatchInfo: { shardId: first?.shardId, batchSize: 2, endSequenceNumber: last?.sequenceNumber, streamArn: log.arn },
    });
    expect(poller.lag()).toBe(0);
  });

  it('sends DynamoDB Streams events with INSERT records and NEW_IMAGE', async () => {
    const log = new ShardLog({ kind: 'dynamodb-streams', name: 'events', shards: 1, now: () => T0 });
    log.appendItem('O-1', { orderId: { S: 'O-1' } }, { orderId: { S: 'O-1' }, n: { N: '1' } });
    const events: DynamoDBStreamEvent[] = [];
    const poller = new StreamEventSourcePoller({ log, createHandler: () => async (event: DynamoDBStreamEvent) => void events.push(event) });
    await poller.runUntilIdle();
    expect(events[0]?.Records[0]).toMatchObject({
      eventName: 'INSERT',
      eventSource: 'aws:dynamodb',
      eventSourceARN: log.arn,
      dynamodb: {
        Keys: { orderId: { S: 'O-1' } },
        NewImage: { n: { N: '1' } },
        StreamViewType: 'NEW_IMAGE',
        ApproximateCreationDateTime: T0 / 1000,
      },
    });
  });

  it('refuses infinite retries and stops at its limits', async () => {
    expect(() => pollerWith(kinesisLog([]), () => null, { retryAttempts: -1 })).toThrow(/finite/);
    const { poller } = pollerWith(
      kinesisLog(['a']),
      () => {
        throw new Error('always');
      },
      { retryAttempts: 10_000 },
    );
    await expect(poller.runUntilIdle({ maxInvocations: 3 })).rejects.toBeInstanceOf(PollerIdleTimeoutError);
  });
});

describe('StreamEventSourcePoller: filter criteria (settings.stream.filters)', () => {
  it('skips the Kinesis records no pattern matches, never invoking them, and invokes the others in order', async () => {
    const bodies = [
      '{"type":"a","n":1}',
      '{"type":"b","n":2}',
      'not json',
      '{"type":"a","n":3}',
      '{"type":"b","n":4}',
      '{"type":"a","n":5}',
    ];
    const { poller, batches } = pollerWith(kinesisLog(bodies), () => ({ batchItemFailures: [] }), {
      filters: [{ data: { type: ['a'] } }],
    });
    await poller.runUntilIdle();
    // Each invocation holds records that pass, contiguous; what does not pass is never invoked.
    expect(batches.flat()).toEqual(['{"type":"a","n":1}', '{"type":"a","n":3}', '{"type":"a","n":5}']);
    expect(poller.lag()).toBe(0);
  });

  it('retries a filtered batch from the failed record without invoking the filtered ones', async () => {
    const bodies = ['{"type":"a","n":1}', '{"type":"a","n":2}', '{"type":"b","n":3}'];
    const { poller, batches } = pollerWith(kinesisLog(bodies), (event, invocation) => (invocation === 1 ? failAt(event, 1) : {}), {
      filters: [{ data: { type: ['a'] } }],
    });
    await poller.runUntilIdle();
    expect(batches).toEqual([['{"type":"a","n":1}', '{"type":"a","n":2}'], ['{"type":"a","n":2}']]);
  });

  it('matches a DynamoDB Streams pattern against the record: eventName and the new image in DynamoDB JSON', async () => {
    const log = new ShardLog({ kind: 'dynamodb-streams', name: 'events', shards: 1, now: () => T0 });
    log.appendItem('O-1', { id: { S: '1' } }, { id: { S: '1' }, type: { S: 'Paid' } });
    log.appendItem('O-1', { id: { S: '2' } }, { id: { S: '2' }, type: { S: 'Placed' } });
    const seen: string[] = [];
    const poller = new StreamEventSourcePoller({
      log,
      createHandler: () => async (event: DynamoDBStreamEvent) => {
        for (const record of event.Records) seen.push(record.dynamodb?.NewImage?.id?.S ?? '?');
        return { batchItemFailures: [] };
      },
      filters: [{ eventName: ['INSERT'], dynamodb: { NewImage: { type: { S: ['Paid'] } } } }],
    });
    await poller.runUntilIdle();
    expect(seen).toEqual(['1']);
  });

  it('refuses a pattern outside Lambda’s grammar at its start', () => {
    expect(
      () =>
        new StreamEventSourcePoller({
          log: kinesisLog([]),
          createHandler: () => async () => ({}),
          filters: [{ data: [{ wildcard: 'a*' } as never] }],
        }),
    ).toThrow(/wildcard/);
  });
});
