/**
 * Attacks (3) on exactly-once under `inboxHome`: the transition with `inboxHome.rowsUntil` (a
 * deploy overlap of an environment with inbox rows and one with inboxHome, dead letters and
 * redrives across the switch, FIFO groups across it, turning it off with stubs), other event
 * sources with homes (Kafka, Kinesis, DynamoDB Streams), large batches whose rows, marks and
 * outbox items exceed one transaction, side effects of several events of one home behind user
 * conditions, and `inboxHome.key` functions that throw or name odd keys. Each consumer is built
 * with the public API (`createIdempotentConsumer`) against the real DynamoDB Local and SQS
 * server; "an environment" is a handler built on its own, with its own item cache. Every test
 * asserts what exactly once means for it; the six faults it found are fixed, and their tests say
 * what was observed before the fix.
 */
import { DeleteMessageCommand } from '@aws-sdk/client-sqs';
import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import {
  type Decision,
  type IdempotentConsumerOptions,
  type Item,
  NonRetryableError,
  type OutcomeRecord,
  PredecessorNotApplied,
  RetryableError,
  type TableDefinition,
} from 'idempotent-consumer';
import type { KafkaBatchResponse } from 'idempotent-consumer/kafka';
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
  inboxRows,
  outboxItems,
  outcomeList,
  sourceRecord,
  storedItem,
} from '../support/consumerHarness.js';
import { kafkaRecord, mskEvent } from '../support/kafkaEvents.js';
import { parkedIds, sendAndReceive } from '../support/parkHarness.js';
import { lambdaContext, sqsEvent } from '../support/sqsEvents.js';
import { dynamoDbRecord, dynamoDbStreamEvent, kinesisEvent, kinesisRecord } from '../support/streamEvents.js';
import { describeUnlessDeployedStack, type TestResources, testResources } from '../support/testResources.js';

const describe = describeUnlessDeployedStack(
  'consumers with tables of their own and assertions over the DLQ: a deployed stack has the café tables',
);

class Insufficient extends NonRetryableError {
  override readonly name = 'Insufficient';
}
class AlreadyOpen extends NonRetryableError {
  override readonly name = 'AlreadyOpen';
}
class Flaky extends RetryableError {
  override readonly name = 'Flaky';
}

const id = z.string().min(1).max(256);
const LedgerEvent = z.discriminatedUnion('type', [
  /** Puts the home with its balance raised; `emit`: one outbox message. */
  z.object({
    eventId: id,
    type: z.literal('Deposit'),
    accountId: id,
    amount: z.number().int(),
    emit: z.boolean().optional(),
    /** Carried in the outgoing message (to make it large). */
    pad: z.string().optional(),
  }),
  /** `ADD balance` on the home (an Update: the marks stay). */
  z.object({ eventId: id, type: z.literal('Bonus'), accountId: id, amount: z.number().int() }),
  /** `ADD balance -amount` on the home; dead-lettered (Insufficient) when the balance is short. */
  z.object({ eventId: id, type: z.literal('Charge'), accountId: id, amount: z.number().int() }),
  /** Deletes the home. */
  z.object({ eventId: id, type: z.literal('Close'), accountId: id }),
  /** Opens the account (balance 0); an account that exists is refused (AlreadyOpen). */
  z.object({ eventId: id, type: z.literal('Open'), accountId: id }),
  /** Writes nothing; `notify`: one side effect (with a chosen key when `effectKey` is given). */
  z.object({ eventId: id, type: z.literal('Ping'), accountId: id, notify: z.boolean().optional(), effectKey: id.optional() }),
  /** A blind Put of an audit item with `attribute_not_exists(pk)` (a user condition), and one side effect. */
  z.object({ eventId: id, type: z.literal('Audit'), accountId: id }),
  /** Step n applies on step n − 1 (else it waits: PredecessorNotApplied). */
  z.object({ eventId: id, type: z.literal('Step'), accountId: id, n: z.number().int().min(1) }),
  /** Fails retryably while `flaky` holds its event id; else a Bonus. */
  z.object({ eventId: id, type: z.literal('Flaky'), accountId: id, amount: z.number().int() }),
]);
type LedgerEvent = z.infer<typeof LedgerEvent>;
const ledgerTables = { accounts: { partitionKey: 'pk' }, ledgers: { partitionKey: 'pk' } } as const satisfies Record<
  string,
  TableDefinition
>;
type Tables = keyof typeof ledgerTables;
const accountKey = (accountId: string) => ({ pk: `account#${accountId}` });
const flaky = new Set<string>();
/** Every run of the side effect, by its input's tag. */
const notified: string[] = [];
const notify = async (input: { tag: string }) => {
  await new Promise((resolve) => setTimeout(resolve, 3));
  notified.push(input.tag);
};
type Effects = { notify: typeof notify };

interface ConsumerShape {
  /** `undefined`: inbox rows (no inboxHome); else inboxHome with this `rowsUntil` (or none). */
  readonly home?: { readonly rowsUntil?: Date | string; readonly marks?: boolean } | undefined;
  readonly orderingKey?: 'accountId' | 'eventId';
  /** The home's key function (defaults to the account). */
  readonly homeKey?: (event: LedgerEvent) => Item;
  /** `read` also names this item (another table, maybe the same key). */
  readonly alsoRead?: (event: LedgerEvent) => { table: Tables; key: Item } | undefined;
}

function ledgerConsumer(shape: ConsumerShape = {}): IdempotentConsumerOptions<LedgerEvent, Tables, Effects> {
  const { home } = shape;
  return {
    schema: LedgerEvent,
    idempotencyKey: 'eventId',
    orderingKey: shape.orderingKey ?? 'accountId',
    tables: ledgerTables,
    ...(home === undefined
      ? {}
      : {
          inboxHome: { table: 'accounts' as const, key: shape.homeKey ?? ((event: LedgerEvent) => accountKey(event.accountId)), ...home },
        }),
    read: (event) => {
      const also = shape.alsoRead?.(event);
      return [{ table: 'accounts', key: accountKey(event.accountId) }, ...(also === undefined ? [] : [also])];
    },
    decide: (event, state): Decision<Tables, Effects> => {
      const account = state.get('accounts', accountKey(event.accountId));
      const balance = Number(account?.balance ?? 0);
      const add = (amount: number) => ({
        Update: {
          TableName: 'accounts' as const,
          Key: accountKey(event.accountId),
          UpdateExpression: 'ADD balance :a',
          ExpressionAttributeValues: { ':a': amount },
        },
      });
      switch (event.type) {
        case 'Deposit':
          return {
            writes: [{ Put: { TableName: 'accounts', Item: { ...accountKey(event.accountId), balance: balance + event.amount } } }],
            ...(event.emit === true
              ? {
                  outbox: [{ body: { type: 'Deposited', eventId: event.eventId, ...(event.pad === undefined ? {} : { pad: event.pad }) } }],
                }
              : {}),
          };
        case 'Bonus':
          return { writes: [add(event.amount)] };
        case 'Charge':
          if (balance < event.amount) throw new Insufficient(`account ${event.accountId} holds ${balance}, less than ${event.amount}`);
          return { writes: [add(-event.amount)] };
        case 'Close':
          return { writes: [{ Delete: { TableName: 'accounts', Key: accountKey(event.accountId) } }] };
        case 'Open':
          if (account !== undefined)
            throw new AlreadyOpen(`account ${event.accountId} is open (${JSON.stringify(Object.keys(account).sort())})`);
          return { writes: [{ Put: { TableName: 'accounts', Item: { ...accountKey(event.accountId), balance: 0, open: true } } }] };
        case 'Ping':
          return event.notify === true
            ? {
                sideEffects: [
                  {
                    name: 'notify',
                    input: { tag: event.effectKey ?? event.eventId },
                    ...(event.effectKey === undefined ? {} : { key: event.effectKey }),
                  },
                ],
              }
            : {};
        case 'Audit':
          return {
            writes: [
              {
                Put: {
                  TableName: 'ledgers',
                  Item: { pk: `audit#${event.eventId}`, accountId: event.accountId },
                  ConditionExpression: 'attribute_not_exists(pk)',
                },
              },
            ],
            sideEffects: [{ name: 'notify', input: { tag: event.eventId } }],
          };
        case 'Step': {
          const step = Number(account?.step ?? 0);
          if (event.n > step + 1) throw new PredecessorNotApplied(`account ${event.accountId} is at step ${step}, ${event.n} waits`);
          if (event.n <= step) throw new Insufficient(`account ${event.accountId} is past step ${event.n}`);
          return { writes: [{ Put: { TableName: 'accounts', Item: { ...accountKey(event.accountId), balance, step: event.n } } }] };
        }
        case 'Flaky':
          if (flaky.has(event.eventId)) throw new Flaky(`${event.eventId} fails for now`);
          return { writes: [add(event.amount)] };
      }
    },
    sideEffects: { notify },
  };
}

