/**
 * More attacks on exactly-once under `inboxHome` (inbox marks on home items), on angles that
 * `inboxHomeEdges.test.ts` does not cover: the outbox and provenance beside home marks, a mark
 * pruned while the other records of its event (outbox item, provenance row) still stand, a key
 * reused on another home within one batch, parking out of order, FIFO group stops with a dead
 * letter and the DLQ tooling's dry run (`decideDeadLetter`), side effects on stub homes, and
 * environments whose memory of a home predates its delete and re-creation. Each consumer is built
 * with the public API (`createIdempotentConsumer`) against the real DynamoDB Local and SQS server;
 * "an environment" is a handler built on its own, with its own item cache. Every test asserts
 * what exactly once means for it; a test that finds a fault fails with the observed value.
 */
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import { DeleteMessageCommand } from '@aws-sdk/client-sqs';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  BusinessRuleViolation,
  type Decision,
  type IdempotentConsumerOptions,
  type Item,
  NonRetryableError,
  type OutcomeRecord,
  PredecessorNotApplied,
  RetryableError,
  type TableDefinition,
} from 'idempotent-consumer';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { decideDeadLetter } from '../../packages/cli/src/dlq/decideDeadLetter.js';
import { markKey } from '../../packages/idempotent-consumer/src/inbox/homeMarks.js';
import { deadLetters } from '../support/cafeHarness.js';
import {
  consumerEnvironment,
  dryRunConsumer,
  type ExecutionEnvironment,
  inboxRowOf,
  outboxItems,
  outcomeList,
  sourceRecord,
  storedItem,
} from '../support/consumerHarness.js';
import { parkedIds, sendAndReceive } from '../support/parkHarness.js';
import { lambdaContext, sqsEvent } from '../support/sqsEvents.js';
import { describeUnlessDeployedStack, type TestResources, testResources } from '../support/testResources.js';

const describe = describeUnlessDeployedStack(
  'consumers with tables of their own and assertions over the DLQ: a deployed stack has the café tables',
);

class Insufficient extends NonRetryableError {
  override readonly name = 'Insufficient';
}
class Flaky extends RetryableError {
  override readonly name = 'Flaky';
}

const id = z.string().min(1).max(256);
const LedgerEvent = z.discriminatedUnion('type', [
  /** Puts the home with its balance raised; `emit`: one outbox message; `notify`: one side effect. */
  z.object({
    eventId: id,
    type: z.literal('Deposit'),
    accountId: id,
    amount: z.number().int(),
    emit: z.boolean().optional(),
    notify: z.boolean().optional(),
  }),
  /** Puts the home with its balance lowered; dead-lettered (Insufficient) when the balance is short. */
  z.object({ eventId: id, type: z.literal('Withdraw'), accountId: id, amount: z.number().int() }),
  /** Deletes the home. */
  z.object({ eventId: id, type: z.literal('Close'), accountId: id }),
  /** Writes nothing; `notify`: one side effect (the home stays a stub). */
  z.object({ eventId: id, type: z.literal('Ping'), accountId: id, notify: z.boolean().optional() }),
  /** `ADD balance` on the home (an Update). */
  z.object({ eventId: id, type: z.literal('Bonus'), accountId: id, amount: z.number().int() }),
  /** Fails retryably while `flaky` holds its event id. */
  z.object({ eventId: id, type: z.literal('Flaky'), accountId: id, amount: z.number().int() }),
  /** Step n applies on step n − 1 (else it waits: PredecessorNotApplied); an earlier step is a BusinessRuleViolation. */
  z.object({ eventId: id, type: z.literal('Step'), accountId: id, n: z.number().int().min(1) }),
]);
type LedgerEvent = z.infer<typeof LedgerEvent>;
const ledgerTables = { accounts: { partitionKey: 'pk' } } as const satisfies Record<string, TableDefinition>;
const accountKey = (accountId: string) => ({ pk: `account#${accountId}` });
/** Event ids whose `Flaky` event fails for now. */
const flaky = new Set<string>();
/** Every run of the side effect, by event id. */
const notified: string[] = [];
const notify = async (input: { eventId: string }) => {
  await new Promise((resolve) => setTimeout(resolve, 5));
  notified.push(input.eventId);
};

