/**
 * Inbox marks on home items (`inboxHome`), on the real DynamoDB Local and SQS server: what is
 * stored (the marks map, stubs, the rows that are still written), what `decide` sees, and that
 * every message is applied once whatever the next delivery finds (another environment, a delete,
 * a blind write, a dead letter and its redrive, a reused key).
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSBatchResponse } from 'aws-lambda';
import { type IdempotentConsumerOptions, type Item, NonRetryableError, type TableDefinition } from 'idempotent-consumer';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { deadLetters } from '../support/cafeHarness.js';
import { consumerEnvironment, inboxRowOf, inboxRows, outcomeList, sourceRecord, storedItem } from '../support/consumerHarness.js';
import { lambdaContext, sqsEvent } from '../support/sqsEvents.js';
import { describeUnlessDeployedStack, type TestResources, testResources } from '../support/testResources.js';

const describe = describeUnlessDeployedStack('a consumer with tables of its own (accounts): a deployed stack has the café tables');

class Frozen extends NonRetryableError {
  override readonly name = 'Frozen';
}

const id = z.string().min(1).max(128);
const AccountEvent = z.discriminatedUnion('type', [
  z.object({ eventId: id, type: z.literal('Deposit'), accountId: id, amount: z.number().int() }),
  z.object({ eventId: id, type: z.literal('Close'), accountId: id }),
  /** Writes the account's audit entry blindly (an item of the home table that is nobody's home). */
  z.object({ eventId: id, type: z.literal('Audit'), accountId: id, note: z.string() }),
  /** Overwrites another account blindly: a blind Put on an item that is another event's home. */
  z.object({ eventId: id, type: z.literal('Reset'), accountId: id, target: id }),
  /** Applies nothing (an empty decision): its mark makes a stub of an absent home. */
  z.object({ eventId: id, type: z.literal('Ping'), accountId: id }),
  /** Adds with an Update. */
  z.object({ eventId: id, type: z.literal('Bonus'), accountId: id, amount: z.number().int() }),
]);
type AccountEvent = z.infer<typeof AccountEvent>;
const tables = { accounts: { partitionKey: 'pk' } } as const satisfies Record<string, TableDefinition>;
const accountKey = (accountId: string) => ({ pk: `account#${accountId}` });
/** What `decide` saw, per event id: the keys of the account item (to check it never sees the marks). */
const seen = new Map<string, string[] | 'absent'>();

const options: IdempotentConsumerOptions<AccountEvent, 'accounts'> = {
  schema: AccountEvent,
  idempotencyKey: 'eventId',
  orderingKey: 'accountId',
  tables,
  inboxHome: { table: 'accounts', key: (event) => accountKey(event.accountId) },
  read: (event) => [{ table: 'accounts', key: accountKey(event.accountId) }],
  decide: (event, state) => {
    const account = state.get('accounts', accountKey(event.accountId));
    seen.set(event.eventId, account === undefined ? 'absent' : Object.keys(account).sort());
    if (account?.frozen === true) throw new Frozen(`account ${event.accountId} is frozen`);
    switch (event.type) {
      case 'Deposit':
        return {
          writes: [
            {
              Put: {
                TableName: 'accounts',
                Item: { ...accountKey(event.accountId), balance: Number(account?.balance ?? 0) + event.amount, frozen: event.amount < 0 },
              },
            },
          ],
        };
      case 'Close':
        return { writes: [{ Delete: { TableName: 'accounts', Key: accountKey(event.accountId) } }] };
      case 'Audit':
        return { writes: [{ Put: { TableName: 'accounts', Item: { pk: `audit#${event.accountId}`, note: event.note } } }] };
      case 'Reset':
        return { writes: [{ Put: { TableName: 'accounts', Item: { ...accountKey(event.target), balance: 0 } } }] };
      case 'Ping':
        return {};
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
    }
  },
};

