/**
 * Creates a consumer's tables, queues and payload bucket in the local emulators (or LocalStack),
 * shaped as the CDK construct shapes them, from the one source of settings
 * (`config/settings.ts`) and the consumer's business tables. Generic: it knows nothing of any
 * domain; the business tables come in by logical name.
 *
 * @module
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  ResourceInUseException,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import type { DynamoDBClient, KeySchemaElement, StreamViewType, TableDescription } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, HeadBucketCommand } from '@aws-sdk/client-s3';
import type { S3Client } from '@aws-sdk/client-s3';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  QueueNameExists,
  SetQueueAttributesCommand,
} from '@aws-sdk/client-sqs';
import type { QueueAttributeName, SQSClient } from '@aws-sdk/client-sqs';
import { maxReceiveCount, resourceNames, tableEnvironmentVariable, tableKeys } from 'idempotent-consumer/settings';
import type { ConsumerSettings, DeployedResourceNames } from 'idempotent-consumer/settings';
import type { TableDefinition } from 'idempotent-consumer';
import { ProvisioningError } from './errors.js';

/** Options of {@link provisionResources}. */
export interface ProvisionOptions {
  readonly dynamoDb: DynamoDBClient;
  readonly sqs: SQSClient;
  /**
   * The S3 client of the payload bucket (fauxqs serves S3 on the SQS endpoint: use
   * `localS3ClientConfig`, path-style). Without it no bucket is created and `payloadBucket` is
   * absent: a dead-letter body too large for the DLQ then fails its dead-lettering.
   */
  readonly s3?: S3Client;
  readonly settings: ConsumerSettings;
  /**
   * The consumer's business tables: logical name (1 to 64 letters, digits or `_`, starting with a
   * letter) → key attribute names. Keys are created as strings (`S`).
   * @default {}
   */
  readonly tables?: Readonly<Record<string, TableDefinition>>;
  /**
   * Put before every table, queue and bucket name, so that several sets (e.g. parallel test
   * files) live side by side. Letters, digits, `-` and `_` only.
   * @default '' (the base names of `resourceNames`)
   */
  readonly prefix?: string;
  /**
   * Give the inbox table a DynamoDB stream with `NEW_IMAGE` (the outbox relay reads it).
   * @default false
   */
  readonly inboxStream?: boolean;
}

/** What {@link provisionResources} created or found; usable as `lambdaEnvironment(settings, resources)`. */
export interface LocalResources extends DeployedResourceNames {
  readonly inboxTable: string;
  readonly idempotencyTable: string;
  /** Business tables: logical name → physical name. */
  readonly tables: Readonly<Record<string, string>>;
  readonly queueUrl: string;
  readonly queueArn: string;
  readonly deadLetterQueueUrl: string;
  readonly deadLetterQueueArn: string;
  /** The payload bucket; absent when no S3 client was given. */
  readonly payloadBucket?: string;
  /** ARN of the inbox table's stream, with `inboxStream: true`. */
  readonly inboxStreamArn?: string;
}

/** Physical names for a settings object, a prefix and the business tables. */
export interface LocalResourceNames {
  readonly inboxTable: string;
  readonly idempotencyTable: string;
  /** Logical name → physical name: `<prefix>Table-<logical name>`. */
  readonly tables: Readonly<Record<string, string>>;
  /** `.fifo` at the end when `settings.queue.fifo`. */
  readonly queueName: string;
  readonly deadLetterQueueName: string;
  /** S3's rules: lower case, `-` for `_`, 3 to 63 characters. */
  readonly payloadBucket: string;
}

/**
 * The names {@link provisionResources} uses: `prefix` + the base name of `resourceNames` (the
 * names the CDK construct uses as construct ids), `.fifo` on both queues when
 * `settings.queue.fifo`, `<prefix>Table-<logical name>` for a business table, and the bucket
 * name lower-cased.
 *
 * @throws {ProvisioningError} when `prefix` has a character SQS does not allow in a queue name,
 *   a logical table name is not valid, or a name is too long for its service
 */
