/**
 * The consumer's SQS handler against the real DynamoDB Local and SQS server: cases C1–C5, C7,
 * C9, C11, C13–C19, C21 with their expected values, and the inbox's behaviour.
 */
import { GetCommand, PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { RetryableError } from 'idempotent-consumer';
import { cafeConsumerOptions, notifyCustomer } from '../../examples/cafe/consumer.js';
import { hookedDynamoDb } from '../support/hookedDynamoDb.js';
import type { OrderEvent } from '../../examples/cafe/domain/events.js';
import {
  cafeResources,
  deadLetters,
  eventually,
  executionEnvironment,
  inboxItems,
  ledgerOf,
  notificationsOf,
  orderState,
  queueRecord,
} from '../support/cafeHarness.js';
import { deadLetterAttribute } from '../support/deadLetterAttributes.js';
import { body, lambdaContext, sqsEvent } from '../support/sqsEvents.js';
import { describeUnlessDeployedStack, type TestResources } from '../support/testResources.js';

const describe = describeUnlessDeployedStack(
  "fixed order ids and assertions over a whole table or dead-letter queue: on a shared stack other tests' items (and a second run's) would be found; some cases need a FIFO queue",
);

/** A retryable failure a test injects. */
class InjectedFailure extends RetryableError {
  constructor(message = 'injected retryable failure') {
    super(message);
    this.name = 'InjectedFailure';
  }
}

/** Applies an OrderPlaced for each order with a fresh environment (the cases' baseline); returns that environment. */
async function placeOrders(env: TestResources, ...orderIds: string[]) {
  const environment = executionEnvironment(env);
  const records = orderIds.map((orderId) => queueRecord(env, `placed-${orderId}`, body.placed(`placed-${orderId}`, orderId)));
  const response = await environment.handler(sqsEvent(...records), lambdaContext());
  expect(response).toEqual({ batchItemFailures: [] });
  return environment;
}

const never = () => new Promise<never>(() => undefined);

/**
 * The deadline of an invocation a test lets hang, in milliseconds: long enough for a loaded
 * machine to reach the side effect, short enough to wait out.
 */
const DEADLINE_MS = 4000;

describe('case C1: a timeout part-way through a batch replays work already done', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await cafeResources('c1', { idempotency: { sideEffectMinRemainingMs: 50 } });
  });
  afterAll(() => env.dispose());

  it('applies everything once on the replay: one ledger entry and one notification per order', async () => {
    await placeOrders(env, 'O-1', 'O-2', 'O-3');
    const batch = (receiveCount: number) =>
      sqsEvent(
        queueRecord(env, 'm-1', body.paid('e-1', 'O-1', 10), { receiveCount }),
        queueRecord(env, 'm-2', body.paid('e-2', 'O-2', 20), { receiveCount }),
        queueRecord(env, 'm-3', body.paid('e-3', 'O-3', 30), { receiveCount }),
      );
    // Attempt 1: the notifications of e-1 and e-2 go out, then the invocation is killed while e-3's runs.
    let hung = 0;
    const attempt1 = executionEnvironment(env, {
      consumer: {
        sideEffects: {
          notifyCustomer: async (input, context) => {
            if ((input as { eventId: string }).eventId === 'e-3') {
              hung += 1;
              return never();
            }
            return notifyCustomer(input, context);
          },
        },
      },
    });
    // A deadline far enough for a loaded machine to reach the side effects; then we wait it out.
    const context1 = lambdaContext(DEADLINE_MS);
    void attempt1.handler(batch(1), context1);
    await eventually(
      async () => hung === 1 && (await notificationsOf(env, 'O-1')).length === 1 && (await notificationsOf(env, 'O-2')).length === 1,
      DEADLINE_MS,
    );
    await new Promise((resolve) => setTimeout(resolve, context1.getRemainingTimeInMillis() + 200)); // past attempt 1's deadline: its lock expires

    const attempt2 = executionEnvironment(env);
    const response = await attempt2.handler(batch(2), lambdaContext());

    expect(JSON.stringify(response)).toBe('{"batchItemFailures":[]}');
    for (const [orderId, points] of [
      ['O-1', 10],
      ['O-2', 20],
      ['O-3', 30],
    ] as const) {
      expect((await orderState(env, orderId))?.status).toBe('Paid');
      expect((await ledgerOf(env, orderId)).map((entry) => entry.points)).toEqual([points]);
      expect(await notificationsOf(env, orderId)).toHaveLength(1);
    }
    expect(await deadLetters(env)).toEqual([]);
  });
});

describe('case C2: the lock of an invocation that timed out is taken over', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await cafeResources('c2', { idempotency: { sideEffectMinRemainingMs: 50 } });
  });
  afterAll(() => env.dispose());

  it('completes on the second delivery, after the first invocation deadline; the lock had a finite expiry', async () => {
    await placeOrders(env, 'O-1');
    const event = (receiveCount: number) => sqsEvent(queueRecord(env, 'm-1', body.paid('e-1', 'O-1', 10), { receiveCount }));
    let entered = false;
    const hanging = executionEnvironment(env, {
      consumer: {
        sideEffects: {
          notifyCustomer: () => {
            entered = true;
            return never();
          },
        },
      },
    });
    const context1 = lambdaContext(DEADLINE_MS);
    void hanging.handler(event(1), context1);
    await eventually(async () => entered, DEADLINE_MS);

    const { Items } = await env.documentClient.send(new ScanCommand({ TableName: env.resources.idempotencyTable, ConsistentRead: true }));
    expect(Items).toHaveLength(1);
    expect(Items?.[0]?.status).toBe('INPROGRESS');
    const expiry = Number(Items?.[0]?.in_progress_expiration);
    expect(expiry).toBeGreaterThan(Date.now());
    expect(expiry).toBeLessThanOrEqual(Date.now() + DEADLINE_MS);

    await new Promise((resolve) => setTimeout(resolve, context1.getRemainingTimeInMillis() + 200));
    const second = executionEnvironment(env);
    const response = await second.handler(event(2), lambdaContext());

    expect(response).toEqual({ batchItemFailures: [] });
    expect((await orderState(env, 'O-1'))?.status).toBe('Paid');
    expect(await ledgerOf(env, 'O-1')).toHaveLength(1);
    expect(await notificationsOf(env, 'O-1')).toHaveLength(1);
    expect(await deadLetters(env)).toEqual([]);
  });
});