const day = 86_400_000;
const ahead = () => ({ rowsUntil: new Date(Date.now() + 30 * day) });
/** The idempotency keys marked on an item. */
const markKeys = (item: Item | undefined) =>
  Object.keys((item?._inbox as object | undefined) ?? {})
    .map((entry) => entry.slice(entry.indexOf('#') + 1))
    .sort();
const markOf = (item: Item | undefined, key: string, consumer = 'ledger') =>
  (item?._inbox as Record<string, Item> | undefined)?.[markKey(consumer, key)];
const outcomesWithReason = (outcomes: readonly OutcomeRecord[]) =>
  outcomes.map((o) => `${o.messageId}:${o.outcome}${o.reason === undefined ? '' : `:${o.reason}`}`);

function helpersOf(envOf: () => TestResources) {
  return {
    rec: (messageId: string, body: Record<string, unknown>, extra: Parameters<typeof sourceRecord>[3] = {}): SQSRecord =>
      sourceRecord(envOf(), messageId, body, extra),
    deliver: async (environment: ExecutionEnvironment, ...records: SQSRecord[]) =>
      (await environment.handler(sqsEvent(...records), lambdaContext())) as SQSBatchResponse,
    account: (accountId: string) => storedItem(envOf(), 'accounts', accountKey(accountId)),
  };
}