function ledgerConsumer(
  orderingKey: 'accountId' | 'eventId' = 'accountId',
): IdempotentConsumerOptions<LedgerEvent, 'accounts', { notify: typeof notify }> {
  return {
    schema: LedgerEvent,
    idempotencyKey: 'eventId',
    orderingKey,
    tables: ledgerTables,
    inboxHome: { table: 'accounts', key: (event) => accountKey(event.accountId) },
    read: (event) => [{ table: 'accounts', key: accountKey(event.accountId) }],
    decide: (event, state): Decision<'accounts', { notify: typeof notify }> => {
      const account = state.get('accounts', accountKey(event.accountId));
      const balance = Number(account?.balance ?? 0);
      const step = Number(account?.step ?? 0);
      const put = (next: number, nextStep = step) => ({
        Put: { TableName: 'accounts' as const, Item: { ...accountKey(event.accountId), balance: next, step: nextStep } },
      });
      switch (event.type) {
        case 'Deposit':
          return {
            writes: [put(balance + event.amount)],
            ...(event.emit === true
              ? { outbox: [{ body: { type: 'Deposited', eventId: event.eventId, accountId: event.accountId } }] }
              : {}),
            ...(event.notify === true ? { sideEffects: [{ name: 'notify' as const, input: { eventId: event.eventId } }] } : {}),
          };
        case 'Withdraw':
          if (balance < event.amount) throw new Insufficient(`account ${event.accountId} holds ${balance}, less than ${event.amount}`);
          return { writes: [put(balance - event.amount)] };
        case 'Close':
          return { writes: [{ Delete: { TableName: 'accounts', Key: accountKey(event.accountId) } }] };
        case 'Ping':
          return event.notify === true ? { sideEffects: [{ name: 'notify', input: { eventId: event.eventId } }] } : {};
        case 'Bonus':
          return {
            writes: [
              {
                Update: {
                  TableName: 'accounts',
                  Key: accountKey(event.accountId),
                  UpdateExpression: 'ADD balance :a',
                  ExpressionAttributeValues: { ':a': event.amount },
                },
              },
            ],
          };
        case 'Flaky':
          if (flaky.has(event.eventId)) throw new Flaky(`${event.eventId} fails for now`);
          return { writes: [put(balance + event.amount)] };
        case 'Step':
          if (event.n > step + 1) throw new PredecessorNotApplied(`account ${event.accountId} is at step ${step}, ${event.n} waits`);
          if (event.n <= step) throw new BusinessRuleViolation(`account ${event.accountId} is past step ${event.n}`);
          return { writes: [put(balance, event.n)] };
      }
    },
    sideEffects: { notify },
  };
}

/** The idempotency keys marked on an item (its marks map's entries, named `<consumer>#<key>`). */
const markKeys = (item: Item | undefined) =>
  Object.keys((item?._inbox as object | undefined) ?? {})
    .map((entry) => entry.slice(entry.indexOf('#') + 1))
    .sort();
const markOf = (item: Item | undefined, key: string, consumer = 'ledger') =>
  (item?._inbox as Record<string, Item> | undefined)?.[markKey(consumer, key)];
/** `messageId:outcome[:reason]` of each record. */
const outcomesWithReason = (outcomes: readonly OutcomeRecord[]) =>
  outcomes.map((o) => `${o.messageId}:${o.outcome}${o.reason === undefined ? '' : `:${o.reason}`}`);

function helpersOf(envOf: () => TestResources) {
  return {
    rec: (messageId: string, body: Record<string, unknown>, extra: Parameters<typeof sourceRecord>[3] = {}): SQSRecord =>
      sourceRecord(envOf(), messageId, body, extra),
    deliver: async (environment: ExecutionEnvironment, ...records: SQSRecord[]) =>
      (await environment.handler(sqsEvent(...records), lambdaContext())) as SQSBatchResponse,
    account: (accountId: string) => storedItem(envOf(), 'accounts', accountKey(accountId)),
    /** Makes a mark expired, by hand, as time would (and a new version, as any other writer must write). */
    expire: async (accountId: string, key: string) =>
      envOf().documentClient.send(
        new UpdateCommand({
          TableName: envOf().resources.tables.accounts!,
          Key: accountKey(accountId),
          UpdateExpression: 'SET #i.#k.#x = :x, #v = :v',
          ExpressionAttributeNames: { '#i': '_inbox', '#k': markKey('ledger', key), '#x': 'x', '#v': '_version' },
          ExpressionAttributeValues: { ':x': Math.floor(Date.now() / 1000) - 10, ':v': `by-hand-${key}` },
        }),
      ),
  };
}

