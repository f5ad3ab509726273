import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateTableCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import { HeadBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, expect, it } from 'vitest';
import {
  lambdaEnvironment,
  maxReceiveCount,
  resourceNames,
  tableKeys,
  withOverrides,
} from '../../packages/idempotent-consumer/src/settings/settings.js';
import { startEmulators } from '../../packages/local/src/emulators.js';
import { localClientConfig, localCredentials, localS3ClientConfig } from '../../packages/local/src/localClientConfig.js';
import { ProvisioningError } from '../../packages/local/src/errors.js';
import { localResourceNames, provisionResources } from '../../packages/local/src/provision.js';
import { awsClients, testResources, describeUnlessDeployedStack } from '../support/testResources.js';
import { awsEndpoints } from '../support/awsEndpoints.js';
import type { TestResources } from '../support/testResources.js';

const describe = describeUnlessDeployedStack(
  "creates tables and queues of its own on the run's endpoints (without IC_OUTPUTS_FILE it runs against LocalStack, AWS_ENDPOINT_URL alone)",
);

const disposables: Array<{ dispose(): Promise<void> }> = [];
afterAll(async () => {
  for (const resource of disposables) await resource.dispose();
});

/** Two business tables of an imagined stock-keeping consumer: one with a partition key only, one with a sort key. */
const businessTables = { stockItems: { partitionKey: 'sku' }, movements: { partitionKey: 'sku', sortKey: 'at' } } as const;

async function provisioned(name: string, overrides: Parameters<typeof testResources>[2] = {}): Promise<TestResources> {
  const env = await testResources(name, businessTables, overrides);
  disposables.push(env);
  return env;
}

async function queueAttributes(sqs: SQSClient, queueUrl: string): Promise<Record<string, string>> {
  const { Attributes = {} } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['All'] }));
  return Attributes;
}