describe('cases C3 and C4: FIFO, a failure stops its group; what follows it is not run, nothing is lost', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await cafeResources('c3', { queue: { fifo: true } });
  });
  afterAll(() => env.dispose());

  it('reports m-1, m-2 and m-3 in that order, runs neither m-2 nor m-3, then applies them in order', async () => {
    const placer = await placeOrders(env, 'O-1');
    const event = (receiveCount: number) =>
      sqsEvent(
        queueRecord(env, 'm-1', body.paid('e-1', 'O-1', 15), { receiveCount, groupId: 'O-1' }),
        queueRecord(env, 'm-2', body.shipped('e-2', 'O-1'), { receiveCount, groupId: 'O-1' }),
        queueRecord(env, 'm-3', body.delivered('e-3', 'O-1'), { receiveCount, groupId: 'O-1' }),
      );
    let failM1 = true;
    const calls: string[] = [];
    const decide = (e: OrderEvent, state: Parameters<typeof cafeConsumerOptions.decide>[1]) => {
      calls.push(e.eventId);
      if (e.eventId === 'e-1' && failM1) throw new InjectedFailure();
      return cafeConsumerOptions.decide(e, state);
    };
    // The environment that placed the order (its state is warm): one decision per message attempted.
    const flaky = executionEnvironment(env, { consumer: { decide } });
    void placer;
    const first = await flaky.handler(event(1), lambdaContext());

    expect(JSON.stringify(first)).toBe(
      '{"batchItemFailures":[{"itemIdentifier":"m-1"},{"itemIdentifier":"m-2"},{"itemIdentifier":"m-3"}]}',
    );
    expect(calls.filter((id) => id === 'e-2' || id === 'e-3')).toEqual([]);
    expect(calls.filter((id) => id === 'e-1').length).toBeGreaterThanOrEqual(1);
    expect((await orderState(env, 'O-1'))?.status).toBe('Created');

    failM1 = false;
    const second = await flaky.handler(event(2), lambdaContext());
    expect(second).toEqual({ batchItemFailures: [] });
    const order = await orderState(env, 'O-1');
    expect(order?.status).toBe('Delivered');
    expect(order?.history.map((h) => h.status)).toEqual(['Created', 'Paid', 'Shipped', 'Delivered']);
    expect(await ledgerOf(env, 'O-1')).toHaveLength(1);
    expect(await deadLetters(env)).toEqual([]);
  });

  it('C4: with two groups in one batch, the group that did not fail is applied on attempt 1', async () => {
    await placeOrders(env, 'G-1', 'G-2');
    const calls: string[] = [];
    const { handler } = executionEnvironment(env, {
      consumer: {
        decide: (e, state) => {
          calls.push(e.eventId);
          if (e.orderId === 'G-1') throw new InjectedFailure();
          return cafeConsumerOptions.decide(e, state);
        },
      },
    });
    const response = await handler(
      sqsEvent(
        queueRecord(env, 'g1-a', body.paid('g1-a', 'G-1', 1), { groupId: 'G-1' }),
        queueRecord(env, 'g2-a', body.paid('g2-a', 'G-2', 2), { groupId: 'G-2' }),
        queueRecord(env, 'g1-b', body.shipped('g1-b', 'G-1'), { groupId: 'G-1' }),
        queueRecord(env, 'g2-b', body.shipped('g2-b', 'G-2'), { groupId: 'G-2' }),
      ),
      lambdaContext(),
    );
    expect(JSON.stringify(response)).toBe('{"batchItemFailures":[{"itemIdentifier":"g1-a"},{"itemIdentifier":"g1-b"}]}');
    expect(calls).not.toContain('g1-b');
    expect((await orderState(env, 'G-2'))?.status).toBe('Shipped');
    expect((await orderState(env, 'G-1'))?.status).toBe('Created');
  });
});

describe('case C5: the partial batch response matches AWS contract exactly', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await cafeResources('c5');
  });
  afterAll(() => env.dispose());

  it('returns exactly {"batchItemFailures":[{"itemIdentifier":"m-2"}]} and does not throw', async () => {
    await placeOrders(env, 'O-1', 'O-2', 'O-3');
    const { handler } = executionEnvironment(env, {
      consumer: {
        decide: (e, state) => {
          if (e.eventId === 'e-2') throw new InjectedFailure();
          return cafeConsumerOptions.decide(e, state);
        },
      },
    });
    const response = await handler(
      sqsEvent(
        queueRecord(env, 'm-1', body.paid('e-1', 'O-1')),
        queueRecord(env, 'm-2', body.paid('e-2', 'O-2')),
        queueRecord(env, 'm-3', body.paid('e-3', 'O-3')),
      ),
      lambdaContext(),
    );
    expect(JSON.stringify(response)).toBe('{"batchItemFailures":[{"itemIdentifier":"m-2"}]}');
  });

  it('reports every record, and does not throw, when the whole batch fails', async () => {
    const { handler } = executionEnvironment(env, {
      consumer: {
        decide: () => {
          throw new InjectedFailure();
        },
      },
    });
    const response = await handler(
      sqsEvent(queueRecord(env, 'x-1', body.paid('x-1', 'O-1')), queueRecord(env, 'x-2', body.paid('x-2', 'O-2'))),
      lambdaContext(),
    );
    expect(JSON.stringify(response)).toBe('{"batchItemFailures":[{"itemIdentifier":"x-1"},{"itemIdentifier":"x-2"}]}');
  });
});

