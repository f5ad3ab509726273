/**
 * Field cases C23–C26 and C28 with their expected values, each on a small consumer of its own
 * built with the public API (`createIdempotentConsumer`), as a user would write it, against the
 * real DynamoDB Local and SQS server. "Two warm execution environments" are two handlers built
 * separately, each with its own item cache. Assertions are made on what is stored (items, inbox
 * rows, outbox items, attempt records, side-effect records, the DLQ) and on the exact batch
 * responses, not only on the outcomes the handlers report.
 */
import type { SQSBatchResponse } from 'aws-lambda';
import {
  type IdempotentConsumerOptions,
  type OutcomeRecord,
  PredecessorNotApplied,
  RetryableError,
  type TableDefinition,
} from 'idempotent-consumer';
import type { KafkaBatchResponse } from 'idempotent-consumer/kafka';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { deadLetters } from '../support/cafeHarness.js';
import {
  attemptRecordOf,
  consumerEnvironment,
  type ExecutionEnvironment,
  idempotencyRecords,
  inboxRowOf,
  outboxItems,
  outcomeList,
  sourceRecord,
  storedItem,
} from '../support/consumerHarness.js';
import { deadLetterAttribute } from '../support/deadLetterAttributes.js';
import { kafkaRecord, mskEvent } from '../support/kafkaEvents.js';
import { lambdaContext, sqsEvent } from '../support/sqsEvents.js';
import { describeUnlessDeployedStack, type TestResources, testResources } from '../support/testResources.js';

const describe = describeUnlessDeployedStack(
  "consumers with tables of their own (carts, pages, tickets, accounts) and assertions over whole tables and the DLQ: a deployed stack has the café's",
);

const id = z.string().min(1).max(128);

/** The receives a message of these cases may take: the attempt budget (`retry.maxAttempts`). */
const MAX_RECEIVES = 5;

/**
 * Delivers one message of a FIFO group to `environment` as the queue would: in a batch of its own,
 * again (next receive count) while the response reports it, at most {@link MAX_RECEIVES} times; the
 * next message of the group comes only after it is acknowledged. (The design allows a stale memory
 * to cost a retry, never a lost update, so a retry is not a failure of these cases.)
 *
 * @returns every response, in order; the last one acknowledges the message unless the budget ran out
 */
async function deliverUntilAcknowledged(
  env: TestResources,
  environment: ExecutionEnvironment,
  messageId: string,
  body: Record<string, unknown>,
  groupId: string,
): Promise<SQSBatchResponse[]> {
  const responses: SQSBatchResponse[] = [];
  for (let receiveCount = 1; receiveCount <= MAX_RECEIVES; receiveCount += 1) {
    const response = (await environment.handler(
      sqsEvent(sourceRecord(env, messageId, body, { groupId, receiveCount })),
      lambdaContext(),
    )) as SQSBatchResponse;
    responses.push(response);
    if (response.batchItemFailures.length === 0) break;
  }
  return responses;
}

/** Asserts that each message was acknowledged (its last response empty, every earlier one reporting exactly it) and applied exactly once. */
function expectEachAppliedOnce(
  deliveries: readonly { readonly messageId: string; readonly responses: readonly SQSBatchResponse[] }[],
  outcomes: readonly OutcomeRecord[],
): void {
  for (const { messageId, responses } of deliveries) {
    expect(responses.at(-1), messageId).toEqual({ batchItemFailures: [] });
    expect(responses.slice(0, -1), messageId).toEqual(
      responses.slice(0, -1).map(() => ({ batchItemFailures: [{ itemIdentifier: messageId }] })),
    );
  }
  expect(
    outcomes
      .filter((o) => o.outcome === 'applied')
      .map((o) => o.messageId)
      .sort(),
  ).toEqual(deliveries.map((d) => d.messageId).sort());
  expect(
    outcomes
      .filter((o) => o.outcome === 'dead-lettered' || o.outcome === 'duplicate')
      .map(({ messageId, outcome }) => `${messageId}:${outcome}`),
  ).toEqual([]);
}

// ---------------------------------------------------------------------------------------------
// C23: carts
// ---------------------------------------------------------------------------------------------

