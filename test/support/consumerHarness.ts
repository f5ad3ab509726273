/**
 * Execution environments of any consumer built with the public API (`createIdempotentConsumer`)
 * against a test's own tables and queues, and what it left behind: business items, inbox rows,
 * outbox items, attempt records, Powertools' idempotency records. The café's own harness is
 * `cafeHarness.ts`; this one knows no domain.
 *
 * @module
 */
import { Logger } from '@aws-lambda-powertools/logger';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Message } from '@aws-sdk/client-sqs';
import { GetCommand, ScanCommand, type ScanCommandInput } from '@aws-sdk/lib-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import {
  createIdempotentConsumer,
  type IdempotentConsumerHandler,
  type IdempotentConsumerOptions,
  type Item,
  type OutcomeRecord,
  type SideEffectHandlers,
} from 'idempotent-consumer';
import type { DryRunConsumer } from '../../packages/cli/src/dlq/dryRunConsumer.js';
import { defineConsumer } from '../../packages/idempotent-consumer/src/engine/ConsumerDefinition.js';
import { sqsRecord } from './sqsEvents.js';
import type { TestResources } from './testResources.js';

/** A Powertools Logger (silent) that keeps what the engine warns about: each warning's message and its extra keys. */
export class RecordingLogger extends Logger {
  readonly warnings: { readonly message: string; readonly [key: string]: unknown }[] = [];

  constructor() {
    super({ serviceName: 'test', logLevel: 'SILENT' });
  }

  override warn(...args: Parameters<Logger['warn']>): void {
    const [input, ...extra] = args;
    const message = typeof input === 'string' ? input : String((input as { message?: unknown }).message);
    const keys: Record<string, unknown> = {};
    for (const e of extra) if (typeof e === 'object' && e !== null && !(e instanceof Error)) Object.assign(keys, e);
    this.warnings.push({ ...keys, message });
    super.warn(...(args as [string, ...Record<string, unknown>[]]));
  }
}

/** One warm execution environment: its handler (with its own item cache) and the outcomes it reported. */
export interface ExecutionEnvironment {
  readonly handler: IdempotentConsumerHandler;
  readonly outcomes: OutcomeRecord[];
}

/**
 * A new execution environment of the consumer `options` (as after a cold start): a handler built
 * with `createIdempotentConsumer(options, runtime)` on the test's resources, whose observer
 * collects every outcome. Two calls give two environments that share nothing but the tables.
 */
export function consumerEnvironment<Event, TableName extends string, Handlers extends SideEffectHandlers<TableName>>(
  env: TestResources,
  options: IdempotentConsumerOptions<Event, TableName, Handlers>,
  runtime: { readonly dynamoDb?: DynamoDBClient; readonly logger?: Logger } = {},
): ExecutionEnvironment {
  const outcomes: OutcomeRecord[] = [];
  const handler = createIdempotentConsumer(options, {
    environment: env.environment,
    ...(runtime.logger === undefined ? {} : { logger: runtime.logger }),
    clients: { dynamoDb: runtime.dynamoDb ?? env.dynamoDb, sqs: env.sqs, s3: env.s3 },
    observer: { onOutcome: (record) => outcomes.push(record) },
  });
  return { handler, outcomes };
}

/**
 * The consumer `options` as the DLQ tool's dry run (`decideDeadLetter`) sees it, on the test's
 * tables, inline (no handler module), with the settings' inbox window.
 */
export function dryRunConsumer<Event, TableName extends string, Handlers extends SideEffectHandlers<TableName>>(
  env: TestResources,
  options: IdempotentConsumerOptions<Event, TableName, Handlers>,
  consumerName = env.settings.consumerName,
): DryRunConsumer {
  return {
    handler: 'inline',
    definition: defineConsumer(options as never) as never,
    consumerName,
    inboxTable: env.resources.inboxTable,
    tables: env.resources.tables,
    inboxTtlSeconds: env.settings.idempotency.inboxTtlSeconds,
    inboxTtlFrom: 'settings',
    dynamoDbEndpoint: undefined,
    client: env.documentClient,
  };
}

/** `messageId:outcome` of each record, for compact assertions. */
export const outcomeList = (outcomes: readonly OutcomeRecord[]): string[] => outcomes.map((o) => `${o.messageId}:${o.outcome}`);

/** A record of the test's source queue (its real ARN), with message attributes in Lambda's form when given. */
export function sourceRecord(
  env: TestResources,
  messageId: string,
  body: string | Record<string, unknown>,
  options: { readonly receiveCount?: number; readonly groupId?: string; readonly stringAttributes?: Readonly<Record<string, string>> } = {},
): SQSRecord {
  const record = sqsRecord(messageId, body, {
    ...(options.receiveCount === undefined ? {} : { receiveCount: options.receiveCount }),
    ...(options.groupId === undefined ? {} : { groupId: options.groupId }),
    queueArn: env.resources.queueArn,
  });
  const attributes = Object.fromEntries(
    Object.entries(options.stringAttributes ?? {}).map(([name, value]) => [
      name,
      { stringValue: value, dataType: 'String', stringListValues: [], binaryListValues: [] },
    ]),
  );
  return { ...record, messageAttributes: attributes };
}

