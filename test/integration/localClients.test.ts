import { randomUUID } from 'node:crypto';
import { CreateTableCommand, DeleteTableCommand, GetItemCommand, TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, DeleteQueueCommand, GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createInvocationGuard, InvocationStoppedError } from '../../packages/local/src/aws/invocationGuard.js';
import { createLocalClients } from '../../packages/local/src/aws/localClients.js';
import type { LocalClients } from '../../packages/local/src/aws/localClients.js';
import { awsEndpoints } from '../support/awsEndpoints.js';
import { describeUnlessDeployedStack } from '../support/testResources.js';

const describe = describeUnlessDeployedStack(
  "creates tables and queues of its own on the run's endpoints (without IC_OUTPUTS_FILE it runs against LocalStack, AWS_ENDPOINT_URL alone)",
);

/** The clients of a local run: strict layer, faults on the consumer's clients only, the guard. */
const endpoints = awsEndpoints();
const table = `clients-${randomUUID().slice(0, 8)}`;
let clean: LocalClients;
let chaotic: LocalClients;
let queueUrl: string;

beforeAll(async () => {
  clean = createLocalClients({
    dynamoDbEndpoint: endpoints.dynamoDbEndpoint,
    sqsEndpoint: endpoints.sqsEndpoint,
    s3Endpoint: endpoints.sqsEndpoint,
  });
  chaotic = createLocalClients({
    dynamoDbEndpoint: endpoints.dynamoDbEndpoint,
    sqsEndpoint: endpoints.sqsEndpoint,
    faults: { rates: { 'dynamodb-5xx': 1, 'sqs-5xx': 1 }, seed: 1 },
  });
  await clean.dynamoDb.send(
    new CreateTableCommand({
      TableName: table,
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
    }),
  );
  ({ QueueUrl: queueUrl = '' } = await clean.sqs.send(new CreateQueueCommand({ QueueName: table })));
});
afterAll(async () => {
  await clean?.dynamoDb.send(new DeleteTableCommand({ TableName: table }));
  await clean?.sqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl }));
  clean?.destroy();
  chaotic?.destroy();
});

const errorName = (call: Promise<unknown>) =>
  call.then(
    () => undefined,
    (error: Error) => error.name,
  );
const attributes = (client: LocalClients['sqs']) =>
  client.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }));
const receive = (client: LocalClients['sqs']) =>
  import('@aws-sdk/client-sqs').then(({ ReceiveMessageCommand }) =>
    client.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 0 })),
  );

describe('createLocalClients', () => {
  it("gives the consumer's DynamoDB client the strict layer", async () => {
    const put = { Put: { TableName: table, Item: { pk: { S: 'same' } } } };
    const check = { ConditionCheck: { TableName: table, Key: { pk: { S: 'same' } }, ConditionExpression: 'attribute_not_exists(pk)' } };

    expect(await errorName(clean.dynamoDb.send(new TransactWriteItemsCommand({ TransactItems: [put, check] })))).toBe(
      'ValidationException',
    );
  });

  it("injects faults into the consumer's clients only: the event source's SQS client is left alone", async () => {
    const failed = (await chaotic.dynamoDb
      .send(new GetItemCommand({ TableName: table, Key: { pk: { S: 'x' } } }))
      .catch((error: unknown) => error)) as {
      name: string;
      $metadata: { attempts: number };
    };
    expect(failed.name).toMatch(/InternalServerError|ServiceUnavailable/);
    expect(await errorName(receive(chaotic.sqs))).toMatch(/InternalFailure|ServiceUnavailable/);
    expect(await errorName(receive(chaotic.eventSourceSqs))).toBeUndefined();
    expect(chaotic.faults?.dynamoDb.counts()['dynamodb-5xx']).toBe(failed.$metadata.attempts); // one per attempt of the SDK
  });

  it("refuses a stopped invocation's calls on the guarded clients, not on the event source's", async () => {
    const guard = createInvocationGuard({ deadlineMs: Date.now() + 60_000 });
    guard.kill('function timeout');

    expect(await guard.run(() => errorName(attributes(clean.sqs)))).toBe(InvocationStoppedError.name);
    expect(await guard.run(() => errorName(clean.dynamoDb.send(new GetItemCommand({ TableName: table, Key: { pk: { S: 'x' } } }))))).toBe(
      InvocationStoppedError.name,
    );
    expect(await guard.run(() => errorName(attributes(clean.eventSourceSqs)))).toBeUndefined();
    expect(clean.guarded).toHaveLength(3);
  });
});