const CartEvent = z.discriminatedUnion('type', [
  z.object({ eventId: id, type: z.literal('AddItem'), cartId: id, item: id }),
  z.object({ eventId: id, type: z.literal('Checkout'), cartId: id }),
  /** The variant's blind write: creates an empty cart without reading it. */
  z.object({ eventId: id, type: z.literal('OpenCart'), cartId: id }),
]);
type CartEvent = z.infer<typeof CartEvent>;
type Cart = { cartId: string; items: string[] };
const cartTables = { carts: { partitionKey: 'cartId' } } as const satisfies Record<string, TableDefinition>;

const cartConsumer: IdempotentConsumerOptions<CartEvent> = {
  schema: CartEvent,
  idempotencyKey: 'eventId',
  orderingKey: 'cartId',
  tables: cartTables,
  // OpenCart writes the cart without reading it (a blind Put); the others read it.
  read: (event) => (event.type === 'OpenCart' ? [] : [{ table: 'carts', key: { cartId: event.cartId } }]),
  decide: (event, state) => {
    if (event.type === 'OpenCart') return { writes: [{ Put: { TableName: 'carts', Item: { cartId: event.cartId, items: [] } } }] };
    const cart = state.get<Cart>('carts', { cartId: event.cartId });
    if (event.type === 'AddItem')
      return { writes: [{ Put: { TableName: 'carts', Item: { cartId: event.cartId, items: [...(cart?.items ?? []), event.item] } } }] };
    if (cart === undefined) throw new PredecessorNotApplied(`cart ${event.cartId} has nothing to check out yet`);
    return { writes: [{ Delete: { TableName: 'carts', Key: { cartId: event.cartId } } }] };
  },
};

describe('case C23: a deleted and re-created item is not the item another environment remembers', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('c23', cartTables, { consumerName: 'carts', queue: { fifo: true } });
  });
  afterAll(() => env.dispose());

  it.each([
    {
      layout: 'E2 add apple, E1 checkout, E1 add banana, E2 add cherry',
      cartId: 'C-1',
      steps: [
        ['E2', { type: 'AddItem', item: 'apple' }],
        ['E1', { type: 'Checkout' }],
        ['E1', { type: 'AddItem', item: 'banana' }],
        ['E2', { type: 'AddItem', item: 'cherry' }],
      ],
      cartAfterEach: [['apple'], undefined, ['banana'], ['banana', 'cherry']],
    },
    {
      layout: 'the variant: each incarnation first written by a blind Put (OpenCart), then by decisions that read it',
      cartId: 'C-2',
      steps: [
        ['E2', { type: 'OpenCart' }],
        ['E2', { type: 'AddItem', item: 'apple' }],
        ['E1', { type: 'Checkout' }],
        ['E1', { type: 'OpenCart' }],
        ['E1', { type: 'AddItem', item: 'banana' }],
        ['E2', { type: 'AddItem', item: 'cherry' }],
      ],
      cartAfterEach: [[], ['apple'], undefined, [], ['banana'], ['banana', 'cherry']],
    },
  ] as const)(
    '$layout: the cart holds [banana, cherry], apple never comes back, each message applied once',
    async ({ cartId, steps, cartAfterEach }) => {
      // Arrange: two warm execution environments of the cart consumer, each with its own memory.
      const environments = { E1: consumerEnvironment(env, cartConsumer), E2: consumerEnvironment(env, cartConsumer) };
      const messages = steps.map(([where, event], i) => ({
        where,
        messageId: `${cartId}-m-${i + 1}`,
        body: { eventId: `${cartId}-e-${i + 1}`, cartId, ...event },
      }));

      // Act: one group, each message delivered after the previous one completed.
      const deliveries: { messageId: string; responses: SQSBatchResponse[] }[] = [];
      const carts: (readonly string[] | undefined)[] = [];
      for (const { where, messageId, body } of messages) {
        deliveries.push({ messageId, responses: await deliverUntilAcknowledged(env, environments[where], messageId, body, cartId) });
        carts.push((await storedItem<Cart>(env, 'carts', { cartId }))?.items);
      }

      // Assert: what is stored after each step, then the inbox, the outcomes and the DLQ.
      expect(carts).toEqual(cartAfterEach);
      expect((await storedItem<Cart>(env, 'carts', { cartId }))?.items).toEqual(['banana', 'cherry']);
      for (const { messageId, body } of messages) {
        expect(await inboxRowOf(env, body.eventId), body.eventId).toMatchObject({ status: 'applied', messageId });
      }
      expectEachAppliedOnce(deliveries, [...environments.E1.outcomes, ...environments.E2.outcomes]);
      expect(await deadLetters(env)).toEqual([]);
    },
  );
});

