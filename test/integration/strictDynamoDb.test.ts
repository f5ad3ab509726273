import { randomUUID } from 'node:crypto';
import {
  BatchGetItemCommand,
  BatchWriteItemCommand,
  CreateTableCommand,
  DeleteTableCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  TransactGetItemsCommand,
  TransactWriteItemsCommand,
  TransactionCanceledException,
} from '@aws-sdk/client-dynamodb';
import type { TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { localCredentials } from '../../packages/local/src/localClientConfig.js';
import { ConflictTracker, installStrictDynamoDb } from '../../packages/local/src/aws/strictDynamoDb.js';
import { itemIdentity } from '../../packages/local/src/aws/dynamoDbRules.js';
import { awsEndpoints } from '../support/awsEndpoints.js';
import { describeUnlessDeployedStack } from '../support/testResources.js';

const describe = describeUnlessDeployedStack(
  "creates tables and queues of its own on the run's endpoints (without IC_OUTPUTS_FILE it runs against LocalStack, AWS_ENDPOINT_URL alone)",
);

/**
 * The strict DynamoDB layer against DynamoDB Local: each rule it adds is refused through the
 * layer and shown accepted (or answered otherwise) by DynamoDB Local alone; each rule DynamoDB
 * Local already enforces is shown refused, so an upgrade that drops one is noticed.
 */
const endpoints = awsEndpoints();
const newClient = () =>
  new DynamoDBClient({
    endpoint: endpoints.dynamoDbEndpoint,
    region: endpoints.region,
    credentials: { ...localCredentials },
    maxAttempts: 1,
  });
const table = `strict-${randomUUID().slice(0, 8)}`;
const tracker = new ConflictTracker();
let strict: DynamoDBClient;
let plain: DynamoDBClient;

beforeAll(async () => {
  strict = newClient();
  installStrictDynamoDb(strict, { conflictTracker: tracker });
  plain = newClient();
  await plain.send(
    new CreateTableCommand({
      TableName: table,
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
    }),
  );
});
afterAll(async () => {
  await plain?.send(new DeleteTableCommand({ TableName: table }));
  strict?.destroy();
  plain?.destroy();
});

const key = (pk: string) => ({ pk: { S: pk } });
const put = (pk: string, extra: Record<string, { S: string }> = {}): TransactWriteItem => ({
  Put: { TableName: table, Item: { ...key(pk), ...extra } },
});
const conditionCheck = (pk: string, condition: string): TransactWriteItem => ({
  ConditionCheck: { TableName: table, Key: key(pk), ConditionExpression: condition },
});
const increment = (pk: string): TransactWriteItem => ({
  Update: { TableName: table, Key: key(pk), UpdateExpression: 'ADD n :one', ExpressionAttributeValues: { ':one': { N: '1' } } },
});

/** `{ name, message, reasons }` of the error a call fails with, or `undefined` when it succeeds. */
async function outcome(call: Promise<unknown>): Promise<{ name: string; message: string; reasons?: string[] } | undefined> {
  try {
    await call;
    return undefined;
  } catch (error) {
    const reasons =
      error instanceof TransactionCanceledException ? error.CancellationReasons?.map((reason) => reason.Code ?? '') : undefined;
    return { name: (error as Error).name, message: (error as Error).message, ...(reasons ? { reasons } : {}) };
  }
}

const stored = async (pk: string) => (await plain.send(new GetItemCommand({ TableName: table, Key: key(pk), ConsistentRead: true }))).Item;

describe('the strict DynamoDB layer', () => {
  describe('one action per item in a transaction', () => {
    it('refuses a Put and a ConditionCheck of one item as AWS does; DynamoDB Local alone reports a failed condition instead', async () => {
      const items = [put('dup-1'), conditionCheck('dup-1', 'attribute_not_exists(pk)')];

      const throughLayer = await outcome(strict.send(new TransactWriteItemsCommand({ TransactItems: items })));
      const alone = await outcome(plain.send(new TransactWriteItemsCommand({ TransactItems: items })));

      expect(throughLayer).toEqual({
        name: 'ValidationException',
        message: 'Transaction request cannot include multiple operations on one item',
      });
      expect(alone).toMatchObject({ name: 'TransactionCanceledException', reasons: ['None', 'ConditionalCheckFailed'] });
      expect(await stored('dup-1')).toBeUndefined();
    });

    it.each([
      ['an Update and a Delete', [increment('dup-2'), { Delete: { TableName: table, Key: key('dup-2') } }]],
      ['a ConditionCheck and a Put', [conditionCheck('dup-3', 'attribute_not_exists(pk)'), put('dup-3')]],
      ['two Puts among other items', [put('other-a'), put('dup-4'), put('other-b'), put('dup-4')]],
    ] as Array<[string, TransactWriteItem[]]>)('refuses %s of one item', async (_what, items) => {
      expect(await outcome(strict.send(new TransactWriteItemsCommand({ TransactItems: items })))).toMatchObject({
        name: 'ValidationException',
        message: 'Transaction request cannot include multiple operations on one item',
      });
    });

    it('accepts one action per item', async () => {
      expect(
        await outcome(strict.send(new TransactWriteItemsCommand({ TransactItems: [put('one-a'), put('one-b'), increment('one-c')] }))),
      ).toBeUndefined();
      expect(await stored('one-c')).toEqual({ pk: { S: 'one-c' }, n: { N: '1' } });
    });
  });

  describe('transaction conflicts', () => {
    it('cancels a TransactWriteItems whose item an ongoing transaction holds, naming it in the reasons', async () => {
      const release = tracker.hold([itemIdentity(table, key('held-1'))!], 'transaction');
      try {
        const conflict = await outcome(strict.send(new TransactWriteItemsCommand({ TransactItems: [put('free-1'), increment('held-1')] })));

        expect(conflict).toEqual({
          name: 'TransactionCanceledException',
          message: 'Transaction cancelled, please refer cancellation reasons for specific reasons [None, TransactionConflict]',
          reasons: ['None', 'TransactionConflict'],
        });
        expect(await stored('free-1')).toBeUndefined();
      } finally {
        release();
      }
      expect(
        await outcome(strict.send(new TransactWriteItemsCommand({ TransactItems: [put('free-1'), increment('held-1')] }))),
      ).toBeUndefined();
    });

    it('fails a PutItem of an item an ongoing transaction holds with TransactionConflictException', async () => {
      const release = tracker.hold([itemIdentity(table, key('held-2'))!], 'transaction');
      try {
        const conflict = await outcome(strict.send(new PutItemCommand({ TableName: table, Item: { ...key('held-2'), v: { S: 'x' } } })));

        expect(conflict).toEqual({ name: 'TransactionConflictException', message: 'Transaction is ongoing for the item' });
        expect(await stored('held-2')).toBeUndefined();
      } finally {
        release();
      }
    });

    it('cancels a TransactGetItems of an item being written', async () => {
      const release = tracker.hold([itemIdentity(table, key('held-3'))!], 'write');
      try {
        const conflict = await outcome(
          strict.send(new TransactGetItemsCommand({ TransactItems: [{ Get: { TableName: table, Key: key('held-3') } }] })),
        );
        expect(conflict).toMatchObject({ name: 'TransactionCanceledException', reasons: ['TransactionConflict'] });
      } finally {
        release();
      }
    });

    it('makes some of 40 overlapping transactions on one item conflict, where DynamoDB Local alone runs them all', async () => {
      // All 40 are sent in one turn of the event loop: the first holds the item while DynamoDB
      // Local works on it, so the others arrive while it is ongoing.
      const overlapping = (client: DynamoDBClient, pk: string) =>
        Promise.all(
          Array.from({ length: 40 }, (_, i) =>
            outcome(client.send(new TransactWriteItemsCommand({ TransactItems: [increment(pk), put(`${pk}-${i}`)] }))),
          ),
        );

      const throughLayer = await overlapping(strict, 'hot-strict');
      const alone = await overlapping(plain, 'hot-plain');

      const succeeded = throughLayer.filter((result) => result === undefined).length;
      expect(succeeded).toBeGreaterThanOrEqual(1);
      expect(throughLayer.filter((result) => result?.reasons?.[0] === 'TransactionConflict').length).toBe(40 - succeeded);
      expect((await stored('hot-strict'))?.['n']).toEqual({ N: String(succeeded) });
      expect(alone.every((result) => result === undefined)).toBe(true);
      expect(tracker.size).toBe(0);
    });
  });

  describe('rules DynamoDB Local enforces itself', () => {
    type Call = (client: DynamoDBClient) => Promise<unknown>;
    it.each([
      [
        '101 actions in a transaction',
        (c) => c.send(new TransactWriteItemsCommand({ TransactItems: Array.from({ length: 101 }, (_, i) => put(`many-${i}`)) })),
        /length less than or equal to 100/,
      ],
      [
        '101 items in a TransactGetItems',
        (c) =>
          c.send(
            new TransactGetItemsCommand({
              TransactItems: Array.from({ length: 101 }, (_, i) => ({ Get: { TableName: table, Key: key(`g-${i}`) } })),
            }),
          ),
        /length less than or equal to 100/,
      ],
      [
        'a transaction over 4 MB',
        (c) =>
          c.send(
            new TransactWriteItemsCommand({
              TransactItems: Array.from({ length: 11 }, (_, i) => put(`big-${i}`, { d: { S: 'x'.repeat(390_000) } })),
            }),
          ),
        /Transaction payload size cannot exceed 4MB/,
      ],
      [
        'an item over 400 KB',
        (c) => c.send(new PutItemCommand({ TableName: table, Item: { ...key('huge'), d: { S: 'x'.repeat(409_600) } } })),
        /Item size has exceeded the maximum allowed size/,
      ],
      [
        'an empty string key',
        (c) => c.send(new PutItemCommand({ TableName: table, Item: key('') })),
        /key attribute cannot contain an empty string value/,
      ],
      [
        'two Gets of one item',
        (c) =>
          c.send(
            new TransactGetItemsCommand({
              TransactItems: [{ Get: { TableName: table, Key: key('g') } }, { Get: { TableName: table, Key: key('g') } }],
            }),
          ),
        /multiple operations on one item/,
      ],
      [
        '101 keys in a BatchGetItem',
        (c) =>
          c.send(new BatchGetItemCommand({ RequestItems: { [table]: { Keys: Array.from({ length: 101 }, (_, i) => key(`k-${i}`)) } } })),
        /Too many items requested for the BatchGetItem call/,
      ],
      [
        'a key twice in a BatchGetItem',
        (c) => c.send(new BatchGetItemCommand({ RequestItems: { [table]: { Keys: [key('k'), key('k')] } } })),
        /Provided list of item keys contains duplicates/,
      ],
      [
        '26 items in a BatchWriteItem',
        (c) =>
          c.send(
            new BatchWriteItemCommand({
              RequestItems: { [table]: Array.from({ length: 26 }, (_, i) => ({ PutRequest: { Item: key(`w-${i}`) } })) },
            }),
          ),
        /Too many items requested for the BatchWriteItem call/,
      ],
      [
        'an unused expression attribute value',
        (c) =>
          c.send(
            new PutItemCommand({
              TableName: table,
              Item: key('u'),
              ConditionExpression: 'attribute_not_exists(pk)',
              ExpressionAttributeValues: { ':x': { S: 'x' } },
            }),
          ),
        /unused in expressions/,
      ],
      [
        'a number of 39 digits',
        (c) => c.send(new PutItemCommand({ TableName: table, Item: { ...key('n'), n: { N: '1'.repeat(39) } } })),
        /precision up to 38 digits/,
      ],
    ] as Array<[string, Call, RegExp]>)('refuses %s', async (_what, call, message) => {
      const result = await outcome(call(plain));
      expect(result?.name).toBe('ValidationException');
      expect(result?.message).toMatch(message);
    });

    it('refuses a ClientRequestToken reused for another transaction (IdempotentParameterMismatchException) and answers a retry of the same one', async () => {
      const token = randomUUID();
      const send = (pk: string) =>
        plain.send(
          new TransactWriteItemsCommand({
            ClientRequestToken: token,
            TransactItems: [{ Put: { TableName: table, Item: key(pk), ConditionExpression: 'attribute_not_exists(pk)' } }],
          }),
        );

      await send('token-a');
      const retry = await outcome(send('token-a'));
      const other = await outcome(send('token-b'));

      expect(retry).toBeUndefined(); // the second, identical request is answered, not run again (its condition would fail)
      expect(other?.name).toBe('IdempotentParameterMismatchException');
    });

    it('answers a BatchGetItem over 16 MB in part, with the rest in UnprocessedKeys', async () => {
      const big = 'x'.repeat(400_000);
      for (let start = 0; start < 50; start += 25) {
        await plain.send(
          new BatchWriteItemCommand({
            RequestItems: {
              [table]: Array.from({ length: 25 }, (_, i) => ({ PutRequest: { Item: { ...key(`heavy-${start + i}`), d: { S: big } } } })),
            },
          }),
        );
      }

      const { Responses = {}, UnprocessedKeys = {} } = await plain.send(
        new BatchGetItemCommand({ RequestItems: { [table]: { Keys: Array.from({ length: 50 }, (_, i) => key(`heavy-${i}`)) } } }),
      );

      const returned = Responses[table]?.length ?? 0;
      expect(returned).toBeGreaterThan(0);
      expect(returned).toBeLessThan(50);
      expect(returned + (UnprocessedKeys[table]?.Keys?.length ?? 0)).toBe(50);
    });
  });
});
