/**
 * The actions of items of the home table under `inboxHome` (see `inbox/homeMarks.ts`): each
 * carries the inbox marks of the units whose home it is, keeps the marks it already holds (a
 * `Put` would otherwise replace them), drops the expired ones, and never lets a blind write erase
 * them.
 *
 * Every home item a unit applies on is in its read set, so its action is conditional on the item
 * being the incarnation believed: the engine knows the marks map it extends (present or not), and
 * writes it whole (a `Put`, or `SET #marks = :map` where the item has none) or entry by entry
 * (`SET #marks.#key = :mark`). A stub is written where an applied event leaves its home absent.
 *
 * @module
 */
import type { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { InboxStatus } from '../inbox/inboxItems.js';
import { expiredMarks, type HomeSettings, hasMarks, isStub, mergedMarks, type StoredMark } from '../inbox/homeMarks.js';
import type { AttributeValue, Item, Write } from '../types.js';
import { and, type Expression, unchangedCondition, userCondition, withVersionSet } from './conditions.js';
import type { ConsumerDefinition } from './ConsumerDefinition.js';
import { writeKind } from './foldDecision.js';
import type { ItemOp } from './Unit.js';

/** What an item action of the home table writes beside the decisions: the marks of the units whose home it is. */
export interface HomeMarking {
  readonly home: HomeSettings;
  /** By entry key (`markKey(consumer name, idempotency key)`): the mark, and the dead letter's message id when the unit redrives one. */
  readonly marks: ReadonlyMap<string, { readonly mark: StoredMark; readonly redriveOf?: string | undefined }>;
  /** Now, epoch seconds: marks that expired before it are dropped. */
  readonly nowSeconds: number;
}

/** One action of a `TransactWriteItems` (as `transactionActions.ts` names it). */
type TransactAction = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

const ATTRIBUTE = '#__ic_marks';
const STUB = '#__ic_stub';

/**
 * The condition that none of `marking`'s keys is marked on the item (or, for a redrive, marked
 * only by the dead letter it redrives): what the inbox row's own condition says for a row.
 */
export function marksAbsentCondition(marking: Pick<HomeMarking, 'home' | 'marks'>): Expression | undefined {
  if (marking.marks.size === 0) return undefined;
  const names: Record<string, string> = { [ATTRIBUTE]: marking.home.attribute };
  const values: Record<string, AttributeValue> = {};
  const parts: string[] = [];
  let index = 0;
  for (const [key, { redriveOf }] of marking.marks) {
    const name = `#__ic_k${index}`;
    names[name] = key;
    if (redriveOf === undefined) parts.push(`attribute_not_exists(${ATTRIBUTE}.${name})`);
    else {
      names['#__ic_s'] = 's';
      names['#__ic_m'] = 'm';
      values[':__ic_dl'] = InboxStatus.DeadLettered;
      values[`:__ic_r${index}`] = redriveOf;
      parts.push(
        `attribute_not_exists(${ATTRIBUTE}.${name}) OR (${ATTRIBUTE}.${name}.#__ic_s = :__ic_dl AND ${ATTRIBUTE}.${name}.#__ic_m = :__ic_r${index})`,
      );
    }
    index += 1;
  }
  // `and()` puts each side in parentheses; DynamoDB refuses redundant ones, so a lone part goes bare.
  return { expression: parts.length === 1 ? parts[0]! : parts.map((part) => `(${part})`).join(' AND '), names, values };
}

/** `base`'s update expression with `clauses` added (`SET` items to its `SET` clause, `REMOVE` items to its `REMOVE` clause). */
function withClauses(expression: string, set: readonly string[], remove: readonly string[]): string {
  let result = expression;
  const add = (keyword: 'SET' | 'REMOVE', items: readonly string[]) => {
    if (items.length === 0) return;
    const match = new RegExp(`(^|\\s)${keyword}\\s`, 'i').exec(result);
    result =
      match === null
        ? `${result} ${keyword} ${items.join(', ')}`
        : `${result.slice(0, match.index + match[0].length)}${items.join(', ')}, ${result.slice(match.index + match[0].length)}`;
  };
  add('SET', set);
  add('REMOVE', remove);
  return result.trim();
}

/** How a write's marks are set on an item that holds `base`: entry by entry, or the whole map; and the expired entries removed. */
function marksUpdate(
  base: Item | undefined,
  marking: HomeMarking,
  stubAfter: boolean | undefined,
): Expression & { set: string[]; remove: string[] } {
  const names: Record<string, string> = {};
  const values: Record<string, AttributeValue> = {};
  const set: string[] = [];
  const remove: string[] = [];
  if (hasMarks(base, marking.home.attribute)) {
    let index = 0;
    for (const [key, { mark }] of marking.marks) {
      names[`#__ic_k${index}`] = key;
      values[`:__ic_mark${index}`] = mark as unknown as AttributeValue;
      set.push(`${ATTRIBUTE}.#__ic_k${index} = :__ic_mark${index}`);
      index += 1;
    }
    expiredMarks(base, marking.home.attribute, marking.nowSeconds)
      .filter((key) => !marking.marks.has(key))
      .forEach((key, i) => {
        names[`#__ic_x${i}`] = key;
        remove.push(`${ATTRIBUTE}.#__ic_x${i}`);
      });
  } else if (marking.marks.size > 0) {
    values[':__ic_marks'] = Object.fromEntries([...marking.marks].map(([key, { mark }]) => [key, mark])) as unknown as AttributeValue;
    set.push(`${ATTRIBUTE} = :__ic_marks`);
  }
  if (set.length + remove.length > 0) names[ATTRIBUTE] = marking.home.attribute;
  if (stubAfter !== undefined) {
    names[STUB] = marking.home.stubAttribute;
    if (stubAfter) {
      values[':__ic_true'] = true;
      set.push(`${STUB} = :__ic_true`);
    } else remove.push(STUB);
  }
  return { expression: '', names, values, set, remove };
}

/** The marks map as a record of this marking's added entries. */
function addedMarks(marking: HomeMarking): Record<string, StoredMark> {
  return Object.fromEntries([...marking.marks].map(([key, { mark }]) => [key, mark]));
}

/**
 * The action of an item of the home table (see the module comment): an item a unit read, or a
 * blind `Put`, `Delete` or `Update` (which keeps the marks, and makes a stub a real item again).
 * Sets `op.stored` to the item as the commit leaves it when that is known.
 */
export function homeItemAction(
  op: ItemOp,
  definition: Pick<ConsumerDefinition<unknown>, 'tables' | 'versionAttribute'>,
  marking: HomeMarking,
): TransactAction {
  op.stored = undefined;
  const { home } = marking;
  const tableName = op.key.tableName;
  const versionAttribute = definition.versionAttribute;
  const partitionKey = definition.tables[op.key.table]!.partitionKey;
  const base = op.base.exists ? op.base.item : undefined;
  const userWrite = op.write === undefined ? undefined : writeKind(op.write as Write);
  const baseMarked = hasMarks(base, home.attribute);

  // A blind Put or Delete: guarded so that it never erases marks (on failure the item is read and the marks kept).
  const guarded = !op.inReadSet && !baseMarked;
  const condition = (extra?: Expression): Expression => {
    let c: Expression = guarded
      ? { expression: `attribute_not_exists(${ATTRIBUTE})`, names: { [ATTRIBUTE]: home.attribute }, values: {} }
      : unchangedCondition(op.base, partitionKey, versionAttribute);
    const user = userWrite === undefined ? undefined : userCondition(userWrite.action);
    if (user !== undefined) c = and(user, c);
    const marks = marksAbsentCondition(marking);
    if (marks !== undefined) c = and(c, marks);
    if (extra !== undefined) c = and(c, extra);
    return c;
  };
  const conditioned = (c: Expression, extraNames: Record<string, string> = {}, extraValues: Record<string, AttributeValue> = {}) => {
    const values = { ...c.values, ...extraValues };
    return {
      ConditionExpression: c.expression,
      ExpressionAttributeNames: { ...c.names, ...extraNames },
      ...(Object.keys(values).length > 0 ? { ExpressionAttributeValues: values } : {}),
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
    };
  };
  if (!op.inReadSet && op.kind === 'update') {
    // A blind Update keeps the marks; on a stub it makes the item real again (what it adds counts).
    const update = userWrite!.action;
    const set = withVersionSet(withClauses(update.UpdateExpression ?? '', [], [STUB]), versionAttribute, op.version);
    return {
      Update: {
        ...update,
        TableName: tableName,
        UpdateExpression: set.expression,
        ExpressionAttributeNames: { ...(update.ExpressionAttributeNames ?? {}), ...set.names, [STUB]: home.stubAttribute },
        ExpressionAttributeValues: { ...((update.ExpressionAttributeValues ?? {}) as Record<string, AttributeValue>), ...set.values },
        ...(update.ConditionExpression !== undefined ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {}),
      },
    } as TransactAction;
  }
  const merged = mergedMarks(base, home.attribute, addedMarks(marking), marking.nowSeconds);
  const anyMarks = Object.keys(merged).length > 0;

  switch (op.kind) {
    case 'put': {
      const item: Item = { ...op.current! };
      if (anyMarks) item[home.attribute] = merged as unknown as AttributeValue;
      op.stored = item;
      return { Put: { TableName: tableName, Item: item, ...conditioned(condition()) } };
    }
    case 'delete': {
      if (!anyMarks) return { Delete: { TableName: tableName, Key: op.key.key, ...conditioned(condition()) } };
      const stub: Item = {
        ...op.key.key,
        [versionAttribute]: op.version,
        [home.attribute]: merged as unknown as AttributeValue,
        [home.stubAttribute]: true,
      };
      op.stored = stub;
      return { Put: { TableName: tableName, Item: stub, ...conditioned(condition()) } };
    }
    case 'update': {
      const update = userWrite!.action;
      const marks = marksUpdate(base, marking, isStub(base, home) ? false : undefined);
      const version = withVersionSet(withClauses(update.UpdateExpression ?? '', marks.set, marks.remove), versionAttribute, op.version);
      return {
        Update: {
          TableName: tableName,
          Key: op.key.key,
          UpdateExpression: version.expression,
          ...conditioned(
            condition(),
            { ...(update.ExpressionAttributeNames ?? {}), ...marks.names, ...version.names },
            { ...((update.ExpressionAttributeValues ?? {}) as Record<string, AttributeValue>), ...marks.values, ...version.values },
          ),
        },
      };
    }
    case 'check': {
      if (marking.marks.size === 0) {
        return { ConditionCheck: { TableName: tableName, Key: op.key.key, ...conditioned(condition()) } };
      }
      const stubAfter = base === undefined || isStub(base, home);
      const marks = marksUpdate(base, marking, stubAfter ? true : undefined);
      const version = withVersionSet(withClauses('', marks.set, marks.remove), versionAttribute, op.version);
      op.stored = {
        ...(base ?? op.key.key),
        [versionAttribute]: op.version,
        [home.attribute]: merged as unknown as AttributeValue,
        ...(stubAfter ? { [home.stubAttribute]: true } : {}),
      };
      return {
        Update: {
          TableName: tableName,
          Key: op.key.key,
          UpdateExpression: version.expression,
          ...conditioned(condition(), { ...marks.names, ...version.names }, { ...marks.values, ...version.values }),
        },
      };
    }
  }
}