describe('case C6: retries run out: the message reaches the DLQ with its reason', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await cafeResources('c6');
  });
  afterAll(() => env.dispose());

  it('attempts it once per receive (counts 1..5), then dead-letters the body as RetriesExhausted with the last error', async () => {
    await placeOrders(env, 'O-1');
    const m1Body = JSON.stringify(body.paid('e-1', 'O-1', 10));
    let calls = 0;
    let receive = 0;
    const attemptedOnReceives: number[] = [];
    const { handler } = executionEnvironment(env, {
      consumer: {
        decide: (event) => {
          if (event.eventId === 'e-1') {
            calls += 1;
            if (attemptedOnReceives.at(-1) !== receive) attemptedOnReceives.push(receive);
            throw new InjectedFailure(`the payment service is down (receive ${receive})`);
          }
          return {};
        },
      },
    });
    const responses = [];
    for (receive = 1; receive <= 5; receive += 1) {
      responses.push(await handler(sqsEvent(queueRecord(env, 'm-1', m1Body, { receiveCount: receive })), lambdaContext()));
    }

    // One attempt per receive. (decide is pure and may run twice in one attempt: in a new
    // execution environment it first decides on what it holds, then on a consistent read.)
    expect(attemptedOnReceives).toEqual([1, 2, 3, 4, 5]);
    expect(calls).toBeLessThanOrEqual(10);
    // Reported for a retry on receives 1..4; on the 5th it is set aside, so the mapping deletes it.
    expect(responses.map((r) => r.batchItemFailures.length)).toEqual([1, 1, 1, 1, 0]);
    const dlq = await deadLetters(env);
    expect(dlq).toHaveLength(1);
    expect(dlq[0]?.Body).toBe(m1Body);
    expect(deadLetterAttribute(dlq[0], 'failureReason')).toBe('RetriesExhausted');
    expect(deadLetterAttribute(dlq[0], 'errorType')).toBe('InjectedFailure');
    expect(deadLetterAttribute(dlq[0], 'errorMessage')).toBe('the payment service is down (receive 5)');
    expect((await orderState(env, 'O-1'))?.status).toBe('Created');
  });
});

describe('a message dead-lettered after its side effect ran', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await cafeResources('effect-then-dead-letter');
  });
  afterAll(() => env.dispose());

  it('does not run the effect of a decision whose own condition refuses its commit: its conditions are checked first', async () => {
    await env.documentClient.send(new PutCommand({ TableName: env.resources.tables.orders, Item: { orderId: 'X-1', sk: 'TAKEN' } }));
    const { handler, outcomes } = executionEnvironment(env, {
      consumer: {
        decide: (event) => ({
          writes: [
            { Put: { TableName: 'orders', Item: { orderId: 'X-1', sk: 'TAKEN' }, ConditionExpression: 'attribute_not_exists(orderId)' } },
          ],
          sideEffects: [{ name: 'notifyCustomer', input: { orderId: 'X-1', eventId: event.eventId, points: 1 } }],
        }),
      },
    });
    await handler(sqsEvent(queueRecord(env, 'x-1', body.placed('ex-1', 'X-1'))), lambdaContext());

    expect(outcomes.map((o) => `${o.outcome}:${o.reason}`)).toEqual(['dead-lettered:ConditionalWriteFailed']);
    const dlq = await deadLetters(env);
    expect(deadLetterAttribute(dlq[0], 'errorMessage')).toBe('the condition of its put on orders failed');
    expect(await notificationsOf(env, 'X-1')).toHaveLength(0);
  });

  it('says in its dead letter that the effect ran when DynamoDB refuses the commit after it (never dropped silently)', async () => {
    // An update DynamoDB refuses (a placeholder it does not define): known only at the commit, after the notification went out.
    const { handler, outcomes } = executionEnvironment(env, {
      consumer: {
        decide: (event) => ({
          writes: [
            {
              Update: {
                TableName: 'orders',
                Key: { orderId: 'X-2', sk: 'NOTE' },
                UpdateExpression: 'SET #undefined = :v',
                ExpressionAttributeValues: { ':v': 1 },
              },
            },
          ],
          sideEffects: [{ name: 'notifyCustomer', input: { orderId: 'X-2', eventId: event.eventId, points: 1 } }],
        }),
      },
    });
    await handler(sqsEvent(queueRecord(env, 'x-2', body.placed('ex-2', 'X-2'))), lambdaContext());

    expect(outcomes.map((o) => `${o.outcome}:${o.reason}`)).toEqual(['dead-lettered:InvalidWrite']);
    const dlq = await deadLetters(env);
    expect(deadLetterAttribute(dlq[0], 'errorMessage')).toMatch(/its side effects ran before: notifyCustomer#0/);
    expect(await notificationsOf(env, 'X-2')).toHaveLength(1);
  });
});