describe('inboxHome under attack (3): the transition (rowsUntil), a deploy overlap, turning it off', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('home-edges3-switch', ledgerTables, { consumerName: 'ledger' });
  });
  afterAll(() => env.dispose());
  const { rec, deliver, account } = helpersOf(() => env);

  it('deploy overlap (turning it on): a Bonus (ADD) applied by the old environment (rows) on a stub the new one left is seen by the new one (an item that holds more than a stub is no stub)', async () => {
    const oldEnv = consumerEnvironment(env, ledgerConsumer({ home: undefined }));
    const newEnv = consumerEnvironment(env, ledgerConsumer({ home: ahead() }));
    await deliver(oldEnv, rec('ov1-m1', { eventId: 'ov1-1', type: 'Deposit', accountId: 'OV1', amount: 10 }));
    // The new version closes the account: its home becomes a stub (marks, `_inboxStub: true`).
    await deliver(newEnv, rec('ov1-m2', { eventId: 'ov1-2', type: 'Close', accountId: 'OV1' }));
    expect(await account('OV1')).toMatchObject({ _inboxStub: true });
    // An invocation of the old version, still running during the deploy: ADD 100 on the item it sees.
    await deliver(oldEnv, rec('ov1-m3', { eventId: 'ov1-3', type: 'Bonus', accountId: 'OV1', amount: 100 }));
    // Then the new version: a deposit of 5 on the account (100 after the Bonus).
    await deliver(
      consumerEnvironment(env, ledgerConsumer({ home: ahead() })),
      rec('ov1-m4', { eventId: 'ov1-4', type: 'Deposit', accountId: 'OV1', amount: 5 }),
    );
    expect(outcomeList([...oldEnv.outcomes, ...newEnv.outcomes])).toEqual(['ov1-m1:applied', 'ov1-m3:applied', 'ov1-m2:applied']);
    // Exactly once: Close, Bonus 100, Deposit 5 → 105. Before the fix: the Bonus left `_inboxStub: true`
    // on the item (the old version knows nothing of stubs), so the new version saw the account
    // absent and put 5: the Bonus's effect is lost.
    const stored = await account('OV1');
    expect({ balance: stored?.balance, stub: stored?._inboxStub }).toEqual({ balance: 105, stub: undefined });
  });

  it('another writer updates a stub home with UpdateItem (as docs/inbox-home.md advises other writers): its attributes are seen by decide, not overwritten', async () => {
    const marks = consumerEnvironment(env, ledgerConsumer({ home: {} }));
    await deliver(marks, rec('ow1-m1', { eventId: 'ow1-1', type: 'Ping', accountId: 'OW1' }));
    expect(await account('OW1')).toMatchObject({ _inboxStub: true });
    // Code outside the consumer credits the account with an UpdateItem (and a new version, as any other writer must).
    await env.documentClient.send(
      new UpdateCommand({
        TableName: env.resources.tables.accounts!,
        Key: accountKey('OW1'),
        UpdateExpression: 'ADD balance :a SET #v = :v',
        ExpressionAttributeNames: { '#v': '_version' },
        ExpressionAttributeValues: { ':a': 100, ':v': 'by-another-writer' },
      }),
    );
    await deliver(
      consumerEnvironment(env, ledgerConsumer({ home: {} })),
      rec('ow1-m2', { eventId: 'ow1-2', type: 'Deposit', accountId: 'OW1', amount: 5 }),
    );
    // Before the fix: 5 (decide saw a stub, absent: the credit of 100 is lost).
    expect((await account('OW1'))?.balance).toBe(105);
  });

  it('turned off as docs/inbox-home.md says (rowsUntil ahead, then marks: false): stubs stay absent to decide, the redeliveries are duplicates, new events applied', async () => {
    const both = consumerEnvironment(env, ledgerConsumer({ home: ahead() }));
    await deliver(
      both,
      rec('off1-m1', { eventId: 'off1-1', type: 'Open', accountId: 'OFF1' }),
      rec('off1-m2', { eventId: 'off1-2', type: 'Close', accountId: 'OFF1' }),
      // A dead letter whose home was absent: a stub too (written with its marker).
      rec('off1-m3', { eventId: 'off1-3', type: 'Charge', accountId: 'OFF2', amount: 5 }),
    );
    expect(outcomesWithReason(both.outcomes)).toEqual(['off1-m1:applied', 'off1-m2:applied', 'off1-m3:dead-lettered:Insufficient']);
    expect([(await account('OFF1'))?._inboxStub, (await account('OFF2'))?._inboxStub]).toEqual([true, true]);
    // marks: false (one inbox window later): rows alone are written; the marks and stubs are still read and hidden.
    const off = consumerEnvironment(env, ledgerConsumer({ home: { marks: false } }));
    await deliver(
      off,
      rec('off1-m1', { eventId: 'off1-1', type: 'Open', accountId: 'OFF1' }, { receiveCount: 2 }),
      rec('off1-m2', { eventId: 'off1-2', type: 'Close', accountId: 'OFF1' }, { receiveCount: 2 }),
    );
    expect(outcomeList(off.outcomes)).toEqual(['off1-m1:duplicate', 'off1-m2:duplicate']);
    // New events: the closed account is re-opened, the never-opened one is opened; no mark is written.
    await deliver(
      off,
      rec('off1-m4', { eventId: 'off1-4', type: 'Open', accountId: 'OFF1' }),
      rec('off1-m5', { eventId: 'off1-5', type: 'Open', accountId: 'OFF2' }),
    );
    // Removing inboxHome instead showed the stubs to decide as accounts: both were dead-lettered AlreadyOpen.
    expect(outcomesWithReason(off.outcomes.slice(2))).toEqual(['off1-m4:applied', 'off1-m5:applied']);
    expect(await inboxRowOf(env, 'off1-4')).toMatchObject({ status: 'applied', messageId: 'off1-m4' });
    // The DLQ dry run of that consumer reads the row as the engine does.
    const open4 = { messageId: 'dlq-off1-4', body: JSON.stringify({ eventId: 'off1-4', type: 'Open', accountId: 'OFF1' }) };
    expect(
      await decideDeadLetter(
        { ...open4, redriveOf: 'off1-m4', since: { at: new Date(), what: 'failedAt' as const } },
        dryRunConsumer(env, ledgerConsumer({ home: { marks: false } }), 'ledger'),
        new Date(),
      ),
    ).toMatchObject({ outcome: 'duplicate', reason: 'already applied' });
    expect(Object.keys(((await account('OFF2'))?._inbox as object | undefined) ?? {})).not.toContain('ledger#off1-5');
    // A consumer with rows only (inboxHome removed) finds the new events' rows.
    const rowsOnly = consumerEnvironment(env, ledgerConsumer({ home: undefined }));
    await deliver(rowsOnly, rec('off1-m5', { eventId: 'off1-5', type: 'Open', accountId: 'OFF2' }, { receiveCount: 2 }));
    expect(outcomeList(rowsOnly.outcomes)).toEqual(['off1-m5:duplicate']);
  });

  it('a deploy overlap racing on the same messages (an environment with rows and one with inboxHome + rowsUntil, at once, twice): each event applied once, its side effect run once', async () => {
    const bodies = [
      { eventId: 'ov2-1', type: 'Deposit', accountId: 'OV2', amount: 1 },
      { eventId: 'ov2-2', type: 'Ping', accountId: 'OV2', notify: true },
      { eventId: 'ov2-3', type: 'Bonus', accountId: 'OV2', amount: 2 },
      { eventId: 'ov2-4', type: 'Deposit', accountId: 'OV2b', amount: 4 },
      { eventId: 'ov2-5', type: 'Ping', accountId: 'OV2c', notify: true },
      { eventId: 'ov2-6', type: 'Bonus', accountId: 'OV2', amount: 8 },
    ];
    const records = (receiveCount: number) => bodies.map((body, i) => rec(`ov2-m${i + 1}`, body, { receiveCount }));
    const all: OutcomeRecord[] = [];
    for (let round = 1; round <= 2; round += 1) {
      const [rows, marks] = [
        consumerEnvironment(env, ledgerConsumer({ home: undefined })),
        consumerEnvironment(env, ledgerConsumer({ home: ahead() })),
      ];
      const responses = await Promise.all([deliver(rows, ...records(round)), deliver(marks, ...records(round).reverse())]);
      all.push(...rows.outcomes, ...marks.outcomes);
      // What either reported failed comes back (to either version).
      const failed = responses.flatMap((r) => r.batchItemFailures.map((f) => f.itemIdentifier));
      for (const [i, messageId] of [...new Set(failed)].entries()) {
        const retry = consumerEnvironment(env, ledgerConsumer(i % 2 === 0 ? { home: ahead() } : { home: undefined }));
        await deliver(retry, ...records(5).filter((r) => r.messageId === messageId));
        all.push(...retry.outcomes);
      }
    }
    const applied = all
      .filter((o) => o.outcome === 'applied')
      .map((o) => o.messageId)
      .sort();
    expect(applied).toEqual(bodies.map((_, i) => `ov2-m${i + 1}`).sort());
    expect(all.filter((o) => o.outcome === 'dead-lettered')).toEqual([]);
    expect((await account('OV2'))?.balance).toBe(11);
    expect((await account('OV2b'))?.balance).toBe(4);
    expect(notified.filter((n) => n === 'ov2-2' || n === 'ov2-5').sort()).toEqual(['ov2-2', 'ov2-5']);
    for (const { eventId } of bodies) expect(await inboxRowOf(env, eventId), eventId).toMatchObject({ status: 'applied' });
  });

  it('a dead letter under rows redriven under inboxHome + rowsUntil (twice), and the reverse with the dead letter mark kept by an Update: each applied once', async () => {
    // Under rows: dead-lettered (row only); its redrive under inboxHome; a second redrive, a producer's copy.
    const rows = consumerEnvironment(env, ledgerConsumer({ home: undefined }));
    const charge = { eventId: 'rd1-1', type: 'Charge', accountId: 'RD1', amount: 5 };
    await deliver(rows, rec('rd1-m1', charge));
    await deliver(rows, rec('rd1-m0', { eventId: 'rd1-0', type: 'Deposit', accountId: 'RD1', amount: 7 }));
    const marks = consumerEnvironment(env, ledgerConsumer({ home: ahead() }));
    await deliver(marks, rec('rd1-r1', charge, { stringAttributes: { 'ic.redrive': 'rd1-m1' } }));
    await deliver(marks, rec('rd1-r2', charge, { stringAttributes: { 'ic.redrive': 'rd1-m1' } }));
    await deliver(
      consumerEnvironment(env, ledgerConsumer({ home: undefined })),
      rec('rd1-r3', charge, { stringAttributes: { 'ic.redrive': 'rd1-m1' } }),
    );
    await deliver(marks, rec('rd1-copy', charge));
    expect(outcomeList([...rows.outcomes, ...marks.outcomes])).toEqual([
      'rd1-m1:dead-lettered',
      'rd1-m0:applied',
      'rd1-r1:applied',
      'rd1-r2:duplicate',
      'rd1-copy:duplicate',
    ]);
    expect((await account('RD1'))?.balance).toBe(2);

    // Under inboxHome: dead-lettered (row and mark); redriven under rows (an Update keeps the dead
    // letter's mark); the redrive's copy, and a second redrive, reach inboxHome environments (warm, cold).
    const warm = consumerEnvironment(env, ledgerConsumer({ home: ahead() }));
    const charge2 = { eventId: 'rd2-1', type: 'Charge', accountId: 'RD2', amount: 5 };
    await deliver(warm, rec('rd2-m0', { eventId: 'rd2-0', type: 'Deposit', accountId: 'RD2', amount: 1 }), rec('rd2-m1', charge2));
    await deliver(rows, rec('rd2-m2', { eventId: 'rd2-2', type: 'Bonus', accountId: 'RD2', amount: 10 }));
    await deliver(rows, rec('rd2-r1', charge2, { stringAttributes: { 'ic.redrive': 'rd2-m1' } }));
    expect(markOf(await account('RD2'), 'rd2-1')).toMatchObject({ s: 'dead-lettered' });
    await deliver(warm, rec('rd2-r1', charge2, { stringAttributes: { 'ic.redrive': 'rd2-m1' }, receiveCount: 2 }));
    await deliver(
      consumerEnvironment(env, ledgerConsumer({ home: ahead() })),
      rec('rd2-r2', charge2, { stringAttributes: { 'ic.redrive': 'rd2-m1' } }),
    );
    expect(outcomeList(warm.outcomes)).toEqual(['rd2-m0:applied', 'rd2-m1:dead-lettered', 'rd2-r1:duplicate']);
    expect(outcomeList(rows.outcomes).slice(-2)).toEqual(['rd2-m2:applied', 'rd2-r1:applied']);
    // 1 + 10 − 5, once.
    expect((await account('RD2'))?.balance).toBe(6);
  });

  it('a dead letter (mark and row) redriven by the environment with rows (an Update keeps the mark): the original redelivered to inboxHome + rowsUntil is a duplicate, and the dry run says so (an applied row wins over a dead letter mark)', async () => {
    const marks = consumerEnvironment(env, ledgerConsumer({ home: ahead() }));
    const charge = { eventId: 'dm1-1', type: 'Charge', accountId: 'DM1', amount: 5 };
    await deliver(marks, rec('dm1-m0', { eventId: 'dm1-0', type: 'Deposit', accountId: 'DM1', amount: 1 }), rec('dm1-m1', charge));
    expect(outcomeList(marks.outcomes)).toEqual(['dm1-m0:applied', 'dm1-m1:dead-lettered']);
    const rows = consumerEnvironment(env, ledgerConsumer({ home: undefined }));
    await deliver(rows, rec('dm1-m2', { eventId: 'dm1-2', type: 'Bonus', accountId: 'DM1', amount: 10 }));
    await deliver(rows, rec('dm1-r1', charge, { stringAttributes: { 'ic.redrive': 'dm1-m1' } }));
    expect(outcomeList(rows.outcomes)).toEqual(['dm1-m2:applied', 'dm1-r1:applied']);
    expect(await inboxRowOf(env, 'dm1-1')).toMatchObject({ status: 'applied', messageId: 'dm1-r1' });
    expect(markOf(await account('DM1'), 'dm1-1')).toMatchObject({ s: 'dead-lettered', m: 'dm1-m1' });
    // The same two records under rows alone: a redelivery of the original is a duplicate.
    const rowsCheck = consumerEnvironment(env, ledgerConsumer({ home: undefined }));
    await deliver(rowsCheck, rec('dm1-m1', charge, { receiveCount: 2 }));
    expect(outcomeList(rowsCheck.outcomes)).toEqual(['dm1-m1:duplicate']);
    // Under inboxHome + rowsUntil (the row is read beside the mark): the same.
    const cold = consumerEnvironment(env, ledgerConsumer({ home: ahead() }));
    await deliver(cold, rec('dm1-m1', charge, { receiveCount: 3 }));
    const dryRun = () => dryRunConsumer(env, ledgerConsumer({ home: ahead() }), 'ledger');
    const verdict = await decideDeadLetter(
      { messageId: 'dlq-dm1', body: JSON.stringify(charge), redriveOf: 'dm1-m1', since: { at: new Date(), what: 'failedAt' as const } },
      dryRun(),
      new Date(),
    );
    // Before the fix: ['dm1-m1:dead-lettered:Insufficient', 'would-apply'] — the dead letter's mark wins over the applied row.
    expect([...outcomesWithReason(cold.outcomes), verdict.outcome]).toEqual(['dm1-m1:duplicate', 'duplicate']);
    expect((await account('DM1'))?.balance).toBe(6);
  });

  it('a chosen effect key shared by events applied before and after the switch: the effect runs once', async () => {
    const rows = consumerEnvironment(env, ledgerConsumer({ home: undefined }));
    await deliver(rows, rec('ck1-m1', { eventId: 'ck1-1', type: 'Ping', accountId: 'CK1', notify: true, effectKey: 'welcome-CK1' }));
    const marks = consumerEnvironment(env, ledgerConsumer({ home: ahead() }));
    await deliver(
      marks,
      rec('ck1-m1', { eventId: 'ck1-1', type: 'Ping', accountId: 'CK1', notify: true, effectKey: 'welcome-CK1' }, { receiveCount: 2 }),
      rec('ck1-m2', { eventId: 'ck1-2', type: 'Ping', accountId: 'CK1', notify: true, effectKey: 'welcome-CK1' }),
    );
    expect(outcomeList([...rows.outcomes, ...marks.outcomes])).toEqual(['ck1-m1:applied', 'ck1-m1:duplicate', 'ck1-m2:applied']);
    expect(notified.filter((n) => n === 'welcome-CK1')).toEqual(['welcome-CK1']);
  });
});

