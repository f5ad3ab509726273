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
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, it } from 'vitest';
import { resourceNames, tableKeys, withOverrides } from '../../config/settings.js';
import { startEmulators } from '../../local/emulators.js';
import { localClientConfig } from '../../local/localClientConfig.js';
import { ProvisioningError } from '../../local/errors.js';
import { provisionResources } from '../../local/provision.js';
import { awsClients, testResources } from '../support/testResources.js';
import { awsEndpoints } from '../support/awsEndpoints.js';
import type { TestResources } from '../support/testResources.js';

const disposables: Array<{ dispose(): Promise<void> }> = [];
afterAll(async () => {
  for (const resource of disposables) await resource.dispose();
});

async function provisioned(name: string, overrides: Parameters<typeof testResources>[1] = {}): Promise<TestResources> {
  const env = await testResources(name, overrides);
  disposables.push(env);
  return env;
}

async function queueAttributes(sqs: SQSClient, queueUrl: string): Promise<Record<string, string>> {
  const { Attributes = {} } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['All'] }));
  return Attributes;
}

describe('provisionResources', () => {
  describe('tables', () => {
    it.each([
      ['inbox', 'inboxTable', [{ AttributeName: tableKeys.inbox.partitionKey, KeyType: 'HASH' }], tableKeys.inbox.ttlAttribute],
      [
        'orders',
        'ordersTable',
        [
          { AttributeName: tableKeys.orders.partitionKey, KeyType: 'HASH' },
          { AttributeName: tableKeys.orders.sortKey, KeyType: 'RANGE' },
        ],
        undefined,
      ],
      ['idempotency', 'idempotencyTable', [{ AttributeName: tableKeys.idempotency.partitionKey, KeyType: 'HASH' }], tableKeys.idempotency.ttlAttribute],
    ] as const)('creates the %s table with the keys of tableKeys, on demand, with its TTL', async (_label, nameKey, keySchema, ttlAttribute) => {
      // Arrange
      const env = await provisioned('tables');
      const tableName = env.resources[nameKey];

      // Act
      const { Table } = await env.dynamoDb.send(new DescribeTableCommand({ TableName: tableName }));
      const { TimeToLiveDescription } = await env.dynamoDb.send(new DescribeTimeToLiveCommand({ TableName: tableName }));

      // Assert
      expect(tableName.endsWith(resourceNames[nameKey])).toBe(true);
      expect(Table?.TableStatus).toBe('ACTIVE');
      expect(Table?.KeySchema).toEqual(keySchema);
      expect(Table?.AttributeDefinitions).toEqual(
        expect.arrayContaining(keySchema.map((key) => ({ AttributeName: key.AttributeName, AttributeType: 'S' }))),
      );
      expect(Table?.BillingModeSummary?.BillingMode).toBe('PAY_PER_REQUEST');
      if (ttlAttribute === undefined) {
        expect(TimeToLiveDescription?.TimeToLiveStatus).toBe('DISABLED');
      } else {
        expect(TimeToLiveDescription).toEqual({ TimeToLiveStatus: 'ENABLED', AttributeName: ttlAttribute });
      }
    });

    it('reuses existing tables and their items when run again with the same prefix', async () => {
      const env = await provisioned('again');
      const key = { [tableKeys.inbox.partitionKey]: { S: 'cafe-orders#e-1' } };
      await env.dynamoDb.send(new PutItemCommand({ TableName: env.resources.inboxTable, Item: key }));

      const again = await provisionResources({ dynamoDb: env.dynamoDb, sqs: env.sqs, settings: env.settings, prefix: env.prefix });

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
        maxReceiveCount: queue.maxReceiveCount,
      });
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
      expect(JSON.parse(source['RedrivePolicy'] ?? '{}')).toEqual({ deadLetterTargetArn: env.resources.deadLetterQueueArn, maxReceiveCount: 7 });
    });

    it('brings an existing queue to the settings when run again', async () => {
      const env = await provisioned('requeue');
      const changed = withOverrides({ queue: { visibilityTimeoutSeconds: 240 } });

      const again = await provisionResources({ dynamoDb: env.dynamoDb, sqs: env.sqs, settings: changed, prefix: env.prefix });

      expect(again.queueUrl).toBe(env.resources.queueUrl);
      expect((await queueAttributes(env.sqs, env.resources.queueUrl))['VisibilityTimeout']).toBe('240');
    });
  });

  describe.skipIf(awsEndpoints().source !== 'embedded')('with a kept data directory', () => {
    it('finds the tables and items of an earlier run after the emulators restart', async () => {
      // Arrange: a run that provisions and writes, then stops.
      const dataDir = await mkdtemp(join(tmpdir(), 'consumer-data-'));
      disposables.push({ dispose: () => rm(dataDir, { recursive: true, force: true }) });
      const settings = withOverrides();
      const key = { [tableKeys.orders.partitionKey]: { S: 'O-1' }, [tableKeys.orders.sortKey]: { S: 'ORDER' } };
      const first = await startEmulators({ dataDir });
      try {
        const dynamoDb = new DynamoDBClient(localClientConfig(first.dynamoDbEndpoint));
        const sqs = new SQSClient(localClientConfig(first.sqsEndpoint));
        const resources = await provisionResources({ dynamoDb, sqs, settings });
        await dynamoDb.send(new PutItemCommand({ TableName: resources.ordersTable, Item: key }));
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
        const resources = await provisionResources({ dynamoDb, sqs, settings });
        const { Item } = await dynamoDb.send(new GetItemCommand({ TableName: resources.ordersTable, Key: key }));
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
