import { describe, expect, it } from 'vitest';
import {
  inboxAction,
  itemAction,
  outboxActions,
  preflightActions,
  usedPlaceholders,
} from '../../../packages/idempotent-consumer/src/engine/transactionActions.js';
import type { ItemOp } from '../../../packages/idempotent-consumer/src/engine/Unit.js';
import { accountKey, definitionOf, unit } from './fixtures.js';

const definition = definitionOf(() => ({}));
const config = { inboxTable: 'inbox', consumerName: 'c', inboxTtlSeconds: 60 };
const at = new Date('2026-01-01T00:00:00Z');
function op(overrides: Partial<ItemOp>): ItemOp {
  return {
    key: accountKey('A'),
    base: { exists: true, item: { id: 'A', _version: 'v1' }, verified: false },
    inReadSet: true,
    kind: 'check',
    current: undefined,
    write: undefined,
    opaque: false,
    version: 'v2',
    authors: [],
    readers: [],
    ...overrides,
  };
}

describe('transactionActions', () => {
  it("writes the inbox row on the key's absence, or, for a redrive, over its dead letter's marker (C27)", () => {
    const plain = inboxAction(unit({ key: 'k' }, { messageId: 'm-3' }), config, at);
    expect(plain.Put).toMatchObject({
      TableName: 'inbox',
      ConditionExpression: 'attribute_not_exists(#pk)',
      Item: { pk: 'c#key#k', status: 'applied', messageId: 'm-3', expiresAt: 1767225660 },
    });
    expect(plain.Put?.ExpressionAttributeValues).toBeUndefined();
    const redrive = inboxAction(unit({ key: 'k' }, { messageId: 'm-9', redriveOf: 'm-1' }), config, at);
    expect(redrive.Put).toMatchObject({
      ConditionExpression: 'attribute_not_exists(#pk) OR (#status = :deadLettered AND #messageId = :redriveOf)',
      ExpressionAttributeValues: { ':deadLettered': 'dead-lettered', ':redriveOf': 'm-1' },
    });
  });

  it('writes outbox items with stable ids per key and position', () => {
    const [first, second] = outboxActions(unit({ key: 'k' }), [{ body: { a: 1 } }, { body: 'text', destination: 'audit' }], config, at);
    expect(first?.Put?.Item).toMatchObject({ kind: 'outbox', body: '{"a":1}', position: 0, destination: 'default' });
    expect(second?.Put?.Item).toMatchObject({ body: 'text', position: 1, destination: 'audit' });
    expect(first?.Put?.Item?.pk).not.toBe(second?.Put?.Item?.pk);
  });

  it('puts a read item on the condition that it is the incarnation believed, with a new version', () => {
    const action = itemAction(op({ kind: 'put', current: { id: 'A', n: 1, _version: 'v2' } }), definition);
    expect(action?.Put).toEqual({
      TableName: 'phys-accounts',
      Item: { id: 'A', n: 1, _version: 'v2' },
      ConditionExpression: '#__ic_v = :__ic_v',
      ExpressionAttributeNames: { '#__ic_v': '_version' },
      ExpressionAttributeValues: { ':__ic_v': 'v1' },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    });
  });

  it("ANDs the user's condition of an update and sets the new version", () => {
    const write = {
      Update: {
        TableName: 'accounts',
        Key: { id: 'A' },
        UpdateExpression: 'ADD #n :one',
        ConditionExpression: '#n < :max',
        ExpressionAttributeNames: { '#n': 'n' },
        ExpressionAttributeValues: { ':one': 1, ':max': 9 },
      },
    };
    const action = itemAction(op({ kind: 'update', write, base: { exists: false, item: undefined, verified: false } }), definition);
    expect(action?.Update).toEqual({
      TableName: 'phys-accounts',
      Key: { id: 'A' },
      UpdateExpression: 'ADD #n :one SET #__ic_v = :__ic_next',
      ConditionExpression: '(#n < :max) AND (attribute_not_exists(#__ic_pk))',
      ExpressionAttributeNames: { '#n': 'n', '#__ic_pk': 'id', '#__ic_v': '_version' },
      ExpressionAttributeValues: { ':one': 1, ':max': 9, ':__ic_next': 'v2' },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    });
  });

  it('deletes, or checks, an item read', () => {
    expect(itemAction(op({ kind: 'delete' }), definition)?.Delete).toMatchObject({
      Key: { id: 'A' },
      ConditionExpression: '#__ic_v = :__ic_v',
    });
    expect(
      itemAction(op({ kind: 'check', base: { exists: true, item: { id: 'A' }, verified: false } }), definition)?.ConditionCheck,
    ).toMatchObject({
      ConditionExpression: 'attribute_exists(#__ic_pk) AND attribute_not_exists(#__ic_v)',
    });
  });

  it('sends a blind write as given, with a new version on a put or an update (C24)', () => {
    const put = itemAction(
      op({
        inReadSet: false,
        kind: 'put',
        current: { id: 'A', x: 1, _version: 'v2' },
        write: { Put: { TableName: 'accounts', Item: { id: 'A', x: 1 }, ConditionExpression: 'attribute_not_exists(id)' } },
      }),
      definition,
    );
    expect(put?.Put).toEqual({
      TableName: 'phys-accounts',
      Item: { id: 'A', x: 1, _version: 'v2' },
      ConditionExpression: 'attribute_not_exists(id)',
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    });
    const update = itemAction(
      op({
        inReadSet: false,
        kind: 'update',
        write: {
          Update: { TableName: 'accounts', Key: { id: 'A' }, UpdateExpression: 'ADD views :one', ExpressionAttributeValues: { ':one': 1 } },
        },
      }),
      definition,
    );
    expect(update?.Update).toEqual({
      TableName: 'phys-accounts',
      Key: { id: 'A' },
      UpdateExpression: 'ADD views :one SET #__ic_v = :__ic_next',
      ExpressionAttributeNames: { '#__ic_v': '_version' },
      ExpressionAttributeValues: { ':one': 1, ':__ic_next': 'v2' },
    });
    const del = itemAction(
      op({ inReadSet: false, kind: 'delete', write: { Delete: { TableName: 'accounts', Key: { id: 'A' } } } }),
      definition,
    );
    expect(del).toEqual({ Delete: { TableName: 'phys-accounts', Key: { id: 'A' } } });
  });

  it('sets the version of a blind update without values of its own, and returns the item of a blind check that fails', () => {
    const update = itemAction(
      op({
        inReadSet: false,
        kind: 'update',
        write: { Update: { TableName: 'accounts', Key: { id: 'A' }, UpdateExpression: 'REMOVE note' } },
      }),
      definition,
    );
    expect(update?.Update).toEqual({
      TableName: 'phys-accounts',
      Key: { id: 'A' },
      UpdateExpression: 'REMOVE note SET #__ic_v = :__ic_next',
      ExpressionAttributeNames: { '#__ic_v': '_version' },
      ExpressionAttributeValues: { ':__ic_next': 'v2' },
    });
    const check = itemAction(
      op({
        inReadSet: false,
        kind: 'check',
        write: { ConditionCheck: { TableName: 'accounts', Key: { id: 'A' }, ConditionExpression: 'attribute_exists(id)' } },
      }),
      definition,
    );
    expect(check).toEqual({
      ConditionCheck: {
        TableName: 'phys-accounts',
        Key: { id: 'A' },
        ConditionExpression: 'attribute_exists(id)',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    });
  });

  it('updates a read item with an expression of no names or values of its own', () => {
    const action = itemAction(
      op({ kind: 'update', write: { Update: { TableName: 'accounts', Key: { id: 'A' }, UpdateExpression: 'SET done = true' } } }),
      definition,
    );
    expect(action?.Update).toEqual({
      TableName: 'phys-accounts',
      Key: { id: 'A' },
      UpdateExpression: 'SET #__ic_v = :__ic_next, done = true',
      ConditionExpression: '#__ic_v = :__ic_v',
      ExpressionAttributeNames: { '#__ic_v': '_version' },
      ExpressionAttributeValues: { ':__ic_v': 'v1', ':__ic_next': 'v2' },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    });
  });
});

describe("preflightActions: a commit's conditions checked before its side effects", () => {
  it("checks the inbox row and each condition of the user's own, with only the placeholders each uses", () => {
    const author = unit({ key: 'k' }, { messageId: 'm-1' });
    const conditioned = op({
      kind: 'update',
      authors: [author],
      write: {
        Update: {
          TableName: 'accounts',
          Key: { id: 'A' },
          UpdateExpression: 'ADD #n :one',
          ConditionExpression: '#m < :max',
          ExpressionAttributeNames: { '#n': 'n', '#m': 'm' },
          ExpressionAttributeValues: { ':one': 1, ':max': 9 },
        },
      },
    });
    const plain = op({
      key: accountKey('B'),
      kind: 'put',
      current: { id: 'B', _version: 'v2' },
      authors: [author],
      write: { Put: { TableName: 'accounts', Item: { id: 'B' } } },
    });
    const other = op({
      key: accountKey('C'),
      kind: 'check',
      authors: [unit({})],
      write: { ConditionCheck: { TableName: 'accounts', Key: { id: 'C' }, ConditionExpression: 'attribute_exists(id)' } },
    });
    const { actions, ops } = preflightActions(author, [conditioned, plain, other], config, definition);
    expect(ops).toEqual([conditioned]);
    expect(actions).toEqual([
      {
        ConditionCheck: {
          TableName: 'inbox',
          Key: { pk: 'c#key#k' },
          ConditionExpression: 'attribute_not_exists(#pk)',
          ExpressionAttributeNames: { '#pk': 'pk' },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
      {
        ConditionCheck: {
          TableName: 'phys-accounts',
          Key: { id: 'A' },
          ConditionExpression: '(#m < :max) AND (#__ic_v = :__ic_v)',
          ExpressionAttributeNames: { '#m': 'm', '#__ic_v': '_version' },
          ExpressionAttributeValues: { ':max': 9, ':__ic_v': 'v1' },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
    ]);
  });

  it("keeps a redrive's inbox condition", () => {
    const redrive = unit({ key: 'k' }, { messageId: 'm-9', redriveOf: 'm-1' });
    const [inbox] = preflightActions(redrive, [], config, definition).actions;
    expect(inbox?.ConditionCheck).toMatchObject({
      ConditionExpression: 'attribute_not_exists(#pk) OR (#status = :deadLettered AND #messageId = :redriveOf)',
      ExpressionAttributeValues: { ':deadLettered': 'dead-lettered', ':redriveOf': 'm-1' },
    });
  });

  it("sends of a blind write's names and values only those its condition uses", () => {
    expect(usedPlaceholders('#a = :a AND #ab > :b', { '#a': 'a', '#ab': 'ab', '#z': 'z' }, { ':a': 1, ':b': 2, ':zz': 3 })).toEqual({
      names: { '#a': 'a', '#ab': 'ab' },
      values: { ':a': 1, ':b': 2 },
    });
  });
});
