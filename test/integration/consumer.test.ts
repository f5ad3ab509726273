/**
 * The consumer against the real DynamoDB Local and SQS server: cases C1, C2, C3, C6, C7 and
 * C9 (run time), and the inbox's behaviour.
 */
import { GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TransactionConflict } from '../../lambda/errors.js';
import { DynamoDBNotificationLog } from '../../lambda/sideEffects/Notifier.js';
import { createGuardedNotifier, LambdaContextNotRegistered } from '../../lambda/sideEffects/guardedNotifier.js';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { pollerOptionsFromSettings, SqsEventSourcePoller } from '../../local/sqsEventSourcePoller.js';
import {
  clientHoldingCommitsOf,
  deadLetters,
  eventually,
  executionEnvironment,
  ledgerOf,
  notificationsOf,
  orderState,
  queueRecord,
} from '../support/consumerHarness.js';
import { body, lambdaContext, sqsEvent } from '../support/sqsEvents.js';
import { sendMessages } from '../support/sqsMessages.js';
import { type TestResources, testResources } from '../support/testResources.js';

/** Applies an OrderPlaced for each order (the cases' baseline). */
async function placeOrders(env: TestResources, ...orderIds: string[]) {
  const { handler } = executionEnvironment(env);
  const records = orderIds.map((orderId, i) => queueRecord(env, `placed-${orderId}`, body.placed(`placed-${orderId}`, orderId)));
  const response = await handler(sqsEvent(...records), lambdaContext());
  expect(response.batchItemFailures).toEqual([]);
}

describe('case C1: a timeout part-way through a batch', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('c1');
  });
  afterAll(() => env.dispose());

  it('replays the batch without applying anything twice', async () => {
    await placeOrders(env, 'O-1', 'O-2', 'O-3');
    const batch = (receiveCount: number) =>
      sqsEvent(
        queueRecord(env, 'm-1', body.paid('e-1', 'O-1', 10), { receiveCount }),
        queueRecord(env, 'm-2', body.paid('e-2', 'O-2', 20), { receiveCount }),
        queueRecord(env, 'm-3', body.paid('e-3', 'O-3', 30), { receiveCount }),
      );

    // Attempt 1: e-3's commit never returns (the invocation is killed while e-3 runs), after its
    // notification was sent; e-1 and e-2 are applied. No response is returned.
    const killed = clientHoldingCommitsOf(env, 'e-3');
    const attempt1 = executionEnvironment(env, { dynamoDb: killed.client });
    void attempt1.handler(batch(1), lambdaContext(200));
    await eventually(async () => (await orderState(env, 'O-2'))?.status === 'Paid' && (await orderState(env, 'O-1'))?.status === 'Paid' && killed.held() === 1);
    await new Promise((resolve) => setTimeout(resolve, 300)); // past attempt 1's deadline

    // Attempt 2: a new execution environment, receive count 2.
    const attempt2 = executionEnvironment(env);
    const response = await attempt2.handler(batch(2), lambdaContext());

    expect(JSON.stringify(response)).toBe('{"batchItemFailures":[]}');
    for (const [orderId, points] of [['O-1', 10], ['O-2', 20], ['O-3', 30]] as const) {
      expect((await orderState(env, orderId))?.status).toBe('Paid');
      expect((await ledgerOf(env, orderId)).map((entry) => entry.points)).toEqual([points]);
      expect(await notificationsOf(env, orderId)).toHaveLength(1);
    }
    expect(attempt2.outcomes.map((o) => [o.messageId, o.outcome]).sort()).toEqual([
      ['m-1', 'duplicate'],
      ['m-2', 'duplicate'],
      ['m-3', 'applied'],
    ]);
    expect(await deadLetters(env)).toEqual([]);
    killed.release();
  });
});