describe('case C7: a poison message goes to the DLQ at once, with why', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await cafeResources('c7');
  });
  afterAll(() => env.dispose());

  it('dead-letters the schema violation after one call and applies the rest of the batch', async () => {
    await placeOrders(env, 'O-1', 'O-2');
    const m1Body = JSON.stringify(body.paid('e-1', 'O-1', 'ten'));
    const { handler } = executionEnvironment(env);
    const response = await handler(
      sqsEvent(queueRecord(env, 'm-1', m1Body), queueRecord(env, 'm-2', body.paid('e-2', 'O-2', 20))),
      lambdaContext(),
    );

    expect(JSON.stringify(response)).toBe('{"batchItemFailures":[]}');
    const dlq = await deadLetters(env);
    expect(dlq).toHaveLength(1);
    expect(dlq[0]?.Body).toBe(m1Body);
    expect(deadLetterAttribute(dlq[0], 'failureReason')).toBe('ValidationError');
    expect(deadLetterAttribute(dlq[0], 'errorMessage')).toMatch(/points/);
    expect(JSON.stringify(dlq[0]?.MessageAttributes)).toContain('m-1');
    expect((await orderState(env, 'O-2'))?.status).toBe('Paid');
    expect(await ledgerOf(env, 'O-2')).toHaveLength(1);
  });

  it.each([
    ['a body that is not JSON', 'not-json'],
    ['an empty body', ''],
    ['a body of 256 KiB', 'x'.repeat(262_144)],
  ])('dead-letters %s with a reason and applies the rest of its batch', async (_what, poison) => {
    const orderId = `O-${Math.random().toString(16).slice(2, 8)}`;
    await placeOrders(env, orderId);
    const { handler } = executionEnvironment(env);
    await deadLetters(env); // hide earlier dead letters for a while
    const response = await handler(
      sqsEvent(queueRecord(env, `poison-${orderId}`, poison), queueRecord(env, `ok-${orderId}`, body.paid(`e-${orderId}`, orderId, 5))),
      lambdaContext(),
    );

    expect(response).toEqual({ batchItemFailures: [] });
    const dlq = (await deadLetters(env)).filter((m) => JSON.stringify(m.MessageAttributes).includes(`poison-${orderId}`));
    expect(dlq).toHaveLength(1);
    if (poison !== '') expect(dlq[0]?.Body).toBe(poison);
    expect(deadLetterAttribute(dlq[0], 'failureReason')).toBe('ValidationError');
    expect((await orderState(env, orderId))?.status).toBe('Paid');
  });
});

describe('case C9 at run time: a redelivery while the first delivery still runs', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await cafeResources('c9');
  });
  afterAll(() => env.dispose());

  it('applies the message once: the second inbox write fails its condition', async () => {
    await placeOrders(env, 'O-1');
    const event = () => sqsEvent(queueRecord(env, 'm-1', body.paid('e-1', 'O-1', 10)));
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let held = 0;
    const slow = hookedDynamoDb(env, async (command) => {
      if (command === 'TransactWriteItemsCommand') {
        held += 1;
        await released;
      }
    });
    const first = executionEnvironment(env, { dynamoDb: slow });
    const firstResponse = first.handler(event(), lambdaContext());
    await eventually(async () => held === 1);

    const second = executionEnvironment(env);
    expect(await second.handler(event(), lambdaContext())).toEqual({ batchItemFailures: [] });
    release();

    expect(await firstResponse).toEqual({ batchItemFailures: [] });
    expect(second.outcomes.map((o) => o.outcome)).toEqual(['applied']);
    expect(first.outcomes.map((o) => o.outcome)).toEqual(['duplicate']);
    expect((await orderState(env, 'O-1'))?.history.map((h) => h.status)).toEqual(['Created', 'Paid']);
    expect(await ledgerOf(env, 'O-1')).toHaveLength(1);
    expect(await notificationsOf(env, 'O-1')).toHaveLength(1);
  });
});

describe('case C11: a duplicate dead-lettered from a stale read', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await cafeResources('c11');
  });
  afterAll(() => env.dispose());

  it('acknowledges e0 as a duplicate when another invocation applied it after A looked', async () => {
    let raced = false;
    const b = executionEnvironment(env);
    // A looks (a consistent read, after its first decision failed on what it held); just before that, B applies e0.
    const aClient = hookedDynamoDb(env, async (command) => {
      // Its verification read: consistent (BatchGetItem) or a snapshot (TransactGetItems).
      if ((command === 'TransactGetItemsCommand' || command === 'BatchGetItemCommand') && !raced) {
        raced = true;
        expect(await b.handler(sqsEvent(queueRecord(env, 'b-e0', body.placed('e0', 'O'))), lambdaContext())).toEqual({
          batchItemFailures: [],
        });
      }
    });
    const a = executionEnvironment(env, { dynamoDb: aClient });
    const response = await a.handler(
      sqsEvent(queueRecord(env, 'a-e9', body.cancelled('e9', 'O')), queueRecord(env, 'a-e0', body.placed('e0', 'O'))),
      lambdaContext(),
    );

    expect(raced).toBe(true);
    expect(a.outcomes.find((o) => o.messageId === 'a-e0')?.outcome).toBe('duplicate');
    expect(await deadLetters(env)).toEqual([]);
    expect(response.batchItemFailures.map((f) => f.itemIdentifier)).not.toContain('a-e0');
    const order = await orderState(env, 'O');
    expect(order?.history.filter((h) => h.eventId === 'e0')).toHaveLength(1);
  });
});

