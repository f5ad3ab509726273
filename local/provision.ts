/**
 * Creates the consumer's tables and queues in the local emulators (or LocalStack), shaped
 * exactly as the CDK stack shapes them, from `config/settings.ts`.
 *
 * @module
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  ResourceInUseException,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import type { DynamoDBClient, KeySchemaElement } from '@aws-sdk/client-dynamodb';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  QueueNameExists,
  SetQueueAttributesCommand,
} from '@aws-sdk/client-sqs';
import type { QueueAttributeName, SQSClient } from '@aws-sdk/client-sqs';
import { resourceNames, tableKeys } from '../config/settings.js';
import type { ConsumerSettings, DeployedResourceNames } from '../config/settings.js';
import { ProvisioningError } from './errors.js';

/** Options of {@link provisionResources}. */
export interface ProvisionOptions {
  readonly dynamoDb: DynamoDBClient;
  readonly sqs: SQSClient;
  readonly settings: ConsumerSettings;
  /**
   * Put before every table and queue name, so that several sets (e.g. parallel test files)
   * live side by side. Letters, digits, `-` and `_` only.
   * @default '' (the base names of `resourceNames`)
   */
  readonly prefix?: string;
}

/** What {@link provisionResources} created or found: the names the Lambda needs plus the source queue. */
export interface LocalResources extends DeployedResourceNames {
  readonly queueUrl: string;
  readonly queueArn: string;
  readonly deadLetterQueueArn: string;
}

/** Table and queue names for a settings object and a prefix (FIFO queues end in `.fifo`). */
export interface LocalResourceNames {
  readonly inboxTable: string;
  readonly ordersTable: string;
  readonly idempotencyTable: string;
  readonly queueName: string;
  readonly deadLetterQueueName: string;
}

/**
 * The names {@link provisionResources} uses: `prefix` + the base name from `resourceNames`,
 * plus `.fifo` on both queues when `settings.queue.fifo`.
 *
 * @throws {ProvisioningError} when `prefix` has a character SQS does not allow in a queue name
 */
export function localResourceNames(settings: ConsumerSettings, prefix = ''): LocalResourceNames {
  if (!/^[A-Za-z0-9_-]*$/.test(prefix)) {
    throw new ProvisioningError(`Resource prefix "${prefix}" may only hold letters, digits, "-" and "_".`);
  }
  const queueSuffix = settings.queue.fifo ? '.fifo' : '';
  return {
    inboxTable: `${prefix}${resourceNames.inboxTable}`,
    ordersTable: `${prefix}${resourceNames.ordersTable}`,
    idempotencyTable: `${prefix}${resourceNames.idempotencyTable}`,
    queueName: `${prefix}${resourceNames.queue}${queueSuffix}`,
    deadLetterQueueName: `${prefix}${resourceNames.deadLetterQueue}${queueSuffix}`,
  };
}

/**
 * Creates, as the CDK stack does, the three tables and the two queues:
 *
 * - tables (on-demand, `PAY_PER_REQUEST`; string keys from `tableKeys`): the inbox
 *   (partition key `pk`, TTL on `expiresAt`), the business table (`orderId` + `sk`) and the
 *   Powertools idempotency table (`id`, TTL on `expiration`);
 * - the dead-letter queue (its own retention and maximum message size) and the source queue
 *   (visibility timeout, retention and maximum message size from `settings.queue`, and the
 *   redrive policy `{ deadLetterTargetArn, maxReceiveCount }`); both FIFO with content-based
 *   deduplication off when `settings.queue.fifo`.
 *
 * Idempotent: a table that already exists (e.g. in a kept `--data-dir`) is reused after its key
 * schema and TTL are checked; an existing queue gets the settings' attributes.
 *
 * Not mirrored, because they change nothing an emulator does: the stack's SQS-managed
 * encryption, `enforceSSL` queue policies, the dead-letter queue's redrive-allow policy, point-in-
 * time recovery and `RemovalPolicy.RETAIN`; the CDK-generated physical names (the base names
 * of `resourceNames` plus `prefix` stand in for them).
 *
 * @throws {ProvisioningError} when an existing table has another key schema or TTL attribute
 * @throws the SDK's error for anything else the emulator rejects
 */