describe('case C2: the lock of an invocation that timed out is taken over', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('c2');
  });
  afterAll(() => env.dispose());

  it('completes on the second delivery, after the first invocation deadline', async () => {
    await placeOrders(env, 'O-1');
    const event = (receiveCount: number) => sqsEvent(queueRecord(env, 'm-1', body.paid('e-1', 'O-1', 10), { receiveCount }));

    // Attempt 1 takes the lock, then hangs inside the side effect and is killed.
    let entered = false;
    const hanging = executionEnvironment(env, {
      notifier: {
        paymentReceived: () => {
          entered = true;
          return new Promise<void>(() => undefined);
        },
      },
    });
    void hanging.handler(event(1), lambdaContext(300));
    await eventually(async () => entered);

    // The in-progress record has a finite expiry: the invocation's deadline.
    const { Items } = await env.documentClient.send(
      new ScanCommand({ TableName: env.resources.idempotencyTable, ConsistentRead: true }),
    );
    expect(Items).toHaveLength(1);
    expect(Items?.[0]?.status).toBe('INPROGRESS');
    const expiry = Number(Items?.[0]?.in_progress_expiration);
    expect(expiry).toBeGreaterThan(Date.now() - 1000);
    expect(expiry).toBeLessThanOrEqual(Date.now() + 300);

    await new Promise((resolve) => setTimeout(resolve, 400)); // the deadline passes
    const second = executionEnvironment(env);
    const response = await second.handler(event(2), lambdaContext());

    expect(response).toEqual({ batchItemFailures: [] });
    expect((await orderState(env, 'O-1'))?.status).toBe('Paid');
    expect(await ledgerOf(env, 'O-1')).toHaveLength(1);
    expect(await notificationsOf(env, 'O-1')).toHaveLength(1);
    expect(await deadLetters(env)).toEqual([]);
  });

  it('refuses a guarded side effect when no Lambda context was registered', async () => {
    const notifier = createGuardedNotifier({
      notifier: new DynamoDBNotificationLog(env.documentClient, env.resources.ordersTable),
      persistenceStore: new DynamoDBPersistenceLayer({ tableName: env.resources.idempotencyTable, awsSdkV3Client: env.dynamoDb }),
      expiresAfterSeconds: 3600,
    });
    await expect(notifier.paymentReceived({ orderId: 'O-9', eventId: 'e-9', points: 1 })).rejects.toThrow(LambdaContextNotRegistered);
    expect(await notificationsOf(env, 'O-9')).toHaveLength(0);
  });
});

describe('case C3: FIFO, a failure stops its group and nothing after it is lost', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('c3', { queue: { fifo: true } });
  });
  afterAll(() => env.dispose());

  it('applies nothing after the failure, then everything in order after redelivery', async () => {
    await placeOrders(env, 'O-1');
    const event = (receiveCount: number) =>
      sqsEvent(
        queueRecord(env, 'm-1', body.paid('e-1', 'O-1', 15), { receiveCount, groupId: 'O-1' }),
        queueRecord(env, 'm-2', body.shipped('e-2', 'O-1'), { receiveCount, groupId: 'O-1' }),
        queueRecord(env, 'm-3', body.delivered('e-3', 'O-1'), { receiveCount, groupId: 'O-1' }),
      );
    let failedOnce = false;
    const flaky = executionEnvironment(env, {
      wrapProcessor: (processor) => ({
        process: async (message) => {
          if (message.messageId === 'm-1' && !failedOnce) {
            failedOnce = true;
            throw new TransactionConflict('simulated conflict on the first attempt');
          }
          return processor.process(message);
        },
      }),
    });

    const first = await flaky.handler(event(1), lambdaContext());
    expect(JSON.stringify(first)).toBe('{"batchItemFailures":[{"itemIdentifier":"m-1"},{"itemIdentifier":"m-2"},{"itemIdentifier":"m-3"}]}');
    expect((await orderState(env, 'O-1'))?.status).toBe('Created');

    const second = await flaky.handler(event(2), lambdaContext());
    expect(second).toEqual({ batchItemFailures: [] });
    const order = await orderState(env, 'O-1');
    expect(order?.status).toBe('Delivered');
    expect(order?.history.map((h) => h.status)).toEqual(['Created', 'Paid', 'Shipped', 'Delivered']);
    expect(await ledgerOf(env, 'O-1')).toHaveLength(1);
    expect(await deadLetters(env)).toEqual([]);
  });
});

