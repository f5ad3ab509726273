/**
 * The sequential reference model of a generated consumer: pure, in memory. It applies each
 * ordering key's events one at a time, in the order the source defines, with the documented rules:
 *
 * - the first message of an idempotency key decides it; later copies (same body) are duplicates of
 *   whatever the key became (applied or dead-lettered);
 * - a retryable throw waits: on a standard queue it is tried again after every event of its key
 *   that applies (only its key's events change what it reads), and runs out of attempts
 *   (`RetriesExhausted`) if it never can; on a FIFO queue or Kafka its key stops behind it until
 *   its attempts run out, so it is `RetriesExhausted` at once;
 * - a non-retryable throw dead-letters it with its reason (the library's `classify`, with the
 *   consumer's `classifyError`);
 * - a decision that cannot be written: a value the document client cannot marshall, or an outbox
 *   body with `NaN`, an infinity or a `BigInt`, fails the unit alone, retryably
 *   (`ConsumerDefinitionError`, so `RetriesExhausted`); an item over 400 KB, a unit needing more
 *   than 100 transaction actions (1 inbox row + outbox items + one action per item written or
 *   read; with an inbox home, its home item too), or an update DynamoDB refuses, dead-letters it
 *   at once (`InvalidWrite`); a user condition that fails on the consistent view dead-letters it
 *   (`ConditionalWriteFailed`).
 *
 * Every write's effect is the in-memory side of the same spec the consumer renders as an
 * expression (`expressions.ts`). Items are kept in canonical form, without the version attribute.
 *
 * @module
 */
import {
  ConditionalWriteFailed,
  ConsumerDefinitionError,
  FailureReason,
  InvalidWrite,
  type Item,
  type OutgoingMessage,
  type SideEffectRequest,
  type State,
} from 'idempotent-consumer';
import { classify, effectKeyOf } from 'idempotent-consumer/internal';
import type { ProveSource } from '../proveSources.js';
import type { GeneratedConsumer, GeneratedEvent } from './consumer.js';
import { applyUpdate, evaluateCondition, InvalidUpdate } from './expressions.js';
import type { GeneratedWorkloadSpec } from './spec.js';
import { type AvItem, itemSize, marshallItem, MAX_ITEM_BYTES, toNativeItem } from './values.js';

/** Most actions of one `TransactWriteItems`. */
export const MAX_TRANSACTION_ACTIONS = 100;

/**
 * The transaction actions a commit is allowed for besides its outbox messages, given the items it
 * reads or writes: one per item, and one for its inbox row. With an inbox home (`inboxHome`) the
 * home item is one of its items (the engine reads it with the event's), and the engine still
 * counts a row's action: a redrive writes its row beside its mark, so an event fits one
 * transaction on its first delivery exactly when it fits on a redrive.
 */
export function inboxActions(touched: ReadonlySet<number>, home: number | undefined): number {
  return 1 + touched.size + (home === undefined || touched.has(home) ? 0 : 1);
}

/** Why a decision failed, for the design pass and for the attempts a message may own. */
export type FailureCause = 'read' | 'throw' | 'unwritable' | 'outbox' | 'actions' | 'invalidUpdate' | 'size' | 'condition';

/** What one event does to a state. */
export type StepResult =
  | {
      readonly verdict: 'applied';
      /** The items it changes (`undefined`: deleted). */
      readonly changes: ReadonlyMap<number, AvItem | undefined>;
      readonly outbox: readonly OutgoingMessage[];
      readonly sideEffects: readonly SideEffectRequest[];
    }
  | {
      readonly verdict: 'retry' | 'dead';
      /** The dead-letter reason (`dead`). */
      readonly reason?: string;
      readonly errorType: string;
      readonly cause: FailureCause;
      /** The write that failed (index into the decision's writes), when one did. */
      readonly write?: number;
      /** Side effects the decision asked for before it failed (they may have run). */
      readonly sideEffects: readonly SideEffectRequest[];
    };

/** The items' states by item index. */
export type ModelState = ReadonlyMap<number, AvItem>;

/** Whether a value holds something `JSON.stringify` cannot write faithfully (a `BigInt`, `NaN`, an infinity). */
function unfaithfulJson(value: unknown, depth = 0): boolean {
  if (depth > 64) return false;
  if (typeof value === 'bigint') return true;
  if (typeof value === 'number') return !Number.isFinite(value);
  if (Array.isArray(value)) return value.some((element) => unfaithfulJson(element, depth + 1));
  if (value !== null && typeof value === 'object') return Object.values(value).some((element) => unfaithfulJson(element, depth + 1));
  return false;
}

const definitionError = (message: string) => new ConsumerDefinitionError(message);

/**
 * Decides one event on `state` as the engine would on a consistent view, and says what it does.
 * Pure: `state` is not changed.
 */
