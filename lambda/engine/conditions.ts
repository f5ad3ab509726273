import type { AttributeValue, Item } from '../types.js';

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

/** The version the engine keeps on `item` in `versionAttribute`; `undefined` when it has none (not written by the engine). */
export function versionOf(item: Item | undefined, versionAttribute: string): number | undefined {
  const value = item?.[versionAttribute];
  return typeof value === 'number' && Number.isInteger(value) ? value : undefined;
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
  if (version === undefined) {
    return {
      expression: 'attribute_exists(#__ic_pk) AND attribute_not_exists(#__ic_v)',
      names: { '#__ic_pk': partitionKey, '#__ic_v': versionAttribute },
      values: {},
    };
  }
  return { expression: '#__ic_v = :__ic_v', names: { '#__ic_v': versionAttribute }, values: { ':__ic_v': version } };
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
  return { expression: action.ConditionExpression, names: action.ExpressionAttributeNames ?? {}, values: action.ExpressionAttributeValues ?? {} };
}

/**
 * `updateExpression` with `SET <versionAttribute> = next` added: to its `SET` clause when it has
 * one (SET is a DynamoDB reserved word, so it cannot be an unquoted attribute name), else as a
 * new clause.
 */
export function withVersionSet(updateExpression: string, versionAttribute: string, next: number): Expression {
  const set = '#__ic_v = :__ic_next';
  const match = /(^|\s)SET\s/i.exec(updateExpression);
  const expression =
    match === null
      ? `${updateExpression} SET ${set}`
      : `${updateExpression.slice(0, match.index + match[0].length)}${set}, ${updateExpression.slice(match.index + match[0].length)}`;
  return { expression, names: { '#__ic_v': versionAttribute }, values: { ':__ic_next': next } };
}