/**
 * A message received from a queue, as Lambda's SQS event source mapping hands it to the function
 * (`messageAttributes` with `stringValue`/`binaryValue` in base64/`dataType`).
 */
export function recordFromMessage(message: Message, queueArn: string): SQSRecord {
  const system = message.Attributes ?? {};
  return {
    messageId: message.MessageId ?? '',
    receiptHandle: message.ReceiptHandle ?? '',
    body: message.Body ?? '',
    attributes: {
      ApproximateReceiveCount: system.ApproximateReceiveCount ?? '1',
      SentTimestamp: system.SentTimestamp ?? '0',
      SenderId: system.SenderId ?? 'AIDAEXAMPLE',
      ApproximateFirstReceiveTimestamp: system.ApproximateFirstReceiveTimestamp ?? '0',
      ...(system.MessageGroupId === undefined ? {} : { MessageGroupId: system.MessageGroupId }),
      ...(system.MessageDeduplicationId === undefined ? {} : { MessageDeduplicationId: system.MessageDeduplicationId }),
      ...(system.SequenceNumber === undefined ? {} : { SequenceNumber: system.SequenceNumber }),
    },
    messageAttributes: Object.fromEntries(
      Object.entries(message.MessageAttributes ?? {}).map(([name, value]) => [
        name,
        {
          dataType: value.DataType ?? 'String',
          stringListValues: [],
          binaryListValues: [],
          ...(value.StringValue === undefined ? {} : { stringValue: value.StringValue }),
          ...(value.BinaryValue === undefined ? {} : { binaryValue: Buffer.from(value.BinaryValue).toString('base64') }),
        },
      ]),
    ),
    md5OfBody: message.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: 'us-east-1',
  } as SQSRecord;
}

/** The stored item of a business table (logical name), read consistently; `undefined` when absent. */
export async function storedItem<T extends Item = Item>(env: TestResources, table: string, key: Item): Promise<T | undefined> {
  const tableName = env.resources.tables[table];
  if (tableName === undefined) throw new Error(`the test's resources have no table "${table}"`);
  const output = await env.documentClient.send(new GetCommand({ TableName: tableName, Key: key, ConsistentRead: true }));
  return output.Item as T | undefined;
}

/** Every item of a physical table (consistent scan, all pages), optionally filtered. */
export async function scanAll(
  env: TestResources,
  tableName: string,
  filter: Pick<ScanCommandInput, 'FilterExpression' | 'ExpressionAttributeNames' | 'ExpressionAttributeValues'> = {},
): Promise<Item[]> {
  const items: Item[] = [];
  let start: Item | undefined;
  do {
    const output = await env.documentClient.send(
      new ScanCommand({
        TableName: tableName,
        ConsistentRead: true,
        ...filter,
        ...(start === undefined ? {} : { ExclusiveStartKey: start }),
      }),
    );
    items.push(...((output.Items ?? []) as Item[]));
    start = output.LastEvaluatedKey as Item | undefined;
  } while (start !== undefined);
  return items;
}

/** The inbox row of an idempotency key (applied or dead-lettered), or `undefined`. */
export async function inboxRowOf(env: TestResources, idempotencyKey: string): Promise<Item | undefined> {
  const output = await env.documentClient.send(
    new GetCommand({
      TableName: env.resources.inboxTable,
      Key: { pk: `${env.settings.consumerName}#key#${idempotencyKey}` },
      ConsistentRead: true,
    }),
  );
  return output.Item as Item | undefined;
}

/** The attempt record of a source id (`sqs:<messageId>`, `kafka:<topic>-<partition>@<offset>`), or `undefined`. */
export async function attemptRecordOf(env: TestResources, sourceId: string): Promise<Item | undefined> {
  const output = await env.documentClient.send(
    new GetCommand({
      TableName: env.resources.inboxTable,
      Key: { pk: `${env.settings.consumerName}#attempt#${sourceId}` },
      ConsistentRead: true,
    }),
  );
  return output.Item as Item | undefined;
}

/** Every outbox item the consumer wrote. */
export const outboxItems = (env: TestResources): Promise<Item[]> =>
  scanAll(env, env.resources.inboxTable, { FilterExpression: 'kind = :k', ExpressionAttributeValues: { ':k': 'outbox' } });

/** Every inbox row (kind `inbox`) the consumer wrote. */
export const inboxRows = (env: TestResources): Promise<Item[]> =>
  scanAll(env, env.resources.inboxTable, { FilterExpression: 'kind = :k', ExpressionAttributeValues: { ':k': 'inbox' } });

/** Every record in the side-effect guard's table (Powertools idempotency records). */
export const idempotencyRecords = (env: TestResources): Promise<Item[]> => scanAll(env, env.resources.idempotencyTable);