export async function provisionResources(options: ProvisionOptions): Promise<LocalResources> {
  const { dynamoDb, sqs, settings } = options;
  const names = localResourceNames(settings, options.prefix);

  await Promise.all([
    ensureTable(dynamoDb, {
      name: names.inboxTable,
      partitionKey: tableKeys.inbox.partitionKey,
      ttlAttribute: tableKeys.inbox.ttlAttribute,
    }),
    ensureTable(dynamoDb, {
      name: names.ordersTable,
      partitionKey: tableKeys.orders.partitionKey,
      sortKey: tableKeys.orders.sortKey,
    }),
    ensureTable(dynamoDb, {
      name: names.idempotencyTable,
      partitionKey: tableKeys.idempotency.partitionKey,
      ttlAttribute: tableKeys.idempotency.ttlAttribute,
    }),
  ]);

  const fifoAttributes: Partial<Record<QueueAttributeName, string>> = settings.queue.fifo
    ? { FifoQueue: 'true', ContentBasedDeduplication: 'false' }
    : {};
  const deadLetterQueue = await ensureQueue(sqs, names.deadLetterQueueName, {
    ...fifoAttributes,
    MessageRetentionPeriod: String(settings.queue.deadLetterRetentionPeriodSeconds),
    MaximumMessageSize: String(settings.queue.deadLetterMaxMessageSizeBytes),
  });
  const queue = await ensureQueue(sqs, names.queueName, {
    ...fifoAttributes,
    VisibilityTimeout: String(settings.queue.visibilityTimeoutSeconds),
    MessageRetentionPeriod: String(settings.queue.retentionPeriodSeconds),
    MaximumMessageSize: String(settings.queue.maxMessageSizeBytes),
    RedrivePolicy: JSON.stringify({
      deadLetterTargetArn: deadLetterQueue.arn,
      maxReceiveCount: settings.queue.maxReceiveCount,
    }),
  });

  return {
    inboxTable: names.inboxTable,
    ordersTable: names.ordersTable,
    idempotencyTable: names.idempotencyTable,
    queueUrl: queue.url,
    queueArn: queue.arn,
    deadLetterQueueUrl: deadLetterQueue.url,
    deadLetterQueueArn: deadLetterQueue.arn,
  };
}

interface TableDefinition {
  readonly name: string;
  readonly partitionKey: string;
  readonly sortKey?: string;
  readonly ttlAttribute?: string;
}

async function ensureTable(dynamoDb: DynamoDBClient, table: TableDefinition): Promise<void> {
  const keySchema: KeySchemaElement[] = [
    { AttributeName: table.partitionKey, KeyType: 'HASH' },
    ...(table.sortKey === undefined ? [] : [{ AttributeName: table.sortKey, KeyType: 'RANGE' as const }]),
  ];
  try {
    await dynamoDb.send(
      new CreateTableCommand({
        TableName: table.name,
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: keySchema,
        AttributeDefinitions: keySchema.map((key) => ({ AttributeName: key.AttributeName, AttributeType: 'S' })),
      }),
    );
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
    const { Table } = await dynamoDb.send(new DescribeTableCommand({ TableName: table.name }));
    const describe = (schema: readonly KeySchemaElement[] | undefined): string =>
      (schema ?? []).map((key) => `${key.AttributeName}:${key.KeyType}`).join(',');
    if (describe(Table?.KeySchema) !== describe(keySchema)) {
      throw new ProvisioningError(
        `Table ${table.name} exists with key schema [${describe(Table?.KeySchema)}], ` +
          `but the settings need [${describe(keySchema)}]. Delete it (or the data directory) and provision again.`,
      );
    }
  }
  await waitUntilTableExists({ client: dynamoDb, maxWaitTime: 60, minDelay: 1, maxDelay: 2 }, { TableName: table.name });

  if (table.ttlAttribute === undefined) return;
  const { TimeToLiveDescription: ttl } = await dynamoDb.send(new DescribeTimeToLiveCommand({ TableName: table.name }));
  const enabled = ttl?.TimeToLiveStatus === 'ENABLED' || ttl?.TimeToLiveStatus === 'ENABLING';
  if (enabled && ttl?.AttributeName !== table.ttlAttribute) {
    throw new ProvisioningError(
      `Table ${table.name} has TTL on "${String(ttl?.AttributeName)}", but the settings need "${table.ttlAttribute}".`,
    );
  }
  if (!enabled) {
    await dynamoDb.send(
      new UpdateTimeToLiveCommand({
        TableName: table.name,
        TimeToLiveSpecification: { AttributeName: table.ttlAttribute, Enabled: true },
      }),
    );
  }
}

async function ensureQueue(
  sqs: SQSClient,
  name: string,
  attributes: Partial<Record<QueueAttributeName, string>>,
): Promise<{ url: string; arn: string }> {
  let url: string | undefined;
  try {
    ({ QueueUrl: url } = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes })));
  } catch (error) {
    if (!isQueueNameExists(error)) throw error;
    ({ QueueUrl: url } = await sqs.send(new GetQueueUrlCommand({ QueueName: name })));
    const { FifoQueue: _cannotChange, ...settable } = attributes;
    await sqs.send(new SetQueueAttributesCommand({ QueueUrl: url, Attributes: settable }));
  }
  if (url === undefined) throw new ProvisioningError(`SQS returned no URL for queue ${name}.`);
  const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }));
  const arn = Attributes?.QueueArn;
  if (arn === undefined) throw new ProvisioningError(`SQS returned no ARN for queue ${name}.`);
  return { url, arn };
}

/**
 * "A queue with this name exists with other attributes". Matched by name too: with the SQS JSON
 * protocol the SDK takes the error code from the `x-amzn-query-error` header, which AWS sends as
 * `QueueAlreadyExists` and fauxqs as `AWS.SimpleQueueService.QueueNameExists`, so the error is
 * not always an instance of `QueueNameExists`.
 */
function isQueueNameExists(error: unknown): boolean {
  if (error instanceof QueueNameExists) return true;
  const { name, Code } = error as { name?: unknown; Code?: unknown };
  return [name, Code].some((code) => typeof code === 'string' && /(QueueNameExists|QueueAlreadyExists)$/.test(code));
}