describe('inboxHome under attack (3): a FIFO group across the switch', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('home-edges3-fifo', ledgerTables, { consumerName: 'ledger', queue: { fifo: true } });
  });
  afterAll(() => env.dispose());
  const { deliver, account } = helpersOf(() => env);
  const fifoRec = (messageId: string, body: Record<string, unknown>, extra: Parameters<typeof sourceRecord>[3] = {}): SQSRecord =>
    sourceRecord(env, messageId, body, { groupId: 'G1', ...extra });

  it('a FIFO group across the switch: a dead letter and a retryable stop under rows, the group back under inboxHome + rowsUntil: each applied once, in order', async () => {
    const events = [
      { eventId: 'fg1-1', type: 'Deposit', accountId: 'FG1', amount: 1 },
      { eventId: 'fg1-2', type: 'Charge', accountId: 'FG1', amount: 5 },
      { eventId: 'fg1-3', type: 'Flaky', accountId: 'FG1', amount: 10 },
      { eventId: 'fg1-4', type: 'Bonus', accountId: 'FG1', amount: 100 },
    ];
    flaky.add('fg1-3');
    const rows = consumerEnvironment(env, ledgerConsumer({ home: undefined }));
    const response = await deliver(rows, ...events.map((body, i) => fifoRec(`fg1-m${i + 1}`, body)));
    expect(response.batchItemFailures.map((f) => f.itemIdentifier)).toEqual(['fg1-m3', 'fg1-m4']);
    flaky.delete('fg1-3');
    const marks = consumerEnvironment(env, ledgerConsumer({ home: ahead() }));
    await deliver(marks, ...events.map((body, i) => fifoRec(`fg1-m${i + 1}`, body, { receiveCount: 2 })));
    expect(outcomesWithReason(marks.outcomes)).toEqual([
      'fg1-m1:duplicate',
      'fg1-m2:dead-lettered:Insufficient',
      'fg1-m3:applied',
      'fg1-m4:applied',
    ]);
    expect((await account('FG1'))?.balance).toBe(111);
    // And back under rows (turned off): all duplicates or the same dead letter.
    const again = consumerEnvironment(env, ledgerConsumer({ home: undefined }));
    await deliver(again, ...events.map((body, i) => fifoRec(`fg1-m${i + 1}`, body, { receiveCount: 3 })));
    expect(outcomeList(again.outcomes)).toEqual(['fg1-m1:duplicate', 'fg1-m2:dead-lettered', 'fg1-m3:duplicate', 'fg1-m4:duplicate']);
    expect((await account('FG1'))?.balance).toBe(111);
  });

  it('100 messages of one group under rowsUntil (rows and marks: 200 actions, one component), a dead letter amid them: each applied once, in order; all settled again by rows alone', async () => {
    const bodies = Array.from({ length: 100 }, (_, i) =>
      i === 50
        ? { eventId: `fb-${i}`, type: 'Charge', accountId: 'FB-0', amount: 1000 }
        : { eventId: `fb-${i}`, type: 'Deposit', accountId: `FB-${i % 10}`, amount: 1 },
    );
    const records = (receiveCount: number) => bodies.map((body, i) => fifoRec(`fb-m${i}`, body, { groupId: 'G2', receiveCount }));
    const e1 = consumerEnvironment(env, ledgerConsumer({ home: ahead() }));
    expect(await deliver(e1, ...records(1))).toEqual({ batchItemFailures: [] });
    expect(e1.outcomes.filter((o) => o.outcome === 'applied')).toHaveLength(99);
    expect(outcomesWithReason(e1.outcomes.filter((o) => o.outcome !== 'applied'))).toEqual(['fb-m50:dead-lettered:Insufficient']);
    const balances = await Promise.all(Array.from({ length: 10 }, (_, i) => account(`FB-${i}`).then((a) => a?.balance)));
    expect(balances).toEqual([9, 10, 10, 10, 10, 10, 10, 10, 10, 10]);
    const e2 = consumerEnvironment(env, ledgerConsumer({ home: undefined }));
    await deliver(e2, ...records(2));
    expect(e2.outcomes.filter((o) => o.outcome === 'duplicate')).toHaveLength(99);
    expect(outcomeList(e2.outcomes.filter((o) => o.outcome !== 'duplicate'))).toEqual(['fb-m50:dead-lettered']);
  });
});