describe('inboxHome under attack (2): the outbox, and keys reused on another home', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('home-edges2-outbox', ledgerTables, { consumerName: 'ledger' });
  });
  afterAll(() => env.dispose());
  const { rec, deliver, account, expire } = helpersOf(() => env);

  it('a key reused on another home with an outgoing message: dead-lettered IdempotencyConflict with its reason (its outbox item tells the key was applied), once per receive, never spinning', async () => {
    const e1 = consumerEnvironment(env, ledgerConsumer());
    await deliver(e1, rec('o1-m1', { eventId: 'o1-1', type: 'Deposit', accountId: 'O1-a', amount: 5, emit: true }));
    // The same idempotency key on another home, with another payload: no mark of it there, but the
    // first event's outbox item (same key and position) is in the way of its own.
    const e2 = consumerEnvironment(env, ledgerConsumer());
    const second = { eventId: 'o1-1', type: 'Deposit', accountId: 'O1-b', amount: 7, emit: true };
    for (let receive = 1; receive <= 2; receive += 1) await deliver(e2, rec('o1-m2', second, { receiveCount: receive }));
    expect(outcomeList(e1.outcomes)).toEqual(['o1-m1:applied']);
    // Before the fix: NotAttempted at every receive ("the batch did not settle in 52 rounds").
    expect(outcomesWithReason(e2.outcomes)).toEqual(['o1-m2:dead-lettered:IdempotencyConflict', 'o1-m2:dead-lettered:IdempotencyConflict']);
    expect(await account('O1-b')).toBeUndefined();
    const messages = (await outboxItems(env)).filter((item) => String(item.idempotencyKey) === 'o1-1');
    expect(messages.map((item) => JSON.parse(String(item.body)).accountId)).toEqual(['O1-a']);
    // The outbox item names the payload that applied the key.
    expect(typeof messages[0]?.sourcePayloadHash).toBe('string');
    // In the DLQ with its reason (each receive's dead letter: the test delivers the message twice).
    const dead = (await deadLetters(env)).filter((message) => JSON.parse(message.Body ?? '{}').accountId === 'O1-b');
    expect(dead.map((message) => message.MessageAttributes?.['ic.failureReason']?.StringValue)).toEqual([
      'IdempotencyConflict',
      'IdempotencyConflict',
    ]);
  });

  it('a late duplicate after its mark expired and was pruned, its outbox item still stored: a duplicate (the outbox item records the key), not retried for ever', async () => {
    const body = { eventId: 'o2-1', type: 'Deposit', accountId: 'O2', amount: 5, emit: true };
    const e1 = consumerEnvironment(env, ledgerConsumer());
    await deliver(e1, rec('o2-m1', body));
    await expire('O2', 'o2-1');
    // The next write of the home prunes the expired mark (docs: "removed at the item's next write").
    const e2 = consumerEnvironment(env, ledgerConsumer());
    await deliver(e2, rec('o2-m2', { eventId: 'o2-2', type: 'Deposit', accountId: 'O2', amount: 1 }));
    expect(markKeys(await account('O2'))).toEqual(['o2-2']);
    // The outbox item has the same expiry as the mark; DynamoDB's TTL deletes it within days, not at once.
    expect((await outboxItems(env)).filter((item) => item.idempotencyKey === 'o2-1')).toHaveLength(1);
    const e3 = consumerEnvironment(env, ledgerConsumer());
    const started = Date.now();
    await deliver(e3, rec('o2-m1', body, { receiveCount: 2 }));
    const took = Date.now() - started;
    // Before the fix: retried NotAttempted ("did not settle in N rounds"), after a TransactWriteItems per round.
    expect(outcomesWithReason(e3.outcomes), `after ${took} ms`).toEqual(['o2-m1:duplicate']);
    expect((await account('O2'))?.balance).toBe(6);
  });

  it('a key reused on two homes: applied on each across two batches (no record of it outside its home), an IdempotencyConflict within one batch (the engine sees both), as docs/inbox-home.md says', async () => {
    // Across two batches: both applied.
    const e1 = consumerEnvironment(env, ledgerConsumer('eventId'));
    await deliver(e1, rec('r1-m1', { eventId: 'r1-1', type: 'Deposit', accountId: 'R1-a', amount: 5 }));
    await deliver(e1, rec('r1-m2', { eventId: 'r1-1', type: 'Deposit', accountId: 'R1-b', amount: 5 }));
    expect(outcomeList(e1.outcomes)).toEqual(['r1-m1:applied', 'r1-m2:applied']);
    // The same two events in one batch: the second is refused with its reason, never dropped.
    const e2 = consumerEnvironment(env, ledgerConsumer('eventId'));
    const response = await deliver(
      e2,
      rec('r2-m1', { eventId: 'r2-1', type: 'Deposit', accountId: 'R2-a', amount: 5 }),
      rec('r2-m2', { eventId: 'r2-1', type: 'Deposit', accountId: 'R2-b', amount: 5 }),
    );
    expect(response).toEqual({ batchItemFailures: [] });
    expect(outcomesWithReason(e2.outcomes)).toEqual(['r2-m1:applied', 'r2-m2:dead-lettered:IdempotencyConflict']);
    expect([(await account('R2-a'))?.balance, await account('R2-b')]).toEqual([5, undefined]);
  });

  it('an outgoing message with a Delete of the home (a stub): one outbox item, and its redeliveries (cold, warm) duplicates', async () => {
    const e1 = consumerEnvironment(env, ledgerConsumer());
    await deliver(e1, rec('o3-m1', { eventId: 'o3-1', type: 'Deposit', accountId: 'O3', amount: 2, emit: true }));
    await deliver(e1, rec('o3-m2', { eventId: 'o3-2', type: 'Close', accountId: 'O3' }));
    const e2 = consumerEnvironment(env, ledgerConsumer());
    await deliver(e2, rec('o3-m1', { eventId: 'o3-1', type: 'Deposit', accountId: 'O3', amount: 2, emit: true }, { receiveCount: 2 }));
    await deliver(e1, rec('o3-m1', { eventId: 'o3-1', type: 'Deposit', accountId: 'O3', amount: 2, emit: true }, { receiveCount: 3 }));
    expect(outcomeList([...e1.outcomes, ...e2.outcomes])).toEqual(['o3-m1:applied', 'o3-m2:applied', 'o3-m1:duplicate', 'o3-m1:duplicate']);
    expect(await account('O3')).toMatchObject({ _inboxStub: true });
    expect(markKeys(await account('O3'))).toEqual(['o3-1', 'o3-2']);
    expect((await outboxItems(env)).filter((item) => item.idempotencyKey === 'o3-1')).toHaveLength(1);
  });
});

