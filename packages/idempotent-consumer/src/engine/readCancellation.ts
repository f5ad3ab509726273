/**
 * Reads a cancelled `TransactWriteItems`: DynamoDB gives one reason per action, in request order
 * (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html),
 * with the item as it was for a failed condition (`ReturnValuesOnConditionCheckFailure: ALL_OLD`).
 * The reasons name the culprits; every other unit of the transaction commits again, its attempt
 * not counted. Pure.
 *
 * @module
 */
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { type HomeSettings, hasMarks, markRow } from '../inbox/homeMarks.js';
import { type InboxRow, InboxStatus, toInboxRow } from '../inbox/inboxItems.js';
import { OUTBOX_KIND } from '../outbox/outboxItems.js';
import type { Item } from '../types.js';
import { sameIncarnation } from './conditions.js';
import { hasUserCondition } from './foldDecision.js';
import type { ActionRole, ItemOp, Known, Unit } from './Unit.js';
import { UNMARSHALL_OPTIONS } from './values.js';

/** One cancellation reason as the SDK gives it. */
export interface CancellationReason {
  readonly Code?: string;
  readonly Message?: string;
  readonly Item?: Record<string, unknown>;
}

/** What a cancellation says, action by action, gathered per unit and item. */
export interface CancellationReading {
  /** Units whose inbox row exists: the row found (a duplicate, a conflict, or a dead-letter marker). */
  readonly inboxRows: readonly { readonly unit: Unit; readonly row: InboxRow }[];
  /** Items now known as they were when the conditions were evaluated, by id. */
  readonly observed: ReadonlyMap<string, Known>;
  /** Units that must be decided again: an item they wrote or read changed. */
  readonly stale: ReadonlySet<Unit>;
  /** A user condition that failed on an item as believed: its author, and what failed. */
  readonly conditionFailures: readonly { readonly unit: Unit; readonly message: string }[];
  /** DynamoDB refused an action (`ValidationError`, an item collection too large): its author(s). */
  readonly refused: readonly { readonly units: readonly Unit[]; readonly message: string }[];
  /** Units with an action that lost to contention (`TransactionConflict`, throttling). */
  readonly contended: ReadonlySet<Unit>;
  /**
   * Units with a failed condition that nothing above explains (an outbox item refused without the
   * item it found): counted as a lost commit, so that a unit that would fail the same way in every
   * round is retried, its attempt counted, instead of spinning through the batch's rounds.
   */
  readonly unexplained: ReadonlySet<Unit>;
  /**
   * Every condition of the transaction was evaluated at one instant and nothing else failed: the
   * units' inbox rows and items are known as they were then, a consistent view.
   */
  readonly consistentView: boolean;
}

const CONTENTION = new Set(['TransactionConflict', 'ThrottlingError', 'ProvisionedThroughputExceeded', 'RequestLimitExceeded']);
const REFUSAL = new Set(['ValidationError', 'ItemCollectionSizeLimitExceeded']);

/**
 * Reads the reasons of a cancelled transaction.
 *
 * @param roles - what each action of the transaction was, in request order
 * @param reasons - `CancellationReasons`, in the same order
 * @param versionAttribute - the engine's version attribute, to tell a changed item from a failed user condition
 */
