import { describe, expect, it } from 'vitest';
import {
  canonicalNumber,
  ConflictTracker,
  duplicateTargets,
  itemIdentity,
  transactionTargets,
} from '../../packages/local/src/aws/dynamoDbRules.js';

const schemas = { orders: { partitionKey: 'id', sortKey: 'sk' }, counters: { partitionKey: 'n' } } as const;
const schemaOf = (table: string) => schemas[table as keyof typeof schemas];

describe('DynamoDB rules', () => {
  describe('canonicalNumber', () => {
    it.each([
      ['1', '1.0'],
      ['1', '001'],
      ['1.5e1', '15'],
      ['-0.001', '-1e-3'],
      ['0', '-0.000'],
      ['123456789012345678901234567890123456', '1.23456789012345678901234567890123456e35'],
    ])('makes %s and %s the same number', (a, b) => {
      expect(canonicalNumber(a)).toBe(canonicalNumber(b));
    });

    it('keeps different numbers apart', () => {
      expect(canonicalNumber('1')).not.toBe(canonicalNumber('10'));
      expect(canonicalNumber('1')).not.toBe(canonicalNumber('-1'));
      expect(canonicalNumber('0.1')).not.toBe(canonicalNumber('1'));
    });
  });

  describe('duplicateTargets', () => {
    it("finds a Put's item by its key attributes and an Update of the same key", () => {
      const targets = transactionTargets([
        { Put: { TableName: 'orders', Item: { id: { S: 'O-1' }, sk: { S: 'STATE' }, status: { S: 'Paid' } } } },
        { Update: { TableName: 'orders', Key: { sk: { S: 'STATE' }, id: { S: 'O-1' } }, UpdateExpression: 'SET x = :x' } },
        { Put: { TableName: 'orders', Item: { id: { S: 'O-1' }, sk: { S: 'LEDGER#1' } } } },
      ]);

      expect(duplicateTargets(targets, schemaOf)).toEqual([
        { identity: itemIdentity('orders', { id: { S: 'O-1' }, sk: { S: 'STATE' } }), indexes: [0, 1] },
      ]);
    });

    it('sees numeric keys 1 and 1.0 as one item, and equal keys of two tables as two items', () => {
      const numeric = transactionTargets([
        { ConditionCheck: { TableName: 'counters', Key: { n: { N: '1' } }, ConditionExpression: 'attribute_exists(n)' } },
        { Delete: { TableName: 'counters', Key: { n: { N: '1.0' } } } },
      ]);
      const twoTables = transactionTargets([
        { Put: { TableName: 'counters', Item: { n: { N: '1' } } } },
        { Put: { TableName: 'other', Item: { n: { N: '1' } } } },
      ]);

      expect(duplicateTargets(numeric, schemaOf)).toHaveLength(1);
      expect(duplicateTargets(twoTables, (table) => (table === 'other' ? { partitionKey: 'n' } : schemaOf(table)))).toEqual([]);
    });

    it('cannot place a Put of a table whose key schema is unknown, and reports nothing for it', () => {
      const targets = transactionTargets([
        { Put: { TableName: 'unknown', Item: { k: { S: 'a' } } } },
        { Put: { TableName: 'unknown', Item: { k: { S: 'a' } } } },
      ]);
      expect(duplicateTargets(targets, () => undefined)).toEqual([]);
    });
  });

  describe('ConflictTracker', () => {
    it('holds identities per kind until released, once', () => {
      const tracker = new ConflictTracker();
      const releaseTransaction = tracker.hold(['a', 'b'], 'transaction');
      const releaseWrite = tracker.hold(['a'], 'write');

      expect(tracker.isHeld('a', ['transaction'])).toBe(true);
      expect(tracker.isHeld('b', ['write'])).toBe(false);
      releaseTransaction();
      releaseTransaction();
      expect(tracker.isHeld('a', ['transaction'])).toBe(false);
      expect(tracker.isHeld('a', ['write'])).toBe(true);
      releaseWrite();
      expect(tracker.size).toBe(0);
    });

    it('counts two holders of one identity', () => {
      const tracker = new ConflictTracker();
      const first = tracker.hold(['a'], 'transaction');
      const second = tracker.hold(['a'], 'transaction');
      first();
      expect(tracker.isHeld('a', ['transaction'])).toBe(true);
      second();
      expect(tracker.isHeld('a', ['transaction'])).toBe(false);
    });
  });
});