describe('inboxHome under attack (2): provenance (rows written beside the marks)', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('home-edges2-prov', ledgerTables, { consumerName: 'ledger', idempotency: { provenance: true } });
  });
  afterAll(() => env.dispose());
  const { rec, deliver, account, expire } = helpersOf(() => env);

  it('provenance: a late duplicate after its mark was pruned, its row still stored: a duplicate (the row counts until TTL deletes it), not retried for ever', async () => {
    const body = { eventId: 'v1-1', type: 'Deposit', accountId: 'V1', amount: 5 };
    const e1 = consumerEnvironment(env, ledgerConsumer());
    await deliver(e1, rec('v1-m1', body));
    expect(await inboxRowOf(env, 'v1-1')).toMatchObject({ status: 'applied', messageId: 'v1-m1' });
    await expire('V1', 'v1-1');
    const e2 = consumerEnvironment(env, ledgerConsumer());
    await deliver(e2, rec('v1-m2', { eventId: 'v1-2', type: 'Deposit', accountId: 'V1', amount: 1 }));
    expect(markKeys(await account('V1'))).toEqual(['v1-2']);
    expect(await inboxRowOf(env, 'v1-1')).toMatchObject({ status: 'applied' });
    const e3 = consumerEnvironment(env, ledgerConsumer());
    await deliver(e3, rec('v1-m1', body, { receiveCount: 2 }));
    // Before the fix: retried, NotAttempted ("the batch did not settle in N rounds"): the row's
    // failed condition was read as a home item's (no mark in it) and ignored, round after round.
    expect(e3.outcomes.map((o) => [o.outcome, o.errorType])).toEqual([['duplicate', undefined]]);
    expect((await account('V1'))?.balance).toBe(6);
  });

  it('provenance: a key reused on another home, its row stored: dead-lettered IdempotencyConflict at once, as with inbox rows', async () => {
    const e1 = consumerEnvironment(env, ledgerConsumer());
    await deliver(e1, rec('v2-m1', { eventId: 'v2-1', type: 'Deposit', accountId: 'V2-a', amount: 5 }));
    const e2 = consumerEnvironment(env, ledgerConsumer());
    await deliver(e2, rec('v2-m2', { eventId: 'v2-1', type: 'Deposit', accountId: 'V2-b', amount: 5 }));
    // Before the fix: NotAttempted at every receive, never dead-lettered with a reason.
    expect(outcomesWithReason(e2.outcomes)).toEqual(['v2-m2:dead-lettered:IdempotencyConflict']);
    expect(await account('V2-b')).toBeUndefined();
  });

  it('provenance: applied events on a home (a Put, a stub, a re-create) keep their rows with `wrote` and their marks; a cold redelivery is a duplicate', async () => {
    const events = [
      { eventId: 'v3-1', type: 'Deposit', accountId: 'V3', amount: 5 },
      { eventId: 'v3-2', type: 'Close', accountId: 'V3' },
      { eventId: 'v3-3', type: 'Ping', accountId: 'V3' },
      { eventId: 'v3-4', type: 'Deposit', accountId: 'V3', amount: 1 },
    ];
    const e1 = consumerEnvironment(env, ledgerConsumer());
    await deliver(e1, ...events.map((body, i) => rec(`v3-m${i + 1}`, body)));
    const e2 = consumerEnvironment(env, ledgerConsumer());
    await deliver(e2, ...events.map((body, i) => rec(`v3-m${i + 1}`, body, { receiveCount: 2 })));
    expect(e1.outcomes.map((o) => o.outcome)).toEqual(Array(4).fill('applied'));
    expect(e2.outcomes.map((o) => o.outcome)).toEqual(Array(4).fill('duplicate'));
    expect((await account('V3'))?.balance).toBe(1);
    expect(markKeys(await account('V3'))).toEqual(['v3-1', 'v3-2', 'v3-3', 'v3-4']);
    for (const { eventId } of events) expect(await inboxRowOf(env, eventId)).toMatchObject({ status: 'applied' });
  });
});

