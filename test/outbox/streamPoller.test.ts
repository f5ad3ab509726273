/**
 * The local DynamoDB Stream event source against DynamoDB Local's streams: order and batch size,
 * the filter, partial batch responses by sequence number, bisect on error, finite retries with an
 * on-failure record, timeouts; and the two pure rules it applies (response judgement, filter).
 */
import { randomUUID } from 'node:crypto';
import { CreateTableCommand, DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, expect, it } from 'vitest';
import { outboxFilterPattern } from '../../packages/idempotent-consumer/src/outbox/outboxStreamRecords.js';
import {
  DynamoDbStreamEventSourcePoller,
  type DynamoDbStreamOnFailureRecord,
  type LocalStreamHandler,
} from '../../packages/local/src/outbox/DynamoDbStreamEventSourcePoller.js';
import { judgeStreamBatchResponse } from '../../packages/local/src/outbox/judgeStreamBatchResponse.js';
import { matchesFilterPattern, UnsupportedFilterRuleError } from '../../packages/local/src/outbox/matchesFilterPattern.js';
import { clients, CONSUMER, crash, hook } from './outboxHarness.js';
import { describeUnlessDeployedStack } from '../support/testResources.js';

const describe = describeUnlessDeployedStack('an inbox table with a stream of its own');

describe('judgeStreamBatchResponse (AWS rules for stream partial batch responses)', () => {
  const seq = ['100', '200', '300'];
  const returned = (response: unknown) => judgeStreamBatchResponse({ kind: 'returned', response }, seq);

  it('reads null, empty and missing failures as success', () => {
    for (const response of [undefined, null, {}, { batchItemFailures: [] }, { batchItemFailures: null }])
      expect(returned(response).kind).toBe('success');
  });

  it('resumes from the lowest reported sequence number, whatever the order of the list', () => {
    expect(returned({ batchItemFailures: [{ itemIdentifier: '300' }, { itemIdentifier: '200' }] })).toMatchObject({
      kind: 'partial',
      resumeIndex: 1,
    });
    expect(returned({ batchItemFailures: [{ itemIdentifier: '100' }] })).toMatchObject({ kind: 'partial', resumeIndex: 0 });
  });

  it('reads a malformed entry, or an identifier not in the batch, as a failure of the whole batch', () => {
    for (const response of [
      { batchItemFailures: [{ itemIdentifier: '' }] },
      { batchItemFailures: [{ itemIdentifier: null }] },
      { batchItemFailures: [{ ItemIdentifier: '200' }] },
      { batchItemFailures: [{ itemIdentifier: 200 }] },
      { batchItemFailures: [{ itemIdentifier: '999' }] },
      { batchItemFailures: '200' },
      'ok',
    ]) {
      expect(returned(response).kind, JSON.stringify(response)).toBe('failure');
    }
    expect(judgeStreamBatchResponse({ kind: 'threw', error: new Error('x') }, seq).kind).toBe('failure');
    expect(judgeStreamBatchResponse({ kind: 'timed-out', timeoutSeconds: 3 }, seq).kind).toBe('failure');
    expect(returned({ batchItemFailures: [], extra: 1n }).kind).toBe('failure'); // not serializable
  });
});