export function decideStep(consumer: GeneratedConsumer, state: ModelState, event: GeneratedEvent): StepResult {
  const { options } = consumer;
  const failure = (
    error: unknown,
    cause: FailureCause,
    extra: { write?: number; sideEffects?: readonly SideEffectRequest[] } = {},
  ): StepResult => {
    const verdict = classify(error, options.classifyError);
    return {
      verdict: verdict.retryable ? 'retry' : 'dead',
      ...(verdict.retryable ? {} : { reason: verdict.reason ?? 'Unknown' }),
      errorType: verdict.errorType,
      cause,
      ...(extra.write === undefined ? {} : { write: extra.write }),
      sideEffects: extra.sideEffects ?? [],
    };
  };

  let reads: number[];
  try {
    reads = (options.read?.(event) ?? []).map(({ table, key }) => {
      const index = consumer.itemIndex(table, key);
      if (index === undefined) throw definitionError(`read() named an item of ${table} the model does not know`);
      return index;
    });
  } catch (error) {
    return failure(error, 'read');
  }
  const readSet = new Set(reads);
  const view: State = {
    get: <T extends Item = Item>(table: string, key: Readonly<Item>): T | undefined => {
      const index = consumer.itemIndex(table, key);
      if (index === undefined || !readSet.has(index))
        throw definitionError(`decide() asked state.get() for an item of ${table} that read() did not name`);
      const item = state.get(index);
      return item === undefined ? undefined : (toNativeItem(item) as T);
    },
  };

  let planned;
  try {
    planned = consumer.plan(event, view);
  } catch (error) {
    return failure(error, 'throw');
  }
  const { decision, effects } = planned;
  const sideEffects = decision.sideEffects ?? [];
  const writes = decision.writes ?? [];

  // What the document client cannot write: the unit fails alone, retryably.
  const marshalled: (AvItem | undefined)[] = [];
  for (const [index, write] of writes.entries()) {
    try {
      const action = (write.Put ?? write.Update ?? write.Delete ?? write.ConditionCheck)!;
      marshalled.push(write.Put !== undefined ? marshallItem(write.Put.Item as Item) : undefined);
      marshallItem(('Key' in action ? action.Key : {}) as Item);
      marshallItem((action.ExpressionAttributeValues ?? {}) as Item);
    } catch (error) {
      return failure(definitionError(`the document client cannot write it: ${(error as Error).message}`), 'unwritable', {
        write: index,
        sideEffects,
      });
    }
  }
  for (const message of decision.outbox ?? []) {
    if (typeof message.body !== 'string' && unfaithfulJson(message.body)) {
      return failure(definitionError('an outbox body holds a value JSON cannot write (NaN, an infinity or a BigInt)'), 'outbox', {
        sideEffects,
      });
    }
  }

  // The unit's transaction actions: its inbox row, its outbox items, one per item written or read (its home item too).
  const touched = new Set([...readSet, ...effects.map((effect) => effect.item)]);
  const actions = inboxActions(touched, consumer.homeItem(event.k)) + (decision.outbox?.length ?? 0);
  if (actions > MAX_TRANSACTION_ACTIONS) {
    return failure(new InvalidWrite(`its commit needs ${actions} actions; a transaction takes ${MAX_TRANSACTION_ACTIONS}`), 'actions', {
      sideEffects,
    });
  }

  // Refused by DynamoDB before any condition: an update it cannot apply, an item too large.
  const changes = new Map<number, AvItem | undefined>();
  for (const [index, effect] of effects.entries()) {
    const before = state.get(effect.item);
    const keyItem = marshallItem(consumer.itemKey(effect.item));
    if (effect.kind === 'Put') {
      const { [consumer.versionAttribute]: _version, ...item } = marshalled[index]!;
      changes.set(effect.item, item);
    } else if (effect.kind === 'Update') {
      try {
        const { [consumer.versionAttribute]: _version, ...item } = applyUpdate(
          before,
          keyItem,
          effect.update!.actions,
          effect.update!.context,
        );
        changes.set(effect.item, item);
      } catch (error) {
        if (error instanceof InvalidUpdate) return failure(new InvalidWrite(error.message), 'invalidUpdate', { write: index, sideEffects });
        return failure(definitionError((error as Error).message), 'unwritable', { write: index, sideEffects });
      }
    } else if (effect.kind === 'Delete') {
      changes.set(effect.item, undefined);
    }
  }
  for (const [item, after] of changes) {
    // The engine adds its version attribute (a short token) to what it writes.
    if (after !== undefined && itemSize(after) + 64 > MAX_ITEM_BYTES) {
      return failure(new InvalidWrite(`an item of ${item} would be ${itemSize(after)} bytes`), 'size', {
        write: effects.findIndex((e) => e.item === item),
        sideEffects,
      });
    }
  }
  for (const [index, effect] of effects.entries()) {
    if (effect.condition !== undefined && !evaluateCondition(effect.condition, state.get(effect.item))) {
      return failure(new ConditionalWriteFailed(`the condition of write ${index} failed`), 'condition', { write: index, sideEffects });
    }
  }
  return { verdict: 'applied', changes, outbox: decision.outbox ?? [], sideEffects };
}

/** The model's verdict on one idempotency key. */
export type KeyVerdict =
  | { readonly kind: 'applied' }
  | {
      readonly kind: 'dead-lettered';
      readonly reason: string;
      readonly errorType: string;
      readonly cause: FailureCause | 'exhausted' | 'forced';
    };

