/**
 * One round's plan: the pending units decided in batch order on what the engine believes, their
 * writes folded into one action per item, and what must wait. Pure: no I/O; it settles the units
 * whose verdict needs no more reading through the `settle`/`fail` callbacks.
 *
 * @module
 */
import { type Classification, classify } from '../classifier.js';
import { ConsumerDefinitionError, FailureReason, IdempotencyConflict, NotAttempted } from '../errors.js';
import type { Decision, Item, State } from '../types.js';
import { homeView } from '../inbox/homeMarks.js';
import { type FoldContext, foldDecision } from './foldDecision.js';
import { type ResolvedKey, resolveKey } from './itemKeys.js';
import type { ItemOp, RoundPlan, Unit, UnitPlan, UnitVerdict, VerifyLevel } from './Unit.js';
import { cloneValue, printValue } from './values.js';

/** What planning needs beside the units. */
export interface PlanContext extends FoldContext {
  /**
   * FIFO groups and Kafka partitions stopped before the engine: scope → the batch position of its
   * first delivery that failed retryably before it could be decided (parsing, keys, `read`). Every
   * later unit of the scope is not acted on (case C25).
   */
  readonly stops: ReadonlyMap<string, number>;
  /** Units left out of this round: they did not fit its transactions, and wait for the next. */
  readonly deferred: ReadonlySet<Unit>;
  /** Sets a unit's verdict. */
  readonly settle: (unit: Unit, verdict: UnitVerdict) => void;
  /** Fails a unit with `error`, classified; returns the classification. */
  readonly fail: (unit: Unit, error: unknown) => Classification;
  /**
   * Under `inboxHome`: settles a unit whose home item, as believed, holds its key's mark (a
   * duplicate, a dead letter's copy); `true` when it did. The commit's condition checks the mark
   * anyway: a belief that is out of date costs a round, never a second apply.
   */
  readonly settleFromHome?: (unit: Unit) => boolean;
}

/**
 * Decides the pending units in batch order and folds their writes:
 *
 * - a unit sees each item it reads as the earlier units of the round left it (else as believed);
 * - a FIFO group or Kafka partition stops at its first message that must come back, wherever it
 *   failed: the later ones fail as not attempted;
 * - units of one ordering key (and of one FIFO group or Kafka partition) wait behind one that
 *   cannot be planned this round;
 * - a decision that fails, or asks for a side effect, on state not read consistently is read
 *   again first (see `VerifyLevel`); a verdict that dead-letters a message needs a snapshot,
 *   after its inbox row alone when nothing of it was read yet (a duplicate stops there);
 * - **a side effect is never asked on state that holds another unit's uncommitted write** (that
 *   unit may turn out a duplicate: case C26): such a unit waits for the commit;
 * - a later delivery of a key an earlier unit settled is its duplicate (or an `IdempotencyConflict`).
 *
 * When some unit must be read again, every unit that waits this round is read with it (one
 * request), so that a long group of units that each need a read takes one read, not one per unit
 * (case C30).
 */
export function planRound(units: readonly Unit[], context: PlanContext): RoundPlan {
  const { definition } = context;
  const ops = new Map<string, ItemOp>();
  const plans: UnitPlan[] = [];
  const verify = new Map<Unit, VerifyLevel>();
  const waiting: Unit[] = [];
  const blockedChains = new Set<string>();
  const blockedScopes = new Set<string>();
  const stoppedScopes = new Set<string>();
  const isolated = new Set<string>();

  const block = (unit: Unit) => {
    blockedChains.add(unit.orderingKey);
    if (unit.delivery.scope !== undefined) blockedScopes.add(unit.delivery.scope);
    waiting.push(unit);
  };
  const inRound = (unit: Unit) =>
    plans.some(
      (p) =>
        p.unit.orderingKey === unit.orderingKey || (unit.delivery.scope !== undefined && p.unit.delivery.scope === unit.delivery.scope),
    ) || unit.reads.some((key) => ops.has(key.id));
  const writtenByOthers = (unit: Unit) => unit.reads.some((key) => (ops.get(key.id)?.authors.length ?? 0) > 0);

  for (const unit of units) {
    const scope = unit.delivery.scope;
    if (unit.verdict !== undefined) {
      if (unit.verdict.kind === 'failed' && unit.verdict.failure.retryable && scope !== undefined) stoppedScopes.add(scope);
      continue;
    }
    if (scope !== undefined && (stoppedScopes.has(scope) || (context.stops.get(scope) ?? Number.POSITIVE_INFINITY) < unit.index)) {
      context.fail(unit, new NotAttempted('an earlier message of its message group or partition must be retried first'));
      continue;
    }
    if (
      blockedChains.has(unit.orderingKey) ||
      (scope !== undefined && blockedScopes.has(scope)) ||
      context.deferred.has(unit) ||
      unit.reads.some((key) => isolated.has(key.id))
    ) {
      block(unit);
      continue;
    }
    const earlier = earlierWithKey(unit, units);
    if (earlier === 'wait') {
      block(unit);
      continue;
    }
    if (earlier !== undefined) {
      settleAsDuplicateOf(unit, earlier, context);
      continue;
    }
    if (context.settleFromHome?.(unit) === true) continue;
    if (unit.solo && inRound(unit)) {
      block(unit);
      continue;
    }
    if (unit.reads.some((key) => ops.get(key.id)?.opaque === true)) {
      block(unit);
      continue;
    }

    const reads = new Map(unit.reads.map((key) => [key.id, key]));
    const current = (key: ResolvedKey): Item | undefined => {
      const op = ops.get(key.id);
      return op !== undefined ? op.current : context.believed(key).item;
    };
    const seen = new Map(unit.reads.map((key) => [key.id, printValue(current(key))]));
    let decision: Decision;
    let folded: ReturnType<typeof foldDecision>;
    try {
      decision = decideOnce(unit, seen, () => definition.decide(unit.event, stateOf(reads, current, context)));
      folded = foldDecision(unit, decision, ops, reads, context);
    } catch (error) {
      // A failure seen through an earlier unit's uncommitted write waits for that commit.
      if (writtenByOthers(unit)) {
        block(unit);
        continue;
      }
      const verdict = classify(error, definition.classifyError);
      if (!unit.verified || (!verdict.retryable && !unit.snapshot)) {
        verify.set(unit, verdict.retryable ? 'consistent' : unit.verified || unit.inboxRead === true ? 'snapshot' : 'inbox');
        block(unit);
        continue;
      }
      const failure = context.fail(unit, error);
      if (scope !== undefined) {
        if (failure.retryable) stoppedScopes.add(scope);
        // A dead letter of a FIFO group or Kafka partition is marked before its successors commit (next round).
        else blockedScopes.add(scope);
      }
      continue;
    }
    if (folded === 'defer') {
      block(unit);
      continue;
    }
    const sideEffects = decision.sideEffects ?? [];
    if (sideEffects.length > 0 && (writtenByOthers(unit) || !unit.verified)) {
      if (!unit.verified && !writtenByOthers(unit)) verify.set(unit, 'consistent');
      block(unit);
      continue;
    }
    folded.fold();
    const ids = new Set<string>(unit.reads.map((key) => key.id));
    for (const [id, op] of ops) if (op.authors.includes(unit)) ids.add(id);
    plans.push({ unit, decision, ids, sideEffects, outbox: decision.outbox ?? [] });
    if (unit.solo) {
      for (const id of ids) isolated.add(id);
      block(unit);
      waiting.pop();
    }
  }

  if (verify.size > 0) {
    for (const unit of waiting) if (unit.verdict === undefined && !unit.verified && !verify.has(unit)) verify.set(unit, 'consistent');
  }
  return { plans, ops, verify };
}

