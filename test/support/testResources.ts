/**
 * One call gives a test file its own tables and queues (the library's inbox and idempotency
 * tables, the business tables it names, the source queue and its DLQ, with the settings'
 * redrive policy) in the run's DynamoDB and SQS, plus clients for them.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { CreateTableCommand, DeleteTableCommand, DynamoDBClient, type KeySchemaElement } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { CreateQueueCommand, DeleteQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { TableDefinition } from 'idempotent-consumer';
import { type ConsumerSettings, lambdaEnvironment, maxReceiveCount, type SettingsOverrides, tableKeys, withOverrides } from '../../config/settings.js';
import { localCredentials } from '../../local/localClientConfig.js';
import { type AwsEndpoints, awsEndpoints } from './awsEndpoints.js';

/** Clients for the run's DynamoDB and SQS. */
export interface AwsClients {
  readonly dynamoDb: DynamoDBClient;
  /** Document client over `dynamoDb` (plain JavaScript values, `removeUndefinedValues` on). */
  readonly documentClient: DynamoDBDocumentClient;
  readonly sqs: SQSClient;
  /** S3 on the SQS emulator's endpoint (fauxqs serves both), path-style. */
  readonly s3: S3Client;
  readonly endpoints: AwsEndpoints;
  /** Destroys the clients. */
  destroy(): void;
}

/** The names of a test's resources. */
export interface TestResourceNames {
  readonly inboxTable: string;
  readonly idempotencyTable: string;
  /** The business tables: logical → physical name. */
  readonly tables: Readonly<Record<string, string>>;
  readonly queueUrl: string;
  readonly queueArn: string;
  readonly deadLetterQueueUrl: string;
  readonly deadLetterQueueArn: string;
  /** The bucket for dead-letter bodies too large for the DLQ. */
  readonly payloadBucket: string;
}

/** What {@link testResources} gives a test. */
export interface TestResources extends AwsClients {
  /** The settings the resources were made from (defaults + overrides). */
  readonly settings: ConsumerSettings;
  readonly resources: TestResourceNames;
  /** The consumer's Lambda environment for these resources (`lambdaEnvironment()`). */
  readonly environment: Record<string, string>;
  /** The unique prefix of every name, e.g. `c1-1a2b3c4d-`. */
  readonly prefix: string;
  /** Deletes the tables and queues, then destroys the clients. */
  dispose(): Promise<void>;
}

/** Clients for the run's endpoints, with fake static credentials. */
export function awsClients(): AwsClients {
  const endpoints = awsEndpoints();
  const common = { region: endpoints.region, credentials: { ...localCredentials } };
  const dynamoDb = new DynamoDBClient({ ...common, endpoint: endpoints.dynamoDbEndpoint });
  const sqs = new SQSClient({ ...common, endpoint: endpoints.sqsEndpoint });
  const s3 = new S3Client({ ...common, endpoint: endpoints.sqsEndpoint, forcePathStyle: true });
  const documentClient = DynamoDBDocumentClient.from(dynamoDb, { marshallOptions: { removeUndefinedValues: true } });
  return {
    dynamoDb,
    documentClient,
    sqs,
    s3,
    endpoints,
    destroy: () => {
      documentClient.destroy();
      dynamoDb.destroy();
      sqs.destroy();
      s3.destroy();
    },
  };
}

async function createTable(dynamoDb: DynamoDBClient, name: string, partitionKey: string, sortKey?: string): Promise<void> {
  const keys: KeySchemaElement[] = [{ AttributeName: partitionKey, KeyType: 'HASH' }, ...(sortKey === undefined ? [] : [{ AttributeName: sortKey, KeyType: 'RANGE' as const }])];
  await dynamoDb.send(
    new CreateTableCommand({
      TableName: name,
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: keys,
      AttributeDefinitions: keys.map((key) => ({ AttributeName: key.AttributeName!, AttributeType: 'S' })),
    }),
  );
}

/**
 * Provisions a fresh set of tables and queues under a unique prefix (`<name>-<8 hex>-`), so test
 * files running in parallel never share one.
 *
 * @param name - short label for the names (letters, digits, `-`)
 * @param tables - the consumer's business tables (logical name → keys)
 * @param overrides - settings to change; not validated, so tests may use values the stack refuses
 */
export async function testResources(name: string, tables: Readonly<Record<string, TableDefinition>>, overrides: SettingsOverrides = {}): Promise<TestResources> {
  const clients = awsClients();
  const settings = withOverrides(overrides);
  const prefix = `${name}-${randomUUID().slice(0, 8)}-`;
  const fifo = settings.queue.fifo;
  const suffix = fifo ? '.fifo' : '';
  const physical = Object.fromEntries(Object.keys(tables).map((logical) => [logical, `${prefix}${logical}`]));
  const names = { inboxTable: `${prefix}Inbox`, idempotencyTable: `${prefix}Idempotency` };
  try {
    await Promise.all([
      createTable(clients.dynamoDb, names.inboxTable, tableKeys.inbox.partitionKey),
      createTable(clients.dynamoDb, names.idempotencyTable, tableKeys.idempotency.partitionKey),
      ...Object.entries(tables).map(([logical, table]) => createTable(clients.dynamoDb, physical[logical]!, table.partitionKey, table.sortKey)),
    ]);
    const fifoAttributes: Record<string, string> = fifo ? { FifoQueue: 'true' } : {};
    const dlq = await clients.sqs.send(
      new CreateQueueCommand({ QueueName: `${prefix}DeadLetterQueue${suffix}`, Attributes: { ...fifoAttributes, MaximumMessageSize: String(settings.queue.deadLetterMaxMessageSizeBytes) } }),
    );
    const dlqArn = (await clients.sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ['QueueArn'] }))).Attributes!.QueueArn!;
    const queue = await clients.sqs.send(
      new CreateQueueCommand({
        QueueName: `${prefix}Queue${suffix}`,
        Attributes: {
          ...fifoAttributes,
          VisibilityTimeout: String(settings.queue.visibilityTimeoutSeconds),
          RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: maxReceiveCount(settings) }),
        },
      }),
    );
    const queueArn = (await clients.sqs.send(new GetQueueAttributesCommand({ QueueUrl: queue.QueueUrl, AttributeNames: ['QueueArn'] }))).Attributes!.QueueArn!;
    const payloadBucket = `${prefix}payloads`.toLowerCase();
    await clients.s3.send(new CreateBucketCommand({ Bucket: payloadBucket }));
    const resources: TestResourceNames = { ...names, tables: physical, queueUrl: queue.QueueUrl!, queueArn, deadLetterQueueUrl: dlq.QueueUrl!, deadLetterQueueArn: dlqArn, payloadBucket };
    const environment = lambdaEnvironment(settings, { inboxTable: names.inboxTable, idempotencyTable: names.idempotencyTable, deadLetterQueueUrl: dlq.QueueUrl!, tables: physical, payloadBucket });
    let disposed: Promise<void> | undefined;
    return {
      ...clients,
      settings,
      resources,
      environment,
      prefix,
      dispose: () =>
        (disposed ??= (async () => {
          try {
            await Promise.allSettled([
              ...[resources.queueUrl, resources.deadLetterQueueUrl].map((QueueUrl) => clients.sqs.send(new DeleteQueueCommand({ QueueUrl }))),
              ...[names.inboxTable, names.idempotencyTable, ...Object.values(physical)].map((TableName) => clients.dynamoDb.send(new DeleteTableCommand({ TableName }))),
            ]);
          } finally {
            clients.destroy();
          }
        })()),
    };
  } catch (error) {
    clients.destroy();
    throw error;
  }
}