describe('case C6: retries run out', () => {
  let env: TestResources;
  beforeAll(async () => {
    // Short visibility timeout and no backoff, so five receives take seconds, not minutes.
    env = await testResources('c6', { queue: { visibilityTimeoutSeconds: 1 }, retryBackoff: { baseSeconds: 0 } });
  });
  afterAll(() => env.dispose());

  it('calls the handler 5 times, then dead-letters the message as RetriesExhausted with the last error', async () => {
    await placeOrders(env, 'O-1');
    const m1 = JSON.stringify(body.paid('e-1', 'O-1', 10));
    const seen: number[] = [];
    await sendMessages(env.sqs, env.resources.queueUrl, [m1]);
    const poller = new SqsEventSourcePoller({
      sqs: env.sqs,
      queueUrl: env.resources.queueUrl,
      queueArn: env.resources.queueArn,
      ...pollerOptionsFromSettings(env.settings),
      concurrency: 2,
      createHandler: () => {
        const environment = executionEnvironment(env, {
          wrapProcessor: () => ({
            process: async () => {
              throw new TransactionConflict(`conflict number ${seen.length}`);
            },
          }),
        });
        return async (event, context) => {
          seen.push(...event.Records.map((r) => Number(r.attributes.ApproximateReceiveCount)));
          return environment.handler(event, context);
        };
      },
    });
    await poller.runUntilIdle({ idleMs: 1500, timeoutMs: 30_000 });
    await poller.stop();

    expect(seen).toEqual([1, 2, 3, 4, 5]);
    const dlq = await deadLetters(env);
    expect(dlq).toHaveLength(1);
    expect(dlq[0]?.Body).toBe(m1);
    expect(dlq[0]?.MessageAttributes?.failureReason?.StringValue).toBe('RetriesExhausted');
    expect(dlq[0]?.MessageAttributes?.errorType?.StringValue).toBe('TransactionConflict');
    expect(dlq[0]?.MessageAttributes?.errorMessage?.StringValue).toBe('conflict number 5');
    expect(dlq[0]?.MessageAttributes?.attempts?.StringValue).toBe('5');
    expect((await orderState(env, 'O-1'))?.status).toBe('Created');
  });
});

describe('case C10: FIFO order holds end to end in the local runtime', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('c10', { queue: { fifo: true } });
  });
  afterAll(() => env.dispose());

  it('applies a group in order, with at most one batch of the group in flight', async () => {
    const events = [
      body.placed('e-1', 'O-1', 0),
      body.paid('e-2', 'O-1', 25, 1),
      body.shipped('e-3', 'O-1', 2),
      body.delivered('e-4', 'O-1', 3),
      body.delivered('e-4', 'O-1', 3), // e-5: the producer sends e-4 again
    ].map((b) => JSON.stringify(b));
    await sendMessages(env.sqs, env.resources.queueUrl, events, {
      messageGroupId: 'O-1',
      deduplicationIds: ['e-1', 'e-2', 'e-3', 'e-4', 'e-5'],
    });
    const invocations: { start: number; end: number }[] = [];
    const seen: string[] = [];
    const poller = new SqsEventSourcePoller({
      sqs: env.sqs,
      queueUrl: env.resources.queueUrl,
      queueArn: env.resources.queueArn,
      ...pollerOptionsFromSettings(env.settings),
      concurrency: 3,
      createHandler: () =>
        executionEnvironment(env, {
          wrapProcessor: (processor) => ({
            process: async (message) => {
              await new Promise((resolve) => setTimeout(resolve, 100)); // each call takes a noticeable time
              const result = await processor.process(message);
              seen.push(`${result.event.eventId}:${result.outcome}`);
              return result;
            },
          }),
        }).handler,
      onInvocation: (report) => invocations.push({ start: report.startedAt, end: report.startedAt + report.durationMs }),
    });

    await poller.runUntilIdle({ idleMs: 1000, timeoutMs: 30_000 });
    await poller.stop();

    expect(seen).toEqual(['e-1:applied', 'e-2:applied', 'e-3:applied', 'e-4:applied', 'e-4:duplicate']);
    expect((await orderState(env, 'O-1'))?.history.map((h) => h.status)).toEqual(['Created', 'Paid', 'Shipped', 'Delivered']);
    const byStart = [...invocations].sort((a, b) => a.start - b.start);
    byStart.slice(1).forEach((call, index) => expect(call.start).toBeGreaterThanOrEqual(byStart[index]?.end ?? 0));
    expect(await deadLetters(env)).toEqual([]);
  });
});

