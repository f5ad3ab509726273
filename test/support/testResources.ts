/**
 * One call gives a test file its own tables and queues, provisioned from the settings (with
 * overrides) in the run's DynamoDB and SQS, plus clients for them.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DeleteQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import { withOverrides } from '../../config/settings.js';
import type { ConsumerSettings, SettingsOverrides } from '../../config/settings.js';
import { localCredentials } from '../../local/localClientConfig.js';
import { provisionResources } from '../../local/provision.js';
import type { LocalResources } from '../../local/provision.js';
import type { TableDefinition } from '../../lambda/types.js';
import { awsEndpoints } from './awsEndpoints.js';
import type { AwsEndpoints } from './awsEndpoints.js';

/** Clients for the run's DynamoDB and SQS. */
export interface AwsClients {
  readonly dynamoDb: DynamoDBClient;
  /** Document client over `dynamoDb` (plain JavaScript values, `removeUndefinedValues` on). */
  readonly documentClient: DynamoDBDocumentClient;
  readonly sqs: SQSClient;
  readonly endpoints: AwsEndpoints;
  /** Destroys the clients. */
  destroy(): void;
}

/** What {@link testResources} gives a test. */
export interface TestResources extends AwsClients {
  /** The settings the resources were made from (defaults + overrides). */
  readonly settings: ConsumerSettings;
  /** Table and queue names, queue URLs and ARNs. */
  readonly resources: LocalResources;
  /** The unique prefix of every name, e.g. `poller-1a2b3c4d-`. */
  readonly prefix: string;
  /** Deletes the tables and queues, then destroys the clients. Call it in `afterAll`/`afterEach`. */
  dispose(): Promise<void>;
}

/**
 * Clients for the run's endpoints, with fake static credentials (any are accepted locally and by
 * LocalStack; no credential lookup, so no IMDS call).
 */
export function awsClients(): AwsClients {
  const endpoints = awsEndpoints();
  const common = { region: endpoints.region, credentials: { ...localCredentials } };
  const dynamoDb = new DynamoDBClient({ ...common, endpoint: endpoints.dynamoDbEndpoint });
  const sqs = new SQSClient({ ...common, endpoint: endpoints.sqsEndpoint });
  const documentClient = DynamoDBDocumentClient.from(dynamoDb, { marshallOptions: { removeUndefinedValues: true } });
  return {
    dynamoDb,
    documentClient,
    sqs,
    endpoints,
    destroy: () => {
      documentClient.destroy();
      dynamoDb.destroy();
      sqs.destroy();
    },
  };
}

/**
 * Provisions a fresh set of the consumer's tables and queues under a unique prefix
 * (`<name>-<8 hex>-`), so test files running in parallel never share a queue or a table.
 *
 * @param name short label for the names (letters, digits, `-`, `_`)
 * @param overrides settings to change, e.g. `{ queue: { visibilityTimeoutSeconds: 1, fifo: true } }`;
 *   they are not validated, so tests may use values the stack would refuse (short timeouts)
 * @param tables the consumer's business tables, by logical name (provisioned and deleted with the rest)
 *
 * @example
 * const env = await testResources('poller', { queue: { visibilityTimeoutSeconds: 1 } });
 * afterAll(() => env.dispose());
 */
export async function testResources(
  name: string,
  overrides: SettingsOverrides = {},
  tables: Readonly<Record<string, TableDefinition>> = {},
): Promise<TestResources> {
  const clients = awsClients();
  const settings = withOverrides(overrides);
  const prefix = `${name}-${randomUUID().slice(0, 8)}-`;
  let resources: LocalResources;
  try {
    resources = await provisionResources({ dynamoDb: clients.dynamoDb, sqs: clients.sqs, settings, prefix, tables });
  } catch (error) {
    clients.destroy();
    throw error;
  }
  let disposed: Promise<void> | undefined;
  return {
    ...clients,
    settings,
    resources,
    prefix,
    dispose: () =>
      (disposed ??= (async () => {
        try {
          await Promise.all([
            ...[resources.queueUrl, resources.deadLetterQueueUrl].map((QueueUrl) => clients.sqs.send(new DeleteQueueCommand({ QueueUrl }))),
            ...[resources.inboxTable, resources.idempotencyTable, ...Object.values(resources.tables)].map((TableName) =>
              clients.dynamoDb.send(new DeleteTableCommand({ TableName })),
            ),
          ]);
        } finally {
          clients.destroy();
        }
      })()),
  };
}