describe('inbox marks on home items (inboxHome)', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('inbox-home', tables, { consumerName: 'accounts' });
  });
  afterAll(() => env.dispose());

  const deliver = async (
    environment: ReturnType<typeof consumerEnvironment>,
    messageId: string,
    body: Record<string, unknown>,
    extra: { receiveCount?: number; stringAttributes?: Record<string, string> } = {},
  ) => (await environment.handler(sqsEvent(sourceRecord(env, messageId, body, extra)), lambdaContext())) as SQSBatchResponse;
  const account = (accountId: string) => storedItem(env, 'accounts', accountKey(accountId));

  it('a fresh event commits its home item alone, marked; no inbox row; decide never sees the marks', async () => {
    const e1 = consumerEnvironment(env, options);
    expect(await deliver(e1, 'm-1', { eventId: 'e-1', type: 'Deposit', accountId: 'A1', amount: 5 })).toEqual({ batchItemFailures: [] });
    expect(await deliver(e1, 'm-2', { eventId: 'e-2', type: 'Deposit', accountId: 'A1', amount: 7 })).toEqual({ batchItemFailures: [] });
    const stored = (await account('A1')) as Item;
    expect(stored.balance).toBe(12);
    expect(Object.keys(stored._inbox as object).sort()).toEqual(['accounts#e-1', 'accounts#e-2']);
    expect((stored._inbox as Record<string, Item>)['accounts#e-1']).toMatchObject({ m: 'm-1', h: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(seen.get('e-2')).toEqual(['_version', 'balance', 'frozen', 'pk']);
    expect(await inboxRowOf(env, 'e-1')).toBeUndefined();
    expect(outcomeList(e1.outcomes)).toEqual(['m-1:applied', 'm-2:applied']);
  });

  it('a redelivery is a duplicate in the same environment and in a new one; a reused key with another payload is a conflict', async () => {
    const e1 = consumerEnvironment(env, options);
    await deliver(e1, 'm-3', { eventId: 'e-3', type: 'Deposit', accountId: 'A2', amount: 1 });
    await deliver(e1, 'm-3', { eventId: 'e-3', type: 'Deposit', accountId: 'A2', amount: 1 }, { receiveCount: 2 });
    const e2 = consumerEnvironment(env, options);
    await deliver(e2, 'm-3', { eventId: 'e-3', type: 'Deposit', accountId: 'A2', amount: 1 }, { receiveCount: 3 });
    await deliver(e2, 'm-3b', { eventId: 'e-3', type: 'Deposit', accountId: 'A2', amount: 2 });
    expect((await account('A2'))?.balance).toBe(1);
    expect(outcomeList([...e1.outcomes, ...e2.outcomes])).toEqual(['m-3:applied', 'm-3:duplicate', 'm-3:duplicate', 'm-3b:dead-lettered']);
    const conflict = (await deadLetters(env)).find((m) => JSON.parse(m.Body ?? '{}').eventId === 'e-3');
    expect(conflict?.MessageAttributes?.['ic.failureReason']?.StringValue).toBe('IdempotencyConflict');
  });

  it('a deleted home item becomes a stub that decide sees as absent; the delete is not applied twice; a re-created item keeps the marks', async () => {
    const e1 = consumerEnvironment(env, options);
    await deliver(e1, 'm-4', { eventId: 'e-4', type: 'Deposit', accountId: 'A3', amount: 3 });
    await deliver(e1, 'm-5', { eventId: 'e-5', type: 'Close', accountId: 'A3' });
    const stub = (await account('A3')) as Item;
    expect(stub).toMatchObject({ pk: 'account#A3', _inboxStub: true });
    expect(stub.balance).toBeUndefined();
    expect(Object.keys(stub._inbox as object).sort()).toEqual(['accounts#e-4', 'accounts#e-5']);
    // A new environment: the delete comes again (a duplicate), then a deposit on the absent account.
    const e2 = consumerEnvironment(env, options);
    await deliver(e2, 'm-5', { eventId: 'e-5', type: 'Close', accountId: 'A3' }, { receiveCount: 2 });
    await deliver(e2, 'm-4', { eventId: 'e-4', type: 'Deposit', accountId: 'A3', amount: 3 }, { receiveCount: 2 });
    await deliver(e2, 'm-6', { eventId: 'e-6', type: 'Deposit', accountId: 'A3', amount: 10 });
    expect(seen.get('e-6')).toBe('absent');
    const recreated = (await account('A3')) as Item;
    expect(recreated.balance).toBe(10);
    expect(recreated._inboxStub).toBeUndefined();
    expect(Object.keys(recreated._inbox as object).sort()).toEqual(['accounts#e-4', 'accounts#e-5', 'accounts#e-6']);
    expect(outcomeList(e2.outcomes)).toEqual(['m-5:duplicate', 'm-4:duplicate', 'm-6:applied']);
  });

  it('an event that writes nothing leaves a stub with its mark; an Update carries its mark; a blind Put keeps the marks it finds', async () => {
    const e1 = consumerEnvironment(env, options);
    await deliver(e1, 'm-7', { eventId: 'e-7', type: 'Ping', accountId: 'A4' });
    expect(await account('A4')).toMatchObject({ _inboxStub: true, _inbox: { 'accounts#e-7': { m: 'm-7' } } });
    await deliver(e1, 'm-8', { eventId: 'e-8', type: 'Bonus', accountId: 'A4', amount: 4 });
    const updated = (await account('A4')) as Item;
    expect(updated.balance).toBe(4);
    expect(updated._inboxStub).toBeUndefined();
    expect(Object.keys(updated._inbox as object).sort()).toEqual(['accounts#e-7', 'accounts#e-8']);
    // Another environment resets A4 blindly (its own home is A5), then A4's events come again.
    const e2 = consumerEnvironment(env, options);
    await deliver(e2, 'm-9', { eventId: 'e-9', type: 'Reset', accountId: 'A5', target: 'A4' });
    await deliver(e2, 'm-10', { eventId: 'e-10', type: 'Audit', accountId: 'A5', note: 'checked' });
    const reset = (await account('A4')) as Item;
    expect(reset.balance).toBe(0);
    expect(Object.keys(reset._inbox as object).sort()).toEqual(['accounts#e-7', 'accounts#e-8']);
    const e3 = consumerEnvironment(env, options);
    await deliver(e3, 'm-8', { eventId: 'e-8', type: 'Bonus', accountId: 'A4', amount: 4 }, { receiveCount: 2 });
    expect((await account('A4'))?.balance).toBe(0);
    expect(await storedItem(env, 'accounts', { pk: 'audit#A5' })).toMatchObject({ note: 'checked' });
    expect(outcomeList([...e1.outcomes, ...e2.outcomes, ...e3.outcomes])).toEqual([
      'm-7:applied',
      'm-8:applied',
      'm-9:applied',
      'm-10:applied',
      'm-8:duplicate',
    ]);
  });

  it('a dead letter marks its home and writes its row; a copy is a duplicate of the dead letter; its redrive applies it', async () => {
    const e1 = consumerEnvironment(env, options);
    await deliver(e1, 'm-11', { eventId: 'e-11', type: 'Deposit', accountId: 'A6', amount: -1 });
    await deliver(e1, 'm-12', { eventId: 'e-12', type: 'Deposit', accountId: 'A6', amount: 2 });
    expect(await account('A6')).toMatchObject({ balance: -1, frozen: true });
    expect((await account('A6'))?._inbox).toMatchObject({ 'accounts#e-12': { s: 'dead-lettered', r: 'Frozen', m: 'm-12' } });
    expect(await inboxRowOf(env, 'e-12')).toMatchObject({ status: 'dead-lettered', messageId: 'm-12' });
    // A producer's copy (another message id) in a new environment: a duplicate of the dead letter.
    const e2 = consumerEnvironment(env, options);
    await deliver(e2, 'm-12-copy', { eventId: 'e-12', type: 'Deposit', accountId: 'A6', amount: 2 });
    // Unfreeze by hand, as an operator would (with a new version), then redrive the dead letter.
    await env.documentClient.send(
      new UpdateCommand({
        TableName: env.resources.tables.accounts!,
        Key: accountKey('A6'),
        UpdateExpression: 'SET frozen = :f, #v = :v',
        ExpressionAttributeNames: { '#v': '_version' },
        ExpressionAttributeValues: { ':f': false, ':v': 'by-hand' },
      }),
    );
    const e3 = consumerEnvironment(env, options);
    await deliver(
      e3,
      'm-12-redrive',
      { eventId: 'e-12', type: 'Deposit', accountId: 'A6', amount: 2 },
      { stringAttributes: { 'ic.redrive': 'm-12' } },
    );
    expect(outcomeList([...e1.outcomes, ...e2.outcomes, ...e3.outcomes])).toEqual([
      'm-11:applied',
      'm-12:dead-lettered',
      'm-12-copy:duplicate',
      'm-12-redrive:applied',
    ]);
    const redriven = (await account('A6')) as Item;
    expect(redriven.balance).toBe(1);
    expect((redriven._inbox as Record<string, Item>)['accounts#e-12']).toMatchObject({ m: 'm-12-redrive' });
    expect((redriven._inbox as Record<string, Item>)['accounts#e-12']?.s).toBeUndefined();
    expect(await inboxRowOf(env, 'e-12')).toMatchObject({ status: 'applied', messageId: 'm-12-redrive' });
    // Over the whole file: the only inbox row is the redriven dead letter's; every other record is a mark.
    expect((await inboxRows(env)).map((row) => `${row.idempotencyKey}:${row.status}`)).toEqual(['e-12:applied']);
  });
});