describe('case C7: a poison message goes to the DLQ at once, with why', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('c7');
  });
  afterAll(() => env.dispose());

  it('dead-letters the schema violation and applies the rest of the batch', async () => {
    await placeOrders(env, 'O-1', 'O-2');
    const m1Body = JSON.stringify(body.paid('e-1', 'O-1', 'ten'));
    const calls: string[] = [];
    const { handler } = executionEnvironment(env, {
      wrapProcessor: (processor) => ({
        process: (message) => {
          calls.push(message.messageId);
          return processor.process(message);
        },
      }),
    });

    const response = await handler(
      sqsEvent(queueRecord(env, 'm-1', m1Body), queueRecord(env, 'm-2', body.paid('e-2', 'O-2', 20))),
      lambdaContext(),
    );

    expect(JSON.stringify(response)).toBe('{"batchItemFailures":[]}');
    expect(calls.filter((id) => id === 'm-1')).toHaveLength(1);
    const dlq = await deadLetters(env);
    expect(dlq).toHaveLength(1);
    expect(dlq[0]?.Body).toBe(m1Body);
    expect(dlq[0]?.MessageAttributes?.failureReason?.StringValue).toBe('ValidationError');
    expect(dlq[0]?.MessageAttributes?.errorMessage?.StringValue).toMatch(/points/);
    expect(dlq[0]?.MessageAttributes?.originalMessageId?.StringValue).toBe('m-1');
    expect((await orderState(env, 'O-2'))?.status).toBe('Paid');
    expect(await ledgerOf(env, 'O-2')).toHaveLength(1);
  });

  it.each([
    ['a body that is not JSON', 'not-json', 'not-json', undefined],
    ['an empty body', '', '(empty body)', 'empty'],
    ['a body of 256 KiB', 'x'.repeat(262_144), 'x'.repeat(262_144), undefined],
  ])('dead-letters %s with a reason and applies the rest of its batch', async (_what, poison, expectedBody, encoding) => {
    const orderId = `O-${Math.random().toString(16).slice(2, 8)}`;
    await placeOrders(env, orderId);
    const { handler } = executionEnvironment(env);
    await deadLetters(env); // make earlier tests' dead letters invisible for a while

    const response = await handler(
      sqsEvent(queueRecord(env, 'poison', poison), queueRecord(env, `ok-${orderId}`, body.paid(`e-${orderId}`, orderId, 5))),
      lambdaContext(),
    );

    expect(response).toEqual({ batchItemFailures: [] });
    const dlq = (await deadLetters(env)).filter((m) => m.MessageAttributes?.originalMessageId?.StringValue === 'poison');
    expect(dlq).toHaveLength(1);
    expect(dlq[0]?.Body).toBe(expectedBody);
    expect(dlq[0]?.MessageAttributes?.failureReason?.StringValue).toBe('ValidationError');
    expect(dlq[0]?.MessageAttributes?.bodyEncoding?.StringValue).toBe(encoding);
    expect((await orderState(env, orderId))?.status).toBe('Paid');
  });
});

describe('case C9 at run time: a redelivery while the first delivery still runs', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('c9');
  });
  afterAll(() => env.dispose());

  it('applies the message once: the second inbox write fails its condition', async () => {
    await placeOrders(env, 'O-1');
    const event = () => sqsEvent(queueRecord(env, 'm-1', body.paid('e-1', 'O-1', 10)));

    // The first delivery sends the notification, then its commit is held.
    const slow = clientHoldingCommitsOf(env, 'e-1');
    const first = executionEnvironment(env, { dynamoDb: slow.client });
    const firstResponse = first.handler(event(), lambdaContext());
    await eventually(async () => slow.held() === 1);

    // The redelivery runs to the end meanwhile.
    const second = executionEnvironment(env);
    expect(await second.handler(event(), lambdaContext())).toEqual({ batchItemFailures: [] });
    slow.release();

    expect(await firstResponse).toEqual({ batchItemFailures: [] });
    expect(second.outcomes.map((o) => o.outcome)).toEqual(['applied']);
    expect(first.outcomes.map((o) => o.outcome)).toEqual(['duplicate']);
    const order = await orderState(env, 'O-1');
    expect(order?.history.map((h) => h.status)).toEqual(['Created', 'Paid']);
    expect(await ledgerOf(env, 'O-1')).toHaveLength(1);
    expect(await notificationsOf(env, 'O-1')).toHaveLength(1);
  });
});

