/**
 * Execution environments of the café consumer (built with the public API) against a test's own
 * tables and queues, and what the consumer left behind: order state, ledger, notifications,
 * inbox rows, outbox items, the dead-letter queue.
 *
 * @module
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { type Message, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { GetCommand, QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import { createIdempotentConsumer, type OutcomeRecord } from 'idempotent-consumer';
import { cafeConsumerOptions, LEDGER_SK_PREFIX, NOTIFICATION_SK_PREFIX, ORDER_SK } from '../../examples/cafe/consumer.js';
import { cafeTables } from '../../examples/cafe/settings.js';
import { sqsRecord } from './sqsEvents.js';
import { type TestResources, testResources } from './testResources.js';

export { cafeTables };
/** The café consumer's options, typed by its table names and side effects: a test's variant overrides some of them. */
export type CafeOptions = typeof cafeConsumerOptions;

/** The café's resources for a test file. */
export function cafeResources(name: string, overrides: Parameters<typeof testResources>[2] = {}): Promise<TestResources> {
  return testResources(name, cafeTables, { consumerName: 'cafe-orders', ...overrides });
}

/** One execution environment (as after a cold start): a handler and the outcomes it reported. */
export function executionEnvironment(env: TestResources, options: { consumer?: Partial<CafeOptions>; dynamoDb?: DynamoDBClient } = {}) {
  const outcomes: OutcomeRecord[] = [];
  const handler = createIdempotentConsumer(
    { ...cafeConsumerOptions, ...options.consumer },
    {
      environment: env.environment,
      clients: { dynamoDb: options.dynamoDb ?? env.dynamoDb, sqs: env.sqs, s3: env.s3 },
      observer: { onOutcome: (record) => outcomes.push(record) },
    },
  );
  return { handler, outcomes };
}

/** A record of the test's source queue (so its ARN is real). */
export function queueRecord(
  env: TestResources,
  messageId: string,
  body: string | Record<string, unknown>,
  options: { receiveCount?: number; groupId?: string } = {},
): SQSRecord {
  return sqsRecord(messageId, body, { ...options, queueArn: env.resources.queueArn });
}

/** The order's state item, or `undefined`. */
export async function orderState(env: TestResources, orderId: string) {
  const output = await env.documentClient.send(
    new GetCommand({ TableName: env.resources.tables.orders, Key: { orderId, sk: ORDER_SK }, ConsistentRead: true }),
  );
  return output.Item as
    | {
        status: string;
        history: { status: string; eventId: string }[];
        pointsAwarded: number;
        /** The inbox marks of the order's events (the café's `inboxHome`), by `<consumer>#<idempotency key>`. */
        _inbox?: Record<string, { h: string; m: string; x: number; s?: string; r?: string }>;
      }
    | undefined;
}

async function itemsWithPrefix(env: TestResources, orderId: string, prefix: string) {
  const output = await env.documentClient.send(
    new QueryCommand({
      TableName: env.resources.tables.orders,
      KeyConditionExpression: 'orderId = :o AND begins_with(sk, :p)',
      ExpressionAttributeValues: { ':o': orderId, ':p': prefix },
      ConsistentRead: true,
    }),
  );
  return output.Items ?? [];
}

/** The order's ledger entries. */
export const ledgerOf = (env: TestResources, orderId: string) => itemsWithPrefix(env, orderId, LEDGER_SK_PREFIX);
/** The order's sent notifications. */
export const notificationsOf = (env: TestResources, orderId: string) => itemsWithPrefix(env, orderId, NOTIFICATION_SK_PREFIX);

/** Every item of the inbox table of a kind (`inbox`, `outbox`, `attempts`). */
export async function inboxItems(env: TestResources, kind: string) {
  const output = await env.documentClient.send(
    new ScanCommand({
      TableName: env.resources.inboxTable,
      ConsistentRead: true,
      FilterExpression: 'kind = :k',
      ExpressionAttributeValues: { ':k': kind },
    }),
  );
  return output.Items ?? [];
}

/** Every message in the dead-letter queue (received, not deleted; visible again after 30 s). */
export async function deadLetters(env: TestResources): Promise<Message[]> {
  const messages: Message[] = [];
  for (;;) {
    const output = await env.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: env.resources.deadLetterQueueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 0,
        VisibilityTimeout: 30,
        MessageAttributeNames: ['All'],
        MessageSystemAttributeNames: ['All'],
      }),
    );
    if ((output.Messages ?? []).length === 0) return messages;
    messages.push(...(output.Messages ?? []));
  }
}

/** Resolves when `check` returns true, polling every 20 ms; rejects after `timeoutMs`. */
export async function eventually(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
