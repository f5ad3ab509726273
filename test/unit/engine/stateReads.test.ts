import { NumberValue } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import {
  inboxId,
  readConsistently,
  readSnapshot,
  type StateReadDeps,
} from '../../../packages/idempotent-consumer/src/engine/stateReads.js';
import type { Unit } from '../../../packages/idempotent-consumer/src/engine/Unit.js';
import { cancelled, FakeDynamoDb, recordingLogger, sdkError } from './fakeDynamoDb.js';
import { accountKey, tableNames, tables, unit } from './fixtures.js';

const config = { inboxTable: 'inbox', consumerName: 'c', tables: tableNames };

function depsOf(fake: FakeDynamoDb) {
  const sleeps: number[] = [];
  const { logger, lines } = recordingLogger();
  const deps: StateReadDeps = { client: fake.client, config, tables, sleep: async (ms) => void sleeps.push(ms), logger };
  return { deps, sleeps, lines };
}

const inboxRow = (key: string, extra: Record<string, unknown> = {}) => ({
  pk: `c#key#${key}`,
  idempotencyKey: key,
  payloadHash: `hash-${key}`,
  status: 'applied',
  messageId: 'm-old',
  ...extra,
});

/** Answers a BatchGetItem with the items of `stored` it asks for (by table and key), all processed. */
function storedItems(stored: Record<string, Record<string, unknown>[]>) {
  return (input: { RequestItems: Record<string, { Keys: Record<string, unknown>[] }> }) => {
    const Responses: Record<string, Record<string, unknown>[]> = {};
    for (const [table, { Keys }] of Object.entries(input.RequestItems)) {
      Responses[table] = (stored[table] ?? []).filter((item) =>
        Keys.some((key) => Object.entries(key).every(([name, value]) => item[name] === value)),
      );
    }
    return { Responses, UnprocessedKeys: {} };
  };
}

