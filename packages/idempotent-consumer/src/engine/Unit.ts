import type { Context } from 'aws-lambda';
/**
 * The engine's working types: a unit (one parsed delivery) as it goes through the rounds of one
 * batch, what the engine believes of an item, and a round's plan (the folded item actions and the
 * units that commit them).
 *
 * @module
 */
import type { Classification } from '../classifier.js';
import type { Decision, Item, OutgoingMessage, SideEffectRequest, Write } from '../types.js';
import type { ItemBelief } from './conditions.js';
import type { ResolvedKey } from './itemKeys.js';
import type { ParsedDelivery } from './parseDelivery.js';

/** How an invocation's clock reads. */
export interface InvocationClock {
  /** Milliseconds left before the invocation's deadline (Lambda's `getRemainingTimeInMillis()`). */
  remainingTimeMs(): number;
  /**
   * The invocation's own Lambda context, when it has one: what sets a side effect's lock expiry.
   * It travels with the invocation, never through shared state, so invocations that one process
   * serves at once (Lambda Managed Instances) each lock until their own deadline.
   */
  readonly lambdaContext?: Context;
}

/** Runs a guarded inline side effect (see `SideEffectRunner`). */
export interface SideEffectExecutor {
  /**
   * Runs one effect. It resolves once the effect has run (or was found completed); what it
   * returns, if anything, is the write of the effect's completion record still in flight, which
   * the engine awaits beside the commit rather than before it.
   *
   * `gate`, when given, is the check of the commit's conditions, still in flight: the effect's
   * lock may be taken meanwhile, but the effect itself starts only once it resolves `true`. When
   * it resolves `false` (or rejects) the effect is not started, its lock is released, and what
   * `run` answers is ignored.
   */
  run(
    request: SideEffectRequest,
    context: { readonly idempotencyKey: string; readonly effectKey: string },
    clock: InvocationClock,
    gate?: Promise<boolean>,
  ): Promise<SideEffectRan | void>;
}

/** What {@link SideEffectExecutor.run} leaves in flight when it resolves. */
export interface SideEffectRan {
  /**
   * The write of the effect's completion record (Powertools' `COMPLETED` record). It rejects with
   * the write's error; the effect has run either way.
   */
  readonly completionRecorded: Promise<void>;
}

/** A unit's final state within the batch. */
export type UnitVerdict =
  | { readonly kind: 'applied' }
  /** Its key was already decided: applied (`of: 'applied'`) or dead-lettered by another message (`of: 'dead-letter'`). */
  | { readonly kind: 'duplicate'; readonly storedPayloadHash: string; readonly of?: 'applied' | 'dead-letter' }
  /**
   * A failure: retried or dead-lettered per its classification. `alreadyMarked`: the inbox
   * already holds this message's dead-letter marker; `sent`: it is in the dead-letter queue
   * already (sent before its successors committed).
   */
  | { readonly kind: 'failed'; readonly failure: Classification; readonly alreadyMarked?: boolean; readonly sent?: boolean };

/** A parsed delivery as the engine tracks it through the rounds of one batch. */
export interface Unit<Event = unknown> extends ParsedDelivery<Event> {
  /** Its position in the batch. */
  readonly index: number;
  /** Its inbox row and reads were read consistently in this batch (a strongly consistent read of each, or a snapshot). */
  verified: boolean;
  /**
   * A serializable snapshot backs its view (`TransactGetItems`, or a cancelled transaction whose
   * conditions were all evaluated at one instant): what a verdict that dead-letters it needs.
   */
  snapshot: boolean;
  /**
   * Its inbox row alone was read consistently in this batch and did not stop it (absent, or the
   * dead letter it redrives): a verdict that dead-letters it now needs only the snapshot.
   */
  inboxRead?: boolean;
  /**
   * Under `inboxHome`, before `inboxHome.rowsUntil`: its inbox row is read and written beside its
   * mark (a redelivery of an event applied before `inboxHome` was on has a row and no mark).
   */
  checkRow?: boolean;
  /** Commits it lost in this batch on its own items (a conflict, throttling, an item changed by another writer). */
  losses: number;
  /** Commit it in a transaction of its own (after a shared transaction failed as a whole). */
  solo: boolean;
  verdict: UnitVerdict | undefined;
  /** When the verdict was reached, `performance.now()`. */
  settledAt: number | undefined;
  /**
   * The last failure of `decide` and the items it saw: when the consistent read shows the same
   * items, the (pure) decision is not made again.
   */
  lastFailure?: { readonly error: unknown; readonly seen: ReadonlyMap<string, string> };
}

