import { describe, expect, it } from 'vitest';
import { ConsumerDefinitionError, InvalidWrite, ValidationError } from '../../../packages/idempotent-consumer/src/errors.js';
import { foldDecision, hasUserCondition, jsonProblem, writeKind } from '../../../packages/idempotent-consumer/src/engine/foldDecision.js';
import type { ItemOp } from '../../../packages/idempotent-consumer/src/engine/Unit.js';
import type { Decision, Write } from '../../../packages/idempotent-consumer/src/types.js';
import { accountKey, definitionOf, planContext, putAccount, unit } from './fixtures.js';

const definition = definitionOf(() => ({}));
const context = planContext(definition);
const readsOf = (u: ReturnType<typeof unit>) => new Map(u.reads.map((key) => [key.id, key]));
const fold = (decision: Decision, ops = new Map<string, ItemOp>(), u = unit({})) => foldDecision(u, decision, ops, readsOf(u), context);
const thrown = (decision: Decision): unknown => {
  try {
    fold(decision);
  } catch (error) {
    return error;
  }
  return undefined;
};

describe('foldDecision: a decision that cannot be written fails alone, naming the write (C28)', () => {
  it.each([
    [
      'NaN in an item',
      { writes: [putAccount('A', { balance: Number.NaN })] },
      /write 0 \(Put on accounts\): attribute "balance" cannot be written to DynamoDB \(Special numeric value NaN is not allowed\)/,
    ],
    ['a number beyond 2^53', { writes: [putAccount('A', { n: 2 ** 60 })] }, /attribute "n" cannot be written/],
    ['an empty set', { writes: [putAccount('A', { tags: new Set() })] }, /attribute "tags" cannot be written/],
    [
      'NaN in the values of an update',
      {
        writes: [
          {
            Update: {
              TableName: 'accounts',
              Key: { id: 'A' },
              UpdateExpression: 'SET n = :n',
              ExpressionAttributeValues: { ':n': Number.NaN },
            },
          },
        ],
      },
      /its ExpressionAttributeValues: attribute ":n"/,
    ],
    [
      'a BigInt in an outbox body',
      { outbox: [{ body: { ok: 1 } }, { body: { amount: 10n } }] },
      /outgoing message 1 cannot be written as JSON: its body\.amount is a BigInt/,
    ],
    ['NaN in an outbox body', { outbox: [{ body: [1, Number.NaN] }] }, /body\.1 is NaN/],
    ['a function in an outbox body', { outbox: [{ body: { f: () => 1 } }] }, /body\.f is a function/],
    ['an outbox body that is undefined', { outbox: [{ body: undefined }] }, /has a body that is not JSON/],
    ['an outbox message without a body', { outbox: [{} as never] }, /outgoing message 0 has no body/],
    [
      'an outbox attribute SQS refuses',
      { outbox: [{ body: 'x', attributes: { 'AWS.x': 'y' } }] },
      /reserved, not a name SQS and SNS accept/,
    ],
    [
      'too many outbox attributes',
      { outbox: [{ body: 'x', attributes: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`a${i}`, 'v'])) }] },
      /has 10 attributes; at most 9/,
    ],
    [
      'an outbox attribute without a value',
      { outbox: [{ body: 'x', attributes: { kind: '' } }] },
      /attribute "kind" is reserved, not a name SQS and SNS accept, or has no string value/,
    ],
    ['an outbox attribute that is not a string', { outbox: [{ body: 'x', attributes: { n: 1 as never } }] }, /attribute "n" is reserved/],
    ['a Delete without a key', { writes: [{ Delete: { TableName: 'accounts' } } as unknown as Write] }, /a Delete on accounts has no Key/],
    [
      'a write without a table',
      { writes: [{ Put: { Item: { id: 'A' } } } as unknown as Write] },
      /names table "", which is not one of the consumer's tables/,
    ],
    ['an empty destination', { outbox: [{ body: 'x', destination: '' }] }, /destination that is not a non-empty string/],
    ['an empty message group', { outbox: [{ body: 'x', messageGroupId: '' }] }, /messageGroupId that is not a non-empty string/],
    ['an unknown side effect', { sideEffects: [{ name: 'nope' }] }, /side effect "nope", which is not in the consumer's sideEffects/],
    ['a side effect whose key is not a string', { sideEffects: [{ name: 'notify', key: 3 as never }] }, /key that is a number/],
    [
      'one effect key asked twice',
      {
        sideEffects: [
          { name: 'notify', key: 'u-1' },
          { name: 'notify', key: 'u-1' },
        ],
      },
      /asked twice for side effect notify with one key/,
    ],
    ['writes that are not an array', { writes: {} as never }, /`writes` that is not an array/],
    ['outbox that is not an array', { outbox: {} as never }, /`outbox` that is not an array/],
    ['side effects that are not an array', { sideEffects: {} as never }, /`sideEffects` that is not an array/],
    [
      'a write with two kinds',
      { writes: [{ Put: { TableName: 'accounts', Item: { id: 'A' } }, Delete: { TableName: 'accounts', Key: { id: 'A' } } }] },
      /exactly one of Put, Update, Delete, ConditionCheck/,
    ],
    ['a Put without an item', { writes: [{ Put: { TableName: 'accounts' } } as Write] }, /a Put on accounts has no Item/],
    [
      'an unknown table',
      { writes: [{ Put: { TableName: 'nope', Item: { id: 'A' } } }] },
      /names table "nope", which is not one of the consumer's tables/,
    ],
    [
      'the same item twice',
      { writes: [putAccount('A'), { Delete: { TableName: 'accounts', Key: { id: 'A' } } }] },
      /wrote the same item of accounts twice/,
    ],
    [
      'an update that writes the version attribute',
      {
        writes: [
          {
            Update: {
              TableName: 'accounts',
              Key: { id: 'A' },
              UpdateExpression: 'SET #v = :v',
              ExpressionAttributeNames: { '#v': '_version' },
              ExpressionAttributeValues: { ':v': 1 },
            },
          },
        ],
      },
      /writes _version, the engine's version attribute/,
    ],
    [
      'an update that names the version attribute literally',
      { writes: [{ Update: { TableName: 'accounts', Key: { id: 'A' }, UpdateExpression: 'REMOVE _version' } }] },
      /writes _version/,
    ],
    [
      'an update without an expression',
      { writes: [{ Update: { TableName: 'accounts', Key: { id: 'A' } } } as unknown as Write] },
      /has no UpdateExpression/,
    ],
  ] as const)("as a ConsumerDefinitionError (retried, as any fault in the consumer's code): %s", (_what, decision, message) => {
    const error = thrown(decision as Decision);
    expect(error).toBeInstanceOf(ConsumerDefinitionError);
    expect((error as Error).message).toMatch(message);
  });

  it.each([
    [
      'an item over 400 KB',
      { writes: [putAccount('A', { blob: 'x'.repeat(410_000) })] },
      /write 0 \(Put on accounts\): the item is about \d+ bytes, more than DynamoDB's 409600/,
    ],
    [
      'an outgoing message over 400 KB',
      { outbox: [{ body: 'x'.repeat(409_000) }] },
      /outgoing message 0 is about \d+ bytes as an outbox item/,
    ],
    [
      'a commit over 100 actions',
      { outbox: Array.from({ length: 99 }, () => ({ body: 'x' })) },
      /its commit needs 101 actions \(its inbox row, 99 outgoing messages, 1 items\)/,
    ],
  ] as const)('as an InvalidWrite (DynamoDB would refuse it): %s', (_what, decision, message) => {
    const error = thrown(decision as Decision);
    expect(error).toBeInstanceOf(InvalidWrite);
    expect((error as Error).message).toMatch(message);
  });

  it("says a key value from the message that DynamoDB refuses is the message's fault", () => {
    expect(thrown({ writes: [putAccount('')] })).toBeInstanceOf(ValidationError);
  });

  it("says a side effect's chosen key that cannot be one is the message's fault (ValidationError, dead-lettered)", () => {
    const error = thrown({ sideEffects: [{ name: 'notify', key: 'user#1' }] });
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatch(/side effect 0 \(notify\): its key holds '#'/);
    expect(fold({ sideEffects: [{ name: 'notify', key: 'user:1' }, { name: 'notify' }] })).not.toBe('defer');
  });

  it('takes exactly 100 actions (C29: an inbox row, an item and 98 outgoing messages)', () => {
    expect(fold({ writes: [putAccount('A')], outbox: Array.from({ length: 98 }, () => ({ body: 'x' })) })).not.toBe('defer');
  });
});

