import { describe, expect, it } from 'vitest';
import {
  and,
  newVersion,
  sameIncarnation,
  unchangedCondition,
  userCondition,
  versionOf,
  withVersionSet,
} from '../../packages/idempotent-consumer/src/engine/conditions.js';

describe('the conditions the engine adds', () => {
  it('checks absence, the version read, or a present item without a version', () => {
    expect(unchangedCondition({ exists: false, item: undefined }, 'sku', '_version')).toEqual({
      expression: 'attribute_not_exists(#__ic_pk)',
      names: { '#__ic_pk': 'sku' },
      values: {},
    });
    expect(unchangedCondition({ exists: true, item: { sku: 'A', _version: 3 } }, 'sku', '_version')).toEqual({
      expression: '#__ic_v = :__ic_v',
      names: { '#__ic_v': '_version' },
      values: { ':__ic_v': 3 },
    });
    expect(unchangedCondition({ exists: true, item: { sku: 'A' } }, 'sku', '_version').expression).toBe(
      'attribute_exists(#__ic_pk) AND attribute_not_exists(#__ic_v)',
    );
    expect(unchangedCondition({ exists: true, item: { sku: 'A', _version: 'tok' } }, 'sku', '_version').values).toEqual({
      ':__ic_v': 'tok',
    });
    expect(versionOf({ _version: '3' }, '_version')).toBe('3');
    expect(versionOf({ sku: 'A' }, '_version')).toBeUndefined();
  });

  it('makes versions that do not repeat, so a re-created item is never the incarnation another environment remembers (C23)', () => {
    const versions = new Set(Array.from({ length: 10_000 }, () => newVersion()));
    expect(versions.size).toBe(10_000);
    const before = { exists: true, item: { id: 'cart', _version: newVersion() } };
    const recreated = { exists: true, item: { id: 'cart', _version: newVersion() } };
    expect(sameIncarnation(before, recreated, '_version')).toBe(false);
    expect(sameIncarnation(before, { ...before }, '_version')).toBe(true);
    expect(sameIncarnation({ exists: false, item: undefined }, { exists: false, item: undefined }, '_version')).toBe(true);
    expect(sameIncarnation({ exists: false, item: undefined }, before, '_version')).toBe(false);
    expect(sameIncarnation({ exists: true, item: { _version: 1 } }, { exists: true, item: { _version: 1n } }, '_version')).toBe(true);
  });

  it("ANDs a user's condition with the engine's, keeping both sets of placeholders", () => {
    const user = userCondition({ ConditionExpression: 'available >= :q', ExpressionAttributeValues: { ':q': 2 } });
    const merged = and(user, { expression: '#__ic_v = :__ic_v', names: { '#__ic_v': '_version' }, values: { ':__ic_v': 1 } });
    expect(merged).toEqual({
      expression: '(available >= :q) AND (#__ic_v = :__ic_v)',
      names: { '#__ic_v': '_version' },
      values: { ':q': 2, ':__ic_v': 1 },
    });
    expect(userCondition({ ConditionExpression: '  ' })).toBeUndefined();
  });

  it.each([
    ['an expression with a SET clause', 'SET available = available - :q', 'SET #__ic_v = :__ic_next, available = available - :q'],
    ['a lower-case set', 'set a = :a REMOVE b', 'set #__ic_v = :__ic_next, a = :a REMOVE b'],
    ['an expression without SET', 'ADD counter :one', 'ADD counter :one SET #__ic_v = :__ic_next'],
    ['a SET after another clause', 'REMOVE b SET a = :a', 'REMOVE b SET #__ic_v = :__ic_next, a = :a'],
  ])('adds the next version to %s', (_what, expression, expected) => {
    expect(withVersionSet(expression, '_version', 'v2').expression).toBe(expected);
    expect(withVersionSet(expression, '_version', 'v2').values).toEqual({ ':__ic_next': 'v2' });
  });
});