describe('inboxHome under attack (2): parking out of order', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('home-edges2-park', ledgerTables, {
      consumerName: 'ledger',
      retry: { parkOutOfOrder: true, backoffBaseSeconds: 2 },
    });
  });
  afterAll(() => env.dispose());
  const { deliver, account } = helpersOf(() => env);

  it('a parked successor applied from the park by another environment: its mark on the home; its copies later (warm stale, cold) duplicates', async () => {
    const first = consumerEnvironment(env, ledgerConsumer());
    const second = consumerEnvironment(env, ledgerConsumer());
    const successor = await sendAndReceive(env, JSON.stringify({ eventId: 'p1-2', type: 'Step', accountId: 'P1', n: 2 }));
    expect(await deliver(first, successor)).toEqual({ batchItemFailures: [{ itemIdentifier: successor.messageId }] });
    expect(await parkedIds(env, 'P1')).toEqual([successor.messageId]);
    const predecessor = await sendAndReceive(env, JSON.stringify({ eventId: 'p1-1', type: 'Step', accountId: 'P1', n: 1 }));
    expect(await deliver(second, predecessor)).toEqual({ batchItemFailures: [] });
    await env.sqs.send(new DeleteMessageCommand({ QueueUrl: env.resources.queueUrl, ReceiptHandle: predecessor.receiptHandle }));
    expect(outcomeList(second.outcomes)).toEqual([`${predecessor.messageId}:applied`, `${successor.messageId}:applied`]);
    const stored = await account('P1');
    expect(stored?.step).toBe(2);
    expect(markKeys(stored)).toEqual(['p1-1', 'p1-2']);
    expect(markOf(stored, 'p1-2')).toMatchObject({ m: successor.messageId });
    expect(await parkedIds(env, 'P1')).toEqual([]);
    // Its copies: in the environment that parked it (its memory of the home predates both), and a cold one.
    const late = { ...successor, attributes: { ...successor.attributes, ApproximateReceiveCount: '2' } };
    await deliver(first, late);
    await deliver(consumerEnvironment(env, ledgerConsumer()), late);
    expect(outcomeList(first.outcomes).slice(1)).toEqual([`${successor.messageId}:duplicate`]);
    // A third step behind it, in the stale environment: it sees step 2.
    await deliver(first, { ...late, messageId: 'p1-m3', body: JSON.stringify({ eventId: 'p1-3', type: 'Step', accountId: 'P1', n: 3 }) });
    expect((await account('P1'))?.step).toBe(3);
    expect(first.outcomes.filter((o) => o.outcome === 'applied').map((o) => o.messageId)).toEqual(['p1-m3']);
  });

  it('a successor parked, then its predecessor and a copy of the successor in one batch: the successor applied once, its park entry gone', async () => {
    const e1 = consumerEnvironment(env, ledgerConsumer());
    const successor = await sendAndReceive(env, JSON.stringify({ eventId: 'p2-2', type: 'Step', accountId: 'P2', n: 2 }));
    await deliver(e1, successor);
    expect(await parkedIds(env, 'P2')).toEqual([successor.messageId]);
    const predecessor = await sendAndReceive(env, JSON.stringify({ eventId: 'p2-1', type: 'Step', accountId: 'P2', n: 1 }));
    const copy = { ...successor, messageId: 'p2-copy' };
    const e2 = consumerEnvironment(env, ledgerConsumer());
    expect(await deliver(e2, predecessor, copy)).toEqual({ batchItemFailures: [] });
    const all = [...e1.outcomes, ...e2.outcomes];
    expect(all.filter((o) => o.idempotencyKey === 'p2-2' && o.outcome === 'applied')).toHaveLength(1);
    expect(all.filter((o) => o.outcome === 'dead-lettered')).toEqual([]);
    expect((await account('P2'))?.step).toBe(2);
    expect(markKeys(await account('P2'))).toEqual(['p2-1', 'p2-2']);
    expect(await parkedIds(env, 'P2')).toEqual([]);
  });
});