describe('inboxHome under attack (3): parking out of order across the switch', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('home-edges3-park', ledgerTables, {
      consumerName: 'ledger',
      retry: { parkOutOfOrder: true, backoffBaseSeconds: 2 },
    });
  });
  afterAll(() => env.dispose());
  const { deliver, account } = helpersOf(() => env);

  it('a successor parked by the environment with rows, its predecessor applied by inboxHome + rowsUntil (which takes it up from the park): each applied once; copies to either version duplicates', async () => {
    const rows = consumerEnvironment(env, ledgerConsumer({ home: undefined }));
    const successor = await sendAndReceive(env, JSON.stringify({ eventId: 'pk1-2', type: 'Step', accountId: 'PK1', n: 2 }));
    expect(await deliver(rows, successor)).toEqual({ batchItemFailures: [{ itemIdentifier: successor.messageId }] });
    expect(await parkedIds(env, 'PK1')).toEqual([successor.messageId]);
    const marks = consumerEnvironment(env, ledgerConsumer({ home: ahead() }));
    const predecessor = await sendAndReceive(env, JSON.stringify({ eventId: 'pk1-1', type: 'Step', accountId: 'PK1', n: 1 }));
    expect(await deliver(marks, predecessor)).toEqual({ batchItemFailures: [] });
    await env.sqs.send(new DeleteMessageCommand({ QueueUrl: env.resources.queueUrl, ReceiptHandle: predecessor.receiptHandle }));
    expect(outcomeList(marks.outcomes)).toEqual([`${predecessor.messageId}:applied`, `${successor.messageId}:applied`]);
    expect(await parkedIds(env, 'PK1')).toEqual([]);
    const late = { ...successor, attributes: { ...successor.attributes, ApproximateReceiveCount: '2' } };
    const [r2, m2] = [
      consumerEnvironment(env, ledgerConsumer({ home: undefined })),
      consumerEnvironment(env, ledgerConsumer({ home: ahead() })),
    ];
    await deliver(r2, late);
    await deliver(m2, late);
    await deliver(rows, late);
    expect(outcomeList([...r2.outcomes, ...m2.outcomes, ...rows.outcomes.slice(1)])).toEqual([
      `${successor.messageId}:duplicate`,
      `${successor.messageId}:duplicate`,
      `${successor.messageId}:duplicate`,
    ]);
    expect((await account('PK1'))?.step).toBe(2);
    expect(markKeys(await account('PK1'))).toEqual(['pk1-1', 'pk1-2']);
    for (const key of ['pk1-1', 'pk1-2']) expect(await inboxRowOf(env, key), key).toMatchObject({ status: 'applied' });
  });
});