export function readCancellation(
  roles: readonly ActionRole[],
  reasons: readonly CancellationReason[],
  versionAttribute: string,
  home?: HomeSettings,
  consumerName = '',
): CancellationReading {
  const inboxRows: { unit: Unit; row: InboxRow }[] = [];
  const observed = new Map<string, Known>();
  const stale = new Set<Unit>();
  const conditionFailures: { unit: Unit; message: string }[] = [];
  const refused: { units: Unit[]; message: string }[] = [];
  const contended = new Set<Unit>();
  const outboxRows: { unit: Unit; row: InboxRow }[] = [];
  const unexplained = new Set<Unit>();
  const unitsOf = (role: ActionRole): Unit[] => (role.role === 'item' ? [...role.op.authors, ...role.op.readers] : [role.unit]);
  let onlyConditions = reasons.length === roles.length;

  roles.forEach((role, i) => {
    const reason = reasons[i];
    const code = reason?.Code ?? 'None';
    if (code === 'None') {
      // Its condition held: what the engine believed is the stored item.
      if (role.role === 'item' && role.op.inReadSet) observed.set(role.op.key.id, { ...role.op.base, verified: true });
      return;
    }
    if (code === 'ConditionalCheckFailed') {
      const old = reason?.Item === undefined ? undefined : (unmarshall(reason.Item as never, UNMARSHALL_OPTIONS) as Item);
      if (role.role === 'inbox') {
        // Its inbox row (also written under inboxHome for a redrive and with provenance), or, under
        // inboxHome, the check of its mark on its home item (before its side effects).
        const row =
          role.mark === true && home !== undefined ? markRow(old, home.attribute, consumerName, role.unit.idempotencyKey) : toInboxRow(old);
        if (row !== undefined) inboxRows.push({ unit: role.unit, row });
        else if (role.op !== undefined) readItemFailure(role.op, old, versionAttribute, { observed, stale, conditionFailures }, home);
        else unexplained.add(role.unit);
        return;
      }
      if (role.role === 'outbox') {
        // Its unit's inbox record usually tells why (its row or mark failed too). Where it does not
        // (under inboxHome, a late copy whose mark has expired and been removed, or a key reused on
        // another home), the outbox item is the record that the key was applied.
        const row = outboxRecord(old, role.unit.idempotencyKey);
        if (row !== undefined) outboxRows.push({ unit: role.unit, row });
        else unexplained.add(role.unit);
        return;
      }
      readItemFailure(role.op, old, versionAttribute, { observed, stale, conditionFailures }, home);
      return;
    }
    onlyConditions = false;
    if (CONTENTION.has(code)) {
      for (const unit of unitsOf(role)) contended.add(unit);
      return;
    }
    if (REFUSAL.has(code)) {
      const units = role.role === 'item' ? (role.op.authors.length > 0 ? [role.op.authors.at(-1)!] : role.op.readers) : [role.unit];
      refused.push({ units, message: `DynamoDB refused it (${code}): ${(reason?.Message ?? '').slice(0, 300)}` });
      return;
    }
    // An unknown reason: treated as contention of the action's units.
    for (const unit of unitsOf(role)) contended.add(unit);
  });
  for (const entry of outboxRows) {
    if (!inboxRows.some(({ unit }) => unit === entry.unit)) inboxRows.push(entry);
  }
  const explained = new Set<Unit>([
    ...inboxRows.map(({ unit }) => unit),
    ...stale,
    ...conditionFailures.map(({ unit }) => unit),
    ...refused.flatMap(({ units }) => units),
    ...contended,
  ]);
  for (const unit of explained) unexplained.delete(unit);
  return { inboxRows, observed, stale, conditionFailures, refused, contended, unexplained, consistentView: onlyConditions };
}

/**
 * An outbox item found in the way of a unit's: the key was applied by the event that wrote it. Its
 * `sourcePayloadHash` says whether that was this event (a duplicate) or another (an
 * `IdempotencyConflict`); an item written without one is taken as another event's, never as a
 * duplicate, so that no event is dropped on a guess.
 */
function outboxRecord(old: Item | undefined, idempotencyKey: string): InboxRow | undefined {
  if (old === undefined || old.kind !== OUTBOX_KIND || old.idempotencyKey !== idempotencyKey) return undefined;
  return {
    status: InboxStatus.Applied,
    idempotencyKey,
    payloadHash: typeof old.sourcePayloadHash === 'string' ? old.sourcePayloadHash : 'unknown (an outbox item written without it)',
    messageId: String(old.messageId),
  };
}

/** A failed condition on an item: it changed (its units decide again), or the user's own condition failed on it as believed. */
function readItemFailure(
  op: ItemOp,
  old: Item | undefined,
  versionAttribute: string,
  out: { observed: Map<string, Known>; stale: Set<Unit>; conditionFailures: { unit: Unit; message: string }[] },
  home?: HomeSettings,
): void {
  const actual: Known = { exists: old !== undefined, item: old, verified: true };
  if (
    !op.inReadSet &&
    home !== undefined &&
    home.writeMarks !== false &&
    op.key.table === home.table &&
    (op.kind === 'put' || op.kind === 'delete')
  ) {
    // A blind Put or Delete of the home table, guarded so as not to erase inbox marks: the item
    // holds marks (or, believed marked, changed): decided again on the item as it is.
    // Believed marked, it was conditioned on the incarnation believed: a change fails it. Believed
    // unmarked, on holding no marks: marks fail it. Otherwise the user's own condition failed.
    const believedMarked = hasMarks(op.base.exists ? op.base.item : undefined, home.attribute);
    if (believedMarked ? !sameIncarnation(actual, op.base, versionAttribute) : hasMarks(old, home.attribute)) {
      out.observed.set(op.key.id, actual);
      for (const unit of op.authors) out.stale.add(unit);
      return;
    }
  }
  if (!op.inReadSet) {
    // A blind write with a condition of its own: nothing was believed of the item.
    out.conditionFailures.push({ unit: op.authors[0]!, message: `the condition of its ${op.kind} on ${op.key.table} failed` });
    return;
  }
  out.observed.set(op.key.id, actual);
  if (!sameIncarnation(actual, op.base, versionAttribute) || !hasUserCondition(op.write)) {
    for (const unit of [...op.authors, ...op.readers]) out.stale.add(unit);
    return;
  }
  out.conditionFailures.push({ unit: op.authors.at(-1)!, message: `the condition of its ${op.kind} on ${op.key.table} failed` });
}