describe('inboxHome under attack (2): FIFO group stops, a dead letter, and the DLQ dry run', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('home-edges2-fifo', ledgerTables, { consumerName: 'ledger', queue: { fifo: true } });
  });
  afterAll(() => env.dispose());
  const { deliver, account } = helpersOf(() => env);
  const rec = (messageId: string, body: Record<string, unknown>, extra: Parameters<typeof sourceRecord>[3] = {}): SQSRecord =>
    sourceRecord(env, messageId, body, { groupId: 'G1', ...extra });
  const dryRun = () => dryRunConsumer(env, ledgerConsumer(), 'ledger');

  it('a dead letter then a retryable stop in one group: successors wait, the dry run sees the mark (would fail, would apply, then a duplicate), the redrive applies once', async () => {
    const events = [
      { eventId: 'g1-1', type: 'Deposit', accountId: 'G1', amount: 1 },
      { eventId: 'g1-2', type: 'Withdraw', accountId: 'G1', amount: 5 },
      { eventId: 'g1-3', type: 'Flaky', accountId: 'G1', amount: 10 },
      { eventId: 'g1-4', type: 'Bonus', accountId: 'G1', amount: 100 },
    ];
    flaky.add('g1-3');
    const e1 = consumerEnvironment(env, ledgerConsumer());
    const response = await deliver(e1, ...events.map((body, i) => rec(`g1-m${i + 1}`, body)));
    expect(response.batchItemFailures.map((f) => f.itemIdentifier)).toEqual(['g1-m3', 'g1-m4']);
    expect(outcomeList(e1.outcomes)).toEqual(['g1-m1:applied', 'g1-m2:dead-lettered', 'g1-m3:retried', 'g1-m4:retried']);
    expect(markOf(await account('G1'), 'g1-2')).toMatchObject({ s: 'dead-lettered', r: 'Insufficient', m: 'g1-m2' });
    const [dead] = await deadLetters(env);
    expect(JSON.parse(dead?.Body ?? '{}')).toMatchObject({ eventId: 'g1-2' });
    const message = { messageId: dead!.MessageId!, body: dead!.Body!, redriveOf: 'g1-m2', since: { at: new Date(), what: 'failedAt' } };
    expect(await decideDeadLetter(message, dryRun(), new Date())).toMatchObject({ outcome: 'would-fail', reason: 'Insufficient' });
    // The group comes back (g1-2's redelivery too, as SQS may), its stop gone: 1 + 10 + 100.
    flaky.delete('g1-3');
    const e2 = consumerEnvironment(env, ledgerConsumer());
    await deliver(
      e2,
      rec('g1-m2', events[1]!, { receiveCount: 2 }),
      rec('g1-m3', events[2]!, { receiveCount: 2 }),
      rec('g1-m4', events[3]!, { receiveCount: 2 }),
    );
    expect(outcomeList(e2.outcomes)).toEqual(['g1-m2:dead-lettered', 'g1-m3:applied', 'g1-m4:applied']);
    expect((await account('G1'))?.balance).toBe(111);
    expect(await decideDeadLetter(message, dryRun(), new Date())).toMatchObject({ outcome: 'would-apply' });
    // A producer's copy (no redrive mark) is a dead letter's duplicate, per the dry run and per the consumer.
    expect(await decideDeadLetter({ ...message, redriveOf: undefined }, dryRun(), new Date())).toMatchObject({ outcome: 'duplicate' });
    // The redrive, in an environment that remembers the home with the dead letter's mark; then a second redrive.
    await deliver(e2, rec('g1-m2-redrive', events[1]!, { stringAttributes: { 'ic.redrive': 'g1-m2' } }));
    await deliver(
      consumerEnvironment(env, ledgerConsumer()),
      rec('g1-m2-redrive-2', events[1]!, { stringAttributes: { 'ic.redrive': 'g1-m2' } }),
    );
    expect(outcomeList(e2.outcomes).slice(3)).toEqual(['g1-m2-redrive:applied']);
    expect((await account('G1'))?.balance).toBe(106);
    expect(markOf(await account('G1'), 'g1-2')).toMatchObject({ m: 'g1-m2-redrive' });
    const applied = await decideDeadLetter(message, dryRun(), new Date());
    expect(applied).toMatchObject({ outcome: 'duplicate', reason: 'already applied' });
    // The record is the mark on the home: the dry run names it, and its expiry's removal, as a mark's.
    expect(applied.detail).toContain('its inbox mark keeps the key until');
    const later = new Date(Date.now() + 40 * 86_400_000);
    expect((await decideDeadLetter(message, dryRun(), later)).detail).toContain('the next write of its home item removes it');
  });
});