describe('readConsistently', () => {
  it('reads the units’ inbox rows and items in one strongly consistent BatchGetItem, each item once', async () => {
    const fake = new FakeDynamoDb().always(
      'BatchGetCommand',
      storedItems({ inbox: [inboxRow('k1')], 'phys-accounts': [{ id: 'A', n: 1 }] }),
    );
    const units = [
      unit({ key: 'k1', account: 'A' }, { index: 0 }),
      unit({ key: 'k2', account: 'A' }, { index: 1 }),
      unit({ key: 'k3', account: 'B' }, { index: 2 }),
    ];
    const { deps } = depsOf(fake);
    const read = await readConsistently(units, deps);
    expect(fake.names()).toEqual(['BatchGetCommand']);
    expect(fake.inputs('BatchGetCommand')[0].RequestItems).toEqual({
      inbox: { Keys: [{ pk: 'c#key#k1' }, { pk: 'c#key#k2' }, { pk: 'c#key#k3' }], ConsistentRead: true },
      'phys-accounts': { Keys: [{ id: 'A' }, { id: 'B' }], ConsistentRead: true },
    });
    expect(read.found.get(inboxId(units[0]!))).toMatchObject({ payloadHash: 'hash-k1' });
    expect(read.found.has(inboxId(units[1]!))).toBe(true);
    expect(read.found.get(inboxId(units[1]!))).toBeUndefined();
    expect(read.found.get(accountKey('A').id)).toEqual({ id: 'A', n: 1 });
    expect(read.found.has(accountKey('B').id)).toBe(true);
    expect(read.found.get(accountKey('B').id)).toBeUndefined();
    expect(read.unread.size).toBe(0);
  });

  it('matches an item to its id by its key, whatever the form of its key values', async () => {
    const fake = new FakeDynamoDb().always('BatchGetCommand', {
      Responses: { 'phys-lines': [{ id: 'L', n: new NumberValue('1.0'), text: 'one' }], inbox: [] },
    });
    const line = unit({ key: 'k', account: 'L' }, { index: 0, reads: [{ table: 'lines', key: { id: 'L', n: 1 } }] });
    const read = await readConsistently([line], depsOf(fake).deps);
    expect(read.found.get(line.reads[0]!.id)).toMatchObject({ text: 'one' });
  });

  it('ignores what it did not ask for: an item of another table, an inbox item without a key', async () => {
    const fake = new FakeDynamoDb().always('BatchGetCommand', {
      Responses: {
        inbox: [{ pk: 'c#key#k', payloadHash: 'h' }],
        'phys-other': [{ id: 'A' }],
        'phys-accounts': [{ id: 'Z' }, { name: 'no key' }],
      },
    });
    const u = unit({ key: 'k', account: 'A' }, { index: 0 });
    const read = await readConsistently([u], depsOf(fake).deps);
    expect([...read.found]).toEqual([
      [inboxId(u), undefined],
      [accountKey('A').id, undefined],
    ]);
  });

  it('asks again, after a backoff, for the keys DynamoDB left unprocessed', async () => {
    const fake = new FakeDynamoDb()
      .next('BatchGetCommand', { UnprocessedKeys: { 'phys-accounts': { Keys: [{ id: 'A' }, { id: 'never-asked' }] }, inbox: {} } })
      .always('BatchGetCommand', storedItems({ 'phys-accounts': [{ id: 'A', n: 2 }] }));
    const u = unit({ key: 'k1', account: 'A' }, { index: 0 });
    const { deps, sleeps } = depsOf(fake);
    const read = await readConsistently([u], deps);
    expect(fake.inputs('BatchGetCommand')[1].RequestItems).toEqual({ 'phys-accounts': { Keys: [{ id: 'A' }], ConsistentRead: true } });
    expect(sleeps).toHaveLength(1);
    expect(sleeps[0]).toBeGreaterThanOrEqual(40);
    expect(read.found.get(accountKey('A').id)).toEqual({ id: 'A', n: 2 });
    // The inbox row, processed (and absent), is not asked again.
    expect(read.found.has(inboxId(u))).toBe(true);
    expect(read.found.get(inboxId(u))).toBeUndefined();
    expect(read.unread.size).toBe(0);
  });

  it('reports a unit unread when its keys stay unprocessed after four rounds; the others are read', async () => {
    const fake = new FakeDynamoDb().always('BatchGetCommand', (input: { RequestItems: Record<string, { Keys: { id?: string }[] }> }) => ({
      Responses: { 'phys-accounts': (input.RequestItems['phys-accounts']?.Keys ?? []).filter((k) => k.id === 'B') },
      UnprocessedKeys: input.RequestItems['phys-accounts']?.Keys.some((k) => k.id === 'A')
        ? { 'phys-accounts': { Keys: [{ id: 'A' }] } }
        : {},
    }));
    const throttled = unit({ key: 'k1', account: 'A' }, { index: 0 });
    const fine = unit({ key: 'k2', account: 'B' }, { index: 1 });
    const { deps, sleeps } = depsOf(fake);
    const read = await readConsistently([throttled, fine], deps);
    expect(fake.calls).toHaveLength(4);
    expect(sleeps).toHaveLength(3);
    expect((read.unread.get(throttled) as Error).message).toBe('DynamoDB left its key unprocessed (throttled)');
    expect(read.unread.has(fine)).toBe(false);
    expect(read.found.get(accountKey('B').id)).toEqual({ id: 'B' });
  });

  it('reports every unit of a chunk whose BatchGetItem fails, with the error, and logs it', async () => {
    const throttled = sdkError('ProvisionedThroughputExceededException', 'slow down');
    const fake = new FakeDynamoDb().always('BatchGetCommand', throttled);
    const units = [unit({ key: 'k1', account: 'A' }, { index: 0 }), unit({ key: 'k2', account: 'B' }, { index: 1 })];
    const { deps, lines } = depsOf(fake);
    const read = await readConsistently(units, deps);
    expect(read.unread.get(units[0]!)).toBe(throttled);
    expect(read.unread.get(units[1]!)).toBe(throttled);
    expect(read.found.size).toBe(0);
    expect(lines).toEqual([
      {
        level: 'warn',
        message: 'could not read the state consistently; the messages will be retried',
        extra: { error: { name: 'ProvisionedThroughputExceededException', message: 'slow down' } },
      },
    ]);
  });

  it('splits more than 100 keys into BatchGetItems of 100, a failed one failing only its units', async () => {
    const units = Array.from({ length: 60 }, (_, i) => unit({ key: `k${i}`, account: `A${i}` }, { index: i }));
    const fake = new FakeDynamoDb().next('BatchGetCommand', { Responses: {} }).next('BatchGetCommand', sdkError('InternalServerError'));
    const read = await readConsistently(units, depsOf(fake).deps);
    const sizes = fake
      .inputs('BatchGetCommand')
      .map((input: { RequestItems: Record<string, { Keys: unknown[] }> }) =>
        Object.values(input.RequestItems).reduce((sum, t) => sum + t.Keys.length, 0),
      );
    expect(sizes).toEqual([100, 20]);
    // Ids in order: each unit's inbox row, then its account; the first 100 are the first 50 units'.
    expect([...read.unread.keys()].map((u) => u.index)).toEqual([50, 51, 52, 53, 54, 55, 56, 57, 58, 59]);
    expect(read.found.size).toBe(100);
  });

  it('fails a unit whose read (not its inbox row) could not be read', async () => {
    const fake = new FakeDynamoDb();
    const units: Unit[] = Array.from({ length: 50 }, (_, i) => unit({ key: `k${i}`, account: `A${i}` }, { index: i }));
    // The 51st unit's inbox row is id 101 (second chunk); make it read the first unit's account (first chunk) too.
    const last = unit({ key: 'k50', account: 'A0' }, { index: 50 });
    fake.next('BatchGetCommand', sdkError('InternalServerError')).next('BatchGetCommand', { Responses: {} });
    const read = await readConsistently([...units, last], depsOf(fake).deps);
    expect(read.unread.has(last)).toBe(true);
    expect(read.found.get(inboxId(last))).toBeUndefined();
    expect(read.found.has(inboxId(last))).toBe(true);
  });
});