describe('case C13: FIFO, a skipped message keeps its attempts', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await cafeResources('c13', { queue: { fifo: true } });
  });
  afterAll(() => env.dispose());

  it('gives m-2 its full budget of real attempts although its receive count is 5 when it first runs', async () => {
    await placeOrders(env, 'O');
    // m-1 fails on its first 4 attempts; m-2 on its first attempt (the fifth receive) only.
    const failing = new Set(['e-1']);
    const environment = executionEnvironment(env, {
      consumer: {
        decide: (e, state) => {
          if (failing.has(e.eventId)) throw new InjectedFailure(`${e.eventId} fails`);
          return cafeConsumerOptions.decide(e, state);
        },
      },
    });
    const batch = (m1Receive: number, m2Receive: number, withM1 = true) =>
      sqsEvent(
        ...(withM1 ? [queueRecord(env, 'm-1', body.paid('e-1', 'O', 5), { receiveCount: m1Receive, groupId: 'g' })] : []),
        queueRecord(env, 'm-2', body.shipped('e-2', 'O'), { receiveCount: m2Receive, groupId: 'g' }),
      );
    for (let receive = 1; receive <= 4; receive += 1) {
      const response = await environment.handler(batch(receive, receive), lambdaContext());
      expect(response.batchItemFailures.map((f) => f.itemIdentifier)).toEqual(['m-1', 'm-2']);
    }
    failing.delete('e-1');
    failing.add('e-2');
    const fifth = await environment.handler(batch(5, 5), lambdaContext());
    expect(fifth.batchItemFailures.map((f) => f.itemIdentifier)).toEqual(['m-2']);
    failing.delete('e-2');
    expect(environment.outcomes.filter((o) => o.messageId === 'm-2' && o.outcome === 'dead-lettered')).toEqual([]);
    const sixth = await environment.handler(batch(0, 6, false), lambdaContext());
    expect(sixth).toEqual({ batchItemFailures: [] });
    expect((await orderState(env, 'O'))?.status).toBe('Shipped');
    expect(await deadLetters(env)).toEqual([]);
  });
});

describe('case C14: a concurrent duplicate on its last receive', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await cafeResources('c14');
  });
  afterAll(() => env.dispose());

  it.each([
    ['once', 1],
    ['on every commit of the batch', 100],
  ])('acknowledges m-1 as a duplicate when its commit loses to the other delivery %s', async (_what, conflicts) => {
    const orderId = `O-${conflicts}`;
    await placeOrders(env, orderId);
    const other = executionEnvironment(env);
    let lost = 0;
    const client = hookedDynamoDb(env, async (command) => {
      if (command !== 'TransactWriteItemsCommand' || lost >= conflicts) return;
      if (lost === 0)
        expect(
          await other.handler(sqsEvent(queueRecord(env, `other-${orderId}`, body.paid(`e-${orderId}`, orderId, 10))), lambdaContext()),
        ).toEqual({ batchItemFailures: [] });
      lost += 1;
      throw Object.assign(
        new Error('Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict]'),
        {
          name: 'TransactionCanceledException',
          CancellationReasons: [{ Code: 'TransactionConflict' }, { Code: 'None' }, { Code: 'None' }, { Code: 'None' }, { Code: 'None' }],
        },
      );
    });
    const last = executionEnvironment(env, { dynamoDb: client });
    const response = await last.handler(
      sqsEvent(queueRecord(env, `m-${orderId}`, body.paid(`e-${orderId}`, orderId, 10), { receiveCount: 5 })),
      lambdaContext(),
    );

    expect(response).toEqual({ batchItemFailures: [] });
    expect(last.outcomes.map((o) => o.outcome)).toEqual(['duplicate']);
    expect(await deadLetters(env)).toEqual([]);
    expect(await ledgerOf(env, orderId)).toHaveLength(1);
  });
});

describe('case C15: no side effect starts without time to finish it', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await cafeResources('c15');
  });
  afterAll(() => env.dispose());

  it('retries a delivery made past the deadline without starting the notification, then sends it once', async () => {
    await placeOrders(env, 'O-1');
    const { handler } = executionEnvironment(env);
    const late = await handler(sqsEvent(queueRecord(env, 'm-1', body.paid('e-1', 'O-1', 10))), lambdaContext(0));
    expect(late).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-1' }] });
    const { Items } = await env.documentClient.send(new ScanCommand({ TableName: env.resources.idempotencyTable, ConsistentRead: true }));
    expect(Items).toEqual([]);
    expect(await notificationsOf(env, 'O-1')).toHaveLength(0);

    const normal = await handler(sqsEvent(queueRecord(env, 'm-1', body.paid('e-1', 'O-1', 10), { receiveCount: 2 })), lambdaContext());
    expect(normal).toEqual({ batchItemFailures: [] });
    expect(await notificationsOf(env, 'O-1')).toHaveLength(1);
    expect(await ledgerOf(env, 'O-1')).toHaveLength(1);
    const { Items: locks } = await env.documentClient.send(
      new ScanCommand({ TableName: env.resources.idempotencyTable, ConsistentRead: true }),
    );
    for (const lock of locks ?? []) expect(Number(lock.expiration)).toBeGreaterThan(0);
  });
});