export function localResourceNames(
  settings: ConsumerSettings,
  prefix = '',
  tables: Readonly<Record<string, TableDefinition>> = {},
): LocalResourceNames {
  if (!/^[A-Za-z0-9_-]*$/.test(prefix)) {
    throw new ProvisioningError(`Resource prefix "${prefix}" may only hold letters, digits, "-" and "_".`);
  }
  const tableNames: Record<string, string> = {};
  for (const logicalName of Object.keys(tables)) {
    try {
      tableEnvironmentVariable(logicalName);
    } catch (error) {
      throw new ProvisioningError(`Business table "${logicalName}": ${(error as Error).message}.`, { cause: error });
    }
    tableNames[logicalName] = `${prefix}Table-${logicalName}`;
  }
  const queueSuffix = settings.queue.fifo ? '.fifo' : '';
  const names: LocalResourceNames = {
    inboxTable: `${prefix}${resourceNames.inboxTable}`,
    idempotencyTable: `${prefix}${resourceNames.idempotencyTable}`,
    tables: tableNames,
    queueName: `${prefix}${resourceNames.queue}${queueSuffix}`,
    deadLetterQueueName: `${prefix}${resourceNames.deadLetterQueue}${queueSuffix}`,
    payloadBucket: `${prefix}${resourceNames.payloadBucket}`.toLowerCase().replaceAll('_', '-'),
  };
  for (const queueName of [names.queueName, names.deadLetterQueueName]) {
    if (queueName.length > 80)
      throw new ProvisioningError(`Queue name "${queueName}" is longer than SQS's 80 characters: shorten the prefix.`);
  }
  for (const tableName of [names.inboxTable, names.idempotencyTable, ...Object.values(tableNames)]) {
    if (tableName.length > 255)
      throw new ProvisioningError(`Table name "${tableName}" is longer than DynamoDB's 255 characters: shorten the prefix.`);
  }
  if (!/^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/.test(names.payloadBucket)) {
    throw new ProvisioningError(
      `Bucket name "${names.payloadBucket}" breaks S3's rules (3 to 63 lower-case letters, digits and "-", starting and ending with a letter or digit): shorten the prefix.`,
    );
  }
  return names;
}

/**
 * Creates, as the CDK construct does:
 *
 * - tables (on demand, `PAY_PER_REQUEST`, string keys): the inbox (partition key `pk`, TTL on
 *   `expiresAt`, with `inboxStream` a stream of `NEW_IMAGE`), the Powertools idempotency table
 *   (`id`, TTL on `expiration`), and each business table of `tables`;
 * - the dead-letter queue (its own retention and maximum message size) and the source queue
 *   (visibility timeout, retention and maximum message size from `settings.queue`, redrive
 *   policy `{ deadLetterTargetArn, maxReceiveCount: maxReceiveCount(settings) }`); both FIFO
 *   with content-based deduplication off when `settings.queue.fifo`;
 * - with `s3`, the payload bucket for dead-letter bodies too large for the DLQ.
 *
 * Idempotent: a table that already exists (e.g. in a kept `--data-dir`) is reused after its key
 * schema, TTL and stream are checked (a missing stream is added); an existing queue gets the
 * settings' attributes; an existing bucket is kept.
 *
 * Not mirrored, because they change nothing an emulator does: the stack's encryption,
 * `enforceSSL` policies, the DLQ's redrive-allow policy, point-in-time recovery, removal
 * policies, and the CDK-generated physical names (the names of {@link localResourceNames} stand
 * in for them).
 *
 * @throws {ProvisioningError} when a name is not valid or an existing table has another key
 *   schema, TTL attribute or stream view type
 * @throws the SDK's error for anything else the emulators reject
 */
export async function provisionResources(options: ProvisionOptions): Promise<LocalResources> {
  const { dynamoDb, sqs, settings } = options;
  const tables = options.tables ?? {};
  const names = localResourceNames(settings, options.prefix, tables);

  const [inbox] = await Promise.all([
    ensureTable(dynamoDb, {
      name: names.inboxTable,
      partitionKey: tableKeys.inbox.partitionKey,
      ttlAttribute: tableKeys.inbox.ttlAttribute,
      ...(options.inboxStream ? { streamViewType: 'NEW_IMAGE' as const } : {}),
    }),
    ensureTable(dynamoDb, {
      name: names.idempotencyTable,
      partitionKey: tableKeys.idempotency.partitionKey,
      ttlAttribute: tableKeys.idempotency.ttlAttribute,
    }),
    ...Object.entries(tables).map(([logicalName, table]) =>
      ensureTable(dynamoDb, {
        name: names.tables[logicalName]!,
        partitionKey: table.partitionKey,
        ...(table.sortKey === undefined ? {} : { sortKey: table.sortKey }),
      }),
    ),
    ...(options.s3 ? [ensureBucket(options.s3, names.payloadBucket)] : []),
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
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: deadLetterQueue.arn, maxReceiveCount: maxReceiveCount(settings) }),
  });

  return {
    inboxTable: names.inboxTable,
    idempotencyTable: names.idempotencyTable,
    tables: names.tables,
    queueUrl: queue.url,
    queueArn: queue.arn,
    deadLetterQueueUrl: deadLetterQueue.url,
    deadLetterQueueArn: deadLetterQueue.arn,
    ...(options.s3 ? { payloadBucket: names.payloadBucket } : {}),
    ...(options.inboxStream && inbox?.LatestStreamArn ? { inboxStreamArn: inbox.LatestStreamArn } : {}),
  };
}

