/**
 * Builds "execution environments" of the real consumer against a test's own tables and queues,
 * and reads back what the consumer did: order state, ledger, notifications, the dead-letter queue.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { type Message, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import { lambdaEnvironment } from '../../config/settings.js';
import { readRuntimeConfig } from '../../lambda/config/runtimeConfig.js';
import { type ConsumerOverrides, createConsumer } from '../../lambda/createConsumer.js';
import { createSqsHandler } from '../../lambda/handlers/createSqsHandler.js';
import { LEDGER_SK_PREFIX, ORDER_STATE_SK } from '../../lambda/inbox/DynamoDBInbox.js';
import type { OutcomeRecord } from '../../lambda/observability/outcomes.js';
import { NOTIFICATION_SK_PREFIX } from '../../lambda/sideEffects/Notifier.js';
import { sqsRecord } from './sqsEvents.js';
import type { TestResources } from './testResources.js';

/** One execution environment: a handler built as at cold start, and the outcomes it reported. */
export function executionEnvironment(
  env: TestResources,
  overrides: ConsumerOverrides & { readonly dynamoDb?: DynamoDBClient } = {},
) {
  const config = readRuntimeConfig(lambdaEnvironment(env.settings, env.resources));
  const outcomes: OutcomeRecord[] = [];
  const consumer = createConsumer(
    config,
    { dynamoDb: overrides.dynamoDb ?? env.dynamoDb, sqs: env.sqs },
    { ...overrides, observer: { onOutcome: (record) => outcomes.push(record) } },
  );
  return { handler: createSqsHandler(consumer), outcomes, config };
}

/**
 * A DynamoDB client for the test's endpoint whose `TransactWriteItems` calls that mention
 * `marker` wait until `release()` is called (or forever: an invocation "killed" mid-commit).
 */
export function clientHoldingCommitsOf(env: TestResources, marker: string) {
  const client = new DynamoDBClient({
    endpoint: env.endpoints.dynamoDbEndpoint,
    region: env.endpoints.region,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let held = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'TransactWriteItemsCommand' && JSON.stringify(args.input).includes(`"${marker}"`)) {
        held += 1;
        await released;
      }
      return next(args);
    },
    { step: 'initialize', name: 'holdCommits' },
  );
  return { client, release, held: () => held };
}

/** A record of the test's source queue (so its ARN is real). */
export function queueRecord(env: TestResources, messageId: string, body: string | Record<string, unknown>, options: { receiveCount?: number; groupId?: string } = {}): SQSRecord {
  return sqsRecord(messageId, body, { ...options, queueArn: env.resources.queueArn });
}

/** The order's state item, or `undefined`. */
export async function orderState(env: TestResources, orderId: string) {
  const output = await env.documentClient.send(
    new GetCommand({ TableName: env.resources.ordersTable, Key: { orderId, sk: ORDER_STATE_SK }, ConsistentRead: true }),
  );
  return output.Item as { status: string; history: { status: string }[]; pointsAwarded: number; version: number } | undefined;
}

async function itemsWithPrefix(env: TestResources, orderId: string, prefix: string) {
  const output = await env.documentClient.send(
    new QueryCommand({
      TableName: env.resources.ordersTable,
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

/** Every message in the dead-letter queue (received, not deleted). */
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
