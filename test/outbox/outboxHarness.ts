/**
 * The outbox tests' own resources in the run's DynamoDB Local and SQS/SNS server: an inbox table
 * with a stream, an idempotency table, destinations (a FIFO queue, a FIFO topic with a FIFO queue
 * subscribed, a standard queue), outbox items written in the engine's shape, stream events read
 * from the table's stream, and clients whose requests can be hooked (crash injection).
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { CreateTableCommand, DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient, DescribeStreamCommand, GetRecordsCommand, GetShardIteratorCommand } from '@aws-sdk/client-dynamodb-streams';
import { CreateTopicCommand, DeleteTopicCommand, SNSClient, SubscribeCommand } from '@aws-sdk/client-sns';
import { CreateQueueCommand, DeleteQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { Context, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { tableKeys } from '../../packages/idempotent-consumer/src/settings/settings.js';
import { outboxPut } from '../../packages/idempotent-consumer/src/outbox/outboxItems.js';
import {
  outboxRelayEnvironment,
  outboxRelaySettings,
  type OutboxRelaySettings,
} from '../../packages/idempotent-consumer/src/outbox/outboxRelaySettings.js';
import type { OutgoingMessage } from '../../packages/idempotent-consumer/src/types.js';
import { createLambdaContext, newLogStreamName } from '../../packages/local/src/lambdaContext.js';
import { localCredentials } from '../../packages/local/src/localClientConfig.js';
import { toLambdaRecord } from '../../packages/local/src/outbox/DynamoDbStreamEventSourcePoller.js';
import { awsEndpoints } from '../support/awsEndpoints.js';

export const CONSUMER = 'outbox-test';

/** A hook run on every request of a client: `before` the request is sent, `after` its response came. */
export type RequestHook = (phase: 'before' | 'after', command: string, input: Record<string, unknown>) => Promise<void> | void;

/** Adds `hook` to a client's middleware (at `initialize`, so no SDK retry sees what it throws). */
export function hook<T extends DynamoDBClient | DynamoDBStreamsClient | SQSClient | SNSClient>(client: T, requestHook: RequestHook): T {
  (client.middlewareStack as unknown as DynamoDBClient['middlewareStack']).add(
    (next, context) => async (args) => {
      await requestHook('before', context.commandName ?? '', args.input as Record<string, unknown>);
      const result = await next(args);
      await requestHook('after', context.commandName ?? '', args.input as Record<string, unknown>);
      return result;
    },
    { step: 'initialize', name: 'outboxTestHook' },
  );
  return client;
}

/** A promise that never settles: an invocation that reaches it has crashed (it is abandoned). */
export const crash = (): Promise<never> => new Promise<never>(() => undefined);

/** Waits until `check` holds, polling every 20 ms. @throws Error after `timeoutMs` */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A Lambda context whose deadline is `timeoutMs` from now, and that deadline (epoch ms). */
export function invocationContext(timeoutMs = 30_000): { context: Context; deadline: number } {
  const start = Date.now();
  const context = createLambdaContext({
    functionName: `${CONSUMER}-outbox-relay`,
    region: 'us-east-1',
    accountId: '000000000000',
    timeoutSeconds: timeoutMs / 1000,
    memorySizeMb: 256,
    logStreamName: newLogStreamName(),
    now: Date.now,
  });
  return { context, deadline: start + timeoutMs };
}

/** The run's clients (fresh instances; hook them as needed). */
export function clients() {
  const endpoints = awsEndpoints();
  const common = { region: endpoints.region, credentials: { ...localCredentials } };
  return {
    dynamoDb: new DynamoDBClient({ ...common, endpoint: endpoints.dynamoDbEndpoint }),
    streams: new DynamoDBStreamsClient({ ...common, endpoint: endpoints.dynamoDbEndpoint }),
    sqs: new SQSClient({ ...common, endpoint: endpoints.sqsEndpoint }),
    sns: new SNSClient({ ...common, endpoint: endpoints.sqsEndpoint }),
  };
}

/** A test file's outbox resources. */
export interface OutboxResources {
  readonly prefix: string;
  readonly inboxTable: string;
  readonly idempotencyTable: string;
  readonly streamArn: string;
  /** A FIFO queue as a destination. */
  readonly fifoQueueUrl: string;
  /** A FIFO topic as a destination, and the FIFO queue subscribed to it (raw delivery). */
  readonly fifoTopicArn: string;
  readonly fifoTopicSubscriberUrl: string;
  /** A standard queue as a destination (no deduplication). */
  readonly standardQueueUrl: string;
  readonly dynamoDb: DynamoDBClient;
  readonly documentClient: DynamoDBDocumentClient;
  readonly streams: DynamoDBStreamsClient;
  readonly sqs: SQSClient;
  readonly sns: SNSClient;
  /** The relay's environment with `destinations` (logical name → target). */
  environment(destinations: Readonly<Record<string, string>>, settings?: Partial<OutboxRelaySettings>): Record<string, string>;
  dispose(): Promise<void>;
}