/** A table to create (on demand) or check: {@link ensureTable}. */
export interface TableShape {
  readonly name: string;
  readonly partitionKey: string;
  /** @default 'S' */
  readonly partitionKeyType?: 'S' | 'N' | 'B';
  readonly sortKey?: string;
  /** @default 'S' */
  readonly sortKeyType?: 'S' | 'N' | 'B';
  readonly ttlAttribute?: string;
  /** A stream of this view type (`NEW_IMAGE`, `NEW_AND_OLD_IMAGES`, …). @default no stream */
  readonly streamViewType?: string;
}

/** Creates the table, or checks the existing one; returns its description once it is active. @throws {ProvisioningError} when an existing table has another key schema, TTL attribute or stream view type */
export async function ensureTable(dynamoDb: DynamoDBClient, table: TableShape): Promise<TableDescription | undefined> {
  const keySchema: KeySchemaElement[] = [
    { AttributeName: table.partitionKey, KeyType: 'HASH' },
    ...(table.sortKey === undefined ? [] : [{ AttributeName: table.sortKey, KeyType: 'RANGE' as const }]),
  ];
  const stream =
    table.streamViewType === undefined ? undefined : { StreamEnabled: true, StreamViewType: table.streamViewType as StreamViewType };
  try {
    await dynamoDb.send(
      new CreateTableCommand({
        TableName: table.name,
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: keySchema,
        AttributeDefinitions: keySchema.map((key) => ({
          AttributeName: key.AttributeName,
          AttributeType: (key.KeyType === 'HASH' ? table.partitionKeyType : table.sortKeyType) ?? 'S',
        })),
        ...(stream ? { StreamSpecification: stream } : {}),
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
    if (stream) {
      const current = Table?.StreamSpecification;
      if (current?.StreamEnabled && current.StreamViewType !== stream.StreamViewType) {
        throw new ProvisioningError(
          `Table ${table.name} has a stream of ${String(current.StreamViewType)}, but ${stream.StreamViewType} is needed (the outbox relay reads new images). Delete it (or the data directory) and provision again.`,
        );
      }
      if (!current?.StreamEnabled) {
        await waitUntilTableExists({ client: dynamoDb, maxWaitTime: 60, minDelay: 1, maxDelay: 2 }, { TableName: table.name });
        await dynamoDb.send(new UpdateTableCommand({ TableName: table.name, StreamSpecification: stream }));
      }
    }
  }
  const { reason } = await waitUntilTableExists({ client: dynamoDb, maxWaitTime: 60, minDelay: 1, maxDelay: 2 }, { TableName: table.name });
  const description = (reason as { Table?: TableDescription } | undefined)?.Table;

  if (table.ttlAttribute !== undefined) {
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
  if (table.streamViewType !== undefined && description?.LatestStreamArn === undefined) {
    return (await dynamoDb.send(new DescribeTableCommand({ TableName: table.name }))).Table;
  }
  return description;
}

/** Creates the bucket unless it exists. */
export async function ensureBucket(s3: S3Client, bucket: string): Promise<undefined> {
  try {
    await s3.send(new HeadBucketCommand({ Bucket: bucket }));
    return undefined;
  } catch (error) {
    const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    if (status !== 404 && (error as Error).name !== 'NotFound' && (error as Error).name !== 'NoSuchBucket') throw error;
  }
  try {
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  } catch (error) {
    if ((error as Error).name !== 'BucketAlreadyOwnedByYou') throw error;
  }
  return undefined;
}

/** Creates the queue with these attributes, or sets them on the existing one; returns its URL and ARN. @throws {ProvisioningError} when SQS returns no URL or ARN */
export async function ensureQueue(
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
 * `QueueAlreadyExists` (so does the strict SQS layer) and fauxqs alone as
 * `AWS.SimpleQueueService.QueueNameExists`, so the error is not always an instance of
 * `QueueNameExists`.
 */
function isQueueNameExists(error: unknown): boolean {
  if (error instanceof QueueNameExists) return true;
  const { name, Code } = error as { name?: unknown; Code?: unknown };
  return [name, Code].some((code) => typeof code === 'string' && /(QueueNameExists|QueueAlreadyExists)$/.test(code));
}