describe("foldDecision: folding into the round's actions", () => {
  it("writes a new version on a blind write, and keeps it out of other units' way", () => {
    const ops = new Map<string, ItemOp>();
    const u = unit({}, { reads: [] });
    const folded = fold({ writes: [putAccount('B', { x: 1 })] }, ops, u);
    expect(folded).not.toBe('defer');
    if (folded !== 'defer') folded.fold();
    const op = ops.get(accountKey('B').id)!;
    expect(op).toMatchObject({ inReadSet: false, kind: 'put', opaque: true, authors: [u] });
    expect(op.current).toEqual({ id: 'B', x: 1, _version: op.version });

    const other = unit({}, { reads: [] });
    expect(fold({ writes: [{ Delete: { TableName: 'accounts', Key: { id: 'B' } } }] }, ops, other)).toBe('defer');
  });

  it.each([
    [
      'Update',
      { Update: { TableName: 'accounts', Key: { id: 'A' }, UpdateExpression: 'ADD n :one', ExpressionAttributeValues: { ':one': 1 } } },
    ],
    ['a conditioned Put', { Put: { TableName: 'accounts', Item: { id: 'A' }, ConditionExpression: 'attribute_exists(id)' } }],
  ])('defers %s of an item another unit of the round wrote', (_what, write) => {
    const ops = new Map<string, ItemOp>();
    const firstFold = foldDecision(unit({}), { writes: [putAccount('A', { n: 1 })] }, ops, readsOf(unit({})), context);
    if (firstFold !== 'defer') firstFold.fold();
    expect(fold({ writes: [write as Write] }, ops)).toBe('defer');
  });

  it.each([
    ['Delete', { Delete: { TableName: 'accounts', Key: { id: 'B' } } }, 'delete'],
    [
      'Update',
      { Update: { TableName: 'accounts', Key: { id: 'B' }, UpdateExpression: 'ADD n :one', ExpressionAttributeValues: { ':one': 1 } } },
      'update',
    ],
    [
      'ConditionCheck',
      { ConditionCheck: { TableName: 'accounts', Key: { id: 'B' }, ConditionExpression: 'attribute_exists(id)' } },
      'check',
    ],
  ] as const)('sends a blind %s as given: its value unknown to later decisions', (_kind, write, kind) => {
    const ops = new Map<string, ItemOp>();
    const folded = fold({ writes: [write as Write] }, ops, unit({}, { reads: [] }));
    if (folded !== 'defer') folded.fold();
    expect(ops.get(accountKey('B').id)).toMatchObject({ inReadSet: false, kind, current: undefined, opaque: true });
  });

  it("folds a delete, and a condition check with a condition of the user's own; leaves a bare check to the read's condition", () => {
    const ops = new Map<string, ItemOp>();
    const u = unit({});
    const bare = foldDecision(
      u,
      { writes: [{ ConditionCheck: { TableName: 'accounts', Key: { id: 'A' } } } as unknown as Write] },
      ops,
      readsOf(u),
      context,
    );
    if (bare !== 'defer') bare.fold();
    expect(ops.get(accountKey('A').id)).toMatchObject({ kind: 'check', authors: [], readers: [u] });

    const checked = new Map<string, ItemOp>();
    const withCondition = foldDecision(
      u,
      {
        writes: [
          {
            ConditionCheck: {
              TableName: 'accounts',
              Key: { id: 'A' },
              ConditionExpression: 'n > :z',
              ExpressionAttributeValues: { ':z': 0 },
            },
          },
        ],
      },
      checked,
      readsOf(u),
      context,
    );
    if (withCondition !== 'defer') withCondition.fold();
    expect(checked.get(accountKey('A').id)).toMatchObject({ kind: 'check', opaque: true, authors: [u] });

    const deleted = new Map<string, ItemOp>();
    const del = foldDecision(u, { writes: [{ Delete: { TableName: 'accounts', Key: { id: 'A' } } }] }, deleted, readsOf(u), context);
    if (del !== 'defer') del.fold();
    expect(deleted.get(accountKey('A').id)).toMatchObject({ kind: 'delete', current: undefined, opaque: false });
  });
});

describe('the helpers of folding', () => {
  it('finds where a value cannot be written as JSON', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(jsonProblem(cyclic)).toBe('body.self refers back to itself');
    expect(jsonProblem({ a: [1, 'x', null, { b: true }], d: new Date(0) })).toBeUndefined();
    expect(jsonProblem(Symbol('s'))).toBe('body is a symbol');
    expect(jsonProblem(Number.POSITIVE_INFINITY)).toBe('body is Infinity');
  });

  it('reads the kind of a write and its user condition', () => {
    expect(writeKind(putAccount('A')).kind).toBe('Put');
    expect(() => writeKind({ Put: 'x' } as never)).toThrow(/a Put must be an object/);
    expect(hasUserCondition(undefined)).toBe(false);
    expect(hasUserCondition({ Delete: { TableName: 'accounts', Key: { id: 'A' }, ConditionExpression: 'attribute_exists(id)' } })).toBe(
      true,
    );
    expect(hasUserCondition({ Delete: { TableName: 'accounts', Key: { id: 'A' }, ConditionExpression: ' ' } })).toBe(false);
  });
});