describe('inboxHome under attack (3): other event sources with homes', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('home-edges3-sources', ledgerTables, { consumerName: 'ledger' });
  });
  afterAll(() => env.dispose());
  const { account } = helpersOf(() => env);

  it('Kafka with inboxHome + rowsUntil: a dead letter, a stub, duplicates in the batch; redelivered to marks alone and to rows alone: each applied once', async () => {
    const records = [
      { eventId: 'ka1-1', type: 'Deposit', accountId: 'KA1', amount: 3 },
      { eventId: 'ka1-2', type: 'Charge', accountId: 'KA1', amount: 50 },
      { eventId: 'ka1-3', type: 'Ping', accountId: 'KA1b' },
      { eventId: 'ka1-1', type: 'Deposit', accountId: 'KA1', amount: 3 },
      { eventId: 'ka1-4', type: 'Bonus', accountId: 'KA1', amount: 4 },
    ];
    const event = mskEvent(...records.map((body, i) => kafkaRecord('ledger', 0, i, body, { key: body.accountId })));
    const e1 = consumerEnvironment(env, ledgerConsumer({ home: ahead() }));
    expect((await e1.handler(event, lambdaContext())) as KafkaBatchResponse).toEqual({ batchItemFailures: [] });
    expect(outcomesWithReason(e1.outcomes)).toEqual([
      'ledger-0@0:applied',
      'ledger-0@1:dead-lettered:Insufficient',
      'ledger-0@2:applied',
      'ledger-0@3:duplicate',
      'ledger-0@4:applied',
    ]);
    const e2 = consumerEnvironment(env, ledgerConsumer({ home: {} }));
    await e2.handler(event, lambdaContext());
    const e3 = consumerEnvironment(env, ledgerConsumer({ home: undefined }));
    await e3.handler(event, lambdaContext());
    for (const e of [e2, e3])
      expect(e.outcomes.map((o) => o.outcome)).toEqual(['duplicate', 'dead-lettered', 'duplicate', 'duplicate', 'duplicate']);
    expect((await account('KA1'))?.balance).toBe(7);
    expect(markKeys(await account('KA1'))).toEqual(['ka1-1', 'ka1-2', 'ka1-4']);
    for (const key of ['ka1-1', 'ka1-3', 'ka1-4']) expect(await inboxRowOf(env, key), key).toMatchObject({ status: 'applied' });
  });

  it('Kinesis with inboxHome: a retryable stop in a shard, resumed from its sequence number by another environment, then all again cold: each applied once', async () => {
    const bodies = [
      { eventId: 'ki1-1', type: 'Deposit', accountId: 'KI1', amount: 1 },
      { eventId: 'ki1-2', type: 'Flaky', accountId: 'KI1', amount: 10 },
      { eventId: 'ki1-3', type: 'Close', accountId: 'KI1b' },
      { eventId: 'ki1-4', type: 'Bonus', accountId: 'KI1', amount: 100 },
    ];
    const event = kinesisEvent(...bodies.map((body, i) => kinesisRecord(0, i + 1, body, { partitionKey: body.accountId })));
    flaky.add('ki1-2');
    const e1 = consumerEnvironment(env, ledgerConsumer({ home: {} }));
    const response = (await e1.handler(event, lambdaContext())) as { batchItemFailures: { itemIdentifier: string }[] };
    expect(response.batchItemFailures.length).toBeGreaterThan(0);
    flaky.delete('ki1-2');
    const lowest = response.batchItemFailures.map((f) => f.itemIdentifier).sort()[0]!;
    const resumed = kinesisEvent(...event.Records.filter((r) => r.kinesis.sequenceNumber >= lowest));
    const e2 = consumerEnvironment(env, ledgerConsumer({ home: {} }));
    expect(await e2.handler(resumed, lambdaContext())).toEqual({ batchItemFailures: [] });
    const e3 = consumerEnvironment(env, ledgerConsumer({ home: {} }));
    expect(await e3.handler(event, lambdaContext())).toEqual({ batchItemFailures: [] });
    const all = [...e1.outcomes, ...e2.outcomes, ...e3.outcomes];
    expect(
      all
        .filter((o) => o.outcome === 'applied')
        .map((o) => o.idempotencyKey)
        .sort(),
    ).toEqual(['ki1-1', 'ki1-2', 'ki1-3', 'ki1-4']);
    expect(e3.outcomes.map((o) => o.outcome)).toEqual(Array(4).fill('duplicate'));
    expect((await account('KI1'))?.balance).toBe(111);
    expect(markKeys(await account('KI1'))).toEqual(['ki1-1', 'ki1-2', 'ki1-4']);
    expect(await account('KI1b')).toMatchObject({ _inboxStub: true });
  });

  it('DynamoDB Streams with inboxHome + rowsUntil: a dead letter and a stub amid applied records, the batch again in an environment with marks alone and one with rows alone: each applied once', async () => {
    const items = [
      { eventId: 'dd1-1', type: 'Deposit', accountId: 'DD1', amount: 2 },
      { eventId: 'dd1-2', type: 'Charge', accountId: 'DD1', amount: 9 },
      { eventId: 'dd1-3', type: 'Close', accountId: 'DD1b' },
      { eventId: 'dd1-4', type: 'Bonus', accountId: 'DD1', amount: 3 },
    ];
    const event = dynamoDbStreamEvent(...items.map((item, i) => dynamoDbRecord(i + 1, item, { keys: { eventId: item.eventId } })));
    const e1 = consumerEnvironment(env, ledgerConsumer({ home: ahead() }));
    expect(await e1.handler(event, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(e1.outcomes.map((o) => o.outcome)).toEqual(['applied', 'dead-lettered', 'applied', 'applied']);
    const e2 = consumerEnvironment(env, ledgerConsumer({ home: {} }));
    await e2.handler(event, lambdaContext());
    const e3 = consumerEnvironment(env, ledgerConsumer({ home: undefined }));
    await e3.handler(event, lambdaContext());
    for (const e of [e2, e3]) expect(e.outcomes.map((o) => o.outcome)).toEqual(['duplicate', 'dead-lettered', 'duplicate', 'duplicate']);
    expect((await account('DD1'))?.balance).toBe(5);
    expect(await account('DD1b')).toMatchObject({ _inboxStub: true });
  });
});

