/**
 * The `TransactWriteItems` actions of a round (lib-dynamodb shapes): a unit's inbox row and outbox
 * items, and one action per item with the engine's condition that the item is still as believed
 * and a new version on every write (blind writes included: case C24).
 *
 * @module
 */
import type { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import type { RuntimeConfig } from '../config/runtimeConfig.js';
import { appliedRowPut, inboxKey } from '../inbox/inboxItems.js';
import { provenanceAttributes } from '../inbox/provenance.js';
import { outboxPut } from '../outbox/outboxItems.js';
import type { OutgoingMessage, Write } from '../types.js';
import { markKey } from '../inbox/homeMarks.js';
import { type HomeMarking, homeItemAction, marksAbsentCondition } from './homeActions.js';
import { and, type Expression, unchangedCondition, userCondition, withVersionSet } from './conditions.js';
import type { ConsumerDefinition } from './ConsumerDefinition.js';
import { writeKind } from './foldDecision.js';
import type { ResolvedKey } from './itemKeys.js';
import type { ActionRole, ItemOp, Unit, UnitPlan } from './Unit.js';

/** One action of a `TransactWriteItems`. */
export type TransactAction = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/**
 * The unit's inbox row: applied, conditional on the key's row being absent (or, for a redrive, its
 * dead letter's marker). With `config.provenance` on, it also records the keys of `wrote` (the
 * items the unit writes: see {@link writtenKeys}), within the provenance budget; off, `wrote` is
 * ignored and the row is as it always was.
 */
export function inboxAction(
  unit: Unit,
  config: Pick<RuntimeConfig, 'inboxTable' | 'consumerName' | 'inboxTtlSeconds' | 'provenance'>,
  at: Date,
  wrote?: Iterable<ResolvedKey>,
): TransactAction {
  return {
    Put: appliedRowPut({
      tableName: config.inboxTable,
      consumerName: config.consumerName,
      idempotencyKey: unit.idempotencyKey,
      payloadHash: unit.payloadHash,
      messageId: unit.delivery.messageId,
      now: at,
      ttlSeconds: config.inboxTtlSeconds,
      redriveOf: unit.delivery.redriveOf,
      provenance: config.provenance === true ? provenanceAttributes(wrote ?? []) : undefined,
    }),
  };
}

/**
 * The keys of the items a planned unit writes in its round (every item action it authored, not
 * the items it only read), in the order of its plan.
 */
export function writtenKeys(plan: Pick<UnitPlan, 'unit' | 'ids'>, ops: ReadonlyMap<string, ItemOp>): ResolvedKey[] {
  const keys: ResolvedKey[] = [];
  for (const id of plan.ids) {
    const op = ops.get(id);
    if (op !== undefined && op.kind !== 'check' && op.authors.includes(plan.unit)) keys.push(op.key);
  }
  return keys;
}

/**
 * The unit's outbox items, one per outgoing message, ids stable per key and position, with its
 * delivery's trace header and its payload hash; a refused one returns the item it found (`ALL_OLD`),
 * which `readCancellation` reads as the key's record when nothing else of the unit failed.
 */
export function outboxActions(
  unit: Unit,
  outbox: readonly OutgoingMessage[],
  config: Pick<RuntimeConfig, 'inboxTable' | 'consumerName' | 'inboxTtlSeconds'>,
  at: Date,
): TransactAction[] {
  return outbox.map((message, position) => ({
    Put: {
      ...outboxPut({
        tableName: config.inboxTable,
        consumerName: config.consumerName,
        idempotencyKey: unit.idempotencyKey,
        orderingKey: unit.orderingKey,
        position,
        message,
        now: at,
        ttlSeconds: config.inboxTtlSeconds,
        traceHeader: unit.delivery.traceHeader,
        sourcePayloadHash: unit.payloadHash,
      }),
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  }));
}

/**
 * The action of one item, on its physical table; `undefined` when there is nothing to send.
 *
 * - An item a unit read: its folded write (or a `ConditionCheck`), conditional on the item being
 *   as believed (absent, or at the version read) and on the user's own condition.
 * - A blind write (an item no unit read): the user's write as given, with its own condition.
 *
 * Every `Put` and `Update` writes the action's new version. An item of the home table under
 * `inboxHome` (`marking`) takes the action `homeItemAction` builds: with the inbox marks.
 */
export function itemAction(
  op: ItemOp,
  definition: Pick<ConsumerDefinition<unknown>, 'tables' | 'versionAttribute'>,
  marking?: HomeMarking,
): TransactAction | undefined {
  if (marking !== undefined && (op.inReadSet || op.kind !== 'check')) return homeItemAction(op, definition, marking);
  const tableName = op.key.tableName;
  const versionAttribute = definition.versionAttribute;
  if (!op.inReadSet) {
    const { kind, action } = writeKind(op.write!);
    const failureItem = action.ConditionExpression !== undefined ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {};
    if (kind === 'Put') return { Put: { ...action, TableName: tableName, Item: op.current!, ...failureItem } } as TransactAction;
    if (kind === 'Update') {
      const set = withVersionSet(action.UpdateExpression ?? '', versionAttribute, op.version);
      return {
        Update: {
          ...action,
          TableName: tableName,
          UpdateExpression: set.expression,
          ExpressionAttributeNames: { ...(action.ExpressionAttributeNames ?? {}), ...set.names },
          ExpressionAttributeValues: { ...(action.ExpressionAttributeValues ?? {}), ...set.values },
          ...failureItem,
        },
      } as TransactAction;
    }
    return { [kind]: { ...action, TableName: tableName, ...failureItem } } as TransactAction;
  }
  const partitionKey = definition.tables[op.key.table]!.partitionKey;
  const condition = and(
    op.write === undefined ? undefined : userCondition(writeKind(op.write).action),
    unchangedCondition(op.base, partitionKey, versionAttribute),
  );
  const conditioned = (extra?: Expression) => {
    const names = { ...condition.names, ...(extra?.names ?? {}) };
    const values = { ...condition.values, ...(extra?.values ?? {}) };
    return {
      ConditionExpression: condition.expression,
      ExpressionAttributeNames: names,
      ...(Object.keys(values).length > 0 ? { ExpressionAttributeValues: values } : {}),
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
    };
  };
  switch (op.kind) {
    case 'put':
      return { Put: { TableName: tableName, Item: op.current!, ...conditioned() } };
    case 'delete':
      return { Delete: { TableName: tableName, Key: op.key.key, ...conditioned() } };
    case 'update': {
      const update = writeKind(op.write as Write).action;
      const set = withVersionSet(update.UpdateExpression ?? '', versionAttribute, op.version);
      return {
        Update: {
          TableName: tableName,
          Key: op.key.key,
          UpdateExpression: set.expression,
          ...conditioned({
            expression: '',
            names: { ...(update.ExpressionAttributeNames ?? {}), ...set.names },
            values: { ...(update.ExpressionAttributeValues ?? {}), ...set.values },
          }),
        },
      };
    }
    case 'check':
      return { ConditionCheck: { TableName: tableName, Key: op.key.key, ...conditioned() } };
  }
}

/** The placeholders of `names` and `values` that `expression` uses (a condition must use every one it sends). */
export function usedPlaceholders(
  expression: string,
  names: Readonly<Record<string, string>>,
  values: Readonly<Record<string, unknown>>,
): { names: Record<string, string>; values: Record<string, unknown> } {
  const used = new Set(expression.match(/[#:][A-Za-z0-9_]+/g) ?? []);
  return {
    names: Object.fromEntries(Object.entries(names).filter(([placeholder]) => used.has(placeholder))),
    values: Object.fromEntries(Object.entries(values).filter(([placeholder]) => used.has(placeholder))),
  };
}

/**
 * The conditions of a unit's commit as `ConditionCheck`s, to learn before its side effects run
 * whether the commit can succeed: its inbox row's (absent, or the dead letter it redrives) — under
 * `inboxHome`, its mark's on its home item, with the user's condition on that item when it has
 * one, and its row's too before `inboxHome.rowsUntil` —, and each condition of the user's own on an item it writes (with the engine's: the item
 * still the incarnation believed). Nothing is written. `roles`: what each action is, in order;
 * `ops`: the items whose user condition is checked (none: nothing to learn before the effects).
 */
export function preflightActions(
  unit: Unit,
  ops: Iterable<ItemOp>,
  config: Pick<RuntimeConfig, 'inboxTable' | 'consumerName' | 'inboxTtlSeconds'>,
  definition: Pick<ConsumerDefinition<unknown>, 'tables' | 'versionAttribute' | 'home'>,
): { actions: TransactAction[]; roles: ActionRole[]; ops: ItemOp[] } {
  const checked: { op: ItemOp; condition: Expression }[] = [];
  for (const op of ops) {
    if (!op.authors.includes(unit) || op.write === undefined || userCondition(writeKind(op.write).action) === undefined) continue;
    const action = itemAction(op, definition);
    const body = Object.values(action ?? {}).find((value) => value !== undefined) as {
      ConditionExpression?: string;
      ExpressionAttributeNames?: Record<string, string>;
      ExpressionAttributeValues?: Record<string, unknown>;
    };
    if (body?.ConditionExpression === undefined) continue;
    const used = usedPlaceholders(body.ConditionExpression, body.ExpressionAttributeNames ?? {}, body.ExpressionAttributeValues ?? {});
    checked.push({
      op,
      condition: { expression: body.ConditionExpression, names: used.names, values: used.values as Expression['values'] },
    });
  }
  const check = (tableName: string, key: ResolvedKey['key'], condition: Expression): TransactAction => ({
    ConditionCheck: {
      TableName: tableName,
      Key: key,
      ConditionExpression: condition.expression,
      ...(Object.keys(condition.names).length > 0 ? { ExpressionAttributeNames: { ...condition.names } } : {}),
      ...(Object.keys(condition.values).length > 0 ? { ExpressionAttributeValues: { ...condition.values } } : {}),
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  });
  const actions: TransactAction[] = [];
  const roles: ActionRole[] = [];
  const home = definition.home;
  if (home !== undefined && unit.home !== undefined) {
    const marks = marksAbsentCondition({
      home,
      marks: new Map([
        [markKey(config.consumerName, unit.idempotencyKey), { mark: { h: '', m: '', x: 0 }, redriveOf: unit.delivery.redriveOf }],
      ]),
    })!;
    const onHome = checked.find((c) => c.op.key.id === unit.home!.id);
    actions.push(check(unit.home.tableName, unit.home.key, onHome === undefined ? marks : and(onHome.condition, marks)));
    roles.push({ role: 'inbox', unit, mark: true, ...(onHome === undefined ? {} : { op: onHome.op }) });
  }
  if (home === undefined || unit.home === undefined || unit.checkRow === true) {
    const inbox = inboxAction(unit, config, new Date(0)).Put!;
    actions.push(
      check(config.inboxTable, inboxKey(config.consumerName, unit.idempotencyKey), {
        expression: inbox.ConditionExpression!,
        names: inbox.ExpressionAttributeNames ?? {},
        values: (inbox.ExpressionAttributeValues ?? {}) as Expression['values'],
      }),
    );
    roles.push({ role: 'inbox', unit });
  }
  const others = checked.filter((c) => unit.home === undefined || home === undefined || c.op.key.id !== unit.home.id);
  for (const { op, condition } of others) {
    actions.push(check(op.key.tableName, op.key.key, condition));
    roles.push({ role: 'item', op });
  }
  return { actions, roles, ops: checked.map((c) => c.op) };
}