describe('matchesFilterPattern (equality rules of Lambda event filtering)', () => {
  const pattern = outboxFilterPattern('c-1');
  const record = (eventName: string, kind: string, consumer: string) => ({
    eventName,
    dynamodb: { NewImage: { kind: { S: kind }, consumer: { S: consumer } } },
  });

  it('keeps only the outbox inserts of the consumer', () => {
    expect(matchesFilterPattern(pattern, record('INSERT', 'outbox', 'c-1'))).toBe(true);
    expect(matchesFilterPattern(pattern, record('MODIFY', 'outbox', 'c-1'))).toBe(false);
    expect(matchesFilterPattern(pattern, record('INSERT', 'inbox', 'c-1'))).toBe(false);
    expect(matchesFilterPattern(pattern, record('INSERT', 'outbox', 'c-2'))).toBe(false);
    expect(matchesFilterPattern(pattern, { eventName: 'REMOVE', dynamodb: { Keys: {} } })).toBe(false);
  });

  it('matches a list value when one element matches, evaluates content filters, and refuses rules Lambda does not support', () => {
    expect(matchesFilterPattern({ tags: ['a'] }, { tags: ['b', 'a'] })).toBe(true);
    expect(matchesFilterPattern({ kind: [{ prefix: 'out' }] }, { kind: 'outbox' })).toBe(true);
    expect(() => matchesFilterPattern({ kind: [{ wildcard: 'out*' }] } as never, { kind: 'outbox' })).toThrow(UnsupportedFilterRuleError);
  });
});