describe('inboxHome under attack (3): large batches, several events of one home with side effects', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('home-edges3-large', ledgerTables, { consumerName: 'ledger' });
  });
  afterAll(() => env.dispose());
  const { rec, deliver, account } = helpersOf(() => env);

  it('100 deposits of one home, each with an outgoing message, under rowsUntil (rows, marks and outbox: 201 actions): each applied once, in order; all duplicates cold', async () => {
    const bodies = Array.from({ length: 100 }, (_, i) => ({
      eventId: `lg1-${i}`,
      type: 'Deposit',
      accountId: 'LG1',
      amount: i + 1,
      emit: true,
    }));
    const e1 = consumerEnvironment(env, ledgerConsumer({ home: ahead() }));
    const response = await deliver(e1, ...bodies.map((body, i) => rec(`lg1-m${i}`, body)));
    const e2 = consumerEnvironment(env, ledgerConsumer({ home: ahead() }));
    const retried = response.batchItemFailures.map((f) => f.itemIdentifier);
    if (retried.length > 0)
      await deliver(
        e2,
        ...bodies.map((body, i) => rec(`lg1-m${i}`, body, { receiveCount: 2 })).filter((r) => retried.includes(r.messageId)),
      );
    const applied = [...e1.outcomes, ...e2.outcomes].filter((o) => o.outcome === 'applied');
    expect(applied).toHaveLength(100);
    expect((await account('LG1'))?.balance).toBe(5050);
    expect(markKeys(await account('LG1'))).toHaveLength(100);
    expect((await inboxRows(env)).filter((row) => String(row.idempotencyKey).startsWith('lg1-'))).toHaveLength(100);
    expect((await outboxItems(env)).filter((item) => String(item.idempotencyKey).startsWith('lg1-'))).toHaveLength(100);
    const e3 = consumerEnvironment(env, ledgerConsumer({ home: undefined }));
    await deliver(e3, ...bodies.map((body, i) => rec(`lg1-m${i}`, body, { receiveCount: 3 })));
    expect(e3.outcomes.filter((o) => o.outcome !== 'duplicate')).toEqual([]);
  });

  it('100 events on 100 homes that stay stubs, under rowsUntil (200 actions): each applied once; all duplicates to marks alone', async () => {
    const bodies = Array.from({ length: 100 }, (_, i) => ({ eventId: `lg2-${i}`, type: 'Close', accountId: `LG2-${i}` }));
    const e1 = consumerEnvironment(env, ledgerConsumer({ home: ahead() }));
    expect(await deliver(e1, ...bodies.map((body, i) => rec(`lg2-m${i}`, body)))).toEqual({ batchItemFailures: [] });
    expect(e1.outcomes.filter((o) => o.outcome === 'applied')).toHaveLength(100);
    const e2 = consumerEnvironment(env, ledgerConsumer({ home: {} }));
    await deliver(e2, ...bodies.map((body, i) => rec(`lg2-m${i}`, body, { receiveCount: 2 })));
    expect(e2.outcomes.filter((o) => o.outcome !== 'duplicate')).toEqual([]);
    expect(await account('LG2-99')).toMatchObject({ _inboxStub: true });
  });

  it('40 events (40 homes) each with a conditioned write and a side effect, under rowsUntil (3 checks each: more than one preflight transaction): an effect never runs for a message whose condition refuses its commit', async () => {
    const bodies = Array.from({ length: 40 }, (_, i) => ({ eventId: `pf1-${i}`, type: 'Audit', accountId: `PF1-${i}` }));
    // The audit items of the last five exist already: their conditioned Put is refused.
    for (const body of bodies.slice(35))
      await env.documentClient.send(
        new PutCommand({ TableName: env.resources.tables.ledgers!, Item: { pk: `audit#${body.eventId}`, by: 'someone else' } }),
      );
    const e1 = consumerEnvironment(env, ledgerConsumer({ home: ahead(), orderingKey: 'eventId' }));
    await deliver(e1, ...bodies.map((body, i) => rec(`pf1-m${i}`, body)));
    expect(e1.outcomes.filter((o) => o.outcome === 'applied')).toHaveLength(35);
    expect(outcomesWithReason(e1.outcomes.filter((o) => o.outcome !== 'applied'))).toEqual(
      bodies.slice(35).map((_, i) => `pf1-m${35 + i}:dead-lettered:ConditionalWriteFailed`),
    );
    // Before the fix: the effects of the refused ones ran (they were left out of the full preflight, yet their effects ran).
    expect(notified.filter((n) => n.startsWith('pf1-')).length).toBe(35);
    expect(notified.filter((n) => bodies.slice(35).some((b) => b.eventId === n))).toEqual([]);
  });

  it('35 homes of about 120 KB of marks each, a Put of each in one batch under rowsUntil (over 4 MB in all): each applied once, every mark kept', async () => {
    const now = Math.floor(Date.now() / 1000);
    const homes = Array.from({ length: 35 }, (_, i) => `BG1-${i}`);
    const oldMarks = (home: string) =>
      Object.fromEntries(
        Array.from({ length: 1100 }, (_, j) => [
          markKey('ledger', `${home}-old-${String(j).padStart(5, '0')}`),
          { h: 'c'.repeat(64), m: `m-${j}`, x: now + 3600 },
        ]),
      );
    for (const home of homes)
      await env.documentClient.send(
        new PutCommand({
          TableName: env.resources.tables.accounts!,
          Item: { ...accountKey(home), balance: 1, _version: 'by-hand', _inbox: oldMarks(home) },
        }),
      );
    const bodies = homes.map((home, i) => ({ eventId: `bg1-${i}`, type: 'Deposit', accountId: home, amount: 2 }));
    const all: OutcomeRecord[] = [];
    let pending = bodies.map((body, i) => rec(`bg1-m${i}`, body));
    for (let receive = 1; receive <= 3 && pending.length > 0; receive += 1) {
      const e = consumerEnvironment(env, ledgerConsumer({ home: ahead() }));
      const response = await deliver(e, ...pending);
      all.push(...e.outcomes);
      const failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
      pending = pending
        .filter((r) => failed.has(r.messageId))
        .map((r) => ({ ...r, attributes: { ...r.attributes, ApproximateReceiveCount: String(receive + 1) } }));
    }
    expect(
      all
        .filter((o) => o.outcome === 'applied')
        .map((o) => o.messageId)
        .sort(),
    ).toEqual(bodies.map((_, i) => `bg1-m${i}`).sort());
    expect(all.filter((o) => o.outcome === 'dead-lettered')).toEqual([]);
    for (const home of homes.slice(0, 3).concat(homes.slice(-2))) {
      const stored = await account(home);
      expect(stored?.balance, home).toBe(3);
      expect(markKeys(stored), home).toHaveLength(1101);
    }
  });

  it('control: the same 40 conditioned events with marks alone (2 checks each, one preflight takes them all): no effect of a refused commit runs', async () => {
    const bodies = Array.from({ length: 40 }, (_, i) => ({ eventId: `pf2-${i}`, type: 'Audit', accountId: `PF2-${i}` }));
    for (const body of bodies.slice(35))
      await env.documentClient.send(
        new PutCommand({ TableName: env.resources.tables.ledgers!, Item: { pk: `audit#${body.eventId}`, by: 'someone else' } }),
      );
    const e1 = consumerEnvironment(env, ledgerConsumer({ home: {}, orderingKey: 'eventId' }));
    await deliver(e1, ...bodies.map((body, i) => rec(`pf2-m${i}`, body)));
    expect(e1.outcomes.filter((o) => o.outcome === 'applied')).toHaveLength(35);
    expect(notified.filter((n) => bodies.slice(35).some((b) => b.eventId === n))).toEqual([]);
  });

  it('100 events of one home in one batch, each asking for a side effect, under rowsUntil: each applied once, each effect run once, in one invocation', async () => {
    const bodies = Array.from({ length: 100 }, (_, i) => ({ eventId: `pg1-${i}`, type: 'Ping', accountId: 'PG1', notify: true }));
    const e1 = consumerEnvironment(env, ledgerConsumer({ home: ahead() }));
    const started = Date.now();
    const response = await deliver(e1, ...bodies.map((body, i) => rec(`pg1-m${i}`, body)));
    expect(response, `after ${Date.now() - started} ms`).toEqual({ batchItemFailures: [] });
    expect(e1.outcomes.filter((o) => o.outcome === 'applied')).toHaveLength(100);
    expect(notified.filter((n) => n.startsWith('pg1-')).sort()).toEqual(bodies.map((b) => b.eventId).sort());
    expect(markKeys(await account('PG1'))).toHaveLength(100);
  });

  it('100 deposits on 100 homes under rowsUntil, each with an outgoing message of 40 KB (over 4 MB of outbox items): each applied once, each message once', async () => {
    const pad = 'p'.repeat(40_000);
    const bodies = Array.from({ length: 100 }, (_, i) => ({
      eventId: `ob1-${i}`,
      type: 'Deposit',
      accountId: `OB1-${i}`,
      amount: 1,
      emit: true,
      pad,
    }));
    const all: OutcomeRecord[] = [];
    let pending = bodies.map((body, i) => rec(`ob1-m${i}`, body));
    for (let receive = 1; receive <= 3 && pending.length > 0; receive += 1) {
      const e = consumerEnvironment(env, ledgerConsumer({ home: ahead() }));
      const response = await deliver(e, ...pending);
      all.push(...e.outcomes);
      const failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
      pending = pending.filter((r) => failed.has(r.messageId));
    }
    expect(all.filter((o) => o.outcome === 'applied')).toHaveLength(100);
    expect(all.filter((o) => o.outcome === 'dead-lettered')).toEqual([]);
    expect((await outboxItems(env)).filter((item) => String(item.idempotencyKey).startsWith('ob1-'))).toHaveLength(100);
    expect((await inboxRows(env)).filter((row) => String(row.idempotencyKey).startsWith('ob1-'))).toHaveLength(100);
  });

  it('two events of one home in one batch (other ordering keys), each with a conditioned write and a side effect: both applied, each effect once, not retried for ever', async () => {
    for (const [label, home] of [
      ['marks', {}],
      ['rowsUntil', ahead()],
    ] as const) {
      const e1 = consumerEnvironment(env, ledgerConsumer({ home, orderingKey: 'eventId' }));
      const bodies = [1, 2, 3].map((n) => ({ eventId: `au-${label}-${n}`, type: 'Audit', accountId: `AU-${label}` }));
      const response = await deliver(e1, ...bodies.map((body, i) => rec(`au-${label}-m${i}`, body)));
      expect(outcomesWithReason(e1.outcomes), label).toEqual(bodies.map((_, i) => `au-${label}-m${i}:applied`));
      expect(response).toEqual({ batchItemFailures: [] });
      expect(notified.filter((n) => n.startsWith(`au-${label}-`)).sort()).toEqual(bodies.map((b) => b.eventId));
      expect(markKeys(await account(`AU-${label}`))).toEqual(bodies.map((b) => b.eventId));
    }
  });
});