/** What the model ends with. */
export interface GeneratedModelResult {
  /** By idempotency key. */
  readonly verdicts: ReadonlyMap<string, KeyVerdict>;
  /** Final items by item index (absent: never written or deleted). */
  readonly items: ReadonlyMap<number, AvItem>;
  /** Outgoing messages of each applied key. */
  readonly outbox: ReadonlyMap<string, readonly OutgoingMessage[]>;
  /** Side effects of each applied key. */
  readonly sideEffects: ReadonlyMap<string, readonly SideEffectRequest[]>;
  /** Effect keys that may have run though their event was not applied (its commit failed after the effects). */
  readonly effectsAllowed: ReadonlySet<string>;
  /** Error types each key's own decisions raised (retried or dead-lettered). */
  readonly ownErrors: ReadonlyMap<string, ReadonlySet<string>>;
}

/** The events of a spec, key by key, in the key's order (poisoned steps left out: they never arrive). */
export function modelEvents(spec: GeneratedWorkloadSpec, consumer: GeneratedConsumer): GeneratedEvent[][] {
  return spec.keys.map((key, k) =>
    key.steps.flatMap((step, s) =>
      step.poison !== undefined ? [] : [{ id: consumer.eventId(k, s), group: consumer.group(k), k, s, note: step.note }],
    ),
  );
}

/**
 * Runs the model for one source.
 *
 * @param forced - idempotency keys that ran out of attempts for reasons of their own delivery
 *   (faults) on a source that keeps each key's order: dead-lettered `RetriesExhausted` where they
 *   stand, their successors decided without them
 */
export function runGeneratedModel(
  spec: GeneratedWorkloadSpec,
  consumer: GeneratedConsumer,
  source: ProveSource,
  forced: ReadonlySet<string> = new Set(),
): GeneratedModelResult {
  const state = new Map<number, AvItem>();
  const verdicts = new Map<string, KeyVerdict>();
  const outbox = new Map<string, readonly OutgoingMessage[]>();
  const sideEffects = new Map<string, readonly SideEffectRequest[]>();
  const effectsAllowed = new Set<string>();
  const ownErrors = new Map<string, Set<string>>();
  const own = (id: string, errorType: string) => ownErrors.set(id, (ownErrors.get(id) ?? new Set()).add(errorType));
  const waiting = source === 'sqs';

  /** `true` applied, `false` waits; a dead letter is recorded. */
  const attempt = (event: GeneratedEvent): boolean => {
    const result = decideStep(consumer, state, event);
    if (result.verdict === 'applied') {
      for (const [item, after] of result.changes) {
        if (after === undefined) state.delete(item);
        else state.set(item, after);
      }
      verdicts.set(event.id, { kind: 'applied' });
      outbox.set(event.id, result.outbox);
      sideEffects.set(event.id, result.sideEffects);
      return true;
    }
    own(event.id, result.errorType);
    if (result.cause !== 'throw' && result.cause !== 'read')
      result.sideEffects.forEach((request, position) => effectsAllowed.add(effectKeyOf(event.id, request, position)));
    if (result.verdict === 'dead') {
      verdicts.set(event.id, { kind: 'dead-lettered', reason: result.reason!, errorType: result.errorType, cause: result.cause });
      return true;
    }
    if (!waiting) {
      verdicts.set(event.id, {
        kind: 'dead-lettered',
        reason: FailureReason.RetriesExhausted,
        errorType: result.errorType,
        cause: 'exhausted',
      });
      return true;
    }
    return false;
  };

  for (const events of modelEvents(spec, consumer)) {
    let pending: GeneratedEvent[] = [];
    for (const event of events) {
      if (forced.has(event.id)) {
        // Its attempts ran out by faults: the side effects its decision asks for may have run.
        const decided = decideStep(consumer, state, event);
        decided.sideEffects.forEach((request, position) => effectsAllowed.add(effectKeyOf(event.id, request, position)));
        verdicts.set(event.id, { kind: 'dead-lettered', reason: FailureReason.RetriesExhausted, errorType: 'faults', cause: 'forced' });
        continue;
      }
      if (!attempt(event)) {
        pending.push(event);
        continue;
      }
      if (verdicts.get(event.id)?.kind !== 'applied') continue;
      for (let progress = true; progress; ) {
        progress = false;
        const still: GeneratedEvent[] = [];
        for (const waiter of pending) {
          if (attempt(waiter)) progress ||= verdicts.get(waiter.id)?.kind === 'applied';
          else still.push(waiter);
        }
        pending = still;
      }
    }
    for (const event of pending) {
      verdicts.set(event.id, {
        kind: 'dead-lettered',
        reason: FailureReason.RetriesExhausted,
        errorType: [...(ownErrors.get(event.id) ?? [])].at(-1) ?? 'Unknown',
        cause: 'exhausted',
      });
    }
  }
  return { verdicts, items: state, outbox, sideEffects, effectsAllowed, ownErrors };
}