// ---------------------------------------------------------------------------------------------
// C24: pages
// ---------------------------------------------------------------------------------------------

const PageEvent = z.discriminatedUnion('type', [
  z.object({ eventId: id, type: z.literal('Rename'), pageId: id, title: z.string().min(1) }),
  z.object({ eventId: id, type: z.literal('View'), pageId: id }),
]);
type PageEvent = z.infer<typeof PageEvent>;
type Page = { pageId: string; title?: string; views?: number };
const pageTables = { pages: { partitionKey: 'pageId' } } as const satisfies Record<string, TableDefinition>;

const pageConsumer: IdempotentConsumerOptions<PageEvent> = {
  schema: PageEvent,
  idempotencyKey: 'eventId',
  orderingKey: 'pageId',
  tables: pageTables,
  // View does not read the page: it counts with a blind Update.
  read: (event) => (event.type === 'Rename' ? [{ table: 'pages', key: { pageId: event.pageId } }] : []),
  decide: (event, state) => {
    if (event.type === 'View') {
      return {
        writes: [
          {
            Update: {
              TableName: 'pages',
              Key: { pageId: event.pageId },
              UpdateExpression: 'ADD #views :one',
              ExpressionAttributeNames: { '#views': 'views' },
              ExpressionAttributeValues: { ':one': 1 },
            },
          },
        ],
      };
    }
    const page = state.get<Page>('pages', { pageId: event.pageId });
    return {
      writes: [
        {
          Put: {
            TableName: 'pages',
            Item: { pageId: event.pageId, title: event.title, ...(page?.views === undefined ? {} : { views: page.views }) },
          },
        },
      ],
    };
  },
};