describe('DynamoDbStreamEventSourcePoller on DynamoDB Local', () => {
  const { dynamoDb, streams } = clients();
  const tables: string[] = [];
  afterAll(async () => {
    await Promise.allSettled(tables.map((TableName) => dynamoDb.send(new DeleteTableCommand({ TableName }))));
    dynamoDb.destroy();
    streams.destroy();
  });

  /** A fresh table with a NEW_IMAGE stream; `put` writes items (keys `k-<n>`) and returns their keys. */
  async function streamTable() {
    const name = `poll-${randomUUID().slice(0, 8)}`;
    tables.push(name);
    const created = await dynamoDb.send(
      new CreateTableCommand({
        TableName: name,
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_IMAGE' },
      }),
    );
    const { DynamoDBDocumentClient } = await import('@aws-sdk/lib-dynamodb');
    const documents = DynamoDBDocumentClient.from(dynamoDb);
    return {
      streamArn: created.TableDescription!.LatestStreamArn!,
      put: async (...items: { pk: string; kind?: string }[]) => {
        for (const item of items)
          await documents.send(new PutCommand({ TableName: name, Item: { kind: 'outbox', consumer: CONSUMER, ...item } }));
      },
    };
  }

  const keysOf = (event: DynamoDBStreamEvent) => event.Records.map((record) => record.dynamodb?.Keys?.['pk']?.S);
  const items = (...keys: string[]) => keys.map((pk) => ({ pk }));

  it('delivers each shard in order, in batches of batchSize, without the records the filter drops', async () => {
    const table = await streamTable();
    await table.put(
      { pk: 'a' },
      { pk: 'x', kind: 'inbox' },
      { pk: 'b' },
      { pk: 'c' },
      { pk: 'y', kind: 'inbox' },
      { pk: 'd' },
      { pk: 'e' },
    );
    const events: DynamoDBStreamEvent[] = [];
    const poller = new DynamoDbStreamEventSourcePoller({
      streams,
      streamArn: table.streamArn,
      batchSize: 2,
      filters: [outboxFilterPattern(CONSUMER)],
      createHandler: () => (event) => void events.push(event),
    });
    expect(await poller.runUntilIdle()).toBe(3);
    expect(events.map(keysOf)).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
    const record = events[0]!.Records[0]!;
    expect(record).toMatchObject({ eventName: 'INSERT', eventSource: 'aws:dynamodb', eventSourceARN: table.streamArn });
    expect(record.dynamodb?.ApproximateCreationDateTime).toEqual(expect.any(Number));
    expect(Number(events[0]!.Records[1]!.dynamodb!.SequenceNumber)).toBeGreaterThan(Number(record.dynamodb!.SequenceNumber));

    await table.put({ pk: 'f' });
    expect(await poller.runUntilIdle()).toBe(1);
    expect(keysOf(events[3]!)).toEqual(['f']);
  });

  it('after a partial batch response, retries from the lowest reported record', async () => {
    const table = await streamTable();
    await table.put(...items('a', 'b', 'c', 'd'));
    const events: DynamoDBStreamEvent[] = [];
    let reported = false;
    const handler: LocalStreamHandler = (event) => {
      events.push(event);
      if (reported) return { batchItemFailures: [] };
      reported = true;
      return {
        batchItemFailures: [
          { itemIdentifier: event.Records[3]!.dynamodb!.SequenceNumber },
          { itemIdentifier: event.Records[1]!.dynamodb!.SequenceNumber },
        ],
      };
    };
    const poller = new DynamoDbStreamEventSourcePoller({
      streams,
      streamArn: table.streamArn,
      batchSize: 10,
      createHandler: () => handler,
    });
    await poller.runUntilIdle();
    expect(events.map(keysOf)).toEqual([
      ['a', 'b', 'c', 'd'],
      ['b', 'c', 'd'],
    ]);
  });

  it('splits a batch that fails with a function error, gives up a poison record after its retries, and goes on', async () => {
    const table = await streamTable();
    await table.put(...items('a', 'b', 'poison', 'c', 'd'));
    const events: DynamoDBStreamEvent[] = [];
    const gaveUp: DynamoDbStreamOnFailureRecord[] = [];
    const handler: LocalStreamHandler = (event) => {
      events.push(event);
      if (keysOf(event).includes('poison')) throw new Error('cannot handle poison');
      return { batchItemFailures: [] };
    };
    const poller = new DynamoDbStreamEventSourcePoller({
      streams,
      streamArn: table.streamArn,
      batchSize: 4,
      retryAttempts: 3,
      bisectBatchOnError: true,
      createHandler: () => handler,
      onFailure: (record) => void gaveUp.push(record),
    });
    await poller.runUntilIdle();
    expect(events.map(keysOf)).toEqual([['a', 'b', 'poison', 'c'], ['a', 'b'], ['poison', 'c'], ['poison'], ['poison'], ['c'], ['d']]);
    expect(gaveUp).toHaveLength(1);
    const poisonSequence = events[3]!.Records[0]!.dynamodb!.SequenceNumber;
    expect(gaveUp[0]).toMatchObject({
      requestContext: { condition: 'RetryAttemptsExhausted', approximateInvokeCount: 4 },
      responseContext: { functionError: 'Unhandled' },
      version: '1.0',
      DDBStreamBatchInfo: {
        startSequenceNumber: poisonSequence,
        endSequenceNumber: poisonSequence,
        batchSize: 1,
        streamArn: table.streamArn,
      },
    });
    expect(poller.gaveUp).toBe(1);
  });

  it('without bisect, retries the whole batch and gives up what remains of it after retryAttempts + 1 invocations', async () => {
    const table = await streamTable();
    await table.put(...items('a', 'b', 'c'));
    const events: DynamoDBStreamEvent[] = [];
    const gaveUp: DynamoDbStreamOnFailureRecord[] = [];
    const handler: LocalStreamHandler = (event) => {
      events.push(event);
      const b = event.Records.find((record) => record.dynamodb?.Keys?.['pk']?.S === 'b');
      return { batchItemFailures: b === undefined ? [] : [{ itemIdentifier: b.dynamodb!.SequenceNumber }] };
    };
    const poller = new DynamoDbStreamEventSourcePoller({
      streams,
      streamArn: table.streamArn,
      batchSize: 2,
      retryAttempts: 1,
      bisectBatchOnError: false,
      createHandler: () => handler,
      onFailure: (r) => void gaveUp.push(r),
    });
    await poller.runUntilIdle();
    expect(events.map(keysOf)).toEqual([['a', 'b'], ['b'], ['c']]);
    expect(
      gaveUp.map((record) => [
        record.DDBStreamBatchInfo.batchSize,
        record.requestContext.approximateInvokeCount,
        record.responseContext.functionError,
      ]),
    ).toEqual([[1, 2, undefined]]);
  });

  it('reads a response naming a record not in the batch as a failure of the whole batch', async () => {
    const table = await streamTable();
    await table.put(...items('a', 'b'));
    const events: DynamoDBStreamEvent[] = [];
    const handler: LocalStreamHandler = (event) => {
      events.push(event);
      return events.length === 1 ? { batchItemFailures: [{ itemIdentifier: 'not-a-sequence-number' }] } : {};
    };
    const poller = new DynamoDbStreamEventSourcePoller({
      streams,
      streamArn: table.streamArn,
      bisectBatchOnError: false,
      createHandler: () => handler,
    });
    await poller.runUntilIdle();
    expect(events.map(keysOf)).toEqual([
      ['a', 'b'],
      ['a', 'b'],
    ]);
  });

  it('abandons a handler that runs past the function timeout and retries the batch in a new execution environment', async () => {
    const table = await streamTable();
    await table.put(...items('a'));
    let environments = 0;
    const handled: number[] = [];
    const poller = new DynamoDbStreamEventSourcePoller({
      streams,
      streamArn: table.streamArn,
      functionTimeoutSeconds: 0.3,
      createHandler: () => {
        environments += 1;
        const environment = environments;
        return () => {
          handled.push(environment);
          return environment === 1 ? crash() : { batchItemFailures: [] };
        };
      },
    });
    const first = await poller.pollOnce();
    expect(first?.outcome.kind).toBe('timed-out');
    expect(first?.next).toBe('retry');
    await poller.runUntilIdle();
    expect(handled).toEqual([1, 2]);
  });

  it('runs in the background: drain() returns once everything written before it is delivered', async () => {
    const table = await streamTable();
    const delivered: string[] = [];
    const poller = new DynamoDbStreamEventSourcePoller({
      streams,
      streamArn: table.streamArn,
      idlePollIntervalMs: 20,
      createHandler: () => (event) => void delivered.push(...keysOf(event).map(String)),
    });
    await expect(poller.drain()).rejects.toThrow(/not running/);
    poller.start();
    try {
      await table.put(...items('a', 'b', 'c'));
      await poller.drain();
      expect(delivered).toEqual(['a', 'b', 'c']);
      await table.put(...items('d'));
      await poller.drain();
      expect(delivered).toEqual(['a', 'b', 'c', 'd']);
    } finally {
      await poller.stop();
    }
  });

  it('opens a new iterator after the last record read when DynamoDB refuses one (expired, or trimmed by DynamoDB Local under load)', async () => {
    const table = await streamTable();
    await table.put(...items('a', 'b'));
    const refusing = clients().streams;
    let refuse = false;
    hook(refusing, (phase, command) => {
      if (phase === 'before' && command === 'GetRecordsCommand' && refuse) {
        refuse = false;
        throw Object.assign(new Error('The operation attempted to read past the oldest stream record in a shard.'), {
          name: 'TrimmedDataAccessException',
        });
      }
    });
    const delivered: string[] = [];
    const poller = new DynamoDbStreamEventSourcePoller({
      streams: refusing,
      streamArn: table.streamArn,
      createHandler: () => (event) => void delivered.push(...keysOf(event).map(String)),
    });
    await poller.runUntilIdle();
    await table.put(...items('c', 'd'));
    refuse = true;
    await poller.runUntilIdle();
    expect(delivered).toEqual(['a', 'b', 'c', 'd']);
    expect(poller.reopenedIterators).toBe(1);
    refusing.destroy();
  });

  it('refuses infinite retries and a batch size outside 1..10000', () => {
    const base = { streams, streamArn: 'arn:aws:dynamodb:ddblocal:000000000000:table/t/stream/x', createHandler: () => () => undefined };
    expect(() => new DynamoDbStreamEventSourcePoller({ ...base, retryAttempts: -1 })).toThrow(/finite/);
    expect(() => new DynamoDbStreamEventSourcePoller({ ...base, batchSize: 0 })).toThrow(/batchSize/);
  });
});