describe('case C16: the completion record cannot be written once', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await cafeResources('c16', { idempotency: { sideEffectMinRemainingMs: 50 } });
  });
  afterAll(() => env.dispose());

  // The completion record is written beside the commit (issue 19): when only it fails, the commit
  // still lands, so the message is applied at once and its redelivery is a duplicate that never
  // meets the lock it left.
  it('applies the message at once, with one notification, and logs the record it could not write; a redelivery is a duplicate', async () => {
    await placeOrders(env, 'O-1');
    let throttled = 0;
    const client = hookedDynamoDb(env, (command, input) => {
      if (command === 'UpdateItemCommand' && input.TableName === env.resources.idempotencyTable && throttled === 0) {
        throttled += 1;
        throw Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), { name: 'ThrottlingException', $retryable: {} });
      }
    });
    const { handler, outcomes } = executionEnvironment(env, { dynamoDb: client });
    const event = (receiveCount: number) => sqsEvent(queueRecord(env, 'm-1', body.paid('e-1', 'O-1', 10), { receiveCount }));

    const first = await handler(event(1), lambdaContext(DEADLINE_MS));
    expect(throttled).toBe(1);
    expect(first).toEqual({ batchItemFailures: [] });
    expect(outcomes.at(-1)?.outcome).toBe('applied');
    expect((await orderState(env, 'O-1'))?.status).toBe('Paid');
    expect(await notificationsOf(env, 'O-1')).toHaveLength(1);
    // The lock it left is still in progress: nothing reads it, the inbox answers first.
    const { Items: records } = await env.documentClient.send(
      new ScanCommand({ TableName: env.resources.idempotencyTable, ConsistentRead: true }),
    );
    expect(records?.map((record) => record.status)).toEqual(['INPROGRESS']);

    const again = await handler(event(2), lambdaContext());
    expect(again).toEqual({ batchItemFailures: [] });
    expect(outcomes.at(-1)?.outcome).toBe('duplicate');
    expect(await ledgerOf(env, 'O-1')).toHaveLength(1);
    expect(await notificationsOf(env, 'O-1')).toHaveLength(1);
    expect(await deadLetters(env)).toEqual([]);
  });

  it('with its commit refused too: one notification in the end, never RetriesExhausted for the lock it left, retries refused for the lock delayed until it expires', async () => {
    await placeOrders(env, 'O-2');
    let throttled = 0;
    let commitsThrottled = 0;
    const client = hookedDynamoDb(env, (command, input) => {
      if (command === 'UpdateItemCommand' && input.TableName === env.resources.idempotencyTable && throttled === 0) {
        throttled += 1;
        throw Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), { name: 'ThrottlingException', $retryable: {} });
      }
      if (command === 'TransactWriteItemsCommand' && throttled === 1 && commitsThrottled === 0) {
        commitsThrottled += 1;
        throw Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), { name: 'ThrottlingException', $retryable: {} });
      }
    });
    const { handler, outcomes } = executionEnvironment(env, { dynamoDb: client });
    const event = (receiveCount: number) => sqsEvent(queueRecord(env, 'm-2', body.paid('e-2', 'O-2', 10), { receiveCount }));

    const context1 = lambdaContext(DEADLINE_MS);
    const first = await handler(event(1), context1);
    expect(commitsThrottled).toBe(1);
    expect(first.batchItemFailures).toEqual([{ itemIdentifier: 'm-2' }]);
    expect(await notificationsOf(env, 'O-2')).toHaveLength(1);

    // Redelivered on its last receive while the lock is held: refused, delayed, not counted, not dead-lettered.
    const refused = await handler(event(5), lambdaContext());
    expect(refused.batchItemFailures).toEqual([{ itemIdentifier: 'm-2' }]);
    expect(outcomes.at(-1)?.outcome).toBe('retried');
    expect(outcomes.at(-1)?.countsAsAttempt).toBe(false);
    // The lock's expiry is read from its record, so the visibility delay runs until then.
    expect(outcomes.at(-1)?.errorType).toBe('NotAttempted');
    expect(outcomes.at(-1)?.errorMessage).toMatch(/is in progress in another invocation; its lock expires at \d{4}-\d{2}-\d{2}T/);
    expect(await deadLetters(env)).toEqual([]);

    await new Promise((resolve) => setTimeout(resolve, context1.getRemainingTimeInMillis() + 200)); // the lock expires with the first invocation's deadline
    const last = await handler(event(6), lambdaContext());
    expect(last).toEqual({ batchItemFailures: [] });
    expect((await orderState(env, 'O-2'))?.status).toBe('Paid');
    expect(await ledgerOf(env, 'O-2')).toHaveLength(1);
    expect(await notificationsOf(env, 'O-2')).toHaveLength(1);
    expect(await deadLetters(env)).toEqual([]);
  });
});

describe('case C17: a replaced function does not repeat the side effect', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await cafeResources('c17');
  });
  afterAll(() => env.dispose());

  it('sends one notification when the redelivery runs under a new function name', async () => {
    await placeOrders(env, 'O-1');
    let sends = 0;
    const counting = {
      notifyCustomer: async (...[input, context]: Parameters<typeof notifyCustomer>) => {
        sends += 1;
        return notifyCustomer(input, context);
      },
    };
    // The notification is sent, then the invocation dies before its commit.
    const dying = hookedDynamoDb(env, (command) => (command === 'TransactWriteItemsCommand' ? never() : undefined));
    const v1 = executionEnvironment(env, { dynamoDb: dying, consumer: { sideEffects: counting } });
    void v1.handler(sqsEvent(queueRecord(env, 'm-1', body.paid('e-1', 'O-1', 10))), lambdaContext(30_000, 'cafe-consumer-v1'));
    await eventually(async () => sends === 1);
    await new Promise((resolve) => setTimeout(resolve, 200));

    const v2 = executionEnvironment(env, { consumer: { sideEffects: counting } });
    const response = await v2.handler(
      sqsEvent(queueRecord(env, 'm-1', body.paid('e-1', 'O-1', 10), { receiveCount: 2 })),
      lambdaContext(30_000, 'cafe-consumer-v2'),
    );
    expect(response).toEqual({ batchItemFailures: [] });
    expect(sends).toBe(1);
    expect(await notificationsOf(env, 'O-1')).toHaveLength(1);
  });
});