/** What the engine believes of one item during a batch. */
export interface Known extends ItemBelief {
  /** Read consistently in this batch (a read, a condition that passed, an item returned by a failed condition, a commit). */
  readonly verified: boolean;
}

/** The action a round sends for one item, with the decisions it folds. */
export interface ItemOp {
  readonly key: ResolvedKey;
  /** What the engine believed of the item when the round started (the engine's condition checks it). */
  readonly base: Known;
  /** Named by a `read` of some unit: guarded by the engine's condition that it is as believed. */
  readonly inReadSet: boolean;
  kind: 'put' | 'delete' | 'update' | 'check';
  /** The item as the round's decisions leave it (put: with its new version; check: as believed; update: unknown). */
  current: Item | undefined;
  /** The last author's write as given (for an update, a write with a condition of its own, a blind write). */
  write: Write | undefined;
  /** An `Update`, a user condition or a blind write: later decisions cannot see through it. */
  opaque: boolean;
  /** The version this action writes (a put or an update), new for every round. */
  readonly version: string;
  readonly authors: Unit[];
  readonly readers: Unit[];
  /**
   * Under `inboxHome`: the item as the commit leaves it, when the action that carries inbox marks
   * knows it (a put, a delete that leaves a stub, a check that writes marks); set when the action is
   * built. What the environment then remembers of the item, marks included.
   */
  stored?: Item | undefined;
}

/** One unit's part of a round's plan. */
export interface UnitPlan {
  readonly unit: Unit;
  readonly decision: Decision;
  /** Items it wrote or read. */
  readonly ids: ReadonlySet<string>;
  readonly sideEffects: readonly SideEffectRequest[];
  readonly outbox: readonly OutgoingMessage[];
}

/**
 * How a unit's inbox row and reads are read again: `inbox`, its inbox row alone, strongly
 * consistent (1 read unit), before a verdict that would dead-letter it on state not read in this
 * batch: a redelivered duplicate (the commonest such verdict: `decide` refuses to apply an event
 * twice) is settled by it, at a quarter of a snapshot's units; `consistent`, a strongly consistent
 * `BatchGetItem` (1 read unit per item of up to 4 KB), enough to retry a message or run a side
 * effect (its guard stops a second run; the commit's conditions catch a change); `snapshot`, one
 * `TransactGetItems` (2 read units per item), a serializable view, before a verdict that
 * dead-letters a message.
 */
export type VerifyLevel = 'inbox' | 'consistent' | 'snapshot';

/** A round's plan. */
export interface RoundPlan {
  /** The units that commit this round, in batch order. */
  readonly plans: readonly UnitPlan[];
  readonly ops: ReadonlyMap<string, ItemOp>;
  /** Units to read again before they are decided again, and how. */
  readonly verify: ReadonlyMap<Unit, VerifyLevel>;
}

/** What one action of a transaction is, to read its cancellation reason. */
export type ActionRole =
  /**
   * Its inbox row; or, with `mark`, under `inboxHome`, a check of its mark on its home item (`op`:
   * the home's action, when its condition is in the check too).
   */
  | { readonly role: 'inbox'; readonly unit: Unit; readonly mark?: true; readonly op?: ItemOp }
  | { readonly role: 'outbox'; readonly unit: Unit }
  | { readonly role: 'item'; readonly op: ItemOp };