/** Creates the resources under a unique prefix. */
export async function outboxResources(name: string): Promise<OutboxResources> {
  const { dynamoDb, streams, sqs, sns } = clients();
  const prefix = `${name}-${randomUUID().slice(0, 8)}-`;
  const inboxTable = `${prefix}Inbox`;
  const idempotencyTable = `${prefix}Idempotency`;
  const created = await dynamoDb.send(
    new CreateTableCommand({
      TableName: inboxTable,
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [{ AttributeName: tableKeys.inbox.partitionKey, KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: tableKeys.inbox.partitionKey, AttributeType: 'S' }],
      StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_IMAGE' },
    }),
  );
  await dynamoDb.send(
    new CreateTableCommand({
      TableName: idempotencyTable,
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [{ AttributeName: tableKeys.idempotency.partitionKey, KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: tableKeys.idempotency.partitionKey, AttributeType: 'S' }],
    }),
  );
  const queue = async (queueName: string, fifo: boolean) => {
    const output = await sqs.send(new CreateQueueCommand({ QueueName: queueName, ...(fifo ? { Attributes: { FifoQueue: 'true' } } : {}) }));
    const arn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: output.QueueUrl, AttributeNames: ['QueueArn'] }))).Attributes!
      .QueueArn!;
    return { url: output.QueueUrl!, arn };
  };
  const fifoQueue = await queue(`${prefix}out.fifo`, true);
  const subscriber = await queue(`${prefix}sub.fifo`, true);
  const standardQueue = await queue(`${prefix}out`, false);
  const topic = await sns.send(new CreateTopicCommand({ Name: `${prefix}out.fifo`, Attributes: { FifoTopic: 'true' } }));
  await sns.send(
    new SubscribeCommand({
      TopicArn: topic.TopicArn,
      Protocol: 'sqs',
      Endpoint: subscriber.arn,
      Attributes: { RawMessageDelivery: 'true' },
    }),
  );
  const documentClient = DynamoDBDocumentClient.from(dynamoDb, { marshallOptions: { removeUndefinedValues: true } });
  return {
    prefix,
    inboxTable,
    idempotencyTable,
    streamArn: created.TableDescription!.LatestStreamArn!,
    fifoQueueUrl: fifoQueue.url,
    fifoTopicArn: topic.TopicArn!,
    fifoTopicSubscriberUrl: subscriber.url,
    standardQueueUrl: standardQueue.url,
    dynamoDb,
    documentClient,
    streams,
    sqs,
    sns,
    environment: (destinations, settings = {}) =>
      outboxRelayEnvironment(outboxRelaySettings(settings), { consumerName: CONSUMER, inboxTable, idempotencyTable, destinations }),
    dispose: async () => {
      await Promise.allSettled([
        ...[fifoQueue.url, subscriber.url, standardQueue.url].map((QueueUrl) => sqs.send(new DeleteQueueCommand({ QueueUrl }))),
        sns.send(new DeleteTopicCommand({ TopicArn: topic.TopicArn })),
        ...[inboxTable, idempotencyTable].map((TableName) => dynamoDb.send(new DeleteTableCommand({ TableName }))),
      ]);
      for (const client of [dynamoDb, streams, sqs, sns]) client.destroy();
    },
  };
}

/** An event's outgoing messages, as a decision returns them. */
export interface EmittedEvent {
  readonly idempotencyKey: string;
  readonly orderingKey?: string;
  readonly outbox: readonly OutgoingMessage[];
}

/**
 * Commits the outbox items of `events` as the engine does (`outboxPut`, one transaction per event)
 * and returns their message ids in order.
 */
export async function commitOutboxItems(
  env: OutboxResources,
  events: readonly EmittedEvent[],
  now = new Date(),
  consumerName = CONSUMER,
): Promise<string[]> {
  const ids: string[] = [];
  for (const event of events) {
    const puts = event.outbox.map((message, position) =>
      outboxPut({
        tableName: env.inboxTable,
        consumerName,
        idempotencyKey: event.idempotencyKey,
        orderingKey: event.orderingKey ?? event.idempotencyKey,
        position,
        message,
        now,
        ttlSeconds: 30 * 24 * 3600,
      }),
    );
    await env.documentClient.send(new TransactWriteCommand({ TransactItems: puts.map((Put) => ({ Put })) }));
    ids.push(...puts.map((put) => put.Item.messageId));
  }
  return ids;
}

/** The outbox item of a message id, or `undefined`. */
export async function outboxItem(env: OutboxResources, messageId: string, consumerName = CONSUMER) {
  const output = await env.documentClient.send(
    new GetCommand({
      TableName: env.inboxTable,
      Key: { [tableKeys.inbox.partitionKey]: `${consumerName}#outbox#${messageId}` },
      ConsistentRead: true,
    }),
  );
  return output.Item;
}

/** Every record of the table's stream so far (all shards, from the trim horizon), as Lambda puts them in an event. */
export async function streamRecords(env: OutboxResources): Promise<DynamoDBRecord[]> {
  const described = await env.streams.send(new DescribeStreamCommand({ StreamArn: env.streamArn }));
  const records: DynamoDBRecord[] = [];
  for (const shard of described.StreamDescription?.Shards ?? []) {
    let iterator = (
      await env.streams.send(
        new GetShardIteratorCommand({ StreamArn: env.streamArn, ShardId: shard.ShardId!, ShardIteratorType: 'TRIM_HORIZON' }),
      )
    ).ShardIterator;
    while (iterator !== undefined) {
      const output = await env.streams.send(new GetRecordsCommand({ ShardIterator: iterator }));
      records.push(...(output.Records ?? []).map((record) => toLambdaRecord(record, env.streamArn)));
      if ((output.Records ?? []).length === 0) break;
      iterator = output.NextShardIterator;
    }
  }
  return records;
}

/** The stream event of the insert records of `messageIds`, in stream order. */
export async function insertEvent(env: OutboxResources, messageIds: readonly string[]): Promise<DynamoDBStreamEvent> {
  const wanted = new Set(messageIds.map((id) => `${CONSUMER}#outbox#${id}`));
  const records = (await streamRecords(env)).filter(
    (record) => record.eventName === 'INSERT' && wanted.has(record.dynamodb?.Keys?.[tableKeys.inbox.partitionKey]?.S ?? ''),
  );
  if (records.length !== messageIds.length) throw new Error(`found ${records.length} insert records for ${messageIds.length} messages`);
  return { Records: records };
}
