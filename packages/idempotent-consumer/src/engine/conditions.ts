import { randomBytes } from 'node:crypto';
import type { AttributeValue, Item } from '../types.js';
import { printValue } from './values.js';

/** A condition (or update) expression with its placeholders. */
export interface Expression {
  readonly expression: string;
  readonly names: Readonly<Record<string, string>>;
  readonly values: Readonly<Record<string, AttributeValue>>;
}

/** What the engine believes of an item: absent, or present with this value. */
export interface ItemBelief {
  readonly exists: boolean;
  readonly item: Item | undefined;
}

/**
 * A new version for an item the engine writes: 96 random bits (base64url, 16 characters). A
 * version never repeats, so a memory of an item is never taken for another incarnation of it: a
 * counter would restart after a delete and a re-create, and pass the condition of an environment
 * that remembers the item before the delete (case C23).
 */
export function newVersion(): string {
  return randomBytes(12).toString('base64url');
}

/**
 * The version kept on `item` in `versionAttribute`: whatever is stored there (a token the engine
 * wrote, or a number an earlier release wrote); `undefined` when the item has none.
 */
export function versionOf(item: Item | undefined, versionAttribute: string): unknown {
  return item?.[versionAttribute];
}

/** Whether two beliefs name the same incarnation of an item: both absent, or both present at the same version. */
export function sameIncarnation(a: ItemBelief, b: ItemBelief, versionAttribute: string): boolean {
  if (a.exists !== b.exists) return false;
  if (!a.exists) return true;
  return printValue(versionOf(a.item, versionAttribute)) === printValue(versionOf(b.item, versionAttribute));
}

/**
 * The condition that an item is still as the engine believes: absent
 * (`attribute_not_exists(pk)`), present at the version it read (`#v = :v`), or present without
 * a version (`attribute_exists(pk) AND attribute_not_exists(#v)`).
 */
export function unchangedCondition(belief: ItemBelief, partitionKey: string, versionAttribute: string): Expression {
  if (!belief.exists) {
    return { expression: 'attribute_not_exists(#__ic_pk)', names: { '#__ic_pk': partitionKey }, values: {} };
  }
  const version = versionOf(belief.item, versionAttribute);
  if (version === undefined || version === null) {
    return {
      expression: 'attribute_exists(#__ic_pk) AND attribute_not_exists(#__ic_v)',
      names: { '#__ic_pk': partitionKey, '#__ic_v': versionAttribute },
      values: {},
    };
  }
  return { expression: '#__ic_v = :__ic_v', names: { '#__ic_v': versionAttribute }, values: { ':__ic_v': version as AttributeValue } };
}

/** `a AND b`, placeholders merged. */
export function and(a: Expression | undefined, b: Expression): Expression {
  if (a === undefined) return b;
  return { expression: `(${a.expression}) AND (${b.expression})`, names: { ...a.names, ...b.names }, values: { ...a.values, ...b.values } };
}

/** The user's own condition of a write, if it has one. */
export function userCondition(action: {
  readonly ConditionExpression?: string;
  readonly ExpressionAttributeNames?: Record<string, string>;
  readonly ExpressionAttributeValues?: Record<string, AttributeValue>;
}): Expression | undefined {
  if (action.ConditionExpression === undefined || action.ConditionExpression.trim() === '') return undefined;
  return {
    expression: action.ConditionExpression,
    names: action.ExpressionAttributeNames ?? {},
    values: action.ExpressionAttributeValues ?? {},
  };
}

/**
 * `updateExpression` with `SET <versionAttribute> = version` added: to its `SET` clause when it has
 * one (SET is a DynamoDB reserved word, so it cannot be an unquoted attribute name), else as a
 * new clause.
 */
export function withVersionSet(updateExpression: string, versionAttribute: string, next: string): Expression {
  const set = '#__ic_v = :__ic_next';
  const match = /(^|\s)SET\s/i.exec(updateExpression);
  const expression =
    match === null
      ? `${updateExpression} SET ${set}`
      : `${updateExpression.slice(0, match.index + match[0].length)}${set}, ${updateExpression.slice(match.index + match[0].length)}`;
  return { expression, names: { '#__ic_v': versionAttribute }, values: { ':__ic_next': next } };
}
