import { describe, expect, it } from 'vitest';
import { and, unchangedCondition, userCondition, versionOf, withVersionSet } from '../../lambda/engine/conditions.js';

describe('the conditions the engine adds', () => {
  it('checks absence, the version read, or a present item without a version', () => {
    expect(unchangedCondition({ exists: false, item: undefined }, 'sku', '_version')).toEqual({ expression: 'attribute_not_exists(#__ic_pk)', names: { '#__ic_pk': 'sku' }, values: {} });
    expect(unchangedCondition({ exists: true, item: { sku: 'A', _version: 3 } }, 'sku', '_version')).toEqual({ expression: '#__ic_v = :__ic_v', names: { '#__ic_v': '_version' }, values: { ':__ic_v': 3 } });
    expect(unchangedCondition({ exists: true, item: { sku: 'A' } }, 'sku', '_version').expression).toBe('attribute_exists(#__ic_pk) AND attribute_not_exists(#__ic_v)');
    expect(versionOf({ _version: '3' }, '_version')).toBeUndefined();
  });

  it("ANDs a user's condition with the engine's, keeping both sets of placeholders", () => {
    const user = userCondition({ ConditionExpression: 'available >= :q', ExpressionAttributeValues: { ':q': 2 } });
    const merged = and(user, { expression: '#__ic_v = :__ic_v', names: { '#__ic_v': '_version' }, values: { ':__ic_v': 1 } });
    expect(merged).toEqual({ expression: '(available >= :q) AND (#__ic_v = :__ic_v)', names: { '#__ic_v': '_version' }, values: { ':q': 2, ':__ic_v': 1 } });
    expect(userCondition({ ConditionExpression: '  ' })).toBeUndefined();
  });

  it.each([
    ['an expression with a SET clause', 'SET available = available - :q', 'SET #__ic_v = :__ic_next, available = available - :q'],
    ['a lower-case set', 'set a = :a REMOVE b', 'set #__ic_v = :__ic_next, a = :a REMOVE b'],
    ['an expression without SET', 'ADD counter :one', 'ADD counter :one SET #__ic_v = :__ic_next'],
    ['a SET after another clause', 'REMOVE b SET a = :a', 'REMOVE b SET #__ic_v = :__ic_next, a = :a'],
  ])('adds the next version to %s', (_what, expression, expected) => {
    expect(withVersionSet(expression, '_version', 4).expression).toBe(expected);
  });
});