describe('provisionResources', () => {
  describe('tables', () => {
    const tableCases = [
      [
        'the inbox table',
        (env: TestResources) => env.resources.inboxTable,
        [{ AttributeName: tableKeys.inbox.partitionKey, KeyType: 'HASH' }],
        tableKeys.inbox.ttlAttribute,
      ],
      [
        'the idempotency table',
        (env: TestResources) => env.resources.idempotencyTable,
        [{ AttributeName: tableKeys.idempotency.partitionKey, KeyType: 'HASH' }],
        tableKeys.idempotency.ttlAttribute,
      ],
      [
        'a business table with a partition key',
        (env: TestResources) => env.resources.tables['stockItems']!,
        [{ AttributeName: 'sku', KeyType: 'HASH' }],
        undefined,
      ],
      [
        'a business table with a sort key',
        (env: TestResources) => env.resources.tables['movements']!,
        [
          { AttributeName: 'sku', KeyType: 'HASH' },
          { AttributeName: 'at', KeyType: 'RANGE' },
        ],
        undefined,
      ],
    ] as const;
    it.each(tableCases)('creates %s with its keys (strings), on demand, with its TTL', async (_label, nameOf, keySchema, ttlAttribute) => {
      // Arrange
      const env = await provisioned('tables');
      const tableName = nameOf(env);

      // Act
      const { Table } = await env.dynamoDb.send(new DescribeTableCommand({ TableName: tableName }));
      const { TimeToLiveDescription } = await env.dynamoDb.send(new DescribeTimeToLiveCommand({ TableName: tableName }));

      // Assert
      expect(tableName.startsWith(env.prefix)).toBe(true);
      expect(Table?.TableStatus).toBe('ACTIVE');
      expect(Table?.KeySchema).toEqual(keySchema);
      expect(Table?.AttributeDefinitions).toEqual(
        expect.arrayContaining(keySchema.map((key) => ({ AttributeName: key.AttributeName, AttributeType: 'S' }))),
      );
      expect(Table?.BillingModeSummary?.BillingMode).toBe('PAY_PER_REQUEST');
      expect(Table?.StreamSpecification?.StreamEnabled ?? false).toBe(false);
      if (ttlAttribute === undefined) {
        expect(TimeToLiveDescription?.TimeToLiveStatus).toBe('DISABLED');
      } else {
        expect(TimeToLiveDescription).toEqual({ TimeToLiveStatus: 'ENABLED', AttributeName: ttlAttribute });
      }
    });

    it('names the business tables by logical name and hands back names lambdaEnvironment() takes', async () => {
      const env = await provisioned('names');

      expect(env.resources.tables).toEqual({ stockItems: `${env.prefix}Table-stockItems`, movements: `${env.prefix}Table-movements` });
      expect(lambdaEnvironment(env.settings, env.resources)).toMatchObject({
        INBOX_TABLE_NAME: env.resources.inboxTable,
        IDEMPOTENCY_TABLE_NAME: env.resources.idempotencyTable,
        DEAD_LETTER_QUEUE_URL: env.resources.deadLetterQueueUrl,
        TABLE_NAME_STOCK_ITEMS: `${env.prefix}Table-stockItems`,
        TABLE_NAME_MOVEMENTS: `${env.prefix}Table-movements`,
      });
    });

    it('gives the inbox a NEW_IMAGE stream with inboxStream, also to an inbox that exists without one', async () => {
      const env = await provisioned('stream');

      const again = await provisionResources({
        dynamoDb: env.dynamoDb,
        sqs: env.sqs,
        settings: env.settings,
        prefix: env.prefix,
        inboxStream: true,
      });
      const { Table } = await env.dynamoDb.send(new DescribeTableCommand({ TableName: again.inboxTable }));

      expect(Table?.StreamSpecification).toEqual({ StreamEnabled: true, StreamViewType: 'NEW_IMAGE' });
      expect(again.inboxStreamArn).toBe(Table?.LatestStreamArn);
      expect(again.inboxStreamArn).toMatch(/^arn:aws:dynamodb:/);
    });

    it('refuses a logical table name that cannot become an environment variable', async () => {
      expect(() => localResourceNames(withOverrides(), 'p-', { 'stock-items': { partitionKey: 'sku' } })).toThrow(ProvisioningError);
      expect(() => localResourceNames(withOverrides(), 'p-', { '1st': { partitionKey: 'sku' } })).toThrow(/must be 1 to 64 letters/);
    });

    it('reuses existing tables and their items when run again with the same prefix', async () => {
      const env = await provisioned('again');
      const key = { [tableKeys.inbox.partitionKey]: { S: 'consumer#key#e-1' } };
      await env.dynamoDb.send(new PutItemCommand({ TableName: env.resources.inboxTable, Item: key }));

      const again = await provisionResources({
        dynamoDb: env.dynamoDb,
        sqs: env.sqs,
        s3: env.s3,
        settings: env.settings,
        prefix: env.prefix,
        tables: businessTables,
      });

      expect(again).toEqual(env.resources);
      const { Item } = await env.dynamoDb.send(new GetItemCommand({ TableName: env.resources.inboxTable, Key: key }));
      expect(Item).toEqual(key);
    });

    it('refuses a table that exists with another key schema', async () => {
      const clients = awsClients();
      disposables.push({ dispose: async () => clients.destroy() });
      const prefix = `clash-${randomUUID().slice(0, 8)}-`;
      const inboxTable = `${prefix}${resourceNames.inboxTable}`;
      await clients.dynamoDb.send(
        new CreateTableCommand({
          TableName: inboxTable,
          BillingMode: 'PAY_PER_REQUEST',
          KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
          AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
        }),
      );
      disposables.push({ dispose: async () => void (await clients.dynamoDb.send(new DeleteTableCommand({ TableName: inboxTable }))) });

      const provisioning = provisionResources({ dynamoDb: clients.dynamoDb, sqs: clients.sqs, settings: withOverrides(), prefix });

      await expect(provisioning).rejects.toThrow(ProvisioningError);
      await expect(provisioning).rejects.toThrow(/key schema \[id:HASH\].*\[pk:HASH\]/);
    });
  });

  describe('queues', () => {
    it('creates the standard source queue and dead-letter queue with the settings', async () => {
      const env = await provisioned('standard');
      const { queue } = env.settings;

      const source = await queueAttributes(env.sqs, env.resources.queueUrl);
      const deadLetter = await queueAttributes(env.sqs, env.resources.deadLetterQueueUrl);

      expect(env.resources.queueArn.endsWith(`:${env.prefix}${resourceNames.queue}`)).toBe(true);
      expect(env.resources.deadLetterQueueArn.endsWith(`:${env.prefix}${resourceNames.deadLetterQueue}`)).toBe(true);
      expect(source).toMatchObject({
        QueueArn: env.resources.queueArn,
        VisibilityTimeout: String(queue.visibilityTimeoutSeconds),
        MessageRetentionPeriod: String(queue.retentionPeriodSeconds),
        MaximumMessageSize: String(queue.maxMessageSizeBytes),
      });
      expect(JSON.parse(source['RedrivePolicy'] ?? '{}')).toEqual({
        deadLetterTargetArn: env.resources.deadLetterQueueArn,
        maxReceiveCount: maxReceiveCount(env.settings),
      });
      expect(maxReceiveCount(env.settings)).toBe(env.settings.retry.maxAttempts + 5);
      expect(source['FifoQueue']).toBeUndefined();
      expect(deadLetter).toMatchObject({
        QueueArn: env.resources.deadLetterQueueArn,
        MessageRetentionPeriod: String(queue.deadLetterRetentionPeriodSeconds),
        MaximumMessageSize: String(queue.deadLetterMaxMessageSizeBytes),
      });
      expect(deadLetter['RedrivePolicy']).toBeUndefined();
    });

    it('creates FIFO queues (.fifo names, content-based deduplication off) when settings.queue.fifo', async () => {
      const env = await provisioned('fifo', { queue: { fifo: true, visibilityTimeoutSeconds: 200, maxReceiveCount: 7 } });

      const source = await queueAttributes(env.sqs, env.resources.queueUrl);
      const deadLetter = await queueAttributes(env.sqs, env.resources.deadLetterQueueUrl);

      expect(env.resources.queueArn.endsWith(`:${env.prefix}${resourceNames.queue}.fifo`)).toBe(true);
      expect(env.resources.deadLetterQueueArn.endsWith(`:${env.prefix}${resourceNames.deadLetterQueue}.fifo`)).toBe(true);
      for (const attributes of [source, deadLetter]) {
        expect(attributes).toMatchObject({ FifoQueue: 'true', ContentBasedDeduplication: 'false' });
      }
      expect(source['VisibilityTimeout']).toBe('200');
      expect(JSON.parse(source['RedrivePolicy'] ?? '{}')).toEqual({
        deadLetterTargetArn: env.resources.deadLetterQueueArn,
        maxReceiveCount: 7,
      });
    });

    it('derives a FIFO redrive policy from the retry budget when maxReceiveCount is unset', async () => {
      const env = await provisioned('fifoderived', { queue: { fifo: true } });

      const source = await queueAttributes(env.sqs, env.resources.queueUrl);

      expect(JSON.parse(source['RedrivePolicy'] ?? '{}').maxReceiveCount).toBe(
        env.settings.retry.maxAttempts * env.settings.function.batchSize + 5,
      );
    });

    it('brings an existing queue to the settings when run again', async () => {
      const env = await provisioned('requeue');
      const changed = withOverrides({ queue: { visibilityTimeoutSeconds: 240 } });

      const again = await provisionResources({ dynamoDb: env.dynamoDb, sqs: env.sqs, settings: changed, prefix: env.prefix });

      expect(again.queueUrl).toBe(env.resources.queueUrl);
      expect((await queueAttributes(env.sqs, env.resources.queueUrl))['VisibilityTimeout']).toBe('240');
    });
  });

  describe('payload bucket', () => {
    it('creates the payload bucket on the S3 of the SQS server (path-style), and keeps it when run again', async () => {
      const env = await provisioned('bucket');
      const s3 = new S3Client({
        ...localS3ClientConfig(env.endpoints.sqsEndpoint),
        region: env.endpoints.region,
        credentials: { ...localCredentials },
      });
      disposables.push({ dispose: async () => s3.destroy() });

      const resources = await provisionResources({ dynamoDb: env.dynamoDb, sqs: env.sqs, s3, settings: env.settings, prefix: env.prefix });
      const again = await provisionResources({ dynamoDb: env.dynamoDb, sqs: env.sqs, s3, settings: env.settings, prefix: env.prefix });

      expect(resources.payloadBucket).toBe(`${env.prefix}${resourceNames.payloadBucket}`.toLowerCase());
      expect(again.payloadBucket).toBe(resources.payloadBucket);
      expect((await s3.send(new HeadBucketCommand({ Bucket: resources.payloadBucket! }))).$metadata.httpStatusCode).toBe(200);
      expect(lambdaEnvironment(env.settings, resources)['PAYLOAD_BUCKET_NAME']).toBe(resources.payloadBucket);
    });

    it('leaves payloadBucket out without an S3 client', async () => {
      const clients = awsClients();
      disposables.push({ dispose: async () => clients.destroy() });
      const resources = await provisionResources({
        dynamoDb: clients.dynamoDb,
        sqs: clients.sqs,
        settings: withOverrides(),
        prefix: `nobucket-${randomUUID().slice(0, 8)}-`,
      });
      expect(resources.payloadBucket).toBeUndefined();
    });

    it('refuses a prefix that makes the bucket name break S3 rules', () => {
      expect(() => localResourceNames(withOverrides(), `${'x'.repeat(60)}-`)).toThrow(/S3's rules/);
    });
  });

  // Only the embedded emulators can be stopped and restarted by a test (a data directory is theirs).
  // skipped unless embedded: only the embedded emulators can be stopped and restarted by a test
  /* skipped: unless on the embedded emulators, only they can be restarted by a test */ describe.skipIf(
    awsEndpoints().source !== 'embedded',
  )('with a kept data directory', () => {
    it('finds the tables and items of an earlier run after the emulators restart', async () => {
      // Arrange: a run that provisions and writes, then stops.
      const dataDir = await mkdtemp(join(tmpdir(), 'consumer-data-'));
      disposables.push({ dispose: () => rm(dataDir, { recursive: true, force: true }) });
      const settings = withOverrides();
      const key = { sku: { S: 'SKU-1' }, at: { S: '2025-01-01' } };
      const first = await startEmulators({ dataDir });
      try {
        const dynamoDb = new DynamoDBClient(localClientConfig(first.dynamoDbEndpoint));
        const sqs = new SQSClient(localClientConfig(first.sqsEndpoint));
        const resources = await provisionResources({ dynamoDb, sqs, settings, tables: businessTables });
        await dynamoDb.send(new PutItemCommand({ TableName: resources.tables['movements'], Item: key }));
        dynamoDb.destroy();
        sqs.destroy();
      } finally {
        await first.stop();
      }

      // Act: a second run on the same directory.
      const second = await startEmulators({ dataDir });
      try {
        const dynamoDb = new DynamoDBClient(localClientConfig(second.dynamoDbEndpoint));
        const sqs = new SQSClient(localClientConfig(second.sqsEndpoint));
        const resources = await provisionResources({ dynamoDb, sqs, settings, tables: businessTables });
        const { Item } = await dynamoDb.send(new GetItemCommand({ TableName: resources.tables['movements'], Key: key }));
        dynamoDb.destroy();
        sqs.destroy();

        // Assert
        expect(Item).toEqual(key);
      } finally {
        await second.stop();
      }
    });
  });
});
