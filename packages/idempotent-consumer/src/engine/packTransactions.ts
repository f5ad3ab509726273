/**
 * Packs a round's planned units into as few `TransactWriteItems` as DynamoDB's limits allow.
 * Pure: it builds the actions and measures them; it sends nothing.
 *
 * @module
 */
import { marshall } from '@aws-sdk/util-dynamodb';
import { InvalidWrite } from '../errors.js';
import type { Item } from '../types.js';
import { MAX_TRANSACTION_ACTIONS } from './foldDecision.js';
import { itemBytes } from './itemSize.js';
import type { TransactAction } from './transactionActions.js';
import type { ActionRole, ItemOp, RoundPlan, Unit, UnitPlan } from './Unit.js';
import { MARSHALL_OPTIONS } from './values.js';

/**
 * DynamoDB's 4 MB limit on one transaction (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html),
 * with room for what the estimate leaves out (expressions, names).
 */
export const MAX_TRANSACTION_BYTES = 3_800_000;

/** One transaction to send: its actions, what each action is, and the units it commits. */
export interface PackedTransaction {
  readonly actions: TransactAction[];
  readonly roles: ActionRole[];
  readonly units: Unit[];
  bytes: number;
}

/** What {@link packTransactions} needs to build a unit's actions. */
export interface ActionBuilder {
  /** The unit's inbox row and outbox items (`ops`: the round's item actions, for what the unit writes). */
  unitActions(plan: UnitPlan, ops: RoundPlan['ops']): readonly { readonly action: TransactAction; readonly role: ActionRole }[];
  /** An item's action; `undefined` when there is nothing to send. */
  itemAction(op: ItemOp): TransactAction | undefined;
}

/** The packing of a round. */
export interface Packing {
  readonly transactions: readonly PackedTransaction[];
  /** Units that did not fit: they wait for the next round, decided again on what this round commits. */
  readonly deferred: ReadonlySet<Unit>;
  /** Units whose commit alone exceeds a transaction's size: they fail. */
  readonly tooLarge: ReadonlyMap<Unit, InvalidWrite>;
}

/** The size of an action's items, keys and values, in bytes (as DynamoDB sizes items). */
export function actionBytes(action: TransactAction): number {
  const body = Object.values(action).find((value) => value !== undefined) as
    | { Item?: Item; Key?: Item; ExpressionAttributeValues?: Item }
    | undefined;
  if (body === undefined) return 0;
  let bytes = 0;
  for (const part of [body.Item, body.Key, body.ExpressionAttributeValues]) {
    if (part !== undefined) bytes += itemBytes(marshall(part, MARSHALL_OPTIONS));
  }
  return bytes;
}

/**
 * Groups the planned units into transactions:
 *
 * - units linked by an item, an ordering key or a FIFO group/Kafka partition (a component) commit
 *   together or in order: their actions go into one transaction, unit by unit, while it stays within
 *   100 actions and 4 MB; the units that do not fit are deferred to the next round (they are
 *   decided again on what this one commits), never failed for it (case C29);
 * - several components share a transaction while it fits (unless `options.shareComponents` is
 *   `false`: under contention, so that a conflict on one component's item cancels only that
 *   component); a `solo` unit has one of its own;
 * - a unit whose actions alone exceed 4 MB fails (`InvalidWrite`).
 */
export function packTransactions(plan: RoundPlan, builder: ActionBuilder, options: { readonly shareComponents?: boolean } = {}): Packing {
  const share = options.shareComponents ?? true;
  const components = componentsOf(plan.plans);
  const deferred = new Set<Unit>();
  const tooLarge = new Map<Unit, InvalidWrite>();
  const transactions: PackedTransaction[] = [];
  for (const members of components) {
    const transaction: PackedTransaction = { actions: [], roles: [], units: [], bytes: 0 };
    const included = new Set<string>();
    for (const [position, p] of members.entries()) {
      const entries = [...builder.unitActions(p, plan.ops)];
      const newIds: string[] = [];
      for (const id of p.ids) {
        if (included.has(id)) continue;
        const op = plan.ops.get(id);
        if (op === undefined) continue;
        const action = builder.itemAction(op);
        if (action === undefined) continue;
        entries.push({ action, role: { role: 'item', op } });
        newIds.push(id);
      }
      const bytes = entries.reduce((sum, entry) => sum + actionBytes(entry.action), 0);
      if (transaction.actions.length + entries.length > MAX_TRANSACTION_ACTIONS || transaction.bytes + bytes > MAX_TRANSACTION_BYTES) {
        if (position === 0) {
          tooLarge.set(
            p.unit,
            new InvalidWrite(
              `its commit needs ${entries.length} actions and about ${bytes} bytes, more than one DynamoDB transaction takes (100 actions, 4 MB)`,
            ),
          );
        }
        for (const rest of members.slice(position === 0 ? 1 : position)) deferred.add(rest.unit);
        break;
      }
      for (const entry of entries) {
        transaction.actions.push(entry.action);
        transaction.roles.push(entry.role);
      }
      transaction.units.push(p.unit);
      transaction.bytes += bytes;
      for (const id of newIds) included.add(id);
    }
    if (transaction.units.length === 0) continue;
    const solo = transaction.units.some((unit) => unit.solo);
    const open =
      solo || !share
        ? undefined
        : transactions.find(
            (t) =>
              !t.units.some((unit) => unit.solo) &&
              t.actions.length + transaction.actions.length <= MAX_TRANSACTION_ACTIONS &&
              t.bytes + transaction.bytes <= MAX_TRANSACTION_BYTES,
          );
    if (open === undefined) {
      transactions.push(transaction);
    } else {
      open.actions.push(...transaction.actions);
      open.roles.push(...transaction.roles);
      open.units.push(...transaction.units);
      open.bytes += transaction.bytes;
    }
  }
  return { transactions, deferred, tooLarge };
}

/** The planned units grouped into components (linked by an item, an ordering key or a scope), each in batch order. */
export function componentsOf(plans: readonly UnitPlan[]): UnitPlan[][] {
  const parent = new Map<Unit, Unit>();
  const find = (unit: Unit): Unit => {
    let root = unit;
    while (parent.get(root) !== root) root = parent.get(root)!;
    parent.set(unit, root);
    return root;
  };
  const union = (a: Unit, b: Unit) => {
    const [ra, rb] = [find(a), find(b)];
    if (ra !== rb) parent.set(ra.index < rb.index ? rb : ra, ra.index < rb.index ? ra : rb);
  };
  const firstBy = new Map<string, Unit>();
  for (const { unit, ids } of plans) {
    parent.set(unit, unit);
    const links = [...ids].map((id) => `item:${id}`);
    links.push(`key:${unit.orderingKey}`);
    if (unit.delivery.scope !== undefined) links.push(`scope:${unit.delivery.scope}`);
    for (const link of links) {
      const first = firstBy.get(link);
      if (first === undefined) firstBy.set(link, unit);
      else union(first, unit);
    }
  }
  const components = new Map<Unit, UnitPlan[]>();
  for (const p of plans) {
    const root = find(p.unit);
    const members = components.get(root);
    if (members === undefined) components.set(root, [p]);
    else members.push(p);
  }
  return [...components.values()];
}