describe('inboxHome under attack (3): inboxHome.key that throws or names odd keys', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('home-edges3-keys', ledgerTables, { consumerName: 'ledger', retry: { maxAttempts: 3 } });
  });
  afterAll(() => env.dispose());
  const { rec, deliver, account } = helpersOf(() => env);

  it('a key function that throws for one event: that message is dead-lettered with its reason once per receive, the others of its batch applied', async () => {
    const homeKey = (event: LedgerEvent) => {
      if (event.accountId.startsWith('bad')) throw new TypeError('no home for this account');
      return accountKey(event.accountId);
    };
    const e1 = consumerEnvironment(env, ledgerConsumer({ home: ahead(), homeKey }));
    const response = await deliver(
      e1,
      rec('kt1-m1', { eventId: 'kt1-1', type: 'Deposit', accountId: 'KT1', amount: 1 }),
      rec('kt1-m2', { eventId: 'kt1-2', type: 'Deposit', accountId: 'bad-KT1', amount: 2 }),
      rec('kt1-m3', { eventId: 'kt1-3', type: 'Deposit', accountId: 'KT1', amount: 4 }),
    );
    expect(response).toEqual({ batchItemFailures: [] });
    expect(outcomesWithReason(e1.outcomes)).toEqual(['kt1-m1:applied', 'kt1-m2:dead-lettered:ValidationError', 'kt1-m3:applied']);
    expect((await account('KT1'))?.balance).toBe(5);
    expect(await account('bad-KT1')).toBeUndefined();
    const dead = (await deadLetters(env)).filter((m) => JSON.parse(m.Body ?? '{}').eventId === 'kt1-2');
    expect(dead.map((m) => m.MessageAttributes?.['ic.failureReason']?.StringValue)).toEqual(['ValidationError']);
  });

  it('a key function whose key lacks the partition key for one event: that message is not applied, and is not retried for ever without a reason', async () => {
    const homeKey = (event: LedgerEvent) => (event.accountId.startsWith('nokey') ? { id: event.accountId } : accountKey(event.accountId));
    const body = { eventId: 'kt2-1', type: 'Deposit', accountId: 'nokey-KT2', amount: 1 };
    const outcomes: OutcomeRecord[] = [];
    for (let receive = 1; receive <= 3; receive += 1) {
      const e = consumerEnvironment(env, ledgerConsumer({ home: ahead(), homeKey }));
      await deliver(
        e,
        rec('kt2-m1', body, { receiveCount: receive }),
        rec('kt2-m2', { eventId: 'kt2-2', type: 'Deposit', accountId: 'KT2', amount: 2 }, { receiveCount: receive }),
      );
      outcomes.push(...e.outcomes);
    }
    expect(outcomes.filter((o) => o.messageId === 'kt2-m2').map((o) => o.outcome)).toEqual(['applied', 'duplicate', 'duplicate']);
    expect(await account('nokey-KT2')).toBeUndefined();
    // A definition error is the code's, not the message's: retried, each retry counted and saying
    // why, and dead-lettered with its reason at its last attempt (maxAttempts 3), never spinning.
    expect(outcomes.filter((o) => o.messageId === 'kt2-m1').map((o) => `${o.outcome}:${o.errorType}`)).toEqual([
      'retried:ConsumerDefinitionError',
      'retried:ConsumerDefinitionError',
      'dead-lettered:ConsumerDefinitionError',
    ]);
    const dead = (await deadLetters(env)).filter((m) => JSON.parse(m.Body ?? '{}').eventId === 'kt2-1');
    expect(dead.map((m) => m.MessageAttributes?.['ic.failureReason']?.StringValue)).toEqual([expect.any(String)]);
  });

  it('a home key that read() also names on another table (same key attributes): the marks on the home only, the other item untouched by them; duplicates cold', async () => {
    const consumer = () => ledgerConsumer({ home: ahead(), alsoRead: (event) => ({ table: 'ledgers', key: accountKey(event.accountId) }) });
    const e1 = consumerEnvironment(env, consumer());
    await deliver(
      e1,
      rec('kt3-m1', { eventId: 'kt3-1', type: 'Deposit', accountId: 'KT3', amount: 1 }),
      rec('kt3-m2', { eventId: 'kt3-2', type: 'Close', accountId: 'KT3' }),
    );
    const e2 = consumerEnvironment(env, consumer());
    await deliver(
      e2,
      rec('kt3-m1', { eventId: 'kt3-1', type: 'Deposit', accountId: 'KT3', amount: 1 }, { receiveCount: 2 }),
      rec('kt3-m2', { eventId: 'kt3-2', type: 'Close', accountId: 'KT3' }, { receiveCount: 2 }),
    );
    expect(outcomeList([...e1.outcomes, ...e2.outcomes])).toEqual([
      'kt3-m1:applied',
      'kt3-m2:applied',
      'kt3-m1:duplicate',
      'kt3-m2:duplicate',
    ]);
    expect(markKeys(await account('KT3'))).toEqual(['kt3-1', 'kt3-2']);
    expect(await storedItem(env, 'ledgers', accountKey('KT3'))).toBeUndefined();
  });
  it('a key function that gives a number for a table whose partition key is a string, for one event: the others of its batch applied; that one dead-lettered InvalidWrite with its reason (its marker on its row alone), never spinning', async () => {
    const homeKey = (event: LedgerEvent) => (event.accountId.startsWith('num') ? { pk: 42 } : accountKey(event.accountId));
    const good = (receiveCount: number) =>
      rec('kt4-m1', { eventId: 'kt4-1', type: 'Deposit', accountId: 'KT4', amount: 1 }, { receiveCount });
    const bad = (receiveCount: number) =>
      rec('kt4-m2', { eventId: 'kt4-2', type: 'Deposit', accountId: 'num-KT4', amount: 2 }, { receiveCount });
    const outcomes: OutcomeRecord[] = [];
    // maxAttempts is 3 here; SQS's maxReceiveCount (maxAttempts + 5) would move it to the DLQ without its reason.
    for (let receive = 1; receive <= 7; receive += 1) {
      const e = consumerEnvironment(env, ledgerConsumer({ home: ahead(), homeKey }));
      await deliver(e, good(receive), bad(receive));
      outcomes.push(...e.outcomes);
    }
    expect(outcomes.filter((o) => o.messageId === 'kt4-m1').map((o) => o.outcome)).toEqual(['applied', ...Array(6).fill('duplicate')]);
    expect((await account('KT4'))?.balance).toBe(1);
    expect(await account('num-KT4')).toBeUndefined();
    const badOutcomes = outcomes.filter((o) => o.messageId === 'kt4-m2');
    // Before the fix: 7 × retried (ValidationException "Type mismatch for key", not counted): the
    // commit was refused (InvalidWrite), then its marker's read of the home was refused, uncounted.
    // Now its marker is its row alone, and each receive dead-letters it with its reason.
    expect(
      badOutcomes.map((o) => `${o.outcome}:${o.errorType}`),
      JSON.stringify(badOutcomes.map((o) => [o.outcome, o.errorType, o.errorMessage?.slice(0, 120)])),
    ).toEqual(Array(7).fill('dead-lettered:InvalidWrite'));
    expect(await inboxRowOf(env, 'kt4-2')).toMatchObject({ status: 'dead-lettered', reason: 'InvalidWrite' });
    const dead = (await deadLetters(env)).filter((m) => JSON.parse(m.Body ?? '{}').eventId === 'kt4-2');
    expect(dead.length).toBeGreaterThanOrEqual(1);
    expect(new Set(dead.map((m) => m.MessageAttributes?.['ic.failureReason']?.StringValue))).toEqual(new Set(['InvalidWrite']));
  });
});
