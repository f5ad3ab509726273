import type { Logger } from '@aws-lambda-powertools/logger';
import { BatchGetCommand, type DynamoDBDocumentClient, TransactGetCommand, TransactWriteCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { type Classification, classify } from '../classifier.js';
import type { RuntimeConfig } from '../config/runtimeConfig.js';
import {
  ConditionalWriteFailed,
  ConsumerDefinitionError,
  FailureReason,
  IdempotencyConflict,
  InvalidWrite,
  NotAttempted,
  TransactionConflict,
} from '../errors.js';
import { appliedRowPut, inboxKey, InboxStatus, type InboxRow, toInboxRow } from '../inbox/inboxItems.js';
import { writeDeadLetterMarker } from '../inbox/writeDeadLetterMarker.js';
import { outboxPut } from '../outbox/outboxItems.js';
import type { Decision, Item, OutgoingMessage, SideEffectRequest, State, Write } from '../types.js';
import { and, type Expression, type ItemBelief, unchangedCondition, userCondition, versionOf, withVersionSet } from './conditions.js';
import type { ConsumerDefinition } from './ConsumerDefinition.js';
import type { ItemCache } from './ItemCache.js';
import { type ResolvedKey, resolveKey } from './itemKeys.js';
import type { ParsedDelivery } from './parseDelivery.js';

/** DynamoDB's limits on one `TransactWriteItems` (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html). */
const MAX_TRANSACTION_ACTIONS = 100;
/** `BatchGetItem` takes at most 100 keys (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchGetItem.html). */
const MAX_BATCH_GET_KEYS = 100;
/** The 4 MB aggregate limit, with room for our size estimate's error. */
const MAX_TRANSACTION_BYTES = 3_500_000;
/** Rounds of decide-and-commit a batch may take before what is left is retried. */
const MAX_ROUNDS = 8;
/** Commits a unit may lose to contention (`TransactionConflict`, throttling) before it is retried by the source. */
const MAX_CONTENTION_LOSSES = 3;
/**
 * Least time left, in milliseconds, to start a round: below it the invocation is about to be
 * stopped (or was called past its deadline), and the batch is left to its retry, not attempted.
 * A commit cut short by the deadline is harmless (a transaction is all or nothing), so the margin
 * is small.
 */
const COMMIT_MARGIN_MS = 200;
/** Waited past a side-effect lock's expiry, in milliseconds, so that the lock reads expired. */
const LOCK_EXPIRY_SLACK_MS = 50;

/** How an invocation's clock reads. */
export interface InvocationClock {
  /** Milliseconds left before the invocation's deadline (Lambda's `getRemainingTimeInMillis()`). */
  remainingTimeMs(): number;
}

/** Runs a guarded inline side effect (see `SideEffectRunner`). */
export interface SideEffectExecutor {
  run(request: SideEffectRequest, context: { readonly idempotencyKey: string; readonly effectKey: string }, clock: InvocationClock): Promise<void>;
}

/** A unit's final state within the batch. */
export type UnitVerdict =
  | { readonly kind: 'applied' }
  | { readonly kind: 'duplicate'; readonly storedPayloadHash: string }
  /** A failure: retried or dead-lettered per its classification. `alreadyMarked`: the inbox already holds this message's dead-letter marker. */
  | { readonly kind: 'failed'; readonly failure: Classification; readonly alreadyMarked?: boolean };

/** A parsed delivery as the engine tracks it through the rounds of one batch. */
export interface Unit<Event = unknown> extends ParsedDelivery<Event> {
  readonly index: number;
  /** Its inbox row and reads were read consistently in this batch (a strongly consistent read of each, or a snapshot). */
  verified: boolean;
  /**
   * A serializable snapshot backs its view (`TransactGetItems`, or a cancelled transaction whose
   * conditions were all evaluated at one instant): what a verdict that dead-letters it needs.
   */
  snapshot: boolean;
  /** Commits lost to contention in this batch. */
  contention: number;
  /** Commit it alone (after a request-level `ValidationException` of a shared transaction). */
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
interface Known extends ItemBelief {
  /** Read consistently (a snapshot, a condition that passed, or an item returned by a failed condition). */
  readonly verified: boolean;
}

/** The action a round sends for one item, with what it folds. */
interface ItemOp {
  readonly key: ResolvedKey;
  /** What the engine believed of the item when the round started (the condition checks it). */
  readonly base: Known;
  /** Named by a `read` of some unit: the engine guards it with its own condition. */
  inReadSet: boolean;
  kind: 'put' | 'delete' | 'update' | 'check';
  /** The item as the round's decisions left it (for put/delete/check). */
  current: Item | undefined;
  /** The user's write, as given (for update, and for blind writes). */
  write: Write | undefined;
  /** A user condition or an `Update`: later decisions cannot see through it. */
  opaque: boolean;
  readonly authors: Unit[];
  readonly readers: Unit[];
}

/** One unit's part of a round's plan. */
interface UnitPlan {
  readonly unit: Unit;
  readonly decision: Decision;
  /** Items this unit wrote, and items it read. */
  readonly ids: Set<string>;
  readonly sideEffects: readonly SideEffectRequest[];
  readonly outbox: readonly OutgoingMessage[];
}

/** A round's plan. */
interface RoundPlan {
  readonly plans: UnitPlan[];
  readonly ops: Map<string, ItemOp>;
  /** Units to read again before they are decided again, and how: see {@link VerifyLevel}. */
  readonly verify: Map<Unit, VerifyLevel>;
}

/**
 * How a unit's inbox row and reads are read again: `consistent`, a strongly consistent
 * `BatchGetItem` (1 read unit per item of up to 4 KB), enough to retry a message or run a side
 * effect (its guard stops a second run; the commit's conditions catch a change); `snapshot`, one
 * `TransactGetItems` (2 read units per item), a serializable view, before a verdict that
 * dead-letters a message.
 */
type VerifyLevel = 'consistent' | 'snapshot';

/** What one action of a transaction is, to read its cancellation reason. */
type ActionRole =
  | { readonly role: 'inbox'; readonly unit: Unit }
  | { readonly role: 'outbox'; readonly unit: Unit }
  | { readonly role: 'item'; readonly op: ItemOp };

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
}

/**
 * Decides and commits the parsed deliveries of one batch: **one `TransactWriteItems` per batch**
 * on the happy path, and no read at all when the execution environment already holds the state
 * (or the items are new).
 *
 * Each round:
 * 1. **Decide, folding.** Units are decided in batch order on what the engine believes: an item
 *    committed or read earlier by this execution environment (the cache), else "absent". A unit
 *    sees the items as the earlier units of the batch left them; an item written by several
 *    units is written once.
 * 2. **Verify before acting on a failure.** A unit whose decision fails (or asks for a side
 *    effect) on state that was not read consistently is verified first: one `TransactGetItems`
 *    (a serializable snapshot) of its inbox row and its items. A duplicate is recognised there;
 *    otherwise it is decided again on the snapshot. A verdict that dead-letters a message is
 *    never made on a stale view.
 * 3. **Side effects** of the planned units run, guarded, before their commit.
 * 4. **Commit** the units in as few transactions as DynamoDB's limits allow (100 actions,
 *    4 MB, one action per item; units that share an item, an ordering key or a FIFO group/Kafka
 *    partition in the same one): each unit's inbox row (`attribute_not_exists`), the folded
 *    writes with the condition that each item is still as believed, the outbox items.
 * 5. **On a cancellation**, the reasons name the culprits: a unit whose inbox row exists is a
 *    duplicate (or an `IdempotencyConflict`); an item that changed comes back in the reason
 *    (`ALL_OLD`) and its units are decided again on it in the next round; a user condition that
 *    failed on an unchanged view dead-letters its unit (`ConditionalWriteFailed`); contention is
 *    retried a few rounds. The others commit again.
 */
export class BatchEngine<Event> {
  readonly #options: BatchEngineOptions<Event>;
  readonly #sleep: (ms: number) => Promise<void>;

  constructor(options: BatchEngineOptions<Event>) {
    this.#options = options;
    this.#sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  /**
   * Settles every unit: sets each one's `verdict` (applied, duplicate, or failed with its
   * classification). Never throws: an unexpected error fails the units it touched, retryably.
   */
  async settle(units: readonly Unit<Event>[], clock: InvocationClock): Promise<void> {
    const effectsDone = new Set<string>();
    await this.#rounds(units, clock, effectsDone);
    this.#sayWhichEffectsRan(units, effectsDone);
  }

  /**
   * A message dead-lettered after its side effects ran (decided again on newer state, or its
   * commit refused) is never dropped silently: its error message says which effects ran, so the
   * dead letter and the log carry it (an operator who redrives it knows the effect happened).
   */
  #sayWhichEffectsRan(units: readonly Unit<Event>[], effectsDone: ReadonlySet<string>): void {
    for (const unit of units) {
      const verdict = unit.verdict;
      if (verdict?.kind !== 'failed' || verdict.failure.retryable) continue;
      const ran = [...effectsDone].filter((effectKey) => effectKey.startsWith(`${unit.idempotencyKey}#`)).map((effectKey) => effectKey.slice(unit.idempotencyKey.length + 1));
      if (ran.length === 0) continue;
      unit.verdict = { ...verdict, failure: { ...verdict.failure, errorMessage: `${verdict.failure.errorMessage} (its side effects ran before: ${ran.join(', ')})` } };
    }
  }

  async #rounds(units: readonly Unit<Event>[], clock: InvocationClock, effectsDone: Set<string>): Promise<void> {
    const view = new Map<string, Known>();
    const forcedDeferrals = new Set<Unit>();
    let stuck = 0;
    for (let round = 0; round < MAX_ROUNDS * 2; round += 1) {
      const pending = units.filter((unit) => unit.verdict === undefined);
      if (pending.length === 0) return;
      if (clock.remainingTimeMs() < COMMIT_MARGIN_MS) {
        for (const unit of pending) this.#fail(unit, new NotAttempted('too little time was left in the invocation to commit it'));
        return;
      }
      await this.#markOrderedDeadLetters(units);
      const plan = this.#plan(units, view, forcedDeferrals);
      forcedDeferrals.clear();
      if (plan.verify.size > 0) {
        await this.#verify(plan.verify, view);
        continue;
      }
      if (plan.plans.length === 0) {
        if (units.every((unit) => unit.verdict !== undefined)) return;
        // Nothing could be planned: try the units one at a time, then give up on them.
        stuck += 1;
        for (const unit of units) {
          if (unit.verdict !== undefined) continue;
          if (stuck > 1) this.#fail(unit, new TransactionConflict('the batch did not settle: its messages kept waiting on each other'));
          else unit.solo = true;
        }
        continue;
      }
      stuck = 0;
      if (!(await this.#runSideEffects(plan, clock, effectsDone))) continue;
      const transactions = this.#pack(plan, forcedDeferrals);
      if (forcedDeferrals.size > 0) continue;
      if (clock.remainingTimeMs() < COMMIT_MARGIN_MS) continue;
      const contended = await Promise.all(transactions.map((transaction) => this.#commit(transaction, view, units)));
      if (contended.some(Boolean)) await this.#sleep(10 + Math.random() * 40);
    }
    for (const unit of units) {
      if (unit.verdict === undefined) this.#fail(unit, new TransactionConflict(`the batch did not settle in ${MAX_ROUNDS} rounds of commits`));
    }
  }

  /** Decides the pending units in batch order, folding their writes. */
  #plan(units: readonly Unit<Event>[], view: Map<string, Known>, forcedDeferrals: ReadonlySet<Unit>): RoundPlan {
    const { definition } = this.#options;
    const ops = new Map<string, ItemOp>();
    const plans: UnitPlan[] = [];
    const verify = new Map<Unit, VerifyLevel>();
    const blockedChains = new Set<string>();
    const blockedScopes = new Set<string>();
    const stoppedScopes = new Set<string>();
    const soloTaken = { value: false };

    const block = (unit: Unit) => {
      blockedChains.add(unit.orderingKey);
      if (unit.delivery.scope !== undefined) blockedScopes.add(unit.delivery.scope);
    };
    const believed = (key: ResolvedKey): Known => {
      const known = view.get(key.id);
      if (known !== undefined) return known;
      const cached = this.#options.cache.get(key.id);
      return cached === undefined ? { exists: false, item: undefined, verified: false } : { ...cached, verified: false };
    };

    for (const unit of units) {
      const scope = unit.delivery.scope;
      if (unit.verdict !== undefined) {
        // A FIFO group or Kafka partition stops at a message that must be retried: the messages
        // after it are not attempted; those before it go on.
        if (unit.verdict.kind === 'failed' && unit.verdict.failure.retryable && scope !== undefined) stoppedScopes.add(scope);
        continue;
      }
      if (scope !== undefined && stoppedScopes.has(scope)) {
        this.#fail(unit, new NotAttempted('an earlier message of its message group or partition must be retried first'));
        continue;
      }
      if (blockedChains.has(unit.orderingKey) || (scope !== undefined && blockedScopes.has(scope)) || forcedDeferrals.has(unit)) {
        block(unit);
        continue;
      }
      if (unit.solo) {
        if (soloTaken.value || plans.length > 0) {
          block(unit);
          continue;
        }
        soloTaken.value = true;
      } else if (soloTaken.value) {
        block(unit);
        continue;
      }
      // A producer duplicate in the same batch waits for the first delivery of its key.
      const earlier = this.#earlierWithKey(unit, units);
      if (earlier === 'wait') {
        block(unit);
        continue;
      }
      if (earlier !== undefined) {
        this.#settleAsDuplicateOf(unit, earlier);
        continue;
      }

      // The state this unit decides on.
      const reads = new Map(unit.reads.map((key) => [key.id, key]));
      let opaque = false;
      for (const key of unit.reads) {
        if (ops.get(key.id)?.opaque) opaque = true;
      }
      if (opaque) {
        block(unit);
        continue;
      }
      const current = (id: string, key: ResolvedKey): Item | undefined => {
        const op = ops.get(id);
        return op !== undefined ? op.current : believed(key).item;
      };
      const state: State = {
        get: <T extends Item = Item>(table: string, key: Readonly<Item>): T | undefined => {
          const resolved = resolveKey(definition.tables, this.#options.config.tables, table, key, 'state.get()');
          if (!reads.has(resolved.id)) {
            throw new ConsumerDefinitionError(`decide() asked state.get() for an item of ${table} that read() did not name`);
          }
          const item = current(resolved.id, resolved);
          return item === undefined ? undefined : (structuredClone(item) as T);
        },
      };
      const seen = new Map(unit.reads.map((key) => [key.id, fingerprint(current(key.id, key))]));

      let decision: Decision;
      let folded: { fold: () => void } | 'defer';
      try {
        const last = unit.lastFailure;
        if (last !== undefined && last.seen.size === seen.size && [...seen].every(([id, print]) => last.seen.get(id) === print)) {
          throw last.error; // the same state: the pure decision would be the same
        }
        try {
          decision = (definition.decide(unit.event, state) ?? {}) as Decision;
        } catch (error) {
          unit.lastFailure = { error, seen };
          throw error;
        }
        folded = this.#prepareFold(unit, decision, ops, reads, believed);
      } catch (error) {
        // A failure seen through an earlier unit's uncommitted write waits for that commit.
        if (unit.reads.some((key) => (ops.get(key.id)?.authors.length ?? 0) > 0)) {
          block(unit);
          continue;
        }
        const verdict = classify(error, definition.classifyError);
        if (!unit.verified || (!verdict.retryable && !unit.snapshot)) {
          verify.set(unit, verdict.retryable ? 'consistent' : 'snapshot');
          block(unit);
          continue;
        }
        const failure = this.#fail(unit, error);
        if (failure.retryable && scope !== undefined) stoppedScopes.add(scope);
        // A dead letter of a FIFO group or Kafka partition is marked before its successors commit (next round).
        if (!failure.retryable && scope !== undefined) blockedScopes.add(scope);
        continue;
      }
      if (folded === 'defer') {
        block(unit);
        continue;
      }
      const sideEffects = decision.sideEffects ?? [];
      if (sideEffects.length > 0 && !unit.verified) {
        verify.set(unit, 'consistent');
        block(unit);
        continue;
      }
      folded.fold();
      const ids = new Set<string>(unit.reads.map((key) => key.id));
      for (const [id, op] of ops) if (op.authors.includes(unit)) ids.add(id);
      plans.push({ unit, decision, ids, sideEffects, outbox: decision.outbox ?? [] });
    }
    return { plans, ops, verify };
  }

  /**
   * Checks a decision's writes against the round's ops and returns how to fold them, or
   * `'defer'` when it cannot be folded this round (it touches an item another unit of the round
   * writes in a way that cannot be combined).
   *
   * @throws ConsumerDefinitionError for a malformed write
   */
  #prepareFold(
    unit: Unit,
    decision: Decision,
    ops: Map<string, ItemOp>,
    reads: ReadonlyMap<string, ResolvedKey>,
    believed: (key: ResolvedKey) => Known,
  ): { fold: () => void } | 'defer' {
    const { definition, config } = this.#options;
    const steps: (() => void)[] = [];
    const touched = new Set<string>();
    const writes = decision.writes ?? [];
    if (!Array.isArray(writes)) throw new ConsumerDefinitionError('decide() returned `writes` that is not an array');
    for (const write of writes) {
      const kinds = (['Put', 'Update', 'Delete', 'ConditionCheck'] as const).filter((kind) => write?.[kind] !== undefined);
      if (kinds.length !== 1) throw new ConsumerDefinitionError('each write must have exactly one of Put, Update, Delete, ConditionCheck');
      const kind = kinds[0]!;
      const action = write[kind] as { TableName?: string; Item?: Item; Key?: Item; ConditionExpression?: string };
      const table = action.TableName ?? '';
      const source = kind === 'Put' ? action.Item : action.Key;
      if (source === undefined || source === null || typeof source !== 'object') throw new ConsumerDefinitionError(`a ${kind} on ${table} has no ${kind === 'Put' ? 'Item' : 'Key'}`);
      const key = resolveKey(definition.tables, config.tables, table, source, `a ${kind}`);
      if (touched.has(key.id)) throw new ConsumerDefinitionError(`decide() wrote the same item of ${table} twice; DynamoDB allows one action per item in a transaction`);
      touched.add(key.id);
      const inReadSet = reads.has(key.id);
      const existing = ops.get(key.id);
      const hasUserCondition = userCondition(action) !== undefined;

      if (!inReadSet) {
        // A blind write: sent as given; it cannot share its item with another unit's action.
        if (existing !== undefined) return 'defer';
        steps.push(() => {
          ops.set(key.id, {
            key,
            base: believed(key),
            inReadSet: false,
            kind: kind === 'Put' ? 'put' : kind === 'Delete' ? 'delete' : kind === 'Update' ? 'update' : 'check',
            current: undefined,
            write,
            opaque: true,
            authors: [unit],
            readers: [],
          });
        });
        continue;
      }
      const foldedByOthers = existing !== undefined && existing.authors.length > 0;
      if ((kind === 'Update' || hasUserCondition) && foldedByOthers) return 'defer';
      if (kind === 'ConditionCheck') {
        if (!hasUserCondition) continue; // the engine's own check on the read covers it
        if (foldedByOthers) return 'defer';
      }
      steps.push(() => {
        const op = existing ?? this.#readOp(key, believed(key), ops);
        op.authors.push(unit);
        if (kind === 'Put') {
          const next = { ...(action.Item as Item) };
          const version = versionOf(op.base.item, definition.versionAttribute);
          next[definition.versionAttribute] = op.base.exists ? (version ?? 0) + 1 : 1;
          op.kind = 'put';
          op.current = next;
        } else if (kind === 'Delete') {
          op.kind = 'delete';
          op.current = undefined;
        } else if (kind === 'Update') {
          op.kind = 'update';
          op.current = undefined;
        } else {
          op.kind = 'check';
        }
        op.write = write;
        op.opaque = kind === 'Update' || hasUserCondition;
      });
    }
    for (const message of decision.outbox ?? []) {
      if (message === null || typeof message !== 'object' || !('body' in message)) throw new ConsumerDefinitionError('each outbox message needs a body');
      const attributes = Object.entries(message.attributes ?? {});
      // The relay adds its own `outboxMessageId` beside them, and SQS and SNS take 10 attributes.
      if (attributes.length > 9) throw new ConsumerDefinitionError(`an outbox message has ${attributes.length} attributes; at most 9 (the relay adds outboxMessageId)`);
      for (const [name, value] of attributes) {
        if (name === 'outboxMessageId' || !/^(?!\.)(?!.*\.\.)(?!.*\.$)(?!(?:aws|amazon)\.)[A-Za-z0-9_.-]{1,256}$/i.test(name) || typeof value !== 'string' || value === '') {
          throw new ConsumerDefinitionError(`an outbox message attribute ${JSON.stringify(name)} is reserved, not a name SQS and SNS accept, or has no string value`);
        }
      }
    }
    for (const effect of decision.sideEffects ?? []) {
      if (typeof effect?.name !== 'string' || !Object.hasOwn(definition.sideEffects, effect.name)) {
        throw new ConsumerDefinitionError(`decide() asked for side effect ${JSON.stringify(effect?.name)}, which is not in the consumer's sideEffects`);
      }
    }
    return {
      fold: () => {
        for (const step of steps) step();
        // Items read and not written by anyone yet: a condition check that they did not change.
        for (const key of reads.values()) {
          const op = ops.get(key.id) ?? this.#readOp(key, believed(key), ops);
          if (!op.readers.includes(unit)) op.readers.push(unit);
        }
      },
    };
  }

  #readOp(key: ResolvedKey, base: Known, ops: Map<string, ItemOp>): ItemOp {
    const op: ItemOp = { key, base, inReadSet: true, kind: 'check', current: base.item, write: undefined, opaque: false, authors: [], readers: [] };
    ops.set(key.id, op);
    return op;
  }

  /** `'wait'` while an earlier delivery of the same idempotency key is unsettled; the earlier unit that settled it; or `undefined`. */
  #earlierWithKey(unit: Unit, units: readonly Unit[]): Unit | 'wait' | undefined {
    let settled: Unit | undefined;
    for (const other of units) {
      if (other.index >= unit.index) break;
      if (other.idempotencyKey !== unit.idempotencyKey) continue;
      if (other.verdict === undefined) return 'wait';
      if (other.verdict.kind === 'applied' || other.verdict.kind === 'duplicate') settled = other;
    }
    return settled;
  }

  /** A later delivery of a key an earlier unit of the batch applied (or found applied). */
  #settleAsDuplicateOf(unit: Unit, earlier: Unit): void {
    const stored = earlier.verdict?.kind === 'duplicate' ? earlier.verdict.storedPayloadHash : earlier.payloadHash;
    if (stored === unit.payloadHash) this.#settle(unit, { kind: 'duplicate', storedPayloadHash: stored });
    else this.#fail(unit, new IdempotencyConflict(unit.idempotencyKey, stored, unit.payloadHash));
  }

  /** Reads the units' inbox rows and reads again, each unit at its level (see {@link VerifyLevel}). */
  async #verify(units: ReadonlyMap<Unit, VerifyLevel>, view: Map<string, Known>): Promise<void> {
    const byLevel = (level: VerifyLevel) => [...units].filter(([, l]) => l === level).map(([unit]) => unit);
    await Promise.all([this.#snapshot(byLevel('snapshot'), view), this.#readConsistently(byLevel('consistent'), view)]);
  }

  /**
   * Reads the units' inbox rows and reads with strongly consistent `BatchGetItem`s (up to 100
   * keys each; unprocessed keys asked again, then the units left unread are retried).
   */
  async #readConsistently(units: readonly Unit[], view: Map<string, Known>): Promise<void> {
    if (units.length === 0) return;
    const { client, config, definition, logger } = this.#options;
    const inboxId = (unit: Unit) => `inbox\u0001${unit.idempotencyKey}`;
    const wanted = new Map<string, { tableName: string; key: Item }>();
    for (const unit of units) {
      wanted.set(inboxId(unit), { tableName: config.inboxTable, key: inboxKey(config.consumerName, unit.idempotencyKey) });
      for (const read of unit.reads) wanted.set(read.id, { tableName: read.tableName, key: read.key });
    }
    // Which id a returned item (or unprocessed key) answers, by its table and key attributes.
    const keyNames = new Map<string, readonly string[]>([[config.inboxTable, Object.keys(inboxKey(config.consumerName, ''))]]);
    for (const [logical, physical] of Object.entries(config.tables)) {
      const table = definition.tables[logical];
      if (table !== undefined) keyNames.set(physical, table.sortKey === undefined ? [table.partitionKey] : [table.partitionKey, table.sortKey]);
    }
    const print = (tableName: string, item: Item): string => JSON.stringify([tableName, ...(keyNames.get(tableName) ?? []).map((name) => item[name])]);
    const idByPrint = new Map([...wanted].map(([id, { tableName, key }]) => [print(tableName, key), id]));
    const idOf = (tableName: string, item: Item): string | undefined => idByPrint.get(print(tableName, item));
    const found = new Map<string, Item | undefined>();
    const unread = new Set<string>();
    const ids = [...wanted.keys()];
    await Promise.all(
      Array.from({ length: Math.ceil(ids.length / MAX_BATCH_GET_KEYS) }, (_, i) => ids.slice(i * MAX_BATCH_GET_KEYS, (i + 1) * MAX_BATCH_GET_KEYS)).map(async (chunk) => {
        let pending = chunk;
        for (let attempt = 0; attempt < 4 && pending.length > 0; attempt += 1) {
          if (attempt > 0) await this.#sleep(20 * 2 ** attempt + Math.random() * 40);
          const requestItems: Record<string, { Keys: Item[]; ConsistentRead: true }> = {};
          for (const id of pending) {
            const { tableName, key } = wanted.get(id)!;
            (requestItems[tableName] ??= { Keys: [], ConsistentRead: true }).Keys.push(key);
          }
          let output: { Responses?: Record<string, Item[]>; UnprocessedKeys?: Record<string, { Keys?: Item[] }> };
          try {
            output = (await client.send(new BatchGetCommand({ RequestItems: requestItems }))) as typeof output;
          } catch (error) {
            // The SDK already retried what it retries (throttling, 5xx).
            logger?.warn('could not read the state consistently; the messages will be retried', { error: describeError(error) });
            for (const id of pending) unread.add(id);
            return;
          }
          const answered = new Set<string>();
          for (const [tableName, items] of Object.entries(output.Responses ?? {})) {
            for (const item of items) {
              const id = idOf(tableName, item);
              if (id !== undefined && wanted.has(id)) {
                found.set(id, item);
                answered.add(id);
              }
            }
          }
          const unprocessed = new Set<string>();
          for (const [tableName, keys] of Object.entries(output.UnprocessedKeys ?? {})) {
            for (const key of keys.Keys ?? []) {
              const id = idOf(tableName, key);
              if (id !== undefined) unprocessed.add(id);
            }
          }
          for (const id of pending) if (!answered.has(id) && !unprocessed.has(id)) found.set(id, undefined);
          pending = pending.filter((id) => unprocessed.has(id));
        }
        for (const id of pending) unread.add(id);
      }),
    );
    for (const [id, item] of found) {
      if (id.startsWith('inbox\u0001')) continue;
      view.set(id, { exists: item !== undefined, item, verified: true });
      this.#options.cache.set(id, item);
    }
    for (const unit of units) {
      if (unread.has(inboxId(unit)) || unit.reads.some((read) => unread.has(read.id))) {
        this.#fail(unit, new TransactionConflict('its state could not be read consistently (throttled)'));
        continue;
      }
      const row = toInboxRow(found.get(inboxId(unit)));
      if (!this.#settleFromInboxRow(unit, row)) unit.verified = true;
    }
  }

  /** Takes one serializable snapshot (`TransactGetItems`) of the units' inbox rows and reads. */
  async #snapshot(units: readonly Unit[], view: Map<string, Known>): Promise<void> {
    if (units.length === 0) return;
    const { client, config } = this.#options;
    // Chunks of at most 100 distinct items, a unit's items in one chunk.
    const chunks: { units: Unit[]; keys: Map<string, { tableName: string; key: Item }> }[] = [];
    for (const unit of units) {
      const keys = new Map<string, { tableName: string; key: Item }>([[`inbox\u0001${unit.idempotencyKey}`, { tableName: config.inboxTable, key: inboxKey(config.consumerName, unit.idempotencyKey) }]]);
      for (const read of unit.reads) keys.set(read.id, { tableName: read.tableName, key: read.key });
      let chunk = chunks.at(-1);
      const merged = chunk === undefined ? 0 : new Set([...chunk.keys.keys(), ...keys.keys()]).size;
      if (chunk === undefined || merged > MAX_TRANSACTION_ACTIONS) {
        chunk = { units: [], keys: new Map() };
        chunks.push(chunk);
      }
      chunk.units.push(unit);
      for (const [id, key] of keys) chunk.keys.set(id, key);
    }
    await Promise.all(
      chunks.map(async (chunk) => {
        const ids = [...chunk.keys.keys()];
        let items: (Item | undefined)[] | undefined;
        let lastError: unknown;
        for (let attempt = 0; attempt < 3 && items === undefined; attempt += 1) {
          try {
            const output = await client.send(
              new TransactGetCommand({ TransactItems: ids.map((id) => ({ Get: { TableName: chunk.keys.get(id)!.tableName, Key: chunk.keys.get(id)!.key } })) }),
            );
            items = (output.Responses ?? []).map((response) => response?.Item as Item | undefined);
          } catch (error) {
            lastError = error;
            if (!isTransactionCanceled(error)) break;
            await this.#sleep(20 + Math.random() * 80);
          }
        }
        if (items === undefined) {
          this.#options.logger?.warn('could not read a consistent snapshot; the messages will be retried', { error: describeError(lastError) });
          for (const unit of chunk.units) this.#fail(unit, isTransactionCanceled(lastError) ? new TransactionConflict('a consistent read kept conflicting with concurrent writes', { cause: lastError }) : lastError);
          return;
        }
        const found = new Map(ids.map((id, i) => [id, items![i]]));
        for (const [id, item] of found) {
          if (id.startsWith('inbox\u0001')) continue;
          view.set(id, { exists: item !== undefined, item, verified: true });
          this.#options.cache.set(id, item);
        }
        for (const unit of chunk.units) {
          const row = toInboxRow(found.get(`inbox\u0001${unit.idempotencyKey}`));
          if (!this.#settleFromInboxRow(unit, row)) {
            unit.verified = true;
            unit.snapshot = true;
          }
        }
      }),
    );
  }

  /** Settles a unit whose inbox row exists; `false` when the row does not stop it (absent, or another message's dead-letter marker). */
  #settleFromInboxRow(unit: Unit, row: InboxRow | undefined): boolean {
    if (row === undefined) return false;
    if (row.status === InboxStatus.DeadLettered) {
      if (row.messageId !== unit.delivery.messageId) return false;
      // This very message was dead-lettered (perhaps its send failed, or this is a concurrent
      // delivery): dead-letter it again with the same reason, never apply it.
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
    if (row.payloadHash === unit.payloadHash) this.#settle(unit, { kind: 'duplicate', storedPayloadHash: row.payloadHash });
    else this.#fail(unit, new IdempotencyConflict(unit.idempotencyKey, row.payloadHash, unit.payloadHash));
    return true;
  }

  /**
   * Runs the planned units' side effects (guarded) before their commit; `false` when one failed
   * and the round must be planned again without it.
   */
  async #runSideEffects(plan: RoundPlan, clock: InvocationClock, done: Set<string>): Promise<boolean> {
    const withEffects = plan.plans.filter((p) => p.sideEffects.length > 0);
    if (withEffects.length === 0) return true;
    const executor = await this.#options.sideEffects();
    let allDone = true;
    let waitUntil: number | undefined;
    await Promise.all(
      withEffects.map(async ({ unit, sideEffects }) => {
        for (const [position, request] of sideEffects.entries()) {
          const effectKey = `${unit.idempotencyKey}#${request.name}#${position}`;
          if (done.has(effectKey)) continue;
          try {
            await executor.run(request, { idempotencyKey: unit.idempotencyKey, effectKey }, clock);
            done.add(effectKey);
          } catch (error) {
            allDone = false;
            const until = this.#waitForLock(unit, error, clock);
            if (until !== undefined) waitUntil = Math.max(waitUntil ?? 0, until);
            else this.#fail(unit, error);
            return;
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
   * Waiting costs invocation time, only in this rare case (a crash or a failed completion write
   * between the lock and its completion).
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

  /** Groups the planned units into transactions within DynamoDB's limits; overflowing units are deferred to the next round. */
  #pack(plan: RoundPlan, deferred: Set<Unit>): { actions: TransactWriteCommandInput['TransactItems']; roles: ActionRole[]; units: Unit[] }[] {
    // Components: units sharing an item, an ordering key or a scope commit together.
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
    for (const { unit, ids } of plan.plans) {
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
    for (const p of plan.plans) {
      const root = find(p.unit);
      components.set(root, [...(components.get(root) ?? []), p]);
    }

    const { config, now } = this.#options;
    const at = now();
    const transactions: { actions: NonNullable<TransactWriteCommandInput['TransactItems']>; roles: ActionRole[]; units: Unit[]; bytes: number }[] = [];
    for (const members of components.values()) {
      // The component's actions, unit by unit; stop before the limits.
      const actions: NonNullable<TransactWriteCommandInput['TransactItems']> = [];
      const roles: ActionRole[] = [];
      const units: Unit[] = [];
      const itemIds = new Set<string>();
      let bytes = 0;
      for (const [position, p] of members.entries()) {
        const unitActions: typeof actions = [];
        const unitRoles: ActionRole[] = [];
        unitActions.push({
          Put: appliedRowPut({
            tableName: config.inboxTable,
            consumerName: config.consumerName,
            idempotencyKey: p.unit.idempotencyKey,
            payloadHash: p.unit.payloadHash,
            messageId: p.unit.delivery.messageId,
            now: at,
            ttlSeconds: config.inboxTtlSeconds,
          }),
        });
        unitRoles.push({ role: 'inbox', unit: p.unit });
        p.outbox.forEach((message, index) => {
          unitActions.push({
            Put: outboxPut({
              tableName: config.inboxTable,
              consumerName: config.consumerName,
              idempotencyKey: p.unit.idempotencyKey,
              orderingKey: p.unit.orderingKey,
              position: index,
              message,
              now: at,
              ttlSeconds: config.inboxTtlSeconds,
            }),
          });
          unitRoles.push({ role: 'outbox', unit: p.unit });
        });
        for (const id of p.ids) {
          if (itemIds.has(id)) continue;
          const op = plan.ops.get(id);
          if (op === undefined) continue;
          const action = this.#itemAction(op);
          if (action === undefined) continue;
          unitActions.push(action);
          unitRoles.push({ role: 'item', op });
        }
        const unitBytes = unitActions.reduce((sum, action) => sum + estimateBytes(action), 0);
        if (actions.length + unitActions.length > MAX_TRANSACTION_ACTIONS || bytes + unitBytes > MAX_TRANSACTION_BYTES) {
          if (position === 0) {
            this.#fail(p.unit, new InvalidWrite(`its commit needs ${unitActions.length} actions or about ${unitBytes} bytes, more than one DynamoDB transaction takes`));
          }
          for (const rest of members.slice(position)) deferred.add(rest.unit);
          break;
        }
        actions.push(...unitActions);
        roles.push(...unitRoles);
        units.push(p.unit);
        bytes += unitBytes;
        for (const id of p.ids) if (plan.ops.get(id) !== undefined && unitRoles.some((r) => r.role === 'item' && r.op.key.id === id)) itemIds.add(id);
      }
      if (units.length === 0) continue;
      // Several components share a transaction while they fit.
      const open = transactions.find((t) => t.actions.length + actions.length <= MAX_TRANSACTION_ACTIONS && t.bytes + bytes <= MAX_TRANSACTION_BYTES);
      if (open !== undefined) {
        open.actions.push(...actions);
        open.roles.push(...roles);
        open.units.push(...units);
        open.bytes += bytes;
      } else {
        transactions.push({ actions, roles, units, bytes });
      }
    }
    if (deferred.size > 0) return [];
    return transactions;
  }

  /** The `TransactWriteItems` action of one item, with the engine's condition; `undefined` when there is nothing to send. */
  #itemAction(op: ItemOp): NonNullable<TransactWriteCommandInput['TransactItems']>[number] | undefined {
    const { definition } = this.#options;
    const tableName = op.key.tableName;
    if (!op.inReadSet) {
      // Blind: the user's write as given, on the physical table; its own condition returns the item when it fails.
      const write = op.write!;
      const [kind, action] = Object.entries(write).find(([, value]) => value !== undefined) as [keyof Write, Record<string, unknown>];
      return { [kind]: { ...action, TableName: tableName, ...(action.ConditionExpression !== undefined ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } : {}) } } as Write;
    }
    const partitionKey = definition.tables[op.key.table]!.partitionKey;
    const unchanged = unchangedCondition(op.base, partitionKey, definition.versionAttribute);
    const user = op.write === undefined ? undefined : userCondition(Object.values(op.write).find((v) => v !== undefined) as Parameters<typeof userCondition>[0]);
    const condition = and(user, unchanged);
    const withCondition = (extra: Expression | undefined = undefined) => {
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
        return { Put: { TableName: tableName, Item: op.current!, ...withCondition() } };
      case 'delete':
        return { Delete: { TableName: tableName, Key: op.key.key, ...withCondition() } };
      case 'update': {
        const update = op.write!.Update!;
        const version = versionOf(op.base.item, definition.versionAttribute);
        const set = withVersionSet(update.UpdateExpression ?? '', definition.versionAttribute, op.base.exists ? (version ?? 0) + 1 : 1);
        const merged = withCondition({
          expression: '',
          names: { ...(update.ExpressionAttributeNames ?? {}), ...set.names },
          values: { ...(update.ExpressionAttributeValues ?? {}), ...set.values },
        });
        return { Update: { TableName: tableName, Key: op.key.key, UpdateExpression: set.expression, ...merged } };
      }
      case 'check':
        return { ConditionCheck: { TableName: tableName, Key: op.key.key, ...withCondition() } };
    }
  }

  /** Sends one transaction and settles what it can; `true` when it lost to contention. */
  async #commit(
    transaction: { actions: TransactWriteCommandInput['TransactItems']; roles: ActionRole[]; units: Unit[] },
    view: Map<string, Known>,
    units: readonly Unit[],
  ): Promise<boolean> {
    const { client, cache, logger, definition } = this.#options;
    try {
      await client.send(new TransactWriteCommand({ TransactItems: transaction.actions }));
    } catch (error) {
      if (isTransactionCanceled(error)) return this.#readCancellation(transaction, error, view);
      if (error instanceof Error && error.name === 'ValidationException') {
        if (transaction.units.length > 1) {
          logger?.warn('DynamoDB refused a shared transaction; its messages are committed one by one', { error: describeError(error) });
          for (const unit of transaction.units) unit.solo = true;
        } else {
          for (const unit of transaction.units) this.#fail(unit, new InvalidWrite(`DynamoDB refused the commit: ${error.message.slice(0, 300)}`, { cause: error }));
        }
        return false;
      }
      logger?.warn('the commit failed; its messages will be retried', { error: describeError(error), messages: transaction.units.length });
      for (const unit of transaction.units) this.#fail(unit, error);
      return false;
    }
    for (const unit of transaction.units) this.#settle(unit, { kind: 'applied' });
    for (const role of transaction.roles) {
      if (role.role !== 'item') continue;
      const { op } = role;
      if (!op.inReadSet || op.kind === 'update') {
        cache.delete(op.key.id);
        view.delete(op.key.id);
        continue;
      }
      const item = op.kind === 'delete' ? undefined : op.current;
      cache.set(op.key.id, item);
      view.set(op.key.id, { exists: item !== undefined, item, verified: true });
    }
    // A unit whose items this commit changed no longer has one consistent view of them.
    const written = new Set(transaction.roles.flatMap((role) => (role.role === 'item' && role.op.kind !== 'check' ? [role.op.key.id] : [])));
    for (const unit of units) {
      if (unit.verdict === undefined && unit.verified && unit.reads.some((key) => written.has(key.id))) {
        unit.verified = false;
        unit.snapshot = false;
      }
    }
    logger?.debug('batch committed', { messages: transaction.units.length, actions: transaction.actions?.length, versionAttribute: definition.versionAttribute });
    return false;
  }

  /** Reads a cancelled transaction's reasons (in request order) and settles or re-queues its units. */
  #readCancellation(
    transaction: { roles: ActionRole[]; units: Unit[] },
    error: Error & { CancellationReasons?: { Code?: string; Message?: string; Item?: Record<string, unknown> }[] },
    view: Map<string, Known>,
  ): boolean {
    const { cache, definition, logger } = this.#options;
    const reasons = error.CancellationReasons ?? [];
    let contention = false;
    const duplicates = new Set<Unit>();
    const stale = new Set<Unit>();
    const userFailures: { op: ItemOp; message: string }[] = [];
    const invalid: { units: Unit[]; message: string }[] = [];
    transaction.roles.forEach((role, i) => {
      const reason = reasons[i];
      const code = reason?.Code ?? 'None';
      if (code === 'None') {
        if (role.role === 'item' && role.op.inReadSet) {
          // Its condition held: what the engine believed is the stored item.
          view.set(role.op.key.id, { ...role.op.base, verified: true });
        }
        return;
      }
      if (code === 'ConditionalCheckFailed') {
        const old = reason?.Item === undefined ? undefined : (unmarshall(reason.Item as never) as Item);
        if (role.role === 'inbox') {
          const row = toInboxRow(old);
          if (row !== undefined && this.#settleFromInboxRow(role.unit, row)) duplicates.add(role.unit);
          return;
        }
        if (role.role === 'outbox') return;
        const { op } = role;
        const actual: Known = { exists: old !== undefined, item: old, verified: true };
        if (!op.inReadSet) {
          if (hasUserCondition(op)) userFailures.push({ op, message: `the condition of its ${op.kind} on ${op.key.table} failed` });
          return;
        }
        const changed = actual.exists !== op.base.exists || versionOf(actual.item, definition.versionAttribute) !== versionOf(op.base.item, definition.versionAttribute);
        view.set(op.key.id, actual);
        cache.set(op.key.id, old);
        if (changed || !hasUserCondition(op)) {
          for (const unit of [...op.authors, ...op.readers]) stale.add(unit);
        } else {
          userFailures.push({ op, message: `the condition of its ${op.kind} on ${op.key.table} failed` });
        }
        return;
      }
      if (code === 'TransactionConflict' || code === 'ThrottlingError' || code === 'ProvisionedThroughputExceeded' || code === 'RequestLimitExceeded') {
        contention = true;
        return;
      }
      if (code === 'ValidationError' || code === 'ItemCollectionSizeLimitExceeded') {
        const blamed = role.role === 'item' ? (role.op.authors.length > 0 ? [role.op.authors.at(-1)!] : role.op.readers) : [role.unit];
        invalid.push({ units: blamed, message: `DynamoDB refused it (${code}): ${(reason?.Message ?? '').slice(0, 300)}` });
        return;
      }
      contention = true;
    });
    for (const { op, message } of userFailures) {
      // Only on a consistent view: the unit's inbox row was absent in this same transaction and its reads held.
      const author = op.authors.at(-1);
      if (author !== undefined && !duplicates.has(author) && !stale.has(author)) this.#fail(author, new ConditionalWriteFailed(message));
    }
    for (const { units, message } of invalid) {
      for (const unit of units) if (unit.verdict === undefined) this.#fail(unit, new InvalidWrite(message));
    }
    const onlyConditions = transaction.roles.every((_, i) => ['None', 'ConditionalCheckFailed'].includes(reasons[i]?.Code ?? 'None'));
    if (onlyConditions && reasons.length === transaction.roles.length) {
      // Every condition of the transaction was evaluated at one instant: each unsettled unit's
      // inbox row was absent and its items are now known as they were then (a consistent view).
      for (const unit of transaction.units) {
        if (unit.verdict !== undefined) continue;
        unit.verified = true;
        unit.snapshot = true;
      }
    }
    if (contention) {
      for (const unit of transaction.units) {
        if (unit.verdict !== undefined) continue;
        unit.contention += 1;
        if (unit.contention > MAX_CONTENTION_LOSSES) this.#fail(unit, new TransactionConflict('its commit kept losing to concurrent transactions or throttling', { cause: error }));
      }
    }
    logger?.debug('transaction cancelled', {
      reasons: reasons.map((r) => r.Code ?? 'None'),
      duplicates: duplicates.size,
      stale: stale.size,
      contention,
    });
    return contention;
  }

  /**
   * Writes the dead-letter marker of each unit of a FIFO group or Kafka partition that `decide`
   * (or a commit's condition) dead-lettered, before any later unit of its scope commits.
   *
   * Why: the source keeps the scope's order, and the final state must equal the in-order one. A
   * verdict made on state is not final until its marker is stored: were the marker write to fail
   * after the successors committed, the message would come back and be decided again on the state
   * its successors left (an `OutOfStock` reservation granted by a later `StockReceived`). Marked
   * first, a redelivery finds the marker and is dead-lettered again with the same reason; if the
   * marker cannot be written, the unit is retried (without counting an attempt) and its scope
   * stops there. A marker that finds the message applied (a concurrent delivery) makes it a
   * duplicate. Costs nothing extra: the marker is written here instead of after the commit.
   */
  async #markOrderedDeadLetters(units: readonly Unit[]): Promise<void> {
    // The last unsettled unit of each scope, by batch position.
    const lastPending = new Map<string, number>();
    for (const unit of units) {
      if (unit.verdict === undefined && unit.delivery.scope !== undefined) lastPending.set(unit.delivery.scope, Math.max(unit.index, lastPending.get(unit.delivery.scope) ?? -1));
    }
    const hasLaterPending = (unit: Unit) => (lastPending.get(unit.delivery.scope!) ?? -1) > unit.index;
    const toMark = units.filter(
      (unit) =>
        unit.verdict?.kind === 'failed' &&
        !unit.verdict.failure.retryable &&
        unit.verdict.alreadyMarked !== true &&
        unit.verdict.failure.reason !== FailureReason.IdempotencyConflict &&
        unit.delivery.scope !== undefined &&
        hasLaterPending(unit),
    );
    if (toMark.length === 0) return;
    const { client, config, now, logger } = this.#options;
    const at = now();
    await Promise.all(
      toMark.map(async (unit) => {
        const verdict = unit.verdict as Extract<UnitVerdict, { kind: 'failed' }>;
        try {
          const result = await writeDeadLetterMarker(client, config, { idempotencyKey: unit.idempotencyKey, payloadHash: unit.payloadHash, messageId: unit.delivery.messageId, failure: verdict.failure }, at);
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

/** A comparable print of an item's value (`-` for absent). */
function fingerprint(item: Item | undefined): string {
  if (item === undefined) return '-';
  try {
    return JSON.stringify(item, (_key, value: unknown) => {
      if (value instanceof Uint8Array) return `b64:${Buffer.from(value).toString('base64')}`;
      if (value instanceof Set) return [...value].sort();
      if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
        return Object.fromEntries(Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
      }
      return value;
    });
  } catch {
    return `unprintable:${Math.random()}`;
  }
}

/** Whether an item's action carries a condition of the user's own. */
function hasUserCondition(op: ItemOp): boolean {
  if (op.write === undefined) return false;
  const action = Object.values(op.write).find((value) => value !== undefined) as { ConditionExpression?: string } | undefined;
  return action?.ConditionExpression !== undefined && action.ConditionExpression.trim() !== '';
}

/** By name, so that a second copy of the SDK in a bundle cannot defeat an `instanceof`. */
function isTransactionCanceled(error: unknown): error is Error & { CancellationReasons?: { Code?: string; Message?: string; Item?: Record<string, unknown> }[] } {
  return error instanceof Error && error.name === 'TransactionCanceledException';
}

/** A rough size of an action, in bytes (its JSON), to stay under the 4 MB transaction limit. */
function estimateBytes(action: unknown): number {
  try {
    return Buffer.byteLength(JSON.stringify(action, (_key, value: unknown) => (value instanceof Uint8Array ? Buffer.from(value).toString('base64') : value)));
  } catch {
    return 400_000;
  }
}

/** An error for a log line: name and message, capped. */
export function describeError(error: unknown): { name: string; message: string } {
  if (error instanceof Error) return { name: error.name, message: error.message.slice(0, 500) };
  return { name: typeof error, message: String(error).slice(0, 500) };
}
