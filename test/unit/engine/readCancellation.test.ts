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