/** The state `decide` sees: the items `read` named, as the round left them, deep-copied. */
function stateOf(reads: ReadonlyMap<string, ResolvedKey>, current: (key: ResolvedKey) => Item | undefined, context: PlanContext): State {
  return {
    get: <T extends Item = Item>(table: string, key: Readonly<Item>): T | undefined => {
      const resolved = resolveKey(context.definition.tables, context.tableNames, table, key, 'state.get()');
      const named = reads.get(resolved.id);
      if (named === undefined)
        throw new ConsumerDefinitionError(`decide() asked state.get() for an item of ${table} that read() did not name`);
      const home = context.definition.home;
      const item = home !== undefined && named.table === home.table ? homeView(current(named), home) : current(named);
      return item === undefined ? undefined : (cloneValue(item) as T);
    },
  };
}

/** Calls `decide` unless it already failed on the same state (it is pure: it would fail again). */
function decideOnce(unit: Unit, seen: ReadonlyMap<string, string>, decide: () => Decision | undefined | void): Decision {
  const last = unit.lastFailure;
  if (last !== undefined && last.seen.size === seen.size && [...seen].every(([id, print]) => last.seen.get(id) === print)) throw last.error;
  try {
    const decision = decide() ?? {};
    if (typeof decision !== 'object') throw new ConsumerDefinitionError(`decide() returned a ${typeof decision}, not a decision object`);
    return decision;
  } catch (error) {
    unit.lastFailure = { error, seen };
    throw error;
  }
}

/**
 * `'wait'` while an earlier delivery of the same idempotency key is unsettled; the earlier unit
 * that settled the key (applied it, found it decided, or dead-lettered it); or `undefined`.
 */
export function earlierWithKey(unit: Unit, units: readonly Unit[]): Unit | 'wait' | undefined {
  // A redrive applies a dead-lettered key: a dead letter before it in the batch does not settle it.
  const redrive = unit.delivery.redriveOf !== undefined;
  let settled: Unit | undefined;
  for (const other of units) {
    if (other.index >= unit.index) break;
    if (other.idempotencyKey !== unit.idempotencyKey) continue;
    const verdict = other.verdict;
    if (verdict === undefined) return 'wait';
    const deadLetter =
      (verdict.kind === 'duplicate' && verdict.of === 'dead-letter') ||
      (verdict.kind === 'failed' && !verdict.failure.retryable && verdict.failure.reason !== FailureReason.IdempotencyConflict);
    if (verdict.kind === 'applied' || (verdict.kind === 'duplicate' && !deadLetter) || (deadLetter && !redrive)) settled = other;
  }
  return settled;
}

/** A later delivery of a key an earlier unit of the batch applied, found decided, or dead-lettered. */
function settleAsDuplicateOf(unit: Unit, earlier: Unit, context: PlanContext): void {
  const verdict = earlier.verdict!;
  const stored = verdict.kind === 'duplicate' ? verdict.storedPayloadHash : earlier.payloadHash;
  if (stored !== unit.payloadHash) {
    context.fail(unit, new IdempotencyConflict(unit.idempotencyKey, stored, unit.payloadHash));
    return;
  }
  const of = verdict.kind === 'applied' ? 'applied' : verdict.kind === 'duplicate' ? (verdict.of ?? 'applied') : 'dead-letter';
  context.settle(unit, { kind: 'duplicate', storedPayloadHash: stored, of });
}
