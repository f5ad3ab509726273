/**
 * Attacks on exactly-once under `inboxHome` (inbox marks on home items), each on small consumers
 * built with the public API (`createIdempotentConsumer`) against the real DynamoDB Local and SQS
 * server: folded writes of one home in one batch, environments racing on one home, blind writes
 * on homes, user conditions, dead letters and redrives in FIFO groups, side effects behind a user
 * condition, expired marks, other key shapes, Kafka, and full home items. Every test asserts what
 * exactly once means for it (what is stored, the marks, the outcomes, the DLQ); "an environment"
 * is a handler built on its own, with its own item cache.
 */
import { DeleteTableCommand, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { Message } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import {
  type Decision,
  type IdempotentConsumerOptions,
  type Item,
  NonRetryableError,
  type OutcomeRecord,
  type TableDefinition,
} from 'idempotent-consumer';
import type { KafkaBatchResponse } from 'idempotent-consumer/kafka';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { markKey } from '../../packages/idempotent-consumer/src/inbox/homeMarks.js';
import { ensureTable } from '../../packages/local/src/provision.js';
import { deadLetters } from '../support/cafeHarness.js';
import {
  consumerEnvironment,
  type ExecutionEnvironment,
  inboxRowOf,
  outcomeList,
  sourceRecord,
  storedItem,
} from '../support/consumerHarness.js';
import { kafkaRecord, mskEvent } from '../support/kafkaEvents.js';
import { lambdaContext, sqsEvent } from '../support/sqsEvents.js';
import { describeUnlessDeployedStack, type TestResources, testResources } from '../support/testResources.js';

const describe = describeUnlessDeployedStack(
  'consumers with tables of their own and assertions over the DLQ: a deployed stack has the café tables',
);

class Insufficient extends NonRetryableError {
  override readonly name = 'Insufficient';
}

const id = z.string().min(1).max(256);
const AccountEvent = z.discriminatedUnion('type', [
  /** Puts the home with its balance raised. */
  z.object({ eventId: id, type: z.literal('Deposit'), accountId: id, amount: z.number().int() }),
  /** Puts the home with its balance lowered; dead-lettered (Insufficient) when the balance is short. */
  z.object({ eventId: id, type: z.literal('Withdraw'), accountId: id, amount: z.number().int() }),
  /** Deletes the home. */
  z.object({ eventId: id, type: z.literal('Close'), accountId: id }),
  /** Writes nothing. */
  z.object({ eventId: id, type: z.literal('Ping'), accountId: id }),
  /** `ADD balance` on the home (an Update). */
  z.object({ eventId: id, type: z.literal('Bonus'), accountId: id, amount: z.number().int() }),
  /** `ADD balance` on another account, not read (a blind Update of an item of the home table). */
  z.object({ eventId: id, type: z.literal('Gift'), accountId: id, target: id, amount: z.number().int() }),
  /** Opens another account, not read, with `attribute_not_exists(pk)` (a blind, conditioned Put). */
  z.object({ eventId: id, type: z.literal('Open'), accountId: id, target: id }),
  /** Deletes another account, not read (a blind Delete). */
  z.object({ eventId: id, type: z.literal('Drop'), accountId: id, target: id }),
  /** Reads another account and Puts it with its balance raised (an item that is another event's home). */
  z.object({ eventId: id, type: z.literal('Touch'), accountId: id, target: id, amount: z.number().int() }),
]);
type AccountEvent = z.infer<typeof AccountEvent>;
const accountTables = { accounts: { partitionKey: 'pk' } } as const satisfies Record<string, TableDefinition>;
const accountKey = (accountId: string) => ({ pk: `account#${accountId}` });
/** What `decide` saw of the home, per event id (its balance, or `absent`). */
const seen = new Map<string, number | 'absent'>();

function accountsConsumer(
  options: { orderingKey?: 'accountId' | 'eventId'; attribute?: string; rows?: boolean } = {},
): IdempotentConsumerOptions<AccountEvent, 'accounts'> {
  return {
    schema: AccountEvent,
    idempotencyKey: 'eventId',
    orderingKey: options.orderingKey ?? 'accountId',
    tables: accountTables,
    ...(options.rows === true
      ? {}
      : {
          inboxHome: {
            table: 'accounts',
            key: (event: AccountEvent) => accountKey(event.accountId),
            ...(options.attribute === undefined ? {} : { attribute: options.attribute }),
          },
        }),
    read: (event) => [
      { table: 'accounts', key: accountKey(event.accountId) },
      ...(event.type === 'Touch' ? [{ table: 'accounts' as const, key: accountKey(event.target) }] : []),
    ],
    decide: (event, state): Decision<'accounts'> => {
      const account = state.get('accounts', accountKey(event.accountId));
      const balance = Number(account?.balance ?? 0);
      seen.set(event.eventId, account === undefined ? 'absent' : balance);
      const put = (accountId: string, next: number) => ({
        Put: { TableName: 'accounts' as const, Item: { ...accountKey(accountId), balance: next } },
      });
      switch (event.type) {
        case 'Deposit':
          return { writes: [put(event.accountId, balance + event.amount)] };
        case 'Withdraw':
          if (balance < event.amount) throw new Insufficient(`account ${event.accountId} holds ${balance}, less than ${event.amount}`);
          return { writes: [put(event.accountId, balance - event.amount)] };
        case 'Close':
          return { writes: [{ Delete: { TableName: 'accounts', Key: accountKey(event.accountId) } }] };
        case 'Ping':
          return {};
        case 'Bonus':
        case 'Gift':
          return {
            writes: [
              {
                Update: {
                  TableName: 'accounts',
                  Key: accountKey(event.type === 'Gift' ? event.target : event.accountId),
                  UpdateExpression: 'ADD balance :a',
                  ExpressionAttributeValues: { ':a': event.amount },
                },
              },
            ],
          };
        case 'Open':
          return {
            writes: [
              {
                Put: {
                  TableName: 'accounts',
                  Item: { ...accountKey(event.target), balance: 0 },
                  ConditionExpression: 'attribute_not_exists(pk)',
                },
              },
            ],
          };
        case 'Drop':
          return { writes: [{ Delete: { TableName: 'accounts', Key: accountKey(event.target) } }] };
        case 'Touch': {
          const target = state.get('accounts', accountKey(event.target));
          return { writes: [put(event.target, Number(target?.balance ?? 0) + event.amount)] };
        }
      }
    },
  };
}

/** The outcomes that applied a message, by message id. */
const appliedIds = (outcomes: readonly OutcomeRecord[]) =>
  outcomes
    .filter((o) => o.outcome === 'applied')
    .map((o) => o.messageId)
    .sort();
/** The idempotency keys marked on an item (its marks map's entries, named `<consumer>#<key>` as `markKey` names them). */
const markKeys = (item: Item | undefined, attribute = '_inbox') =>
  Object.keys((item?.[attribute] as object | undefined) ?? {})
    .map(idempotencyKeyOf)
    .sort();
const idempotencyKeyOf = (entry: string) => entry.slice(entry.indexOf('#') + 1);
/** The mark of an idempotency key on an item. */
const markOf = (item: Item | undefined, key: string, attribute = '_inbox', consumer = 'accounts') =>
  (item?.[attribute] as Record<string, Item> | undefined)?.[markKey(consumer, key)];
const reasonOf = (message: Message | undefined) => message?.MessageAttributes?.['ic.failureReason']?.StringValue;

/** What each describe sends and reads, on its own resources (`envOf`: its `env`, set in its `beforeAll`). */
function helpersOf(envOf: () => TestResources) {
  return {
    rec: (messageId: string, body: Record<string, unknown>, extra: Parameters<typeof sourceRecord>[3] = {}): SQSRecord =>
      sourceRecord(envOf(), messageId, body, extra),
    deliver: async (environment: ExecutionEnvironment, ...records: SQSRecord[]) =>
      (await environment.handler(sqsEvent(...records), lambdaContext())) as SQSBatchResponse,
    account: (accountId: string) => storedItem(envOf(), 'accounts', accountKey(accountId)),
  };
}

describe('inboxHome under attack: standard queue', () => {
  let env: TestResources;
  const dlq: Message[] = [];
  /** The DLQ's messages so far (received once each: a later call sees only the new ones, so they are kept). */
  const deadLettered = async () => {
    dlq.push(...(await deadLetters(env)));
    return dlq;
  };
  beforeAll(async () => {
    env = await testResources('home-edges', accountTables, { consumerName: 'accounts' });
  });
  afterAll(() => env.dispose());

  const { rec, deliver, account } = helpersOf(() => env);

  it('one batch puts, updates, deletes and re-puts one home (one ordering key): each applied once; redelivered in a new environment, all duplicates', async () => {
    const events = [
      { eventId: 'f1-1', type: 'Deposit', accountId: 'F1', amount: 5 },
      { eventId: 'f1-2', type: 'Bonus', accountId: 'F1', amount: 3 },
      { eventId: 'f1-3', type: 'Close', accountId: 'F1' },
      { eventId: 'f1-4', type: 'Deposit', accountId: 'F1', amount: 10 },
      { eventId: 'f1-5', type: 'Bonus', accountId: 'F1', amount: 1 },
      { eventId: 'f1-6', type: 'Ping', accountId: 'F1' },
    ];
    const e1 = consumerEnvironment(env, accountsConsumer());
    expect(await deliver(e1, ...events.map((body, i) => rec(`f1-m${i + 1}`, body)))).toEqual({ batchItemFailures: [] });
    const stored = await account('F1');
    expect(stored?.balance).toBe(11);
    expect(stored?._inboxStub).toBeUndefined();
    expect(markKeys(stored)).toEqual(['f1-1', 'f1-2', 'f1-3', 'f1-4', 'f1-5', 'f1-6']);
    expect(seen.get('f1-4')).toBe('absent');
    // A new environment: the whole batch again, then each message alone in reverse order.
    const e2 = consumerEnvironment(env, accountsConsumer());
    expect(await deliver(e2, ...events.map((body, i) => rec(`f1-m${i + 1}`, body, { receiveCount: 2 })))).toEqual({
      batchItemFailures: [],
    });
    const e3 = consumerEnvironment(env, accountsConsumer());
    for (const [i, body] of [...events.entries()].reverse()) await deliver(e3, rec(`f1-m${i + 1}`, body, { receiveCount: 3 }));
    expect((await account('F1'))?.balance).toBe(11);
    expect(appliedIds(e1.outcomes)).toEqual(['f1-m1', 'f1-m2', 'f1-m3', 'f1-m4', 'f1-m5', 'f1-m6']);
    expect([...e2.outcomes, ...e3.outcomes].map((o) => o.outcome)).toEqual(Array(12).fill('duplicate'));
  });

  it('one batch of one home under distinct ordering keys (folded Put, Delete, Put, reader): each applied once, all marks on the item', async () => {
    const events = [
      { eventId: 'f2-1', type: 'Deposit', accountId: 'F2', amount: 5 },
      { eventId: 'f2-2', type: 'Close', accountId: 'F2' },
      { eventId: 'f2-3', type: 'Deposit', accountId: 'F2', amount: 7 },
      { eventId: 'f2-4', type: 'Ping', accountId: 'F2' },
      { eventId: 'f2-5', type: 'Close', accountId: 'F2' },
    ];
    const e1 = consumerEnvironment(env, accountsConsumer({ orderingKey: 'eventId' }));
    expect(await deliver(e1, ...events.map((body, i) => rec(`f2-m${i + 1}`, body)))).toEqual({ batchItemFailures: [] });
    const stored = await account('F2');
    // Decided in batch order within the round: the last Close leaves a stub holding all five marks.
    expect(stored).toMatchObject({ _inboxStub: true });
    expect(stored?.balance).toBeUndefined();
    expect(markKeys(stored)).toEqual(['f2-1', 'f2-2', 'f2-3', 'f2-4', 'f2-5']);
    const e2 = consumerEnvironment(env, accountsConsumer({ orderingKey: 'eventId' }));
    await deliver(e2, ...events.map((body, i) => rec(`f2-m${i + 1}`, body, { receiveCount: 2 })).reverse());
    await deliver(e2, rec('f2-m6', { eventId: 'f2-6', type: 'Deposit', accountId: 'F2', amount: 1 }));
    expect((await account('F2'))?.balance).toBe(1);
    expect(appliedIds([...e1.outcomes, ...e2.outcomes])).toEqual(['f2-m1', 'f2-m2', 'f2-m3', 'f2-m4', 'f2-m5', 'f2-m6']);
  });

  it('three environments race on one home (the original and its duplicates at once, Puts and Updates): each message applied once', async () => {
    const deposit = (n: number, amount: number) => ({ eventId: `r1-${n}`, type: 'Deposit', accountId: 'R1', amount });
    const bonus = (n: number, amount: number) => ({ eventId: `r1-${n}`, type: 'Bonus', accountId: 'R1', amount });
    const bodies = [deposit(1, 1), bonus(2, 2), deposit(3, 4), bonus(4, 8), deposit(5, 16)];
    const environments = [0, 1, 2].map(() => consumerEnvironment(env, accountsConsumer()));
    // Two rounds: cold environments, then warm ones whose memories the others made stale.
    for (let round = 0; round < 2; round += 1) {
      const responses = await Promise.all(
        environments.map((environment, e) => {
          const order = e === 1 ? [...bodies.keys()].reverse() : [...bodies.keys()];
          return deliver(environment, ...order.map((i) => rec(`r1-m${i + 1}`, bodies[i]!, { receiveCount: round * 3 + e + 1 })));
        }),
      );
      // A message may be retried (contention), never lost: deliver what was reported again until acknowledged.
      for (const [e, response] of responses.entries()) {
        let failures = response.batchItemFailures.map((f) => f.itemIdentifier);
        for (let tries = 0; failures.length > 0 && tries < 5; tries += 1) {
          const again = await deliver(
            environments[e]!,
            ...failures.map((messageId) => rec(messageId, bodies[Number(messageId.slice('r1-m'.length)) - 1]!, { receiveCount: 9 })),
          );
          failures = again.batchItemFailures.map((f) => f.itemIdentifier);
        }
        expect(failures).toEqual([]);
      }
    }
    const outcomes = environments.flatMap((environment) => environment.outcomes);
    expect(appliedIds(outcomes)).toEqual(['r1-m1', 'r1-m2', 'r1-m3', 'r1-m4', 'r1-m5']);
    expect(outcomes.filter((o) => o.outcome === 'dead-lettered')).toEqual([]);
    const stored = await account('R1');
    expect(stored?.balance).toBe(31);
    expect(markKeys(stored)).toEqual(['r1-1', 'r1-2', 'r1-3', 'r1-4', 'r1-5']);
  });

  it('a blind Update (Gift) on a stub home counts: the next event on that home sees the gifted balance', async () => {
    const e1 = consumerEnvironment(env, accountsConsumer());
    await deliver(e1, rec('b1-m1', { eventId: 'b1-1', type: 'Ping', accountId: 'B1' }));
    expect(await account('B1')).toMatchObject({ _inboxStub: true });
    // Another account's event gifts 5 to B1, without reading it.
    await deliver(e1, rec('b1-m2', { eventId: 'b1-2', type: 'Gift', accountId: 'B1-giver', target: 'B1', amount: 5 }));
    await deliver(e1, rec('b1-m3', { eventId: 'b1-3', type: 'Deposit', accountId: 'B1', amount: 1 }));
    expect(outcomeList(e1.outcomes)).toEqual(['b1-m1:applied', 'b1-m2:applied', 'b1-m3:applied']);
    // The gift is B1's balance: the deposit must see it, and B1 must no longer be a stub.
    expect(seen.get('b1-3')).toBe(5);
    expect(await account('B1')).toMatchObject({ balance: 6 });
    expect((await account('B1'))?._inboxStub).toBeUndefined();
  });

  it('a blind Put with attribute_not_exists(pk) on a marked home is refused once (ConditionalWriteFailed), as on any other item', async () => {
    const e1 = consumerEnvironment(env, accountsConsumer());
    await deliver(e1, rec('b2-m1', { eventId: 'b2-1', type: 'Deposit', accountId: 'B2', amount: 9 }));
    // Control: the same blind Put on an existing item that holds no marks (nobody's home).
    await env.documentClient.send(
      new PutCommand({ TableName: env.resources.tables.accounts!, Item: { ...accountKey('B2-plain'), balance: 4 } }),
    );
    const e2 = consumerEnvironment(env, accountsConsumer());
    const plain = await deliver(e2, rec('b2-m2', { eventId: 'b2-2', type: 'Open', accountId: 'B2-opener', target: 'B2-plain' }));
    const marked = await deliver(e2, rec('b2-m3', { eventId: 'b2-3', type: 'Open', accountId: 'B2-opener', target: 'B2' }));
    expect(e2.outcomes.map((o) => [o.messageId, o.outcome, o.reason])).toEqual([
      ['b2-m2', 'dead-lettered', 'ConditionalWriteFailed'],
      ['b2-m3', 'dead-lettered', 'ConditionalWriteFailed'],
    ]);
    expect(plain).toEqual({ batchItemFailures: [] });
    expect(marked).toEqual({ batchItemFailures: [] });
    expect(await account('B2')).toMatchObject({ balance: 9 });
    expect(markKeys(await account('B2'))).toEqual(['b2-1']);
  });

  it('a blind Delete of a marked home by an environment that remembers it before a later write: a stub keeps every mark', async () => {
    const e1 = consumerEnvironment(env, accountsConsumer());
    const e2 = consumerEnvironment(env, accountsConsumer());
    await deliver(e2, rec('b3-m1', { eventId: 'b3-1', type: 'Deposit', accountId: 'B3', amount: 2 }));
    // e2 drops B3 once (remembering B3 as it then was)...
    await deliver(e2, rec('b3-m2', { eventId: 'b3-2', type: 'Touch', accountId: 'B3-t', target: 'B3', amount: 0 }));
    // ...e1 applies two more events on B3...
    await deliver(e1, rec('b3-m3', { eventId: 'b3-3', type: 'Deposit', accountId: 'B3', amount: 3 }));
    await deliver(e1, rec('b3-m4', { eventId: 'b3-4', type: 'Bonus', accountId: 'B3', amount: 4 }));
    // ...then e2, its memory stale, deletes B3 blindly.
    await deliver(e2, rec('b3-m5', { eventId: 'b3-5', type: 'Drop', accountId: 'B3-t', target: 'B3' }));
    const stub = await account('B3');
    expect(stub).toMatchObject({ _inboxStub: true });
    expect(markKeys(stub)).toEqual(['b3-1', 'b3-3', 'b3-4']);
    const e3 = consumerEnvironment(env, accountsConsumer());
    await deliver(
      e3,
      rec('b3-m1', { eventId: 'b3-1', type: 'Deposit', accountId: 'B3', amount: 2 }, { receiveCount: 2 }),
      rec('b3-m3', { eventId: 'b3-3', type: 'Deposit', accountId: 'B3', amount: 3 }, { receiveCount: 2 }),
      rec('b3-m4', { eventId: 'b3-4', type: 'Bonus', accountId: 'B3', amount: 4 }, { receiveCount: 2 }),
    );
    expect(e3.outcomes.map((o) => o.outcome)).toEqual(['duplicate', 'duplicate', 'duplicate']);
    expect((await account('B3'))?.balance).toBeUndefined();
  });

  it("an event whose write is another unit's home, in one batch with that home's own events: both sets of marks kept, each applied once", async () => {
    const events = [
      { eventId: 'h1-1', type: 'Deposit', accountId: 'H1-b', amount: 1 },
      { eventId: 'h1-2', type: 'Touch', accountId: 'H1-a', target: 'H1-b', amount: 10 },
      { eventId: 'h1-3', type: 'Deposit', accountId: 'H1-b', amount: 100 },
      { eventId: 'h1-4', type: 'Touch', accountId: 'H1-a', target: 'H1-b', amount: 1000 },
      { eventId: 'h1-5', type: 'Close', accountId: 'H1-a' },
    ];
    const e1 = consumerEnvironment(env, accountsConsumer({ orderingKey: 'eventId' }));
    expect(await deliver(e1, ...events.map((body, i) => rec(`h1-m${i + 1}`, body)))).toEqual({ batchItemFailures: [] });
    expect((await account('H1-b'))?.balance).toBe(1111);
    expect(markKeys(await account('H1-b'))).toEqual(['h1-1', 'h1-3']);
    expect(markKeys(await account('H1-a'))).toEqual(['h1-2', 'h1-4', 'h1-5']);
    const e2 = consumerEnvironment(env, accountsConsumer({ orderingKey: 'eventId' }));
    await deliver(e2, ...events.map((body, i) => rec(`h1-m${i + 1}`, body, { receiveCount: 2 })));
    expect((await account('H1-b'))?.balance).toBe(1111);
    expect(e2.outcomes.map((o) => o.outcome)).toEqual(Array(5).fill('duplicate'));
  });

  it('an idempotency key named __proto__ is marked like any other: its redelivery is a duplicate', async () => {
    const body = { eventId: '__proto__', type: 'Deposit', accountId: 'P1', amount: 5 };
    const e1 = consumerEnvironment(env, accountsConsumer());
    await deliver(e1, rec('p1-m1', body));
    // The item read raw (the document client's unmarshall would hide an own `__proto__` entry too).
    const raw = await env.dynamoDb.send(
      new GetItemCommand({ TableName: env.resources.tables.accounts!, Key: marshall(accountKey('P1')), ConsistentRead: true }),
    );
    expect.soft(Object.keys(raw.Item?._inbox?.M ?? {}).map(idempotencyKeyOf)).toEqual(['__proto__']);
    const e2 = consumerEnvironment(env, accountsConsumer());
    await deliver(e2, rec('p1-m1', body, { receiveCount: 2 }));
    expect(outcomeList([...e1.outcomes, ...e2.outcomes])).toEqual(['p1-m1:applied', 'p1-m1:duplicate']);
    expect((await account('P1'))?.balance).toBe(5);
  });

  it.each([
    ['inbox rows (the control)', 'c1', true],
    ['inboxHome', 'c2', false],
  ] as const)(
    "%s: two consumers (two consumer names) write one table: each applies the shared event once, neither takes the other's record for its own",
    async (_, p, rows) => {
      const body = { eventId: `${p}-1`, type: 'Deposit', accountId: p, amount: 5 };
      const first = consumerEnvironment(env, accountsConsumer({ rows }));
      const second = consumerEnvironment(
        { ...env, environment: { ...env.environment, CONSUMER_NAME: 'accounts-audit' } },
        accountsConsumer({ rows }),
      );
      await deliver(first, rec(`${p}-m1`, body));
      await deliver(second, rec(`${p}-m1-audit`, body));
      expect(outcomeList([...first.outcomes, ...second.outcomes])).toEqual([`${p}-m1:applied`, `${p}-m1-audit:applied`]);
      expect((await account(p))?.balance).toBe(10);
    },
  );

  it('an Update that creates the home carries its mark; its redelivery in a cold environment is a duplicate', async () => {
    const e1 = consumerEnvironment(env, accountsConsumer());
    await deliver(e1, rec('u1-m1', { eventId: 'u1-1', type: 'Bonus', accountId: 'U1', amount: 4 }));
    expect(await account('U1')).toMatchObject({ balance: 4 });
    expect(markKeys(await account('U1'))).toEqual(['u1-1']);
    const e2 = consumerEnvironment(env, accountsConsumer());
    await deliver(e2, rec('u1-m1', { eventId: 'u1-1', type: 'Bonus', accountId: 'U1', amount: 4 }, { receiveCount: 2 }));
    expect(outcomeList([...e1.outcomes, ...e2.outcomes])).toEqual(['u1-m1:applied', 'u1-m1:duplicate']);
    expect((await account('U1'))?.balance).toBe(4);
  });

  it.each([
    ['inbox rows (the control)', 'w1', true],
    ['inboxHome', 'w2', false],
  ] as const)(
    '%s: a late copy of a dead letter that another environment redrove meanwhile is a duplicate, not dead-lettered again from memory',
    async (_, p, rows) => {
      const withdraw = { eventId: `${p}-1`, type: 'Withdraw', accountId: p, amount: 5 };
      const e1 = consumerEnvironment(env, accountsConsumer({ rows }));
      await deliver(e1, rec(`${p}-m1`, withdraw));
      // Its redelivery: dead-lettered again; e1 now remembers the account (with the dead letter's mark).
      await deliver(e1, rec(`${p}-m1`, withdraw, { receiveCount: 2 }));
      // The operator credits the account and redrives the dead letter in another environment: applied.
      const e2 = consumerEnvironment(env, accountsConsumer({ rows }));
      await deliver(e2, rec(`${p}-m2`, { eventId: `${p}-2`, type: 'Deposit', accountId: p, amount: 10 }));
      await deliver(e2, rec(`${p}-m1-redrive`, withdraw, { stringAttributes: { 'ic.redrive': `${p}-m1` } }));
      expect((await account(p))?.balance).toBe(5);
      // A late copy of the original delivery reaches e1: the event is applied, so it is a duplicate.
      await deliver(e1, rec(`${p}-m1`, withdraw, { receiveCount: 3 }));
      expect(outcomeList([...e1.outcomes, ...e2.outcomes])).toEqual([
        `${p}-m1:dead-lettered`,
        `${p}-m1:dead-lettered`,
        `${p}-m1:duplicate`,
        `${p}-m2:applied`,
        `${p}-m1-redrive:applied`,
      ]);
      expect((await account(p))?.balance).toBe(5);
    },
  );

  it('inboxHome: a reused idempotency key on another home is another event there (docs/inbox-home.md, "Choosing the home"): each home applies it once', async () => {
    const e1 = consumerEnvironment(env, accountsConsumer());
    await deliver(e1, rec('k2-m1', { eventId: 'k2-1', type: 'Deposit', accountId: 'k2-a', amount: 5 }));
    await deliver(e1, rec('k2-m2', { eventId: 'k2-1', type: 'Deposit', accountId: 'k2-b', amount: 5 }));
    // Redelivered to a cold environment: a duplicate on each home, nothing applied again.
    const e2 = consumerEnvironment(env, accountsConsumer());
    await deliver(e2, rec('k2-m1', { eventId: 'k2-1', type: 'Deposit', accountId: 'k2-a', amount: 5 }, { receiveCount: 2 }));
    await deliver(e2, rec('k2-m2', { eventId: 'k2-1', type: 'Deposit', accountId: 'k2-b', amount: 5 }, { receiveCount: 2 }));
    expect(outcomeList([...e1.outcomes, ...e2.outcomes])).toEqual(['k2-m1:applied', 'k2-m2:applied', 'k2-m1:duplicate', 'k2-m2:duplicate']);
    expect([(await account('k2-a'))?.balance, (await account('k2-b'))?.balance]).toEqual([5, 5]);
    expect(markKeys(await account('k2-b'))).toEqual(['k2-1']);
  });

  it.each([['inbox rows (the control)', 'k1', true]] as const)(
    '%s: a reused idempotency key with another payload (and so another home) is refused as an IdempotencyConflict',
    async (_, p, rows) => {
      const e1 = consumerEnvironment(env, accountsConsumer({ rows }));
      await deliver(e1, rec(`${p}-m1`, { eventId: `${p}-1`, type: 'Deposit', accountId: `${p}-a`, amount: 5 }));
      await deliver(e1, rec(`${p}-m2`, { eventId: `${p}-1`, type: 'Deposit', accountId: `${p}-b`, amount: 5 }));
      expect(outcomeList(e1.outcomes)).toEqual([`${p}-m1:applied`, `${p}-m2:dead-lettered`]);
      expect(await account(`${p}-b`)).toBeUndefined();
      const conflict = (await deadLettered()).find((m) => JSON.parse(m.Body ?? '{}').eventId === `${p}-1`);
      expect(reasonOf(conflict)).toBe('IdempotencyConflict');
    },
  );
});

describe('inboxHome under attack: FIFO dead letters, copies and redrives', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('home-fifo', accountTables, { consumerName: 'accounts', queue: { fifo: true } });
  });
  afterAll(() => env.dispose());

  const rec = (messageId: string, body: Record<string, unknown>, extra: Parameters<typeof sourceRecord>[3] = {}): SQSRecord =>
    sourceRecord(env, messageId, body, { groupId: 'G1', ...extra });
  const deliver = async (environment: ExecutionEnvironment, ...records: SQSRecord[]) =>
    (await environment.handler(sqsEvent(...records), lambdaContext())) as SQSBatchResponse;
  const account = (accountId: string) => storedItem(env, 'accounts', accountKey(accountId));

  it('dead letters amid their successors on one home, their redelivery, a copy, and a redrive (twice): each applied once, in order', async () => {
    const events = [
      { eventId: 'd1-1', type: 'Deposit', accountId: 'D1', amount: 1 },
      { eventId: 'd1-2', type: 'Withdraw', accountId: 'D1', amount: 5 },
      { eventId: 'd1-3', type: 'Deposit', accountId: 'D1', amount: 2 },
      { eventId: 'd1-4', type: 'Withdraw', accountId: 'D1', amount: 1 },
      { eventId: 'd1-5', type: 'Withdraw', accountId: 'D1', amount: 100 },
      { eventId: 'd1-6', type: 'Bonus', accountId: 'D1', amount: 10 },
    ];
    const e1 = consumerEnvironment(env, accountsConsumer());
    expect(await deliver(e1, ...events.map((body, i) => rec(`d1-m${i + 1}`, body)))).toEqual({ batchItemFailures: [] });
    expect(outcomeList(e1.outcomes)).toEqual([
      'd1-m1:applied',
      'd1-m2:dead-lettered',
      'd1-m3:applied',
      'd1-m4:applied',
      'd1-m5:dead-lettered',
      'd1-m6:applied',
    ]);
    const stored = await account('D1');
    expect(stored?.balance).toBe(12);
    expect(markKeys(stored)).toEqual(['d1-1', 'd1-2', 'd1-3', 'd1-4', 'd1-5', 'd1-6']);
    expect(markOf(stored, 'd1-2')).toMatchObject({ s: 'dead-lettered', r: 'Insufficient', m: 'd1-m2' });
    expect(markOf(stored, 'd1-5')).toMatchObject({ s: 'dead-lettered', r: 'Insufficient', m: 'd1-m5' });
    expect(await inboxRowOf(env, 'd1-2')).toMatchObject({ status: 'dead-lettered', messageId: 'd1-m2' });
    const firstDeadLetters = await deadLetters(env);
    expect(firstDeadLetters.map((m) => [JSON.parse(m.Body ?? '{}').eventId, reasonOf(m)]).sort()).toEqual([
      ['d1-2', 'Insufficient'],
      ['d1-5', 'Insufficient'],
    ]);

    // A new environment: the batch again (the dead letters again, never applied), then a producer's copy of d1-2.
    const e2 = consumerEnvironment(env, accountsConsumer());
    await deliver(e2, ...events.map((body, i) => rec(`d1-m${i + 1}`, body, { receiveCount: 2 })));
    await deliver(e2, rec('d1-m2-copy', events[1]!));
    expect(outcomeList(e2.outcomes)).toEqual([
      'd1-m1:duplicate',
      'd1-m2:dead-lettered',
      'd1-m3:duplicate',
      'd1-m4:duplicate',
      'd1-m5:dead-lettered',
      'd1-m6:duplicate',
      'd1-m2-copy:duplicate',
    ]);
    expect((await account('D1'))?.balance).toBe(12);

    // The redrive of d1-2 (12 ≥ 5 now) with a Deposit behind it in the group; then a second redrive of it.
    const e3 = consumerEnvironment(env, accountsConsumer());
    await deliver(
      e3,
      rec('d1-m2-redrive', events[1]!, { stringAttributes: { 'ic.redrive': 'd1-m2' } }),
      rec('d1-m7', { eventId: 'd1-7', type: 'Deposit', accountId: 'D1', amount: 100 }),
    );
    const e4 = consumerEnvironment(env, accountsConsumer());
    await deliver(e4, rec('d1-m2-redrive-2', events[1]!, { stringAttributes: { 'ic.redrive': 'd1-m2' } }));
    await deliver(e4, rec('d1-m2', events[1]!, { receiveCount: 3 }));
    expect(outcomeList([...e3.outcomes, ...e4.outcomes])).toEqual([
      'd1-m2-redrive:applied',
      'd1-m7:applied',
      'd1-m2-redrive-2:duplicate',
      'd1-m2:duplicate',
    ]);
    expect((await account('D1'))?.balance).toBe(107);
    expect(markOf(await account('D1'), 'd1-2')).toMatchObject({ m: 'd1-m2-redrive' });
    expect(markOf(await account('D1'), 'd1-2')?.s).toBeUndefined();
    expect(await inboxRowOf(env, 'd1-2')).toMatchObject({ status: 'applied', messageId: 'd1-m2-redrive' });
  });

  it('two dead letters of one home in one FIFO batch of two groups: both marked, both in the DLQ, the successors applied', async () => {
    const e1 = consumerEnvironment(env, accountsConsumer({ orderingKey: 'eventId' }));
    const body = (n: number, type: string, amount: number) => ({ eventId: `d2-${n}`, type, accountId: 'D2', amount });
    const response = await deliver(
      e1,
      rec('d2-m1', body(1, 'Withdraw', 5), { groupId: 'G2-a' }),
      rec('d2-m2', body(2, 'Withdraw', 6), { groupId: 'G2-b' }),
      rec('d2-m3', body(3, 'Deposit', 1), { groupId: 'G2-a' }),
      rec('d2-m4', body(4, 'Deposit', 2), { groupId: 'G2-b' }),
    );
    expect(response).toEqual({ batchItemFailures: [] });
    expect(outcomeList(e1.outcomes)).toEqual(['d2-m1:dead-lettered', 'd2-m2:dead-lettered', 'd2-m3:applied', 'd2-m4:applied']);
    const stored = await account('D2');
    expect(stored?.balance).toBe(3);
    expect(markOf(stored, 'd2-1')).toMatchObject({ s: 'dead-lettered' });
    expect(markOf(stored, 'd2-2')).toMatchObject({ s: 'dead-lettered' });
    expect(markKeys(stored)).toEqual(['d2-1', 'd2-2', 'd2-3', 'd2-4']);
  });
});