describe('case C18: a valid event with a deeply nested unknown field', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await cafeResources('c18');
  });
  afterAll(() => env.dispose());

  it.each([
    ['3,200 nested arrays', `${'['.repeat(3200)}${']'.repeat(3200)}`],
    ['10,000 nested objects', `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`],
  ])('applies an event with %s on its first attempt', async (_what, nested) => {
    const id = `deep-${nested.length}`;
    const raw = `{"eventId":"${id}","type":"OrderPlaced","orderId":"${id}","occurredAt":"2026-01-01T00:00:00Z","x":${nested}}`;
    const { handler, outcomes } = executionEnvironment(env);
    const response = await handler(sqsEvent(queueRecord(env, id, raw)), lambdaContext());
    expect(response).toEqual({ batchItemFailures: [] });
    expect(outcomes.map((o) => o.outcome)).toEqual(['applied']);
    expect((await orderState(env, id))?.status).toBe('Created');
  });
});

describe('case C19: ids that are not well-formed Unicode', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await cafeResources('c19');
  });
  afterAll(() => env.dispose());

  it('dead-letters each as ValidationError on its first attempt, body byte-identical', async () => {
    const raws = ['\\ud800', '\\ud801'].map(
      (lone, i) => `{"eventId":"s-${i}","type":"OrderPlaced","orderId":"S-${lone}","occurredAt":"2026-01-01T00:00:00Z"}`,
    );
    const { handler } = executionEnvironment(env);
    const response = await handler(sqsEvent(queueRecord(env, 'u-0', raws[0]!), queueRecord(env, 'u-1', raws[1]!)), lambdaContext());
    expect(response).toEqual({ batchItemFailures: [] });
    const dlq = await deadLetters(env);
    expect(dlq.map((m) => m.Body).sort()).toEqual([...raws].sort());
    expect(dlq.map((m) => deadLetterAttribute(m, 'failureReason'))).toEqual(['ValidationError', 'ValidationError']);
  });
});

describe('case C21: no body content in logs', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await cafeResources('c21');
  });
  afterAll(() => env.dispose());

  it('dead-letters each with its reason; no log line holds the bodies or is longer than 4 KB', async () => {
    const lines: string[] = [];
    const capture = (stream: NodeJS.WriteStream) => {
      const write = stream.write.bind(stream);
      stream.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
        lines.push(...String(chunk).split('\n'));
        return write(chunk, ...rest);
      }) as typeof stream.write;
      return () => {
        stream.write = write;
      };
    };
    const restore = [capture(process.stdout), capture(process.stderr)];
    const previous = process.env.POWERTOOLS_LOG_LEVEL;
    process.env.POWERTOOLS_LOG_LEVEL = 'DEBUG';
    try {
      const { handler, outcomes } = executionEnvironment(env);
      const bigType = JSON.stringify({ eventId: 'big', type: 'A'.repeat(200_000), orderId: 'B', occurredAt: '2026-01-01T00:00:00Z' });
      const response = await handler(
        sqsEvent(
          queueRecord(env, 'ssn', 'SSN 078-05-1120'),
          queueRecord(env, 'mail', 'alice@example.com!!'),
          queueRecord(env, 'big', bigType),
        ),
        lambdaContext(),
      );
      expect(response).toEqual({ batchItemFailures: [] });
      expect(outcomes.map((o) => [o.messageId, o.reason])).toEqual([
        ['ssn', 'ValidationError'],
        ['mail', 'ValidationError'],
        ['big', 'UnknownMessageType'],
      ]);
    } finally {
      restore.forEach((undo) => undo());
      if (previous === undefined) delete process.env.POWERTOOLS_LOG_LEVEL;
      else process.env.POWERTOOLS_LOG_LEVEL = previous;
    }
    expect(lines.some((line) => line.includes('message dead-lettered'))).toBe(true);
    expect(lines.filter((line) => line.includes('078-05-1120') || line.includes('alice@example.com'))).toEqual([]);
    expect(lines.filter((line) => line.length > 4096).map((line) => line.length)).toEqual([]);
  });
});

