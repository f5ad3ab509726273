/**
 * Turning `inboxHome` on, and off, in a consumer that already applied events, on the real DynamoDB
 * Local and SQS server. An event applied with inbox rows has a row and no mark; one applied with
 * marks has a mark and no row. A redelivery after the switch must still be a duplicate:
 * `inboxHome.rowsUntil` writes and reads the rows beside the marks for one inbox window
 * (docs/inbox-home.md, "Turning it on or off").
 */
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import { createIdempotentConsumer, type IdempotentConsumerOptions, type Item, type TableDefinition } from 'idempotent-consumer';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { decideDeadLetter } from '../../packages/cli/src/dlq/decideDeadLetter.js';
import {
  consumerEnvironment,
  dryRunConsumer,
  type ExecutionEnvironment,
  inboxRowOf,
  sourceRecord,
  storedItem,
} from '../support/consumerHarness.js';
import { lambdaContext, sqsEvent } from '../support/sqsEvents.js';
import { describeUnlessDeployedStack, type TestResources, testResources } from '../support/testResources.js';

const describe = describeUnlessDeployedStack('a consumer with tables of its own (accounts): a deployed stack has the café tables');

const id = z.string().min(1).max(128);
const AccountEvent = z.discriminatedUnion('type', [
  z.object({ eventId: id, type: z.literal('Deposit'), accountId: id, amount: z.number().int() }),
  /** Writes nothing; runs one side effect (its home stays absent, a stub under inboxHome). */
  z.object({ eventId: id, type: z.literal('Ping'), accountId: id }),
]);
type AccountEvent = z.infer<typeof AccountEvent>;
const tables = { accounts: { partitionKey: 'pk' } } as const satisfies Record<string, TableDefinition>;
const accountKey = (accountId: string) => ({ pk: `account#${accountId}` });
/** Every run of the side effect, by event id. */
const pinged: string[] = [];
const ping = async (input: { eventId: string }) => {
  pinged.push(input.eventId);
};

/** The consumer with inbox rows (`home: undefined`), or with `inboxHome` and its `rowsUntil`. */
function accounts(
  home: { rowsUntil?: Date | string } | undefined,
): IdempotentConsumerOptions<AccountEvent, 'accounts', { ping: typeof ping }> {
  return {
    schema: AccountEvent,
    idempotencyKey: 'eventId',
    orderingKey: 'accountId',
    tables,
    ...(home === undefined
      ? {}
      : { inboxHome: { table: 'accounts' as const, key: (event: AccountEvent) => accountKey(event.accountId), ...home } }),
    read: (event) => [{ table: 'accounts', key: accountKey(event.accountId) }],
    decide: (event, state) => {
      if (event.type === 'Ping') return { sideEffects: [{ name: 'ping', input: { eventId: event.eventId } }] };
      const balance = Number(state.get('accounts', accountKey(event.accountId))?.balance ?? 0);
      return { writes: [{ Put: { TableName: 'accounts', Item: { ...accountKey(event.accountId), balance: balance + event.amount } } }] };
    },
    sideEffects: { ping },
  };
}

const day = 86_400_000;
const markKeys = (item: Item | undefined) => Object.keys((item?._inbox as object | undefined) ?? {}).sort();