describe('readSnapshot', () => {
  it('reads the units’ inbox rows and items in one TransactGetItems, by position', async () => {
    const fake = new FakeDynamoDb().always('TransactGetCommand', {
      Responses: [{ Item: inboxRow('k1') }, { Item: { id: 'A', n: 3 } }, {}],
    });
    const units = [unit({ key: 'k1', account: 'A' }, { index: 0 }), unit({ key: 'k2', account: 'A' }, { index: 1 })];
    const read = await readSnapshot(units, depsOf(fake).deps);
    expect(fake.inputs('TransactGetCommand')[0].TransactItems).toEqual([
      { Get: { TableName: 'inbox', Key: { pk: 'c#key#k1' } } },
      { Get: { TableName: 'phys-accounts', Key: { id: 'A' } } },
      { Get: { TableName: 'inbox', Key: { pk: 'c#key#k2' } } },
    ]);
    expect(read.found.get(inboxId(units[0]!))).toMatchObject({ payloadHash: 'hash-k1' });
    expect(read.found.get(accountKey('A').id)).toEqual({ id: 'A', n: 3 });
    expect(read.found.has(inboxId(units[1]!))).toBe(true);
    expect(read.found.get(inboxId(units[1]!))).toBeUndefined();
    expect(read.unread.size).toBe(0);
  });

  it('takes each unit’s items in one chunk of at most 100 distinct items', async () => {
    const reads = (i: number) => [
      { table: 'accounts', key: { id: `A${i}` } },
      { table: 'accounts', key: { id: 'shared' } },
    ];
    // Each chunk: the shared account once, then each unit's inbox row and account: 49 units take 99 items, the 11 left 23.
    const units = Array.from({ length: 60 }, (_, i) => unit({ key: `k${i}`, account: `A${i}` }, { index: i, reads: reads(i) }));
    const fake = new FakeDynamoDb().always('TransactGetCommand', (input: { TransactItems: unknown[] }) => ({
      Responses: input.TransactItems.map(() => ({})),
    }));
    const read = await readSnapshot(units, depsOf(fake).deps);
    const sizes = fake.inputs('TransactGetCommand').map((input: { TransactItems: unknown[] }) => input.TransactItems.length);
    expect(sizes).toEqual([99, 23]);
    expect(sizes.every((size: number) => size <= 100)).toBe(true);
    expect(read.found.size).toBe(60 * 2 + 1);
  });

  it('reads a snapshot a concurrent transaction cancelled again', async () => {
    const fake = new FakeDynamoDb()
      .next('TransactGetCommand', cancelled([{ Code: 'TransactionConflict' }, { Code: 'None' }]))
      .always('TransactGetCommand', { Responses: [{}, { Item: { id: 'A' } }] });
    const u = unit({ key: 'k', account: 'A' }, { index: 0 });
    const { deps, sleeps } = depsOf(fake);
    const read = await readSnapshot([u], deps);
    expect(fake.calls).toHaveLength(2);
    expect(sleeps).toHaveLength(1);
    expect(read.found.get(accountKey('A').id)).toEqual({ id: 'A' });
    expect(read.unread.size).toBe(0);
  });

  it('gives up after three cancelled tries: its units are unread, with the last error', async () => {
    const last = cancelled([{ Code: 'TransactionConflict' }]);
    const fake = new FakeDynamoDb().next(
      'TransactGetCommand',
      cancelled([{ Code: 'TransactionConflict' }]),
      cancelled([{ Code: 'TransactionConflict' }]),
      last,
    );
    const u = unit({ key: 'k', account: 'A' }, { index: 0 });
    const { deps, lines } = depsOf(fake);
    const read = await readSnapshot([u], deps);
    expect(fake.calls).toHaveLength(3);
    expect(read.unread.get(u)).toBe(last);
    expect(read.found.size).toBe(0);
    expect(lines.map((line) => line.message)).toEqual(['could not read a consistent snapshot; the messages will be retried']);
  });

  it('does not try again after another error', async () => {
    const refused = sdkError('ValidationException', 'bad key');
    const fake = new FakeDynamoDb().always('TransactGetCommand', refused);
    const units = [unit({ key: 'k1', account: 'A' }, { index: 0 }), unit({ key: 'k2', account: 'B' }, { index: 1 })];
    const { deps, sleeps } = depsOf(fake);
    const read = await readSnapshot(units, deps);
    expect(fake.calls).toHaveLength(1);
    expect(sleeps).toHaveLength(0);
    expect(read.unread.get(units[0]!)).toBe(refused);
    expect(read.unread.get(units[1]!)).toBe(refused);
  });

  it('treats an answer without responses as every item absent', async () => {
    const fake = new FakeDynamoDb().always('TransactGetCommand', {});
    const u = unit({ key: 'k', account: 'A' }, { index: 0 });
    const read = await readSnapshot([u], { ...depsOf(fake).deps, logger: undefined } as StateReadDeps);
    expect([...read.found]).toEqual([
      [inboxId(u), undefined],
      [accountKey('A').id, undefined],
    ]);
  });
});