describe('the inbox', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await cafeResources('inbox');
  });
  afterAll(() => env.dispose());

  it('writes nothing for a redelivered duplicate, and commits a batch of fresh events in one request', async () => {
    const requests: string[] = [];
    const client = hookedDynamoDb(env, (command) => {
      requests.push(command);
    });
    const { handler, outcomes } = executionEnvironment(env, { dynamoDb: client });
    const orders = Array.from({ length: 10 }, (_, i) => `B-${i}`);
    const event = sqsEvent(...orders.map((orderId) => queueRecord(env, `m-${orderId}`, body.placed(`placed-${orderId}`, orderId))));

    await handler(event, lambdaContext());
    expect(requests).toEqual(['TransactWriteItemsCommand']);
    requests.length = 0;
    await handler(event, lambdaContext());
    // The same environment: it holds the orders with their inbox marks (the café keeps each event's
    // mark on its order: inboxHome), so each redelivery is settled from memory, without a request.
    expect(requests).toEqual([]);
    expect(outcomes.filter((o) => o.outcome === 'duplicate')).toHaveLength(10);

    requests.length = 0;
    const other = executionEnvironment(env, { dynamoDb: client });
    await other.handler(event, lambdaContext());
    // Another environment: its commit is cancelled by the orders' conditions, which return them with their marks. Nothing is written.
    expect(requests).toEqual(['TransactWriteItemsCommand']);
    expect(other.outcomes.map((o) => o.outcome)).toEqual(Array(10).fill('duplicate'));
    expect(outcomes.filter((o) => o.outcome === 'applied')).toHaveLength(10);
    expect(outcomes.filter((o) => o.outcome === 'duplicate')).toHaveLength(10);
  });

  it('reads consistently (BatchGetItem, 1 read unit per item) before a side effect, and takes a snapshot (TransactGetItems) only before a dead letter', async () => {
    await placeOrders(env, 'V-1', 'V-2');
    const requests: string[] = [];
    const client = hookedDynamoDb(env, (command) => {
      requests.push(command);
    });
    // A new environment holds nothing: OrderPaid asks for a notification, so its state is read first.
    const { handler, outcomes } = executionEnvironment(env, { dynamoDb: client });
    await handler(sqsEvent(queueRecord(env, 'v-1', body.paid('pv-1', 'V-1', 10))), lambdaContext());
    expect(outcomes.map((o) => o.outcome)).toEqual(['applied']);
    expect(requests[0]).toBe('BatchGetItemCommand');
    expect(requests).not.toContain('TransactGetItemsCommand');

    // Shipping a cancelled order, in an environment that holds nothing: believed absent, the order
    // "has not arrived" (retryable): a consistent read; on it, the verdict dead-letters: a snapshot first.
    await executionEnvironment(env).handler(sqsEvent(queueRecord(env, 'v-2c', body.cancelled('cv-2', 'V-2'))), lambdaContext());
    requests.length = 0;
    const fresh = executionEnvironment(env, { dynamoDb: client });
    await fresh.handler(sqsEvent(queueRecord(env, 'v-2s', body.shipped('sv-2', 'V-2'))), lambdaContext());
    expect(fresh.outcomes.map((o) => `${o.outcome}:${o.reason}`)).toEqual(['dead-lettered:BusinessRuleViolation']);
    expect(requests.filter((c) => c.endsWith('GetItemsCommand') || c === 'BatchGetItemCommand')).toEqual([
      'BatchGetItemCommand',
      'TransactGetItemsCommand',
    ]);
  });

  it('stores the payload hash and a TTL in epoch seconds, and dead-letters the same key with another payload', async () => {
    await placeOrders(env, 'O-2');
    const { handler, outcomes } = executionEnvironment(env);
    await handler(sqsEvent(queueRecord(env, 'm-2', body.paid('e-2', 'O-2', 10))), lambdaContext());
    // The café keeps each event's inbox mark on its order (inboxHome): no inbox row of its own.
    const row = await env.documentClient.send(new GetCommand({ TableName: env.resources.inboxTable, Key: { pk: 'cafe-orders#key#e-2' } }));
    expect(row.Item).toBeUndefined();
    const mark = (await orderState(env, 'O-2'))?._inbox?.['cafe-orders#e-2'];
    expect(mark).toMatchObject({ m: 'm-2', h: expect.stringMatching(/^[0-9a-f]{64}$/) });
    const expectedExpiry = Math.floor(Date.now() / 1000) + env.settings.idempotency.inboxTtlSeconds;
    expect(Math.abs(Number(mark?.x) - expectedExpiry)).toBeLessThan(60);

    await handler(sqsEvent(queueRecord(env, 'm-3', body.paid('e-2', 'O-2', 99))), lambdaContext());
    expect(outcomes.at(-1)?.outcome).toBe('dead-lettered');
    expect(outcomes.at(-1)?.reason).toBe('IdempotencyConflict');
    expect((await ledgerOf(env, 'O-2')).map((e) => e.points)).toEqual([10]);
  });

  it('folds two events of one order: the order item is written once, and no outbox item without a payment', async () => {
    const requests: { command: string; items: number }[] = [];
    const client = hookedDynamoDb(env, (command, input) => {
      requests.push({ command, items: Array.isArray(input.TransactItems) ? input.TransactItems.length : 0 });
    });
    const { handler } = executionEnvironment(env, { dynamoDb: client });
    const response = await handler(
      sqsEvent(queueRecord(env, 'f-1', body.placed('f-1', 'F')), queueRecord(env, 'f-2', body.cancelled('f-2', 'F'))),
      lambdaContext(),
    );
    expect(response).toEqual({ batchItemFailures: [] });
    // The order item written once, with both events' inbox marks (the café's inboxHome: no rows).
    // (The harness's DynamoDB client has the strict layer: a transaction with two actions on one
    // item is refused there, as AWS refuses it.)
    expect(requests).toEqual([{ command: 'TransactWriteItemsCommand', items: 1 }]);
    expect(Object.keys((await orderState(env, 'F'))?._inbox ?? {}).sort()).toEqual(['cafe-orders#f-1', 'cafe-orders#f-2']);
    expect((await orderState(env, 'F'))?.history.map((h) => h.status)).toEqual(['Created', 'Cancelled']);
    expect((await inboxItems(env, 'outbox')).filter((item) => item.messageGroupId === 'F')).toEqual([]);
  });
});