describe('inboxHome under attack: side effects, expired marks, other key shapes, Kafka, full homes', () => {
  const calls: string[] = [];
  const RewardEvent = z.discriminatedUnion('type', [
    z.object({ eventId: id, type: z.literal('Deposit'), accountId: id, amount: z.number().int() }),
    z.object({ eventId: id, type: z.literal('Ping'), accountId: id }),
    /** `SET rewarded` on the home with `attribute_exists(balance)`, and a side effect: the preflight path. */
    z.object({ eventId: id, type: z.literal('Reward'), accountId: id }),
  ]);
  type RewardEvent = z.infer<typeof RewardEvent>;
  const notify = async (input: unknown) => {
    await new Promise((resolve) => setTimeout(resolve, 20));
    calls.push(String((input as { eventId: string }).eventId));
  };
  const rewardConsumer: IdempotentConsumerOptions<RewardEvent, 'accounts', { notify: typeof notify }> = {
    schema: RewardEvent,
    idempotencyKey: 'eventId',
    orderingKey: 'accountId',
    tables: accountTables,
    inboxHome: { table: 'accounts', key: (event) => accountKey(event.accountId) },
    decide: (event, state) => {
      const account = state.get('accounts', accountKey(event.accountId));
      if (event.type === 'Ping') return {};
      if (event.type === 'Deposit')
        return {
          writes: [
            {
              Put: {
                TableName: 'accounts',
                Item: { ...accountKey(event.accountId), balance: Number(account?.balance ?? 0) + event.amount },
              },
            },
          ],
        };
      return {
        writes: [
          {
            Update: {
              TableName: 'accounts',
              Key: accountKey(event.accountId),
              UpdateExpression: 'SET rewarded = :t',
              ConditionExpression: 'attribute_exists(balance)',
              ExpressionAttributeValues: { ':t': true },
            },
          },
        ],
        sideEffects: [{ name: 'notify', input: { eventId: event.eventId } }],
      };
    },
    sideEffects: { notify },
  };

  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('home-more', accountTables, { consumerName: 'accounts' });
  });
  afterAll(() => env.dispose());
  const { rec, deliver, account } = helpersOf(() => env);

  it('a side effect behind a user condition on the home: run once across a redelivery and a racing duplicate; never for a refused commit on a stub', async () => {
    const e1 = consumerEnvironment(env, rewardConsumer);
    await deliver(e1, rec('s1-m1', { eventId: 's1-1', type: 'Deposit', accountId: 'S1', amount: 1 }));
    await deliver(e1, rec('s1-m2', { eventId: 's1-2', type: 'Reward', accountId: 'S1' }));
    const e2 = consumerEnvironment(env, rewardConsumer);
    await deliver(e2, rec('s1-m2', { eventId: 's1-2', type: 'Reward', accountId: 'S1' }, { receiveCount: 2 }));
    // The original and its duplicate at once, in two cold environments.
    const [e3, e4] = [consumerEnvironment(env, rewardConsumer), consumerEnvironment(env, rewardConsumer)];
    const reward3 = { eventId: 's1-3', type: 'Reward', accountId: 'S1' };
    await Promise.all([deliver(e3, rec('s1-m3', reward3)), deliver(e4, rec('s1-m3', reward3, { receiveCount: 2 }))]);
    // The loser may meet the winner's effect lock and be retried (SQS delays it): it comes again, a duplicate.
    const e5 = consumerEnvironment(env, rewardConsumer);
    await deliver(e5, rec('s1-m3', reward3, { receiveCount: 3 }));
    expect(outcomeList(e5.outcomes)).toEqual(['s1-m3:duplicate']);
    // A reward on a stub: its condition fails, the effect must not run.
    await deliver(e1, rec('s1-m4', { eventId: 's1-4', type: 'Ping', accountId: 'S1-stub' }));
    await deliver(e1, rec('s1-m5', { eventId: 's1-5', type: 'Reward', accountId: 'S1-stub' }));
    expect(calls.filter((c) => c.startsWith('s1-')).sort()).toEqual(['s1-2', 's1-3']);
    const all = [...e1.outcomes, ...e2.outcomes, ...e3.outcomes, ...e4.outcomes];
    expect(appliedIds(all)).toEqual(['s1-m1', 's1-m2', 's1-m3', 's1-m4']);
    expect(all.filter((o) => o.messageId === 's1-m3' && o.outcome === 'applied')).toHaveLength(1);
    expect(all.filter((o) => o.messageId === 's1-m3' && o.outcome === 'dead-lettered')).toEqual([]);
    expect(all.find((o) => o.messageId === 's1-m5')).toMatchObject({ outcome: 'dead-lettered', reason: 'ConditionalWriteFailed' });
    expect(await account('S1')).toMatchObject({ balance: 1, rewarded: true });
    expect(markKeys(await account('S1'))).toEqual(['s1-1', 's1-2', 's1-3']);
  });

  it('expired marks are removed by the next writes (40 at a time), in the same environment too; an unexpired one stays', async () => {
    const now = Math.floor(Date.now() / 1000);
    const marks: Record<string, Item> = { [markKey('accounts', 'x1-valid')]: { h: 'a'.repeat(64), m: 'x1-m-valid', x: now + 3600 } };
    for (let i = 0; i < 45; i += 1) marks[markKey('accounts', `x1-old-${i}`)] = { h: 'b'.repeat(64), m: `x1-m-old-${i}`, x: now - 100 };
    await env.documentClient.send(
      new PutCommand({
        TableName: env.resources.tables.accounts!,
        Item: { ...accountKey('X1'), balance: 1, _version: 'by-hand', _inbox: marks },
      }),
    );
    const e1 = consumerEnvironment(env, rewardConsumer);
    await deliver(e1, rec('x1-m1', { eventId: 'x1-1', type: 'Ping', accountId: 'X1' }));
    expect(markKeys(await account('X1'))).toHaveLength(46 - 40 + 1);
    await deliver(e1, rec('x1-m2', { eventId: 'x1-2', type: 'Ping', accountId: 'X1' }));
    await deliver(e1, rec('x1-m3', { eventId: 'x1-3', type: 'Ping', accountId: 'X1' }));
    expect(markKeys(await account('X1'))).toEqual(['x1-1', 'x1-2', 'x1-3', 'x1-valid']);
    expect(await account('X1')).toMatchObject({ balance: 1 });
  });

  it('an expired mark not yet removed still counts (its redelivery is a duplicate), in a warm and a cold environment', async () => {
    const now = Math.floor(Date.now() / 1000);
    const body = { eventId: 'x2-1', type: 'Deposit', accountId: 'X2', amount: 5 };
    const e1 = consumerEnvironment(env, rewardConsumer);
    await deliver(e1, rec('x2-m1', body));
    // Its mark expires (by hand), then it comes again to the warm environment and to a cold one.
    await env.documentClient.send(
      new UpdateCommand({
        TableName: env.resources.tables.accounts!,
        Key: accountKey('X2'),
        UpdateExpression: 'SET #i.#k.#x = :x, #v = :v',
        ExpressionAttributeNames: { '#i': '_inbox', '#k': markKey('accounts', 'x2-1'), '#x': 'x', '#v': '_version' },
        ExpressionAttributeValues: { ':x': now - 10, ':v': 'by-hand' },
      }),
    );
    await deliver(e1, rec('x2-m1', body, { receiveCount: 2 }));
    await deliver(consumerEnvironment(env, rewardConsumer), rec('x2-m1', body, { receiveCount: 3 }));
    expect(e1.outcomes.map((o) => o.outcome)).toEqual(['applied', 'duplicate']);
    expect((await account('X2'))?.balance).toBe(5);
  });

  it('Kafka: records of one home (a stub first), redelivered to a cold environment: each applied once, marks named by coordinates', async () => {
    const records = [
      { eventId: 'k2-1', type: 'Deposit', accountId: 'K2', amount: 1 },
      { eventId: 'k2-2', type: 'Ping', accountId: 'K2' },
      { eventId: 'k2-3', type: 'Deposit', accountId: 'K2', amount: 2 },
    ];
    const event = mskEvent(...records.map((body, i) => kafkaRecord('accounts', 0, i, body, { key: 'K2' })));
    const e1 = consumerEnvironment(env, rewardConsumer);
    expect((await e1.handler(event, lambdaContext())) as KafkaBatchResponse).toEqual({ batchItemFailures: [] });
    const e2 = consumerEnvironment(env, rewardConsumer);
    expect((await e2.handler(event, lambdaContext())) as KafkaBatchResponse).toEqual({ batchItemFailures: [] });
    expect(outcomeList([...e1.outcomes, ...e2.outcomes])).toEqual([
      'accounts-0@0:applied',
      'accounts-0@1:applied',
      'accounts-0@2:applied',
      'accounts-0@0:duplicate',
      'accounts-0@1:duplicate',
      'accounts-0@2:duplicate',
    ]);
    expect((await account('K2'))?.balance).toBe(3);
    expect(markOf(await account('K2'), 'k2-1')).toMatchObject({ m: 'accounts-0@0' });
    expect(markOf(await account('K2'), 'k2-3')).toMatchObject({ m: 'accounts-0@2' });
  });

  it('a home item full of marks: the event that would overflow it is dead-lettered once (a reason, its marker), not retried for ever', async () => {
    const now = Math.floor(Date.now() / 1000);
    const entry = (i: number): [string, Item] => [
      markKey('accounts', `z1-old-${String(i).padStart(5, '0')}`),
      { h: 'c'.repeat(64), m: `z1-m-old-${String(i).padStart(5, '0')}`, x: now + 3600 },
    ];
    const withMarks = (count: number): Item => ({
      ...accountKey('Z1'),
      balance: 1,
      _version: 'by-hand',
      _inbox: Object.fromEntries(Array.from({ length: count }, (_, i) => entry(i))),
    });
    // The most marks the item holds, as DynamoDB counts it (its size rules for maps are its own): a binary search of Puts.
    const fits = async (count: number) => {
      try {
        await env.documentClient.send(new PutCommand({ TableName: env.resources.tables.accounts!, Item: withMarks(count) }));
        return true;
      } catch (error) {
        if ((error as Error).name === 'ValidationException') return false;
        throw error;
      }
    };
    let [low, high] = [1000, 6000];
    expect(await fits(low)).toBe(true);
    expect(await fits(high)).toBe(false);
    while (high - low > 1) {
      const middle = Math.floor((low + high) / 2);
      if (await fits(middle)) low = middle;
      else high = middle;
    }
    expect(await fits(low)).toBe(true);
    const e1 = consumerEnvironment(env, rewardConsumer);
    const first = (await e1.handler(
      sqsEvent(rec('z1-m1', { eventId: 'z1-1', type: 'Deposit', accountId: 'Z1', amount: 5 })),
      lambdaContext(10_000),
    )) as SQSBatchResponse;
    expect(e1.outcomes.map((o) => [o.messageId, o.outcome, o.reason, o.errorType])).toEqual([
      ['z1-m1', 'dead-lettered', 'InvalidWrite', 'InvalidWrite'],
    ]);
    expect(first).toEqual({ batchItemFailures: [] });
    expect((await account('Z1'))?.balance).toBe(1);
    expect(await inboxRowOf(env, 'z1-1')).toMatchObject({ status: 'dead-lettered' });
  });
});