describe('the DynamoDB inbox', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('inbox');
  });
  afterAll(() => env.dispose());

  it('writes nothing at all for a duplicate', async () => {
    await placeOrders(env, 'O-1');
    const writes: string[] = [];
    const counting = clientHoldingCommitsOf(env, 'never-held');
    counting.client.middlewareStack.add(
      (next, context) => async (args) => {
        if (/Put|Update|Delete|Write/.test(context.commandName ?? '')) writes.push(context.commandName ?? '');
        return next(args);
      },
      { step: 'initialize', name: 'countWrites' },
    );
    const { handler, outcomes } = executionEnvironment(env, { dynamoDb: counting.client });
    const event = sqsEvent(queueRecord(env, 'm-1', body.paid('e-1', 'O-1', 10)));
    await handler(event, lambdaContext());
    writes.length = 0;

    await handler(event, lambdaContext());

    expect(outcomes.map((o) => o.outcome)).toEqual(['applied', 'duplicate']);
    expect(writes).toEqual([]);
  });

  it('reads a whole batch in one request: a batch of duplicates costs one read request and no write', async () => {
    const requests: string[] = [];
    const counting = clientHoldingCommitsOf(env, 'never-held');
    counting.client.middlewareStack.add(
      (next, context) => async (args) => {
        requests.push(context.commandName ?? '');
        return next(args);
      },
      { step: 'initialize', name: 'countRequests' },
    );
    const { handler, outcomes } = executionEnvironment(env, { dynamoDb: counting.client });
    const orders = Array.from({ length: 10 }, (_, i) => `B-${i}`);
    const event = sqsEvent(...orders.map((orderId) => queueRecord(env, `m-${orderId}`, body.placed(`placed-${orderId}`, orderId))));

    await handler(event, lambdaContext());
    const first = [...requests];
    requests.length = 0;
    await handler(event, lambdaContext());

    expect(first.filter((name) => name === 'BatchGetItemCommand')).toHaveLength(1);
    expect(first.filter((name) => name === 'GetItemCommand')).toHaveLength(0);
    expect(first.filter((name) => name === 'TransactWriteItemsCommand')).toHaveLength(10);
    expect(requests).toEqual(['BatchGetItemCommand']);
    expect(outcomes.filter((o) => o.outcome === 'applied')).toHaveLength(10);
    expect(outcomes.filter((o) => o.outcome === 'duplicate')).toHaveLength(10);
  });

  it('stores the payload hash and a TTL in epoch seconds, and rejects the same key with another payload', async () => {
    await placeOrders(env, 'O-2');
    const { handler, outcomes } = executionEnvironment(env);
    await handler(sqsEvent(queueRecord(env, 'm-2', body.paid('e-2', 'O-2', 10))), lambdaContext());
    const row = await env.documentClient.send(
      new GetCommand({ TableName: env.resources.inboxTable, Key: { pk: `${env.settings.consumerName}#e-2` } }),
    );
    expect(row.Item?.payloadHash).toMatch(/^[0-9a-f]{64}$/);
    const expectedExpiry = Math.floor(Date.now() / 1000) + env.settings.idempotency.inboxTtlSeconds;
    expect(Math.abs(Number(row.Item?.expiresAt) - expectedExpiry)).toBeLessThan(60);

    await handler(sqsEvent(queueRecord(env, 'm-3', body.paid('e-2', 'O-2', 99))), lambdaContext());

    expect(outcomes.at(-1)?.outcome).toBe('dead-lettered');
    expect(outcomes.at(-1)?.reason).toBe('IdempotencyConflict');
    expect((await ledgerOf(env, 'O-2')).map((e) => e.points)).toEqual([10]);
  });
});