describe('inboxHome under attack (2): side effects on stubs, stale memories of a re-created home', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('home-edges2-more', ledgerTables, { consumerName: 'ledger' });
  });
  afterAll(() => env.dispose());
  const { rec, deliver, account } = helpersOf(() => env);

  it('a side effect of an event whose home stays a stub: run once across a warm, a stale and a cold redelivery and a racing copy', async () => {
    const ping = { eventId: 's1-1', type: 'Ping', accountId: 'S1', notify: true };
    const stale = consumerEnvironment(env, ledgerConsumer());
    // `stale` remembers S1 as absent (its first event), before the stub is written by another environment.
    await deliver(stale, rec('s1-m0', { eventId: 's1-0', type: 'Ping', accountId: 'S1-other' }));
    const e1 = consumerEnvironment(env, ledgerConsumer());
    await deliver(e1, rec('s1-m1', ping));
    expect(await account('S1')).toMatchObject({ _inboxStub: true });
    await deliver(e1, rec('s1-m1', ping, { receiveCount: 2 }));
    await deliver(stale, rec('s1-m1', ping, { receiveCount: 3 }));
    const [a, b] = [consumerEnvironment(env, ledgerConsumer()), consumerEnvironment(env, ledgerConsumer())];
    await Promise.all([deliver(a, rec('s1-m1', ping, { receiveCount: 4 })), deliver(b, rec('s1-m1', ping, { receiveCount: 5 }))]);
    expect(notified.filter((n) => n === 's1-1')).toEqual(['s1-1']);
    const all = [...e1.outcomes, ...stale.outcomes, ...a.outcomes, ...b.outcomes].filter((o) => o.messageId === 's1-m1');
    expect(all.filter((o) => o.outcome === 'applied')).toHaveLength(1);
    expect(all.filter((o) => o.outcome === 'dead-lettered')).toEqual([]);
  });

  it('a side effect on a home deleted and re-created by other events in another environment: a stale copy is a duplicate, its effect not run again', async () => {
    const e1 = consumerEnvironment(env, ledgerConsumer());
    const deposit = { eventId: 's2-1', type: 'Deposit', accountId: 'S2', amount: 3, notify: true };
    await deliver(e1, rec('s2-m1', deposit));
    const e2 = consumerEnvironment(env, ledgerConsumer());
    await deliver(e2, rec('s2-m2', { eventId: 's2-2', type: 'Close', accountId: 'S2' }));
    await deliver(e2, rec('s2-m3', { eventId: 's2-3', type: 'Deposit', accountId: 'S2', amount: 10, notify: true }));
    // e1 remembers S2 before the Close: the copies of s2-1 and s2-3 reach it, then a new Bonus.
    await deliver(e1, rec('s2-m1', deposit, { receiveCount: 2 }));
    await deliver(e1, rec('s2-m3', { eventId: 's2-3', type: 'Deposit', accountId: 'S2', amount: 10, notify: true }, { receiveCount: 2 }));
    await deliver(e1, rec('s2-m4', { eventId: 's2-4', type: 'Bonus', accountId: 'S2', amount: 100 }));
    expect(outcomeList(e1.outcomes)).toEqual(['s2-m1:applied', 's2-m1:duplicate', 's2-m3:duplicate', 's2-m4:applied']);
    expect(notified.filter((n) => n.startsWith('s2-')).sort()).toEqual(['s2-1', 's2-3']);
    expect((await account('S2'))?.balance).toBe(110);
    expect(markKeys(await account('S2'))).toEqual(['s2-1', 's2-2', 's2-3', 's2-4']);
  });

  it('an Update (Bonus) decided on a stale memory of a home that another environment deleted (a stub) then re-created: applied once on the stored item', async () => {
    const e1 = consumerEnvironment(env, ledgerConsumer());
    await deliver(e1, rec('u1-m1', { eventId: 'u1-1', type: 'Deposit', accountId: 'U1', amount: 1 }));
    await deliver(e1, rec('u1-m2', { eventId: 'u1-2', type: 'Bonus', accountId: 'U1', amount: 2 }));
    await deliver(e1, rec('u1-m3', { eventId: 'u1-3', type: 'Ping', accountId: 'U1' }));
    const e2 = consumerEnvironment(env, ledgerConsumer());
    await deliver(e2, rec('u1-m4', { eventId: 'u1-4', type: 'Close', accountId: 'U1' }));
    await deliver(e1, rec('u1-m5', { eventId: 'u1-5', type: 'Bonus', accountId: 'U1', amount: 20 }));
    await deliver(e2, rec('u1-m6', { eventId: 'u1-6', type: 'Deposit', accountId: 'U1', amount: 300 }));
    await deliver(e1, rec('u1-m7', { eventId: 'u1-7', type: 'Bonus', accountId: 'U1', amount: 4000 }));
    await deliver(e1, rec('u1-m4', { eventId: 'u1-4', type: 'Close', accountId: 'U1' }, { receiveCount: 2 }));
    // Close leaves a stub; Bonus 20 on the stub is an account of 20; Deposit 300 → 320; Bonus 4000 → 4320.
    expect((await account('U1'))?.balance).toBe(4320);
    expect(outcomeList([...e1.outcomes, ...e2.outcomes]).filter((o) => o.endsWith(':applied'))).toHaveLength(7);
    expect(outcomeList(e1.outcomes).at(-1)).toBe('u1-m4:duplicate');
    expect(markKeys(await account('U1'))).toEqual(['u1-1', 'u1-2', 'u1-3', 'u1-4', 'u1-5', 'u1-6', 'u1-7']);
  });
});