describe('inboxHome under attack: homes with a sort key, a number key, a binary key', () => {
  const Event = z.object({
    eventId: id,
    type: z.enum(['Add', 'Close', 'Ping']),
    kind: z.enum(['order', 'counter', 'blob']),
    ref: z.string().regex(/^[0-9]+$/),
  });
  type Event = z.infer<typeof Event>;
  const tables = {
    orders: { partitionKey: 'pk', sortKey: 'sk' },
    counters: { partitionKey: 'n' },
    blobs: { partitionKey: 'b' },
  } as const satisfies Record<string, TableDefinition>;
  const homeOf = (event: Event): { table: 'orders' | 'counters' | 'blobs'; key: Item } =>
    event.kind === 'order'
      ? { table: 'orders', key: { pk: `order#${event.ref}`, sk: 'order' } }
      : event.kind === 'counter'
        ? { table: 'counters', key: { n: Number(event.ref) } }
        : { table: 'blobs', key: { b: Buffer.from(`blob-${event.ref}`) } };
  const consumer = (kind: Event['kind']): IdempotentConsumerOptions<Event, 'orders' | 'counters' | 'blobs'> => ({
    schema: Event,
    idempotencyKey: 'eventId',
    orderingKey: 'ref',
    tables,
    inboxHome: { table: kind === 'order' ? 'orders' : kind === 'counter' ? 'counters' : 'blobs', key: (event) => homeOf(event).key },
    decide: (event, state): Decision<'orders' | 'counters' | 'blobs'> => {
      const home = homeOf(event);
      const item = state.get(home.table, home.key);
      if (event.type === 'Ping') return {};
      if (event.type === 'Close') return { writes: [{ Delete: { TableName: home.table, Key: home.key } }] };
      return {
        writes: [
          { Put: { TableName: home.table, Item: { ...home.key, count: Number(item?.count ?? 0) + 1 } } },
          // An order also gets a line, written blindly (an item of the home table that is nobody's home).
          ...(event.kind === 'order'
            ? [{ Put: { TableName: 'orders' as const, Item: { pk: `order#${event.ref}`, sk: `line#${event.eventId}` } } }]
            : []),
        ],
      };
    },
  });

  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('home-keys', tables, { consumerName: 'keys' });
    // The provisioner makes string keys: the number- and binary-keyed tables are made again with their types.
    for (const [logical, type] of [
      ['counters', 'N'],
      ['blobs', 'B'],
    ] as const) {
      const name = env.resources.tables[logical]!;
      await env.dynamoDb.send(new DeleteTableCommand({ TableName: name }));
      await ensureTable(env.dynamoDb, { name, partitionKey: logical === 'counters' ? 'n' : 'b', partitionKeyType: type });
    }
  });
  afterAll(() => env.dispose());
  const deliver = async (environment: ExecutionEnvironment, ...records: SQSRecord[]) =>
    (await environment.handler(sqsEvent(...records), lambdaContext())) as SQSBatchResponse;

  it.each(['order', 'counter', 'blob'] as const)(
    '%s homes: a batch, two environments racing on it, and a cold redelivery: each event applied once',
    async (kind) => {
      const bodies = ['Add', 'Add', 'Close', 'Ping', 'Add'].map((type, i) => ({ eventId: `${kind}-${i}`, type, kind, ref: '7' }));
      const records = (receiveCount: number) => bodies.map((body, i) => sourceRecord(env, `${kind}-m${i}`, body, { receiveCount }));
      const [e1, e2] = [consumerEnvironment(env, consumer(kind)), consumerEnvironment(env, consumer(kind))];
      // The first two Adds alone in e1, then the whole batch in e1 and e2 at once.
      await deliver(e1, ...records(1).slice(0, 2));
      const responses = await Promise.all([deliver(e1, ...records(2)), deliver(e2, ...records(2).reverse())]);
      for (const response of responses)
        if (response.batchItemFailures.length > 0)
          await deliver(
            consumerEnvironment(env, consumer(kind)),
            ...records(3).filter((r) => response.batchItemFailures.some((f) => f.itemIdentifier === r.messageId)),
          );
      const e3 = consumerEnvironment(env, consumer(kind));
      await deliver(e3, ...records(4));
      const outcomes = [...e1.outcomes, ...e2.outcomes, ...e3.outcomes];
      expect(appliedIds(outcomes)).toEqual(bodies.map((_, i) => `${kind}-m${i}`).sort());
      expect(outcomes.filter((o) => o.outcome !== 'applied' && o.outcome !== 'duplicate' && o.outcome !== 'retried')).toEqual([]);
      expect(e3.outcomes.map((o) => o.outcome)).toEqual(Array(5).fill('duplicate'));
      const key = homeOf(bodies[0] as Event);
      const stored = await storedItem(env, key.table, key.key);
      // In batch order: Add, Add, Close, Ping, Add → count 1, not a stub, five marks.
      expect(stored?.count).toBe(1);
      expect(stored?._inboxStub).toBeUndefined();
      expect(markKeys(stored)).toEqual(bodies.map((b) => b.eventId).sort());
    },
  );
});
