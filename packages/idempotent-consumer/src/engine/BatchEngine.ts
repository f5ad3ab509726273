import type { Logger } from '@aws-lambda-powertools/logger';
import { type DynamoDBDocumentClient, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { type Classification, classify } from '../classifier.js';
import type { RuntimeConfig } from '../config/runtimeConfig.js';
import { ConditionalWriteFailed, FailureReason, IdempotencyConflict, InvalidWrite, NotAttempted, TransactionConflict } from '../errors.js';
import type { SideEffectRequest } from '../types.js';
import { appliedMark, markKey, markRow } from '../inbox/homeMarks.js';
import { expiresAt, type InboxRow, InboxStatus, toInboxRow } from '../inbox/inboxItems.js';
import { homeTargetOf, writeDeadLetterMarker } from '../inbox/writeDeadLetterMarker.js';
import { type SegmentTracer, TraceSegmentName, traced } from '../observability/traceSegments.js';
import { newVersion } from './conditions.js';
import type { ConsumerDefinition } from './ConsumerDefinition.js';
import type { DeadLetterOutcome } from './deadLetters.js';
import { describeError } from './describeError.js';
import { effectKeyOf, effectLabelOf } from './effectKeys.js';
import type { ItemCache } from './ItemCache.js';
import type { ResolvedKey } from './itemKeys.js';
import type { HomeMarking } from './homeActions.js';
import { type ActionBuilder, type PackedTransaction, type Packing, packTransactions } from './packTransactions.js';
import { planRound } from './planRound.js';
import { type CancellationReason, readCancellation } from './readCancellation.js';
import { inboxId, type ReadResult, readConsistently, readSnapshot, type StateReadDeps } from './stateReads.js';
import { inboxAction, itemAction, outboxActions, preflightActions, type TransactAction, writtenKeys } from './transactionActions.js';
import type { ActionRole, InvocationClock, ItemOp, Known, RoundPlan, SideEffectExecutor, Unit, UnitVerdict, VerifyLevel } from './Unit.js';
import { MAX_TRANSACTION_ACTIONS } from './foldDecision.js';

export type { InvocationClock, SideEffectExecutor, Unit, UnitVerdict } from './Unit.js';
export { describeError } from './describeError.js';

/**
 * Least time left, in milliseconds, to start a round: below it the invocation is about to be
 * stopped (or was called past its deadline), and what is left is retried, not attempted. A commit
 * cut short by the deadline is harmless (a transaction is all or nothing), so the margin is small.
 */
const COMMIT_MARGIN_MS = 200;
/** Commits a unit may lose on its own items (a conflict, throttling, an item another writer changed) before it is retried by the source. */
const MAX_LOSSES = 6;
/**
 * The wait after a round that lost commits to contention, in milliseconds: a random time up to
 * `CONTENTION_BACKOFF_BASE_MS × 2^losses` (the most losses of a unit still pending), at most
 * `CONTENTION_BACKOFF_MAX_MS` ("full jitter", AWS's advice for retries on contention:
 * https://aws.amazon.com/builders-library/timeouts-retries-and-backoff-with-jitter/), and never
 * past the invocation's commit margin. Invocations that collide on hot items (many execution
 * environments, or many invocations in one on Lambda Managed Instances) spread out instead of
 * colliding again in step, so a message is not failed for its neighbours' writes.
 */
const CONTENTION_BACKOFF_BASE_MS = 20;
const CONTENTION_BACKOFF_MAX_MS = 1_000;
/**
 * Batches an execution environment commits one transaction per component (units linked by an
 * item, an ordering key, a message group or partition) after a batch that lost a commit to
 * contention, instead of sharing one transaction among components: a conflict on one hot item
 * then cancels that component's transaction only, not the whole batch's (a cancelled transaction
 * bills its items and costs every unit in it a round). Each batch that loses again starts the
 * count anew; the transactions of a batch still go out in parallel (the same round trips).
 */
const CONTENTION_MEMORY_BATCHES = 20;
/**
 * Rounds a batch may take, beside the time it has: a safety net that no batch reaches (every
 * round settles a unit, reads what it must, or loses a commit a unit can lose only `MAX_LOSSES`
 * times). Units left then are retried without counting an attempt: the engine's limit is never a
 * message's fault.
 */
const roundLimit = (units: number) => 40 + 12 * units;
/** Waited past a side-effect lock's expiry, in milliseconds, so that the lock reads expired. */
const LOCK_EXPIRY_SLACK_MS = 50;

/**
 * The side effects that completed in one batch: by effect key, and by unit what its dead letter
 * would name.
 */
interface CompletedEffects {
  /** The effect keys whose effect this batch ran, or found completed. */
  readonly keys: Set<string>;
  /**
   * Per unit, its requests whose effect key completed (`label`: `<name>#<position>`, or
   * `<name>#<key>` for a chosen key, which another message may have completed).
   */
  readonly byUnit: Map<Unit, { readonly label: string; readonly chosen: boolean }[]>;
  /**
   * The completion records of the effects that ran, still being written: awaited beside the next
   * commit, and before the batch settles (see {@link SideEffectExecutor.run}).
   */
  readonly recording: Promise<void>[];
}

/** What a batch knows of contention: whether it commits per component, and whether a commit of it lost to contention. */
interface ContentionState {
  separate: boolean;
  seen: boolean;
}

/** Marks and sends dead letters now: one outcome per unit, in order (see `deadLetters.ts`). */
export type DeadLetterNow = (units: readonly Unit[]) => Promise<readonly DeadLetterOutcome[]>;

/** Options of {@link BatchEngine}. */
export interface BatchEngineOptions<Event> {
  readonly definition: ConsumerDefinition<Event>;
  readonly config: RuntimeConfig;
  readonly client: DynamoDBDocumentClient;
  readonly cache: ItemCache;
  /** Loaded when a decision first asks for a side effect. */
  readonly sideEffects: () => Promise<SideEffectExecutor>;
  readonly logger?: Logger;
  readonly now: () => Date;
  /** Waits `ms` milliseconds (tests make it instant). @default setTimeout */
  readonly sleep?: (ms: number) => Promise<void>;
  /**
   * Opens a subsegment per phase of a round when given and tracing: `## read`, `## decide`,
   * `## sideEffects`, `## commit`. @default none
   */
  readonly tracer?: SegmentTracer;
}

/**
 * Decides and commits the parsed deliveries of one batch: **one `TransactWriteItems` per batch**
 * on the happy path, and no read at all when the execution environment already holds the state
 * (or the items are new). Each round:
 *
 * 1. **Plan** (`planRound`): the units are decided in batch order on what the engine believes (an
 *    item this environment committed or read, else absent), each seeing the items as the earlier
 *    units left them; writes to one item are folded into one action.
 * 2. **Read before acting on doubt**: a decision that fails, or asks for a side effect, on state
 *    not read consistently is read again first (`stateReads`); a verdict that dead-letters a
 *    message needs a serializable snapshot.
 * 3. **Pack** (`packTransactions`): as few transactions as DynamoDB's limits allow; units that do
 *    not fit wait for the next round.
 * 4. **Side effects** of the planned units run, guarded, before their commit.
 * 5. **Commit**: each unit's inbox row, the folded writes (each conditional on the item being the
 *    incarnation believed, each writing a new version), the outbox items.
 * 6. **On a cancellation** (`readCancellation`), the reasons name the culprits; the others commit
 *    again in the next round.
 *
 * The rounds go on while the invocation has time: a batch is never failed for the number of
 * rounds it needs (cases C29, C30).
 */
export class BatchEngine<Event> {
  readonly #options: BatchEngineOptions<Event>;
  readonly #sleep: (ms: number) => Promise<void>;
  /** Batches left to commit one transaction per component (see `CONTENTION_MEMORY_BATCHES`). */
  #separateBatchesLeft = 0;

  constructor(options: BatchEngineOptions<Event>) {
    this.#options = options;
    this.#sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  /**
   * Settles every unit: sets each one's `verdict` (applied, duplicate, or failed with its
   * classification). Never throws: an unexpected error fails the units it touched, retryably.
   *
   * @param stops - FIFO groups and Kafka partitions stopped before the engine: scope → the batch
   *   position of the first delivery that failed retryably before it could be decided
   * @param deadLetter - marks and sends the dead letters of a FIFO group or Kafka partition before
   *   their successors commit; without it, only their markers are written (the caller sends them)
   */
  async settle(
    units: readonly Unit<Event>[],
    clock: InvocationClock,
    stops: ReadonlyMap<string, number> = new Map(),
    deadLetter?: DeadLetterNow,
  ): Promise<void> {
    const home = this.#options.definition.home;
    const rowsUntilMs = home?.rowsUntilMs;
    if (home?.writeMarks === false || (rowsUntilMs !== undefined && this.#options.now().getTime() < rowsUntilMs)) {
      for (const unit of units) if (unit.home !== undefined) unit.checkRow = true;
    }
    const effects: CompletedEffects = { keys: new Set(), byUnit: new Map(), recording: [] };
    const contention: ContentionState = { separate: this.#separateBatchesLeft > 0, seen: false };
    try {
      await this.#rounds(units, clock, stops, effects, deadLetter, contention);
    } finally {
      await this.#completionsRecorded(effects);
      this.#separateBatchesLeft = contention.seen ? CONTENTION_MEMORY_BATCHES : Math.max(0, this.#separateBatchesLeft - 1);
    }
    this.#sayWhichEffectsRan(units, effects);
  }

  /** Waits `ms` milliseconds with the engine's own sleep (the one its options gave: tests make it instant). */
  sleep(ms: number): Promise<void> {
    return this.#sleep(ms);
  }

  /** Whether the next batch commits one transaction per component (after contention: see `CONTENTION_MEMORY_BATCHES`). */
  get committingPerComponent(): boolean {
    return this.#separateBatchesLeft > 0;
  }

  /**
   * A message dead-lettered after its side effects ran (decided again on newer state, or its
   * commit refused) is never dropped silently: its error message says which effects ran, so the
   * dead letter and the log carry it (an operator who redrives it knows the effect happened).
   *
   * It names only the effects its own requests asked for: those of its own effect keys as
   * `<name>#<position>` ("ran before"), and those of a chosen key as `<name>#<key>` ("done before
   * for their chosen key, by it or another message": a redrive will find them completed, whichever
   * message ran them).
   *
   * A message whose effects ran and whose commit then met its key dead-lettered by another
   * delivery (a copy on its last receive, giving up while this one applied it: a parked message's
   * wake-up as its predecessor arrives) is settled by that dead letter, which was written without
   * knowing of the effects: a warning names them, with the message and its idempotency key (an
   * operator who redrives it learns the effects are completed).
   */
  #sayWhichEffectsRan(units: readonly Unit<Event>[], effects: CompletedEffects): void {
    for (const unit of units) {
      const verdict = unit.verdict;
      const deadLetteredElsewhere =
        (verdict?.kind === 'duplicate' && verdict.of === 'dead-letter') || (verdict?.kind === 'failed' && verdict.alreadyMarked === true);
      if (deadLetteredElsewhere && (effects.byUnit.get(unit) ?? []).length > 0)
        this.#options.logger?.warn('side effects ran for a message that another delivery dead-lettered meanwhile', {
          messageId: unit.delivery.messageId,
          idempotencyKey: unit.idempotencyKey,
          sideEffects: effects.byUnit.get(unit)!.map((effect) => effect.label),
        });
      if (verdict?.kind !== 'failed' || verdict.failure.retryable) continue;
      const done = effects.byUnit.get(unit) ?? [];
      const own = done.filter((effect) => !effect.chosen).map((effect) => effect.label);
      const chosen = done.filter((effect) => effect.chosen).map((effect) => effect.label);
      const parts = [
        ...(own.length === 0 ? [] : [`ran before: ${own.join(', ')}`]),
        ...(chosen.length === 0 ? [] : [`done before for their chosen key, by it or another message: ${chosen.join(', ')}`]),
      ];
      if (parts.length === 0) continue;
      unit.verdict = {
        ...verdict,
        failure: { ...verdict.failure, errorMessage: `${verdict.failure.errorMessage} (its side effects ${parts.join('; ')})` },
      };
    }
  }

  async #rounds(
    units: readonly Unit<Event>[],
    clock: InvocationClock,
    stops: ReadonlyMap<string, number>,
    effects: CompletedEffects,
    deadLetter: DeadLetterNow | undefined,
    contention: ContentionState,
  ): Promise<void> {
    const view = new Map<string, Known>();
    const limit = roundLimit(units.length);
    const tracer = this.#options.tracer;
    for (let round = 0; ; round += 1) {
      const pending = units.filter((unit) => unit.verdict === undefined);
      if (pending.length === 0) return;
      if (round >= limit) {
        this.#options.logger?.error('the batch did not settle in its rounds; what is left is retried', {
          rounds: round,
          pending: pending.length,
        });
        for (const unit of pending) this.#fail(unit, new NotAttempted(`the batch did not settle in ${round} rounds`));
        return;
      }
      if (clock.remainingTimeMs() < COMMIT_MARGIN_MS) {
        for (const unit of pending) this.#fail(unit, new NotAttempted('too little time was left in the invocation to commit it'));
        return;
      }
      await this.#deadLetterBeforeSuccessors(units, deadLetter);
      const { plan, packing } = traced(tracer, TraceSegmentName.Decide, (annotate) => {
        const planned = this.#planAndPack(units, view, stops, contention.separate);
        annotate({ round, units: pending.length, planned: planned.plan.plans.length, toRead: planned.plan.verify.size });
        return planned;
      });
      if (plan.verify.size > 0) {
        await traced(tracer, TraceSegmentName.Read, (annotate) => {
          const levels = [...plan.verify.values()];
          annotate({
            round,
            units: levels.length,
            inbox: levels.filter((level) => level === 'inbox').length,
            snapshot: levels.filter((level) => level === 'snapshot').length,
            consistent: levels.filter((level) => level === 'consistent').length,
          });
          return this.#verify(plan.verify, view);
        });
        continue;
      }
      if (plan.plans.length === 0) {
        const left = units.filter((unit) => unit.verdict === undefined);
        if (left.length === pending.length) {
          // Nothing was planned, read or settled: a fault of the engine's, never the messages'.
          this.#options.logger?.error('no message of the batch could be planned; they are retried', { pending: left.length });
          for (const unit of left) this.#fail(unit, new NotAttempted('the batch could not be planned'));
          return;
        }
        continue;
      }
      const withEffects = plan.plans.filter((p) => p.sideEffects.length > 0);
      if (
        withEffects.length > 0 &&
        !(await traced(tracer, TraceSegmentName.SideEffects, async (annotate) => {
          annotate({ round, units: withEffects.length, effects: withEffects.reduce((sum, p) => sum + p.sideEffects.length, 0) });
          // The locks are taken while the commit's conditions are checked; an effect starts only once they hold.
          const checked = this.#preflight(plan, view, effects.keys);
          const ran = await this.#runSideEffects(
            plan,
            clock,
            effects,
            checked.catch(() => false),
          );
          return (await checked) && ran;
        }))
      )
        continue;
      if (clock.remainingTimeMs() < COMMIT_MARGIN_MS) continue;
      const transactions = packing!.transactions;
      // The completion records of this round's effects are written while it commits.
      const recorded = this.#completionsRecorded(effects);
      let contended: boolean[];
      try {
        contended = await traced(tracer, TraceSegmentName.Commit, (annotate) => {
          annotate({
            round,
            transactions: transactions.length,
            units: transactions.reduce((sum, transaction) => sum + transaction.units.length, 0),
            actions: transactions.reduce((sum, transaction) => sum + transaction.actions.length, 0),
          });
          return Promise.all(transactions.map((transaction) => this.#commit(transaction, view, units)));
        });
      } finally {
        await recorded;
      }
      if (contended.some(Boolean)) {
        contention.seen = true;
        contention.separate = true;
      }
      const stillPending = units.filter((unit) => unit.verdict === undefined);
      if (contended.some(Boolean) && stillPending.length > 0) {
        const losses = Math.max(0, ...stillPending.map((unit) => unit.losses));
        const capMs = Math.min(CONTENTION_BACKOFF_MAX_MS, CONTENTION_BACKOFF_BASE_MS * 2 ** losses);
        const waitMs = Math.min(5 + Math.random() * capMs, clock.remainingTimeMs() - 2 * COMMIT_MARGIN_MS);
        if (waitMs > 0) await this.#sleep(waitMs);
      }
    }
  }

  /** Plans the round and packs it, planning again without the units that do not fit until all that is planned fits. */
  #planAndPack(
    units: readonly Unit<Event>[],
    view: Map<string, Known>,
    stops: ReadonlyMap<string, number>,
    separate: boolean,
  ): { plan: RoundPlan; packing: Packing | undefined } {
    const { definition, config, cache, now } = this.#options;
    const deferred = new Set<Unit>();
    const believed = (key: ResolvedKey): Known => {
      const known = view.get(key.id);
      if (known !== undefined) return known;
      const cached = cache.get(key.id);
      return cached === undefined ? { exists: false, item: undefined, verified: false } : { ...cached, verified: false };
    };
    const at = now();
    const home = definition.home;
    // Under inboxHome the mark on the home item is the inbox record; a row is still written for a
    // redrive (over its dead letter's row, which the DLQ tooling reads) and under provenance.
    const withRow = (unit: Unit) =>
      home === undefined ||
      unit.home === undefined ||
      unit.checkRow === true ||
      unit.delivery.redriveOf !== undefined ||
      config.provenance === true;
    const marking = (op: ItemOp): HomeMarking | undefined => {
      if (home === undefined || home.writeMarks === false || op.key.table !== home.table) return undefined;
      const marks = new Map<string, { mark: ReturnType<typeof appliedMark>; redriveOf?: string | undefined }>();
      for (const unit of [...op.authors, ...op.readers]) {
        if (unit.home?.id !== op.key.id || marks.has(markKey(config.consumerName, unit.idempotencyKey))) continue;
        marks.set(markKey(config.consumerName, unit.idempotencyKey), {
          mark: appliedMark(unit.payloadHash, unit.delivery.messageId, expiresAt(at, config.inboxTtlSeconds)),
          redriveOf: unit.delivery.redriveOf,
        });
      }
      return { home, marks, nowSeconds: Math.floor(at.getTime() / 1000) };
    };
    const builder: ActionBuilder = {
      unitActions: (p, ops) => [
        ...(withRow(p.unit)
          ? [
              {
                action: inboxAction(p.unit, config, at, config.provenance === true ? writtenKeys(p, ops) : undefined),
                role: { role: 'inbox' as const, unit: p.unit },
              },
            ]
          : []),
        ...outboxActions(p.unit, p.outbox, config, at).map((action) => ({ action, role: { role: 'outbox' as const, unit: p.unit } })),
      ],
      itemAction: (op) => itemAction(op, definition, marking(op)),
    };
    for (;;) {
      const plan = planRound(units, {
        definition: definition as ConsumerDefinition<unknown>,
        tableNames: config.tables,
        believed,
        newVersion,
        stops,
        deferred,
        settle: (unit, verdict) => this.#settle(unit, verdict),
        fail: (unit, error) => this.#fail(unit, error),
        ...(home === undefined
          ? {}
          : {
              settleFromHome: (unit: Unit) => {
                if (unit.home === undefined) return false;
                const known = believed(unit.home);
                const row = markRow(known.exists ? known.item : undefined, home.attribute, config.consumerName, unit.idempotencyKey);
                // An applied mark stays until it expires: remembered, it is still true. A dead
                // letter's mark is replaced by its redrive: trusted only as read in this batch.
                if (row?.status === InboxStatus.DeadLettered && !known.verified) return false;
                // Before rowsUntil, a dead letter's mark may have been redriven by a consumer with
                // rows only (an applied row, the mark left): the rows are read before it counts.
                if (row?.status === InboxStatus.DeadLettered && unit.checkRow === true) return false;
                return this.#settleFromInboxRow(unit, row);
              },
            }),
      });
      if (plan.verify.size > 0 || plan.plans.length === 0) return { plan, packing: undefined };
      const packing = packTransactions(plan, builder, { shareComponents: !separate });
      for (const [unit, error] of packing.tooLarge) this.#fail(unit, error);
      if (packing.tooLarge.size > 0) {
        deferred.clear();
        continue;
      }
      if (packing.deferred.size === 0) return { plan, packing };
      for (const unit of packing.deferred) deferred.add(unit);
    }
  }

  /** Reads the units' inbox rows and reads again, each unit at its level, and settles what the rows say. */
  async #verify(units: ReadonlyMap<Unit, VerifyLevel>, view: Map<string, Known>): Promise<void> {
    const { client, config, definition, logger } = this.#options;
    const deps: StateReadDeps = {
      client,
      config,
      tables: definition.tables,
      sleep: this.#sleep,
      ...(logger === undefined ? {} : { logger }),
    };
    const byLevel = (level: VerifyLevel) => [...units].filter(([, l]) => l === level).map(([unit]) => unit);
    const snapshot = byLevel('snapshot');
    const consistent = byLevel('consistent');
    const inbox = byLevel('inbox');
    // The inbox rows read alone go in the same requests as the consistent reads.
    const [snapshotRead, consistentRead] = await Promise.all([
      snapshot.length === 0 ? undefined : readSnapshot(snapshot, deps),
      consistent.length + inbox.length === 0 ? undefined : readConsistently([...consistent, ...inbox], deps, { inboxOnly: new Set(inbox) }),
    ]);
    if (snapshotRead !== undefined) this.#applyRead(snapshot, snapshotRead, view, true);
    if (consistentRead !== undefined) {
      this.#applyRead(consistent, consistentRead, view, false);
      this.#applyInboxRead(inbox, consistentRead, view);
    }
  }

  /** The inbox record a read found for a unit: its inbox row, or under `inboxHome` its mark on its home item. */
  #inboxRecordOf(unit: Unit, read: ReadResult): InboxRow | undefined {
    const home = this.#options.definition.home;
    if (home === undefined || unit.home === undefined) return toInboxRow(read.found.get(inboxId(unit)));
    const mark = markRow(read.found.get(unit.home.id), home.attribute, this.#options.config.consumerName, unit.idempotencyKey);
    if (unit.checkRow !== true) return mark;
    // Before rowsUntil, a key applied by a consumer with rows only has its row alone, or its row
    // applied over a dead letter's mark (a redrive with rows): an applied row wins.
    const row = toInboxRow(read.found.get(inboxId(unit)));
    return mark === undefined || (mark.status === InboxStatus.DeadLettered && row?.status === InboxStatus.Applied) ? row : mark;
  }

  /**
   * Settles the units whose inbox row (or home item's mark) stops them; the others are marked
   * `inboxRead` (their items are still as believed: a verdict that dead-letters them takes the
   * snapshot next). A home item read this way is what the environment now knows of it.
   */
  #applyInboxRead(units: readonly Unit[], read: ReadResult, view: Map<string, Known>): void {
    for (const unit of units) {
      if (unit.home !== undefined && read.found.has(unit.home.id) && !read.unread.has(unit)) {
        const item = read.found.get(unit.home.id);
        view.set(unit.home.id, { exists: item !== undefined, item, verified: true });
        this.#options.cache.set(unit.home.id, item);
      }
    }
    for (const unit of units) {
      const error = read.unread.get(unit);
      if (error !== undefined) {
        this.#fail(unit, new TransactionConflict('its inbox row could not be read consistently', { cause: error }));
        continue;
      }
      if (this.#settleFromInboxRow(unit, this.#inboxRecordOf(unit, read))) continue;
      unit.inboxRead = true;
    }
  }

  #applyRead(units: readonly Unit[], read: ReadResult, view: Map<string, Known>, snapshot: boolean): void {
    for (const [id, item] of read.found) {
      if (id.startsWith('inbox\u0001')) continue;
      view.set(id, { exists: item !== undefined, item, verified: true });
      this.#options.cache.set(id, item);
    }
    for (const unit of units) {
      const error = read.unread.get(unit);
      if (error !== undefined) {
        this.#fail(
          unit,
          new TransactionConflict(`its state could not be read ${snapshot ? 'in a consistent snapshot' : 'consistently'}`, {
            cause: error,
          }),
        );
        continue;
      }
      if (this.#settleFromInboxRow(unit, this.#inboxRecordOf(unit, read))) continue;
      unit.verified = true;
      if (snapshot) unit.snapshot = true;
    }
  }

  /**
   * Settles a unit whose key's inbox row stops it; `false` when the row does not (absent, or the
   * dead letter this unit redrives).
   *
   * - applied: a duplicate (same payload hash), else an `IdempotencyConflict`;
   * - dead-lettered by this very message (a redelivery, a concurrent delivery): dead-lettered
   *   again with the same reason, never applied;
   * - dead-lettered by another message: a redrive of that message (`redriveOf`) is decided; any
   *   other copy is a duplicate of the dead letter (case C27), or an `IdempotencyConflict`.
   */
  #settleFromInboxRow(unit: Unit, row: InboxRow | undefined): boolean {
    if (row === undefined) return false;
    if (row.status === InboxStatus.DeadLettered) {
      // A redrive of this very dead letter is decided, whatever its message id: a Kafka redrive
      // keeps its record's coordinates, so its message id is the marker's. Only an explicit
      // redrive carries the mark, never a redelivery by the event source mapping.
      if (unit.delivery.redriveOf === row.messageId && row.payloadHash === unit.payloadHash) return false;
      if (row.messageId === unit.delivery.messageId) {
        this.#settle(unit, {
          kind: 'failed',
          alreadyMarked: true,
          failure: {
            retryable: false,
            reason: row.reason ?? 'Unknown',
            errorType: row.errorType ?? 'Unknown',
            errorMessage: row.errorMessage ?? 'dead-lettered by an earlier delivery of this message',
            countsAsAttempt: true,
          },
        });
        return true;
      }
    }
    if (row.payloadHash === unit.payloadHash) {
      this.#settle(unit, {
        kind: 'duplicate',
        storedPayloadHash: row.payloadHash,
        of: row.status === InboxStatus.DeadLettered ? 'dead-letter' : 'applied',
      });
    } else {
      this.#fail(unit, new IdempotencyConflict(unit.idempotencyKey, row.payloadHash, unit.payloadHash));
    }
    return true;
  }

  /**
   * Before a unit's side effects run, when its commit carries a condition of the user's own: the
   * commit's conditions as `ConditionCheck`s in one `TransactWriteItems` that writes nothing, so
   * that an effect never runs for a message whose own condition then refuses its commit (it is
   * dead-lettered `ConditionalWriteFailed` instead, its effect not run). Costs a round trip only
   * for such units. `false` when the round must be planned again.
   */
  async #preflight(plan: RoundPlan, view: Map<string, Known>, done: ReadonlySet<string>): Promise<boolean> {
    const { client, config, definition, logger } = this.#options;
    // Every unit that runs effects this round is checked: the checks go in transactions of at
    // most 100 actions (DynamoDB's limit), sent together, a unit's checks never split.
    const checks: { actions: TransactAction[]; roles: ActionRole[]; units: Unit[] }[] = [];
    for (const { unit, sideEffects } of plan.plans) {
      if (
        sideEffects.length === 0 ||
        sideEffects.every((request, position) => done.has(effectKeyOf(unit.idempotencyKey, request, position)))
      )
        continue;
      const preflight = preflightActions(unit, plan.ops.values(), config, definition);
      if (preflight.ops.length === 0) continue;
      let last = checks.at(-1);
      if (last === undefined || last.actions.length + preflight.actions.length > MAX_TRANSACTION_ACTIONS) {
        last = { actions: [], roles: [], units: [] };
        checks.push(last);
      }
      last.actions.push(...preflight.actions);
      last.roles.push(...preflight.roles);
      last.units.push(unit);
    }
    if (checks.length === 0) return true;
    const results = await Promise.all(
      checks.map(async (check): Promise<boolean> => {
        try {
          await client.send(new TransactWriteCommand({ TransactItems: check.actions }));
          return true;
        } catch (error) {
          if (error instanceof Error && error.name === 'TransactionCanceledException') {
            this.#readCancellation(
              { ...check, bytes: 0 },
              (error as { CancellationReasons?: CancellationReason[] }).CancellationReasons ?? [],
              view,
            );
            return false;
          }
          logger?.warn('could not check the conditions of a commit before its side effects; its messages will be retried', {
            error: describeError(error),
            messages: check.units.length,
          });
          if (check.units.length > 1) for (const unit of check.units) unit.solo = true;
          else this.#fail(check.units[0]!, error);
          return false;
        }
      }),
    );
    return results.every(Boolean);
  }

  /**
   * Runs the planned units' side effects (guarded) before their commit; `false` when one failed
   * and the round must be planned again without it.
   *
   * Requests for one effect key (a chosen key several units ask for) run one after another: the
   * later waits for the earlier's run and, when it completed, does not run it again (nor meets
   * the earlier's in-progress lock, which would hold it until this invocation's deadline).
   *
   * `checked` is the preflight's verdict, still being reached: the executor takes each effect's
   * lock meanwhile and starts the effect only when it resolves `true`. When it resolves `false`
   * no effect starts, whatever the runs answer, and the round is planned again.
   */
  async #runSideEffects(plan: RoundPlan, clock: InvocationClock, effects: CompletedEffects, checked: Promise<boolean>): Promise<boolean> {
    const withEffects = plan.plans.filter((p) => p.sideEffects.length > 0);
    if (withEffects.length === 0) return true;
    let executor: SideEffectExecutor;
    try {
      executor = await this.#options.sideEffects();
    } catch (error) {
      // The guard could not be loaded (a broken deploy): only the units that asked for an effect fail.
      this.#options.logger?.error('could not load the side-effect guard; the messages that ask for a side effect will be retried', {
        error: describeError(error),
      });
      for (const { unit } of withEffects) this.#fail(unit, error);
      return false;
    }
    let allDone = true;
    let waitUntil: number | undefined;
    /** The runs in flight in this round, by effect key; they never reject. */
    const running = new Map<string, Promise<void>>();
    const completed = (unit: Unit, request: SideEffectRequest, position: number) => {
      const label = effectLabelOf(request, position);
      const done = effects.byUnit.get(unit) ?? [];
      if (!done.some((effect) => effect.label === label)) done.push({ label, chosen: request.key !== undefined });
      effects.byUnit.set(unit, done);
    };
    await Promise.all(
      withEffects.map(async ({ unit, sideEffects }) => {
        for (const [position, request] of sideEffects.entries()) {
          const effectKey = effectKeyOf(unit.idempotencyKey, request, position);
          for (let other = running.get(effectKey); other !== undefined; other = running.get(effectKey)) await other;
          if (effects.keys.has(effectKey)) {
            completed(unit, request, position);
            continue;
          }
          // An async wrapper: an executor that throws at once fails its unit, like one that rejects.
          const run = (async () => executor.run(request, { idempotencyKey: unit.idempotencyKey, effectKey }, clock, checked))();
          running.set(
            effectKey,
            run.then(
              () => undefined,
              () => undefined,
            ),
          );
          try {
            const ran = await run;
            if (ran?.completionRecorded !== undefined) {
              // Its rejection is read at the commit; until then it must not count as unhandled.
              ran.completionRecorded.catch(() => undefined);
              effects.recording.push(ran.completionRecorded);
            }
            // Refused: not started (or found completed before; the next round finds it so again).
            if (!(await checked)) return;
            effects.keys.add(effectKey);
            completed(unit, request, position);
          } catch (error) {
            allDone = false;
            if (!(await checked)) return;
            const until = this.#waitForLock(unit, error, clock);
            if (until !== undefined) waitUntil = Math.max(waitUntil ?? 0, until);
            else this.#fail(unit, error);
            return;
          } finally {
            running.delete(effectKey);
          }
        }
      }),
    );
    if (waitUntil !== undefined) await this.#sleep(Math.max(0, waitUntil - this.#options.now().getTime()));
    return allDone;
  }

  /**
   * On Kafka, until when (epoch milliseconds) a unit waits for a side-effect lock that another
   * invocation holds (the executor's `NotAttempted` whose `retryAt` is the lock's expiry, read from
   * Powertools' record: the holder's deadline) before it runs again in the next round: the expiry, or
   * as late as this invocation can wait and still run the effect and commit
   * (`sideEffectMinRemainingMs` + 200 ms before its deadline). A lock still held then fails the
   * unit as not attempted, and the next invocation waits the rest.
   *
   * An SQS message is instead delayed by its visibility until the lock expires. A Kafka mapping
   * has no such delay: it retries at once, and a record that is not attempted while the lock is
   * held would spend the mapping's retries (`MaximumRetryAttempts`) in seconds, then be given up
   * unprocessed (found by the proof suite: `test/prove/found/kafkaLockHeldSpendsRetries.test.ts`).
   *
   * @returns `undefined` when the unit must fail as the error says (not Kafka, another error, or no time to wait)
   */
  #waitForLock(unit: Unit, error: unknown, clock: InvocationClock): number | undefined {
    if (unit.delivery.attempts.kind !== 'log') return undefined;
    const failure = classify(error, this.#options.definition.classifyError);
    if (!failure.retryable || failure.countsAsAttempt || failure.retryAt === undefined) return undefined;
    const now = this.#options.now().getTime();
    const latest = now + clock.remainingTimeMs() - this.#options.config.sideEffectMinRemainingMs - COMMIT_MARGIN_MS;
    const until = Math.min(failure.retryAt + LOCK_EXPIRY_SLACK_MS, latest);
    return until > now ? until : undefined;
  }

  /**
   * Waits for the completion records being written (`effects.recording`), and takes them off the
   * list. A write that failed is logged, never thrown: its effect ran, and whether the message is
   * applied is the commit's to say. Without the record, a redelivery that finds the key not yet
   * applied waits for the effect's lock to expire and runs the effect again, as after a crash
   * between the effect and its record.
   */
  async #completionsRecorded(effects: CompletedEffects): Promise<void> {
    const writes = effects.recording.splice(0);
    if (writes.length === 0) return;
    const results = await Promise.allSettled(writes);
    for (const result of results) {
      if (result.status === 'rejected')
        this.#options.logger?.warn('a side effect ran but its completion record could not be written', {
          error: describeError(result.reason),
        });
    }
  }

  /** Sends one transaction and settles what it can; `true` when a unit of it lost to contention. */
  async #commit(transaction: PackedTransaction, view: Map<string, Known>, units: readonly Unit[]): Promise<boolean> {
    const { client, cache, logger } = this.#options;
    try {
      await client.send(new TransactWriteCommand({ TransactItems: transaction.actions }));
    } catch (error) {
      if (error instanceof Error && error.name === 'TransactionCanceledException') {
        return this.#readCancellation(
          transaction,
          (error as { CancellationReasons?: CancellationReason[] }).CancellationReasons ?? [],
          view,
        );
      }
      if (transaction.units.length > 1) {
        // A failure of the shared request, not of one action: the units are committed apart, so
        // that only a unit's own commit can count one of its attempts.
        logger?.warn('a shared transaction failed; its messages are committed one by one', {
          error: describeError(error),
          messages: transaction.units.length,
        });
        for (const unit of transaction.units) unit.solo = true;
        return false;
      }
      const [unit] = transaction.units;
      if (error instanceof Error && error.name === 'ValidationException')
        this.#fail(unit!, new InvalidWrite(`DynamoDB refused the commit: ${error.message.slice(0, 300)}`, { cause: error }));
      else {
        logger?.warn('the commit failed; its message will be retried', { error: describeError(error) });
        this.#fail(unit!, error);
      }
      return false;
    }
    for (const unit of transaction.units) this.#settle(unit, { kind: 'applied' });
    const changedValue = new Set<string>();
    const unknownValue = new Set<string>();
    for (const role of transaction.roles) {
      if (role.role !== 'item') continue;
      const { op } = role;
      if (op.stored !== undefined) {
        // An action that wrote inbox marks on a home item it knew: the item as stored, marks included.
        cache.set(op.key.id, op.stored);
        view.set(op.key.id, { exists: true, item: op.stored, verified: true });
        changedValue.add(op.key.id);
        continue;
      }
      if (op.kind === 'check') continue;
      if (op.kind === 'update') {
        // Its new value is not known here: forgotten, read again when needed.
        cache.delete(op.key.id);
        view.delete(op.key.id);
        unknownValue.add(op.key.id);
        continue;
      }
      const item = op.kind === 'delete' ? undefined : op.current;
      cache.set(op.key.id, item);
      view.set(op.key.id, { exists: item !== undefined, item, verified: true });
      changedValue.add(op.key.id);
    }
    for (const unit of units) {
      if (unit.verdict !== undefined) continue;
      // Its items now hold what this commit wrote: no longer one snapshot; an updated one is not known at all.
      if (unit.reads.some((key) => changedValue.has(key.id) || unknownValue.has(key.id))) unit.snapshot = false;
      if (unit.reads.some((key) => unknownValue.has(key.id))) unit.verified = false;
    }
    return false;
  }

  /** Reads a cancelled transaction's reasons and settles or re-queues its units. */
  #readCancellation(transaction: PackedTransaction, reasons: readonly CancellationReason[], view: Map<string, Known>): boolean {
    const { cache, definition, logger } = this.#options;
    const reading = readCancellation(
      transaction.roles,
      reasons,
      definition.versionAttribute,
      definition.home,
      this.#options.config.consumerName,
    );
    for (const { unit, row } of reading.inboxRows) this.#settleFromInboxRow(unit, row);
    for (const [id, known] of reading.observed) {
      view.set(id, known);
      cache.set(id, known.exists ? known.item : undefined);
    }
    for (const unit of reading.stale) this.#lose(unit, 'an item it read or wrote kept changing under it');
    for (const { unit, message } of reading.conditionFailures) {
      if (unit.verdict === undefined && !reading.stale.has(unit)) this.#fail(unit, new ConditionalWriteFailed(message));
    }
    for (const { units, message } of reading.refused) {
      for (const unit of units) if (unit.verdict === undefined) this.#fail(unit, new InvalidWrite(message));
    }
    if (reading.consistentView) {
      for (const unit of transaction.units) {
        if (unit.verdict !== undefined) continue;
        unit.verified = true;
        unit.snapshot = true;
      }
    }
    for (const unit of reading.contended) this.#lose(unit, 'its commit kept losing to concurrent transactions or throttling');
    for (const unit of reading.unexplained) this.#lose(unit, 'a condition of its commit kept failing for a reason DynamoDB did not give');
    logger?.debug('transaction cancelled', {
      reasons: reasons.map((r) => r.Code ?? 'None'),
      inboxRows: reading.inboxRows.length,
      stale: reading.stale.size,
      contended: reading.contended.size,
    });
    return reading.contended.size > 0;
  }

  /** Counts a commit a unit lost on its own items; past `MAX_LOSSES` it is retried by the source. */
  #lose(unit: Unit, why: string): void {
    if (unit.verdict !== undefined) return;
    unit.losses += 1;
    if (unit.losses > MAX_LOSSES) this.#fail(unit, new TransactionConflict(why));
  }

  /**
   * Dead-letters each unit of a FIFO group or Kafka partition that `decide` (or a commit's
   * condition) dead-lettered, before any later unit of its scope commits: its marker, then its
   * send (`deadLetter`; without it, the marker only).
   *
   * Why: the source keeps the scope's order, and the final state must equal the in-order one. A
   * verdict made on state is not final until its marker is stored: were the marker write to fail
   * after the successors committed, the message would come back and be decided again on the state
   * its successors left (an `OutOfStock` reservation granted by a later `StockReceived`). Marked
   * first, a redelivery finds the marker and is dead-lettered again with the same reason. Sent
   * first, a send that fails cannot leave applied messages behind a message that must come back:
   * the unit is retried (without counting an attempt) and its scope stops there. A marker that
   * finds the message applied (a concurrent delivery) makes it a duplicate.
   */
  async #deadLetterBeforeSuccessors(units: readonly Unit[], deadLetter: DeadLetterNow | undefined): Promise<void> {
    const lastPending = new Map<string, number>();
    for (const unit of units) {
      if (unit.verdict === undefined && unit.delivery.scope !== undefined)
        lastPending.set(unit.delivery.scope, Math.max(unit.index, lastPending.get(unit.delivery.scope) ?? -1));
    }
    const due = units.filter(
      (unit) =>
        unit.verdict?.kind === 'failed' &&
        !unit.verdict.failure.retryable &&
        unit.verdict.sent !== true &&
        (deadLetter !== undefined ||
          (unit.verdict.alreadyMarked !== true && unit.verdict.failure.reason !== FailureReason.IdempotencyConflict)) &&
        unit.delivery.scope !== undefined &&
        (lastPending.get(unit.delivery.scope) ?? -1) > unit.index,
    );
    if (due.length === 0) return;
    if (deadLetter !== undefined) {
      const outcomes = await deadLetter(due);
      due.forEach((unit, i) => {
        const outcome = outcomes[i]!;
        const verdict = unit.verdict as Extract<UnitVerdict, { kind: 'failed' }>;
        if (outcome.kind === 'sent') unit.verdict = { kind: 'failed', failure: outcome.failure, alreadyMarked: true, sent: true };
        else if (outcome.kind === 'duplicate')
          unit.verdict = { kind: 'duplicate', storedPayloadHash: outcome.storedPayloadHash, of: 'applied' };
        else unit.verdict = { ...verdict, failure: outcome.failure };
      });
      return;
    }
    const { client, config, now, logger } = this.#options;
    const at = now();
    await Promise.all(
      due.map(async (unit) => {
        const verdict = unit.verdict as Extract<UnitVerdict, { kind: 'failed' }>;
        try {
          const result = await writeDeadLetterMarker(
            client,
            config,
            {
              idempotencyKey: unit.idempotencyKey,
              payloadHash: unit.payloadHash,
              messageId: unit.delivery.messageId,
              failure: verdict.failure,
            },
            at,
            homeTargetOf(this.#options.definition, unit.home),
          );
          if (result.kind === 'applied') {
            unit.verdict = undefined;
            this.#settleFromInboxRow(unit, result.row);
            return;
          }
          unit.verdict = { ...verdict, alreadyMarked: true };
        } catch (error) {
          logger?.warn('could not mark a message as dead-lettered; it and the rest of its message group or partition will be retried', {
            messageId: unit.delivery.messageId,
            error: describeError(error),
          });
          unit.verdict = { kind: 'failed', failure: { ...classify(error), retryable: true, reason: undefined, countsAsAttempt: false } };
        }
      }),
    );
  }

  #settle(unit: Unit, verdict: UnitVerdict): void {
    if (unit.verdict !== undefined) return;
    unit.verdict = verdict;
    unit.settledAt = performance.now();
  }

  #fail(unit: Unit, error: unknown): Classification {
    const failure = classify(error, this.#options.definition.classifyError);
    this.#settle(unit, { kind: 'failed', failure });
    return failure;
  }
}