describe('inboxHome turned on and off in a consumer that already applied events (rowsUntil)', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('home-transition', tables, { consumerName: 'ledger' });
  });
  afterAll(() => env.dispose());
  const rec = (messageId: string, body: Record<string, unknown>, receiveCount = 1): SQSRecord =>
    sourceRecord(env, messageId, body, { receiveCount });
  const deliver = async (environment: ExecutionEnvironment, ...records: SQSRecord[]) =>
    (await environment.handler(sqsEvent(...records), lambdaContext())) as SQSBatchResponse;
  const account = (accountId: string) => storedItem(env, 'accounts', accountKey(accountId));

  it('turned on with rowsUntil: the redeliveries of events applied with rows are duplicates (cold and warm, a side effect not run again); new events write a row and a mark', async () => {
    const before = consumerEnvironment(env, accounts(undefined));
    await deliver(
      before,
      rec('t1-m1', { eventId: 't1-1', type: 'Deposit', accountId: 'T1', amount: 5 }),
      rec('t1-m2', { eventId: 't1-2', type: 'Ping', accountId: 'T1p' }),
    );
    expect(before.outcomes.map((o) => o.outcome)).toEqual(['applied', 'applied']);
    expect(pinged.filter((e) => e === 't1-2')).toHaveLength(1);

    const on = accounts({ rowsUntil: new Date(Date.now() + 30 * day) });
    const cold = consumerEnvironment(env, on);
    await deliver(cold, rec('t1-m1', { eventId: 't1-1', type: 'Deposit', accountId: 'T1', amount: 5 }, 2));
    await deliver(cold, rec('t1-m2', { eventId: 't1-2', type: 'Ping', accountId: 'T1p' }, 2));
    // Warm: the environment now remembers the account (no mark of t1-1 on it).
    await deliver(cold, rec('t1-m1', { eventId: 't1-1', type: 'Deposit', accountId: 'T1', amount: 5 }, 3));
    expect(cold.outcomes.map((o) => `${o.messageId}:${o.outcome}`)).toEqual(['t1-m1:duplicate', 't1-m2:duplicate', 't1-m1:duplicate']);
    expect((await account('T1'))?.balance).toBe(5);
    expect(pinged.filter((e) => e === 't1-2')).toHaveLength(1);

    // The DLQ tool's dry run agrees: the key is held by its row (no mark), within the window only.
    const dryRun = (options: ReturnType<typeof accounts>) => dryRunConsumer(env, options, 'ledger');
    const message = {
      messageId: 't1-m1',
      body: JSON.stringify({ eventId: 't1-1', type: 'Deposit', accountId: 'T1', amount: 5 }),
      redriveOf: 't1-m1',
      since: { at: new Date(), what: 'failedAt' as const },
    };
    expect(await decideDeadLetter(message, dryRun(on), new Date())).toMatchObject({ outcome: 'duplicate', reason: 'already applied' });
    expect(await decideDeadLetter(message, dryRun(accounts({})), new Date())).toMatchObject({ outcome: 'would-apply' });

    // A new event: its mark on the account, and its row beside it.
    await deliver(cold, rec('t1-m3', { eventId: 't1-3', type: 'Deposit', accountId: 'T1', amount: 1 }));
    expect((await account('T1'))?.balance).toBe(6);
    expect(markKeys(await account('T1'))).toEqual(['ledger#t1-3']);
    expect(await inboxRowOf(env, 't1-3')).toMatchObject({ status: 'applied', messageId: 't1-m3' });
  });

  it('turned on without rowsUntil: a redelivery of an event applied with rows is applied again (why rowsUntil exists)', async () => {
    await deliver(
      consumerEnvironment(env, accounts(undefined)),
      rec('t2-m1', { eventId: 't2-1', type: 'Deposit', accountId: 'T2', amount: 5 }),
    );
    const on = consumerEnvironment(env, accounts({}));
    await deliver(on, rec('t2-m1', { eventId: 't2-1', type: 'Deposit', accountId: 'T2', amount: 5 }, 2));
    expect(on.outcomes.map((o) => o.outcome)).toEqual(['applied']);
    expect((await account('T2'))?.balance).toBe(10);
  });

  it('past rowsUntil: marks alone, no row', async () => {
    const after = consumerEnvironment(env, accounts({ rowsUntil: new Date(Date.now() - day).toISOString() }));
    await deliver(after, rec('t3-m1', { eventId: 't3-1', type: 'Deposit', accountId: 'T3', amount: 5 }));
    expect(markKeys(await account('T3'))).toEqual(['ledger#t3-1']);
    expect(await inboxRowOf(env, 't3-1')).toBeUndefined();
  });

  it('turned off after a window with rowsUntil ahead: the redeliveries of events applied with marks are duplicates to the consumer with rows', async () => {
    const both = consumerEnvironment(env, accounts({ rowsUntil: new Date(Date.now() + 365 * day) }));
    await deliver(
      both,
      rec('t4-m1', { eventId: 't4-1', type: 'Deposit', accountId: 'T4', amount: 5 }),
      rec('t4-m2', { eventId: 't4-2', type: 'Ping', accountId: 'T4p' }),
    );
    expect(both.outcomes.map((o) => o.outcome)).toEqual(['applied', 'applied']);
    const off = consumerEnvironment(env, accounts(undefined));
    await deliver(
      off,
      rec('t4-m1', { eventId: 't4-1', type: 'Deposit', accountId: 'T4', amount: 5 }, 2),
      rec('t4-m2', { eventId: 't4-2', type: 'Ping', accountId: 'T4p' }, 2),
    );
    expect(off.outcomes.map((o) => o.outcome)).toEqual(['duplicate', 'duplicate']);
    expect((await account('T4'))?.balance).toBe(5);
    expect(pinged.filter((e) => e === 't4-2')).toHaveLength(1);
  });

  it('refuses a rowsUntil that is not a date-time with its offset', () => {
    for (const rowsUntil of ['tomorrow', '2027-01-31', new Date(Number.NaN)])
      expect(() => createIdempotentConsumer(accounts({ rowsUntil }), { environment: env.environment }), String(rowsUntil)).toThrow(
        /inboxHome\.rowsUntil .* must be a valid Date or an ISO 8601 date-time with its offset/,
      );
  });
});
