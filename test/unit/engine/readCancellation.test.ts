import { marshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { readCancellation } from '../../../packages/idempotent-consumer/src/engine/readCancellation.js';
import type { ActionRole, ItemOp } from '../../../packages/idempotent-consumer/src/engine/Unit.js';
import { accountKey, unit } from './fixtures.js';

const base = { exists: true, item: { id: 'A', n: 1, _version: 'v1' }, verified: false } as const;
function op(overrides: Partial<ItemOp> = {}): ItemOp {
  return {
    key: accountKey('A'),
    base,
    inReadSet: true,
    kind: 'put',
    current: { id: 'A', n: 2, _version: 'v2' },
    write: { Put: { TableName: 'accounts', Item: { id: 'A', n: 2 } } },
    opaque: false,
    version: 'v2',
    authors: [],
    readers: [],
    ...overrides,
  };
}
const failed = (item?: Record<string, unknown>) => ({
  Code: 'ConditionalCheckFailed',
  ...(item === undefined ? {} : { Item: marshall(item) }),
});

describe('readCancellation: the reasons name the culprits', () => {
  it('finds a duplicate by its inbox row, returned with the reason', () => {
    const u = unit({});
    const roles: ActionRole[] = [
      { role: 'inbox', unit: u },
      { role: 'outbox', unit: u },
    ];
    const reading = readCancellation(
      roles,
      [failed({ pk: 'c#key#k', payloadHash: 'h', messageId: 'm-0', status: 'applied', idempotencyKey: 'k' }), failed()],
      '_version',
    );
    expect(reading.inboxRows).toEqual([{ unit: u, row: { status: 'applied', idempotencyKey: 'k', payloadHash: 'h', messageId: 'm-0' } }]);
    expect(reading.consistentView).toBe(true);
  });

  it('reads a refused outbox item as the key applied when nothing else of its unit failed: its payload hash decides (a duplicate, or an IdempotencyConflict)', () => {
    const u = unit({});
    const outboxItem = (extra: Record<string, unknown>) => ({
      pk: 'c#outbox#id',
      kind: 'outbox',
      idempotencyKey: u.idempotencyKey,
      messageId: 'out-1',
      position: 0,
      ...extra,
    });
    const withHash = readCancellation([{ role: 'outbox', unit: u }], [failed(outboxItem({ sourcePayloadHash: 'h-earlier' }))], '_version');
    expect(withHash.inboxRows).toEqual([
      { unit: u, row: { status: 'applied', idempotencyKey: u.idempotencyKey, payloadHash: 'h-earlier', messageId: 'out-1' } },
    ]);
    expect(withHash.unexplained.size).toBe(0);
    // Written before items carried the hash: never taken for this event's (no event dropped on a guess).
    const without = readCancellation([{ role: 'outbox', unit: u }], [failed(outboxItem({}))], '_version');
    expect(without.inboxRows[0]?.row.payloadHash).not.toBe(u.payloadHash);
    // The unit's own inbox row, when it failed too, is the record read; the outbox item adds nothing.
    const both = readCancellation(
      [
        { role: 'inbox', unit: u },
        { role: 'outbox', unit: u },
      ],
      [
        failed({ pk: 'c#key#k', payloadHash: 'h-row', messageId: 'm-0', status: 'applied', idempotencyKey: u.idempotencyKey }),
        failed(outboxItem({ sourcePayloadHash: 'h-earlier' })),
      ],
      '_version',
    );
    expect(both.inboxRows.map(({ row }) => row.payloadHash)).toEqual(['h-row']);
  });

  it('counts a failed condition that nothing explains (no item returned) as unexplained, never as settled', () => {
    const u = unit({});
    const other = unit({});
    const reading = readCancellation(
      [
        { role: 'outbox', unit: u },
        { role: 'inbox', unit: other },
      ],
      [failed(), { Code: 'None' }],
      '_version',
    );
    expect([...reading.unexplained]).toEqual([u]);
    expect(reading.inboxRows).toEqual([]);
  });

  it('reads an inbox row under inboxHome as a row, and a mark check on the home (mark) as the mark', () => {
    const u = { ...unit({}), home: accountKey('A') };
    const home = { table: 'accounts', attribute: '_inbox' } as never;
    const row = { pk: 'c#key#k', payloadHash: 'h-row', messageId: 'm-0', status: 'applied', idempotencyKey: u.idempotencyKey };
    const asRow = readCancellation([{ role: 'inbox', unit: u }], [failed(row)], '_version', home, 'c');
    expect(asRow.inboxRows.map(({ row: found }) => found.payloadHash)).toEqual(['h-row']);
    const marked = { id: 'A', _inbox: { [`c#${u.idempotencyKey}`]: { h: 'h-mark', m: 'm-1', x: 9_999_999_999 } } };
    const asMark = readCancellation([{ role: 'inbox', unit: u, mark: true }], [failed(marked)], '_version', home, 'c');
    expect(asMark.inboxRows.map(({ row: found }) => found.payloadHash)).toEqual(['h-mark']);
  });

  it('decides again the units of an item that changed (another incarnation), with the item as it is', () => {
    const author = unit({});
    const reader = unit({});
    const reading = readCancellation(
      [{ role: 'item', op: op({ authors: [author], readers: [reader] }) }],
      [failed({ id: 'A', n: 5, _version: 'v9' })],
      '_version',
    );
    expect([...reading.stale]).toEqual([author, reader]);
    expect(reading.observed.get(accountKey('A').id)).toEqual({ exists: true, item: { id: 'A', n: 5, _version: 'v9' }, verified: true });
    expect(reading.conditionFailures).toEqual([]);
  });

  it('takes an item deleted and re-created for another incarnation (C23)', () => {
    const author = unit({});
    const reading = readCancellation(
      [{ role: 'item', op: op({ authors: [author] }) }],
      [failed({ id: 'A', n: 1, _version: 'v1-recreated' })],
      '_version',
    );
    expect(reading.stale.has(author)).toBe(true);
  });

  it('says a user condition failed when the item is the incarnation believed', () => {
    const author = unit({});
    const write = {
      Put: { TableName: 'accounts', Item: { id: 'A' }, ConditionExpression: 'n > :z', ExpressionAttributeValues: { ':z': 3 } },
    };
    const reading = readCancellation([{ role: 'item', op: op({ authors: [author], write }) }], [failed(base.item)], '_version');
    expect(reading.conditionFailures).toEqual([{ unit: author, message: 'the condition of its put on accounts failed' }]);
    expect(reading.stale.size).toBe(0);
  });

  it('says the condition of a blind write failed', () => {
    const author = unit({});
    const reading = readCancellation(
      [{ role: 'item', op: op({ inReadSet: false, authors: [author], kind: 'delete' }) }],
      [failed({ id: 'A' })],
      '_version',
    );
    expect(reading.conditionFailures).toEqual([{ unit: author, message: 'the condition of its delete on accounts failed' }]);
  });

  it('blames contention on the units of the action that lost, not on the others of the transaction', () => {
    const [a, b, c] = [unit({}), unit({}), unit({})];
    const roles: ActionRole[] = [
      { role: 'inbox', unit: a },
      { role: 'item', op: op({ authors: [a] }) },
      { role: 'inbox', unit: b },
      { role: 'item', op: op({ key: accountKey('B'), authors: [b] }) },
      { role: 'inbox', unit: c },
    ];
    const reading = readCancellation(
      roles,
      [{ Code: 'None' }, { Code: 'TransactionConflict' }, { Code: 'None' }, { Code: 'None' }, { Code: 'SomethingNew' }],
      '_version',
    );
    expect([...reading.contended]).toEqual([a, c]);
    expect(reading.consistentView).toBe(false);
    expect(reading.observed.get(accountKey('B').id)).toEqual({ ...base, verified: true });
  });

  it('blames a refused action on its last author, or on its readers', () => {
    const [a, b, r] = [unit({}), unit({}), unit({})];
    const reading = readCancellation(
      [
        { role: 'item', op: op({ authors: [a, b] }) },
        { role: 'item', op: op({ key: accountKey('B'), authors: [], readers: [r], kind: 'check' }) },
        { role: 'outbox', unit: a },
      ],
      [
        { Code: 'ValidationError', Message: 'Item size has exceeded the maximum allowed size' },
        { Code: 'ItemCollectionSizeLimitExceeded' },
        { Code: 'ValidationError' },
      ],
      '_version',
    );
    expect(reading.refused.map((x) => x.units)).toEqual([[b], [r], [a]]);
    expect(reading.refused[0]?.message).toBe('DynamoDB refused it (ValidationError): Item size has exceeded the maximum allowed size');
  });

  it('reads an item without a version attribute, and reasons fewer than the actions as no consistent view', () => {
    const author = unit({});
    const reading = readCancellation(
      [
        { role: 'item', op: op({ authors: [author], base: { exists: false, item: undefined, verified: false } }) },
        { role: 'inbox', unit: author },
      ],
      [failed({ id: 'A' })],
      '_version',
    );
    expect(reading.stale.has(author)).toBe(true);
    expect(reading.consistentView).toBe(false);
  });
});
