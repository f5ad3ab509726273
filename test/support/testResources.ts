/**
 * One call gives a test file its own tables and queues (the library's inbox and idempotency
 * tables, the business tables it names, the source queue and its DLQ, with the settings'
 * redrive policy) in the run's DynamoDB and SQS, plus clients for them.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { DeleteQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { TableDefinition } from 'idempotent-consumer';
import { type ConsumerSettings, lambdaEnvironment, type SettingsOverrides, withOverrides } from '../../config/settings.js';
import { installStrictDynamoDb } from '../../local/aws/strictDynamoDb.js';
import { localCredentials } from '../../local/localClientConfig.js';
import { provisionResources } from '../../local/provision.js';
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
  /** The inbox table's stream, when asked for. */
  readonly inboxStreamArn?: string;
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
  // DynamoDB Local lacks some of AWS's rules (two actions on one item in a transaction, conflicts
  // between transactions in flight, …): the strict layer restores them (docs/aws-rules.md).
  if (endpoints.source === 'embedded') installStrictDynamoDb(dynamoDb);
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

/**
 * Provisions a fresh set of tables and queues under a unique prefix (`<name>-<8 hex>-`), so test
 * files running in parallel never share one.
 *
 * @param name - short label for the names (letters, digits, `-`)
 * @param tables - the consumer's business tables (logical name → keys)
 * @param overrides - settings to change; not validated, so tests may use values the stack refuses
 * @param options.inboxStream - give the inbox table a stream (for the outbox relay)
 */
export async function testResources(
  name: string,
  tables: Readonly<Record<string, TableDefinition>> = {},
  overrides: SettingsOverrides = {},
  options: { readonly inboxStream?: boolean } = {},
): Promise<TestResources> {
  const clients = awsClients();
  const settings = withOverrides(overrides);
  const prefix = `${name}-${randomUUID().slice(0, 8)}-`;
  try {
    // The local runtime's own provisioner: tests and `npm start` create the same resources.
    const provisioned = await provisionResources({ dynamoDb: clients.dynamoDb, sqs: clients.sqs, s3: clients.s3, settings, tables, prefix, ...(options.inboxStream ? { inboxStream: true } : {}) });
    const resources: TestResourceNames = { ...provisioned, payloadBucket: provisioned.payloadBucket! };
    const environment = lambdaEnvironment(settings, resources);
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
              ...[resources.inboxTable, resources.idempotencyTable, ...Object.values(resources.tables)].map((TableName) => clients.dynamoDb.send(new DeleteTableCommand({ TableName }))),
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