describe('case C24: a write that did not read its item still invalidates what others remember', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('c24', pageTables, { consumerName: 'pages', queue: { fifo: true } });
  });
  afterAll(() => env.dispose());

  it('E1 rename A, E2 view (blind ADD views :one), E1 rename B: title B, views 1', async () => {
    // Arrange
    const e1 = consumerEnvironment(env, pageConsumer);
    const e2 = consumerEnvironment(env, pageConsumer);
    const pageId = 'P-1';

    // Act: one group, in order.
    const deliveries = [
      {
        messageId: 'm-1',
        responses: await deliverUntilAcknowledged(env, e1, 'm-1', { eventId: 'p-1', type: 'Rename', pageId, title: 'A' }, pageId),
      },
      { messageId: 'm-2', responses: await deliverUntilAcknowledged(env, e2, 'm-2', { eventId: 'p-2', type: 'View', pageId }, pageId) },
      {
        messageId: 'm-3',
        responses: await deliverUntilAcknowledged(env, e1, 'm-3', { eventId: 'p-3', type: 'Rename', pageId, title: 'B' }, pageId),
      },
    ];

    // Assert
    expect(await storedItem<Page>(env, 'pages', { pageId })).toMatchObject({ pageId, title: 'B', views: 1 });
    for (const [eventId, messageId] of [
      ['p-1', 'm-1'],
      ['p-2', 'm-2'],
      ['p-3', 'm-3'],
    ] as const) {
      expect(await inboxRowOf(env, eventId), eventId).toMatchObject({ status: 'applied', messageId });
    }
    expectEachAppliedOnce(deliveries, [...e1.outcomes, ...e2.outcomes]);
    expect(e2.outcomes.filter((o) => o.outcome === 'applied').map((o) => o.messageId)).toEqual(['m-2']);
    expect(await deadLetters(env)).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// C25: tickets
// ---------------------------------------------------------------------------------------------

const TicketEvent = z.discriminatedUnion('type', [
  z.object({ eventId: id, type: z.literal('comment'), ticketId: id }),
  z.object({ eventId: id, type: z.literal('close'), ticketId: id }),
]);
type TicketEvent = z.infer<typeof TicketEvent>;
type Ticket = { ticketId: string; log: string[] };
const ticketTables = { tickets: { partitionKey: 'ticketId' } } as const satisfies Record<string, TableDefinition>;

/** The user's own retryable error, thrown by `read`. */
class TicketStoreUnavailable extends RetryableError {
  constructor() {
    super('the ticket store is unavailable');
    this.name = 'TicketStoreUnavailable';
  }
}

/** How `read` fails for a comment while the fault is on. */
type ReadFault = 'RetryableError' | 'a table name the consumer does not define';

/** The ticket consumer; while `fault.on`, `read` of a comment fails the way `fault.kind` says. */
function ticketConsumer(fault: { on: boolean; readonly kind: ReadFault }): IdempotentConsumerOptions<TicketEvent> {
  return {
    schema: TicketEvent,
    idempotencyKey: 'eventId',
    orderingKey: 'ticketId',
    tables: ticketTables,
    read: (event) => {
      if (event.type === 'comment' && fault.on) {
        if (fault.kind === 'RetryableError') throw new TicketStoreUnavailable();
        return [{ table: 'ticket', key: { ticketId: event.ticketId } }]; // a typo: `ticket` is not one of `tables`
      }
      return [{ table: 'tickets', key: { ticketId: event.ticketId } }];
    },
    decide: (event, state) => {
      const ticket = state.get<Ticket>('tickets', { ticketId: event.ticketId });
      return { writes: [{ Put: { TableName: 'tickets', Item: { ticketId: event.ticketId, log: [...(ticket?.log ?? []), event.type] } } }] };
    },
  };
}

describe('case C25: a group stops at a failure raised before decide', () => {
  const envs: TestResources[] = [];
  afterAll(() => Promise.all(envs.map((env) => env.dispose())));

  it.each([['RetryableError'], ['a table name the consumer does not define']] as const)(
    'FIFO group T-1 (read of m-1 fails with %s): neither message acted on, both reported; then the log reads [comment, close]',
    async (kind) => {
      // Arrange
      const env = await testResources('c25-fifo', ticketTables, { consumerName: 'tickets', queue: { fifo: true } });
      envs.push(env);
      const fault = { on: true, kind };
      const { handler, outcomes } = consumerEnvironment(env, ticketConsumer(fault));
      const batch = (receiveCount: number) =>
        sqsEvent(
          sourceRecord(env, 'm-1', { eventId: 't-1', type: 'comment', ticketId: 'T-1' }, { groupId: 'T-1', receiveCount }),
          sourceRecord(env, 'm-2', { eventId: 't-2', type: 'close', ticketId: 'T-1' }, { groupId: 'T-1', receiveCount }),
        );

      // Act 1: read fails for m-1.
      const first = await handler(batch(1), lambdaContext());

      // Assert 1: both reported, in order; nothing of either stored; m-2's attempt not counted.
      expect(JSON.stringify(first)).toBe('{"batchItemFailures":[{"itemIdentifier":"m-1"},{"itemIdentifier":"m-2"}]}');
      expect(await storedItem(env, 'tickets', { ticketId: 'T-1' })).toBeUndefined();
      expect(await inboxRowOf(env, 't-1')).toBeUndefined();
      expect(await inboxRowOf(env, 't-2')).toBeUndefined();
      expect(outcomes.map((o) => [o.messageId, o.outcome, o.countsAsAttempt])).toEqual([
        ['m-1', 'retried', true],
        ['m-2', 'retried', false],
      ]);

      // Act 2: m-1 succeeds; the group comes back in order.
      fault.on = false;
      const second = await handler(batch(2), lambdaContext());

      // Assert 2
      expect(second).toEqual({ batchItemFailures: [] });
      expect((await storedItem<Ticket>(env, 'tickets', { ticketId: 'T-1' }))?.log).toEqual(['comment', 'close']);
      expect(await inboxRowOf(env, 't-1')).toMatchObject({ status: 'applied', messageId: 'm-1' });
      expect(await inboxRowOf(env, 't-2')).toMatchObject({ status: 'applied', messageId: 'm-2' });
      expect(await deadLetters(env)).toEqual([]);
    },
  );

  it.each([['RetryableError'], ['a table name the consumer does not define']] as const)(
    'Kafka tickets-0, offsets 0 and 1 (read of offset 0 fails with %s): neither acted on, both reported; then the log reads [comment, close]',
    async (kind) => {
      // Arrange
      const env = await testResources('c25-kafka', ticketTables, { consumerName: 'tickets' });
      envs.push(env);
      const fault = { on: true, kind };
      const { handler, outcomes } = consumerEnvironment(env, ticketConsumer(fault));
      const event = mskEvent(
        kafkaRecord('tickets', 0, 0, { eventId: 't-1', type: 'comment', ticketId: 'T-1' }, { key: 'T-1' }),
        kafkaRecord('tickets', 0, 1, { eventId: 't-2', type: 'close', ticketId: 'T-1' }, { key: 'T-1' }),
      );

      // Act 1
      const first = (await handler(event, lambdaContext())) as KafkaBatchResponse;

      // Assert 1: both reported; nothing stored; an attempt counted for offset 0 only.
      expect(JSON.stringify(first)).toBe(
        '{"batchItemFailures":[{"itemIdentifier":{"partition":"tickets-0","offset":0}},{"itemIdentifier":{"partition":"tickets-0","offset":1}}]}',
      );
      expect(await storedItem(env, 'tickets', { ticketId: 'T-1' })).toBeUndefined();
      expect(await inboxRowOf(env, 't-1')).toBeUndefined();
      expect(await inboxRowOf(env, 't-2')).toBeUndefined();
      expect(outcomes.map((o) => [o.messageId, o.outcome, o.countsAsAttempt])).toEqual([
        ['tickets-0@0', 'retried', true],
        ['tickets-0@1', 'retried', false],
      ]);
      expect((await attemptRecordOf(env, 'kafka:tickets-0@0'))?.attempts).toBe(1);
      expect(await attemptRecordOf(env, 'kafka:tickets-0@1')).toBeUndefined();

      // Act 2: the partition resumes from offset 0; m-1 succeeds.
      fault.on = false;
      const second = (await handler(event, lambdaContext())) as KafkaBatchResponse;

      // Assert 2
      expect(second).toEqual({ batchItemFailures: [] });
      expect((await storedItem<Ticket>(env, 'tickets', { ticketId: 'T-1' }))?.log).toEqual(['comment', 'close']);
      expect(await inboxRowOf(env, 't-1')).toMatchObject({ status: 'applied', messageId: 'tickets-0@0' });
      expect(await inboxRowOf(env, 't-2')).toMatchObject({ status: 'applied', messageId: 'tickets-0@1' });
      expect(await deadLetters(env)).toEqual([]);
    },
  );
});

// ---------------------------------------------------------------------------------------------
// C26 and C28: accounts
// ---------------------------------------------------------------------------------------------

const AccountEvent = z.discriminatedUnion('type', [
  z.object({ eventId: id, type: z.literal('Credit'), accountId: id, amount: z.number().int().positive() }),
  /** C28: a decision that divides the balance into `parts` (0 makes a NaN: a bug in the consumer's code). */
  z.object({ eventId: id, type: z.literal('Split'), accountId: id, parts: z.number().int().min(0) }),
  /** C28: a decision whose second outbox message holds a BigInt (a bug in the consumer's code). */
  z.object({ eventId: id, type: z.literal('Audit'), accountId: id, amount: z.number().int().positive() }),
]);
type AccountEvent = z.infer<typeof AccountEvent>;
type Account = { accountId: string; balance: number; share?: number };
const accountTables = { accounts: { partitionKey: 'accountId' } } as const satisfies Record<string, TableDefinition>;
const GOLD = 150;

/** The account consumer; `notifyGold` is the inline side effect of a credit that takes the balance across 150. */
function accountConsumer(notifyGold: (input: unknown) => Promise<unknown>): IdempotentConsumerOptions<AccountEvent> {
  return {
    schema: AccountEvent,
    idempotencyKey: 'eventId',
    orderingKey: 'accountId',
    tables: accountTables,
    read: (event) => [{ table: 'accounts', key: { accountId: event.accountId } }],
    decide: (event, state) => {
      const balance = state.get<Account>('accounts', { accountId: event.accountId })?.balance ?? 0;
      switch (event.type) {
        case 'Credit': {
          const next = balance + event.amount;
          return {
            writes: [{ Put: { TableName: 'accounts', Item: { accountId: event.accountId, balance: next } } }],
            outbox: [{ body: { type: 'Credited', accountId: event.accountId, balance: next } }],
            ...(balance < GOLD && next >= GOLD
              ? { sideEffects: [{ name: 'notifyGold', input: { accountId: event.accountId, balance: next } }] }
              : {}),
          };
        }
        case 'Split':
          return {
            writes: [{ Put: { TableName: 'accounts', Item: { accountId: event.accountId, balance, share: balance / event.parts } } }],
          };
        case 'Audit':
          return {
            writes: [{ Put: { TableName: 'accounts', Item: { accountId: event.accountId, balance: balance + event.amount } } }],
            outbox: [
              { body: { type: 'Credited', accountId: event.accountId, balance: balance + event.amount } },
              { body: { type: 'Audited', accountId: event.accountId, amountMicros: BigInt(event.amount) * BigInt(1_000_000) } },
            ],
          };
      }
    },
    sideEffects: { notifyGold },
  };
}

describe('case C26: a side effect is decided on verified state only', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('c26', accountTables, { consumerName: 'accounts' });
  });
  afterAll(() => env.dispose());

  it('E1 applies m-1 +60, then gets [m-1 +60 (redelivered), m-2 +50]: balance 110, m-1 a duplicate, m-2 applied, notifyGold never runs', async () => {
    // Arrange: E1 applies m-1.
    const calls: unknown[] = [];
    const e1 = consumerEnvironment(
      env,
      accountConsumer(async (input) => {
        calls.push(input);
      }),
    );
    const m1 = { eventId: 'k-1', type: 'Credit', accountId: 'A-1', amount: 60 };
    const m2 = { eventId: 'k-2', type: 'Credit', accountId: 'A-1', amount: 50 };
    expect(await e1.handler(sqsEvent(sourceRecord(env, 'm-1', m1)), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(await storedItem<Account>(env, 'accounts', { accountId: 'A-1' })).toMatchObject({ balance: 60 });

    // Act: one batch, m-1 again (same message id) and m-2.
    const response = await e1.handler(
      sqsEvent(sourceRecord(env, 'm-1', m1, { receiveCount: 2 }), sourceRecord(env, 'm-2', m2)),
      lambdaContext(),
    );

    // Assert
    expect(response).toEqual({ batchItemFailures: [] });
    expect(await storedItem<Account>(env, 'accounts', { accountId: 'A-1' })).toMatchObject({ balance: 110 });
    expect(outcomeList(e1.outcomes)).toEqual(['m-1:applied', 'm-1:duplicate', 'm-2:applied']);
    expect(calls).toEqual([]);
    // Nothing of the side-effect guard is stored either: the effect was never started.
    expect(await idempotencyRecords(env)).toEqual([]);
    expect(await inboxRowOf(env, 'k-1')).toMatchObject({ status: 'applied', messageId: 'm-1' });
    expect(await inboxRowOf(env, 'k-2')).toMatchObject({ status: 'applied', messageId: 'm-2' });
    expect(
      (await outboxItems(env)).map((item) => (JSON.parse(String(item.body)) as { balance: number }).balance).sort((x, y) => x - y),
    ).toEqual([60, 110]);
    expect(await deadLetters(env)).toEqual([]);
  });
});

describe('case C28: a decision that cannot be written fails alone', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('c28', accountTables, { consumerName: 'accounts' });
  });
  afterAll(() => env.dispose());

  const noEffect = async () => undefined;
  const credit = (eventId: string, accountId: string) => ({ eventId, type: 'Credit', accountId, amount: 1 });
  // `names`: what B's error message must name; an outbox position counts from 0, as the library's own
  // outbox message ids and effect keys count it (B's BigInt is in its second outgoing message).
  const variants = [
    {
      what: 'a number that is NaN in an item',
      prefix: 'nan',
      bad: (accountId: string) => ({ eventId: `${accountId}-b`, type: 'Split', accountId, parts: 0 }),
      names: [/accounts/, /share/],
    },
    {
      what: 'a BigInt in an outbox body',
      prefix: 'big',
      bad: (accountId: string) => ({ eventId: `${accountId}-b`, type: 'Audit', accountId, amount: 1 }),
      names: [/outbox|outgoing message/i, /\b1\b/],
    },
  ];

  it.each(variants)(
    '[A +1, B, C +1] where B writes $what: A and C applied in that invocation, B alone retried as ConsumerDefinitionError naming the write',
    async ({ prefix, bad, names }) => {
      // Arrange
      const { handler, outcomes } = consumerEnvironment(env, accountConsumer(noEffect));
      const [a, b, c] = [`${prefix}-A`, `${prefix}-B`, `${prefix}-C`];

      // Act
      const response = await handler(
        sqsEvent(
          sourceRecord(env, `m-${a}`, credit(`${a}-1`, a)),
          sourceRecord(env, `m-${b}`, bad(b)),
          sourceRecord(env, `m-${c}`, credit(`${c}-1`, c)),
        ),
        lambdaContext(),
      );

      // Assert: the exact response; what is stored for A and C, nothing for B.
      expect(JSON.stringify(response)).toBe(`{"batchItemFailures":[{"itemIdentifier":"m-${b}"}]}`);
      expect(await storedItem<Account>(env, 'accounts', { accountId: a })).toMatchObject({ balance: 1 });
      expect(await storedItem<Account>(env, 'accounts', { accountId: c })).toMatchObject({ balance: 1 });
      expect(await storedItem(env, 'accounts', { accountId: b })).toBeUndefined();
      expect(await inboxRowOf(env, `${a}-1`)).toMatchObject({ status: 'applied', messageId: `m-${a}` });
      expect(await inboxRowOf(env, `${c}-1`)).toMatchObject({ status: 'applied', messageId: `m-${c}` });
      expect(await inboxRowOf(env, `${b}-b`)).toBeUndefined();
      const outbox = (await outboxItems(env)).filter((item) => String(item.idempotencyKey).startsWith(`${prefix}-`));
      expect(outbox.map((item) => item.idempotencyKey).sort()).toEqual([`${a}-1`, `${c}-1`]);
      // A and C applied (no attempt of theirs spent on B's fault); B retried for its own fault, named.
      const byMessage = new Map(outcomes.map((o) => [o.messageId, o]));
      expect(byMessage.get(`m-${a}`)?.outcome).toBe('applied');
      expect(byMessage.get(`m-${c}`)?.outcome).toBe('applied');
      const bOutcome = byMessage.get(`m-${b}`);
      expect(bOutcome).toMatchObject({ outcome: 'retried', errorType: 'ConsumerDefinitionError', countsAsAttempt: true });
      for (const pattern of names) expect(bOutcome?.errorMessage).toMatch(pattern);
      expect(bOutcome?.errorMessage).not.toMatch(/\n\s+at /); // a message, not a stack trace
      expect(outcomes.filter((o) => o.outcome === 'retried').map((o) => o.messageId)).toEqual([`m-${b}`]);
      expect(await deadLetters(env)).toEqual([]);
    },
  );

  it.each(variants)(
    'B ($what) on its last attempt is dead-lettered as RetriesExhausted with the ConsumerDefinitionError, body byte for byte',
    async ({ prefix, bad, names }) => {
      // Arrange
      const { handler, outcomes } = consumerEnvironment(env, accountConsumer(noEffect));
      const accountId = `${prefix}-last-B`;
      const body = JSON.stringify(bad(accountId));

      // Act: the 5th receive (retry.maxAttempts 5), never skipped before.
      const response = await handler(sqsEvent(sourceRecord(env, `m-${accountId}`, body, { receiveCount: 5 })), lambdaContext());

      // Assert
      expect(response).toEqual({ batchItemFailures: [] });
      expect(outcomes.map((o) => [o.outcome, o.reason, o.errorType])).toEqual([
        ['dead-lettered', 'RetriesExhausted', 'ConsumerDefinitionError'],
      ]);
      const dead = (await deadLetters(env)).filter((m) => deadLetterAttribute(m, 'originalMessageId') === `m-${accountId}`);
      expect(dead).toHaveLength(1);
      expect(dead[0]?.Body).toBe(body);
      expect(deadLetterAttribute(dead[0], 'failureReason')).toBe('RetriesExhausted');
      expect(deadLetterAttribute(dead[0], 'errorType')).toBe('ConsumerDefinitionError');
      for (const pattern of names) expect(deadLetterAttribute(dead[0], 'errorMessage')).toMatch(pattern);
      expect(await storedItem(env, 'accounts', { accountId })).toBeUndefined();
    },
  );
});
