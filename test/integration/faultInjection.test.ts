import { randomUUID } from 'node:crypto';
import {
  CreateTableCommand,
  DeleteTableCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  TransactWriteItemsCommand,
} from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, DeleteQueueCommand, ReceiveMessageCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { installFaults } from '../../packages/local/src/faultInjection.js';
import { localCredentials } from '../../packages/local/src/localClientConfig.js';
import { awsEndpoints } from '../support/awsEndpoints.js';
import { describeUnlessDeployedStack } from '../support/testResources.js';

const describe = describeUnlessDeployedStack(
  "creates tables and queues of its own on the run's endpoints (without IC_OUTPUTS_FILE it runs against LocalStack, AWS_ENDPOINT_URL alone)",
);

/** Faults against the real servers: what reaches the store before and after an injected fault. */
const endpoints = awsEndpoints();
const common = { region: endpoints.region, credentials: { ...localCredentials }, maxAttempts: 1 };
const newDynamoDb = () => new DynamoDBClient({ ...common, endpoint: endpoints.dynamoDbEndpoint });
const newSqs = () => new SQSClient({ ...common, endpoint: endpoints.sqsEndpoint });
const table = `faults-${randomUUID().slice(0, 8)}`;
const queueName = `faults-${randomUUID().slice(0, 8)}`;
let reader: DynamoDBClient;
let sqsReader: SQSClient;
let queueUrl: string;

beforeAll(async () => {
  reader = newDynamoDb();
  sqsReader = newSqs();
  await reader.send(
    new CreateTableCommand({
      TableName: table,
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
    }),
  );
  ({ QueueUrl: queueUrl = '' } = await sqsReader.send(new CreateQueueCommand({ QueueName: queueName })));
});
afterAll(async () => {
  await reader?.send(new DeleteTableCommand({ TableName: table }));
  await sqsReader?.send(new DeleteQueueCommand({ QueueUrl: queueUrl }));
  reader?.destroy();
  sqsReader?.destroy();
});

const stored = async (pk: string) =>
  (await reader.send(new GetItemCommand({ TableName: table, Key: { pk: { S: pk } }, ConsistentRead: true }))).Item;
const errorName = (call: Promise<unknown>) =>
  call.then(
    () => undefined,
    (error: Error) => error.name,
  );

describe('fault injection against the servers', () => {
  it('fails a write before it reaches DynamoDB: the store is unchanged', async () => {
    const dynamoDb = newDynamoDb();
    installFaults(dynamoDb, { rates: { throttle: 1 }, seed: 11 });

    const name = await errorName(dynamoDb.send(new PutItemCommand({ TableName: table, Item: { pk: { S: 'before' } } })));

    expect(['ProvisionedThroughputExceededException', 'ThrottlingException']).toContain(name);
    expect(await stored('before')).toBeUndefined();
    dynamoDb.destroy();
  });

  it('cancels a transaction before it reaches DynamoDB: none of its items is written', async () => {
    const dynamoDb = newDynamoDb();
    installFaults(dynamoDb, { rates: { 'transaction-conflict': 1 }, seed: 5 });

    const name = await errorName(
      dynamoDb.send(
        new TransactWriteItemsCommand({
          TransactItems: ['t-1', 't-2'].map((pk) => ({ Put: { TableName: table, Item: { pk: { S: pk } } } })),
        }),
      ),
    );

    expect(name).toBe('TransactionCanceledException');
    expect(await stored('t-1')).toBeUndefined();
    expect(await stored('t-2')).toBeUndefined();
    dynamoDb.destroy();
  });

  it('fails a write after DynamoDB applied it (after: 1): the caller sees a 5xx, the item is there', async () => {
    const dynamoDb = newDynamoDb();
    const injector = installFaults(dynamoDb, { rates: { 'dynamodb-5xx': 1 }, seed: 2, after: 1 });

    const name = await errorName(dynamoDb.send(new PutItemCommand({ TableName: table, Item: { pk: { S: 'after' } } })));

    expect(['InternalServerError', 'ServiceUnavailable']).toContain(name);
    expect(injector.injected).toEqual([expect.objectContaining({ kind: 'dynamodb-5xx', when: 'after', operation: 'PutItem' })]);
    expect(await stored('after')).toEqual({ pk: { S: 'after' } });
    dynamoDb.destroy();
  });

  it('fails a SendMessage after SQS took it: the caller sees a 5xx, the message is on the queue', async () => {
    const sqs = newSqs();
    installFaults(sqs, { rates: { 'sqs-5xx': 1 }, seed: 4, after: 1 });

    const name = await errorName(sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'sent anyway' })));
    const { Messages = [] } = await sqsReader.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 1 }));

    expect(['InternalFailure', 'ServiceUnavailable']).toContain(name);
    expect(Messages.map((message) => message.Body)).toEqual(['sent anyway']);
    sqs.destroy();
  });

  it('leaves the store to the calls it does not fail: with the SDK retrying, a throttled write lands on a later attempt', async () => {
    const dynamoDb = new DynamoDBClient({ ...common, endpoint: endpoints.dynamoDbEndpoint, maxAttempts: 10 });
    const injector = installFaults(dynamoDb, { rates: { throttle: 0.5 }, seed: 21 });

    for (let i = 0; i < 4; i += 1) await dynamoDb.send(new PutItemCommand({ TableName: table, Item: { pk: { S: `retried-${i}` } } }));

    expect(injector.injected.length).toBeGreaterThan(0);
    for (let i = 0; i < 4; i += 1) expect(await stored(`retried-${i}`)).toBeDefined();
    dynamoDb.destroy();
  });
});
