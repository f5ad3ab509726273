/**
 * The spec of a generated consumer and its producer, as plain JSON (it is part of a schedule, so
 * a replay file reproduces the consumer, and fast-check shrinks it with the faults).
 *
 * The workload is designed so that its final state is well defined on every source:
 *
 * - every item is **owned** by one ordering key (a "key" below): only that key's events write it
 *   — except **shared counters**, attributes that any key's events change only by a blind
 *   `ADD` (no read, no condition), which commute;
 * - a **gated** key (always on a standard queue) keeps a head item with the position of its last
 *   applied event: an event that is meant to apply waits (a retryable error) until the head shows
 *   exactly its predecessor, and an event that is meant to fail waits until the head shows at
 *   least its predecessor, then fails whatever else has applied since — so the source's order
 *   does not change any outcome;
 * - an ungated key (FIFO and Kafka only, where the source keeps the key's order) decides its events
 *   on whatever its earlier events left.
 *
 * @module
 */
import type { PoisonKind } from '../poisonKinds.js';
import type { ValueSpec } from './values.js';

/** DynamoDB's key attribute types. */
export const keyTypes = ['S', 'N', 'B'] as const;
export type KeyType = (typeof keyTypes)[number];

/** One key attribute of a table. */
export interface KeyAttribute {
  readonly name: string;
  readonly type: KeyType;
}

/** One business table: the user's logical name and its key schema. */
export interface TableSpec {
  readonly name: string;
  readonly partitionKey: KeyAttribute;
  readonly sortKey?: KeyAttribute;
}

/**
 * A key value before the schedule's salt is added (which keeps schedules apart in shared
 * tables), in one of the forms the document client accepts. With `alt`, `read` names the item in
 * the value's other form (a `BigInt` for a safe integer or a `NumberValue`, a `Uint8Array` for a
 * `Buffer` and back), as another part of a user's code may.
 */
export type KeyValueSpec =
  /** A string: `<salt><text>` (non-empty, may be non-ASCII). */
  | { readonly S: string }
  /**
   * A number: `int` (salt × 10^6 + n), `neg` (its negative), `dec` (+ 0.25), `big` (salt × 10^24 + n,
   * beyond 2^53, a `BigInt`), `nv` (the same as lib-dynamodb's `NumberValue`).
   */
  | { readonly N: number; readonly style: 'int' | 'neg' | 'dec' | 'big' | 'nv'; readonly alt?: boolean }
  /** Binary: the salt's 4 bytes, then these (base64), as a `Buffer` or a `Uint8Array`. */
  | { readonly B: string; readonly style: 'buffer' | 'u8'; readonly alt?: boolean };

/** An item of the universe: its table (index into `tables`) and key values. */
export interface ItemSpec {
  readonly table: number;
  readonly partition: KeyValueSpec;
  readonly sort?: KeyValueSpec;
  /** The key (index into `keys`) whose events write it; `null` for an item only shared counters and reads touch. */
  readonly owner: number | null;
}

/** A value a write computes from the state of its item (the item must be in the event's read set). */
export type ValueExpr =
  | { readonly lit: ValueSpec }
  /** The item's number attribute `attr` (0 when absent) plus `by` (canonical number text). */
  | { readonly plus: { readonly attr: string; readonly by: string } }
  /** The item's list attribute `attr` (empty when absent) with this event's id appended. */
  | { readonly appendId: string }
  /** This event's position in its key's stream. */
  | { readonly position: true };

/** One action of an `UpdateExpression` on a top-level attribute. */
export type UpdateAction =
  | { readonly op: 'set'; readonly attr: string; readonly value: ValueSpec }
  /** `SET #a = #a + :n` (the attribute must hold a number). */
  | { readonly op: 'setPlus'; readonly attr: string; readonly by: string }
  /** `SET #a = #a - :n`. */
  | { readonly op: 'setMinus'; readonly attr: string; readonly by: string }
  /** `SET #a = if_not_exists(#a, :v)`. */
  | { readonly op: 'setIfNotExists'; readonly attr: string; readonly value: ValueSpec }
  /** `SET #a = if_not_exists(#a, :z) + :n`. */
  | { readonly op: 'setIfNotExistsPlus'; readonly attr: string; readonly start: string; readonly by: string }
  /** `SET #a = list_append(if_not_exists(#a, :empty), :items)`. */
  | { readonly op: 'appendList'; readonly attr: string; readonly values: readonly ValueSpec[] }
  /** `ADD #a :v`: a number (canonical text, or a `BigInt` when it has `big`) or a set. */
  | { readonly op: 'add'; readonly attr: string; readonly value: ValueSpec }
  /** `DELETE #a :set`. */
  | { readonly op: 'deleteFromSet'; readonly attr: string; readonly value: ValueSpec }
  | { readonly op: 'remove'; readonly attr: string }
  /** `SET #seq = :position` (the head's position, set by the event's own position). */
  | { readonly op: 'setPosition'; readonly attr: string }
  /** `SET #log = list_append(if_not_exists(#log, :empty), :id)` with this event's id. */
  | { readonly op: 'appendId'; readonly attr: string };

/** A condition on one item, as the user writes it (rendered to a `ConditionExpression`). */
export type ConditionSpec =
  | { readonly c: 'exists' | 'notExists'; readonly attr: string }
  | { readonly c: 'eq' | 'ne'; readonly attr: string; readonly value: ValueSpec }
  | { readonly c: 'lt' | 'le' | 'gt' | 'ge'; readonly attr: string; readonly value: string }
  | { readonly c: 'beginsWith'; readonly attr: string; readonly prefix: string }
  | { readonly c: 'contains'; readonly attr: string; readonly value: string }
  | { readonly c: 'sizeGt'; readonly attr: string; readonly n: number }
  | { readonly c: 'type'; readonly attr: string; readonly type: 'S' | 'N' | 'B' | 'BOOL' | 'NULL' | 'L' | 'M' | 'SS' | 'NS' | 'BS' }
  | { readonly c: 'and' | 'or'; readonly a: ConditionSpec; readonly b: ConditionSpec }
  | { readonly c: 'not'; readonly a: ConditionSpec };

/** One write of a decision, on an item of the universe (index into `items`). */
export type WriteSpec =
  | {
      readonly kind: 'Put';
      readonly item: number;
      readonly attrs: readonly (readonly [string, ValueExpr])[];
      /** What of the item's current state the new item keeps: nothing, everything (the version attribute too, as a careless user would), or everything but the version attribute. */
      readonly carry: 'none' | 'all' | 'allButVersion';
      readonly condition?: ConditionSpec;
    }
  | {
      readonly kind: 'Update';
      readonly item: number;
      readonly actions: readonly UpdateAction[];
      readonly lowerCase: boolean;
      readonly condition?: ConditionSpec;
    }
  | { readonly kind: 'Delete'; readonly item: number; readonly condition?: ConditionSpec }
  | { readonly kind: 'ConditionCheck'; readonly item: number; readonly condition: ConditionSpec };

/** An error a consumer's code throws. */
export interface ThrowSpec {
  /**
   * `nonRetryable`: a `NonRetryableError` subclass (reason = its name, or `reason`);
   * `retryable`: a `RetryableError` subclass; `classified`: a plain `Error` subclass that the
   * consumer's `classifyError` dead-letters with `reason`; `unknown`: a plain `Error` subclass
   * nothing classifies (retryable by default).
   */
  readonly kind: 'nonRetryable' | 'retryable' | 'classified' | 'unknown';
  /** The class's name (its `name`, and the dead-letter reason unless `reason` says otherwise). */
  readonly name: string;
  readonly reason?: string;
}

/** What an event is meant to do (the reference model, not this, says what it does). */
export const intents = [
  'apply',
  'reject',
  'wait',
  'readThrow',
  'conditionFails',
  'badValue',
  'badOutbox',
  'tooLarge',
  'tooManyActions',
] as const;
export type Intent = (typeof intents)[number];

/** An outgoing message of a decision. */
export interface OutboxSpec {
  /** A string body as is, or a JSON value. */
  readonly body: ValueSpec;
  /** Put a value `JSON.stringify` cannot write faithfully into the body: a `BigInt`, `NaN` or an infinity. */
  readonly bad?: 'bigint' | 'nan' | 'inf';
  readonly destination?: string;
  readonly messageGroupId?: string;
  readonly attributes?: Readonly<Record<string, string>>;
}

/** One event of a key's stream, as the producer emits it, and what the consumer does with it. */
export interface StepSpec {
  readonly intent: Intent;
  /** The head position the event waits for: exactly (`exact`, an event meant to apply) or at least; absent on an ungated key. */
  readonly gate?: { readonly prev: number; readonly exact: boolean };
  /** Items `read` names (indexes into `items`), in order. */
  readonly reads: readonly number[];
  readonly writes: readonly WriteSpec[];
  readonly outbox: readonly OutboxSpec[];
  /** Inline side effects asked for (names of `effects`). */
  readonly sideEffects: readonly { readonly name: string; readonly input: ValueSpec }[];
  /** Thrown by `decide` (`reject`, `wait`) or `read` (`readThrow`). */
  readonly throws?: ThrowSpec;
  /** Free text in the body (non-ASCII, RTL, combining marks, emoji). */
  readonly note: string;
  /** Producer copies of the event (same body, another message). */
  readonly copies: number;
  /** Sent malformed instead: the event never arrives. */
  readonly poison?: PoisonKind;
}

/** One ordering key's stream. */
export interface KeySpec {
  /** Gated (see the module comment); always on a standard queue. */
  readonly gated: boolean;
  /** Its head item (index into `items`), owned by it. */
  readonly head: number;
  readonly steps: readonly StepSpec[];
}

/** An inline side effect the consumer offers. */
export interface EffectSpec {
  readonly name: string;
  /** Fails (a `RetryableError`) at its first run for each effect key. */
  readonly flaky: boolean;
}

/** The names a consumer's body and items use. */
export interface NamesSpec {
  /** The body field of the idempotency key, or `null` for a function of the event. */
  readonly idField: string | null;
  /** The body field of the ordering key, or `null` for a function of the event. */
  readonly groupField: string | null;
  /** The head's position attribute. */
  readonly seq: string;
  /** The head's list of applied event ids. */
  readonly log: string;
  /** The shared counter attribute (blind `ADD` from any key). */
  readonly counter: string;
}

/**
 * Which generated consumers keep their inbox marks on home items (`inboxHome`): every one, none,
 * or about half (drawn per consumer, recorded in its spec). `--home` of `npm run prove`.
 */
export const inboxHomeModes = ['always', 'never', 'mixed'] as const;
export type InboxHomeMode = (typeof inboxHomeModes)[number];

/**
 * Where a generated consumer keeps its events' inbox marks (`inboxHome`): on an item of one of its
 * tables, chosen per key (so a function of the event alone: its key `k`). A key's home may be its
 * head, another item it writes (one it deletes and re-creates: stubs), an item nothing writes, an
 * item every key's marks share, or another key's head.
 */
export interface InboxHomeSpec {
  /** The table of every home item (index into `tables`). */
  readonly table: number;
  /** By key (index into `keys`): its home item (index into `items`, an item of `table`). */
  readonly items: readonly number[];
  /** The marks' map attribute when not the default (`_inbox`). */
  readonly attribute?: string;
  /** `key(event)` gives the home's key values in their other native form (as `read` does with `alt`). */
  readonly alt?: boolean;
}

/** A generated consumer and its producer. */
export interface GeneratedWorkloadSpec {
  readonly kind: 'generated';
  readonly tables: readonly TableSpec[];
  /** `versionAttribute` when not the default. */
  readonly versionAttribute?: string;
  /** Validate bodies with a Standard Schema (zod) or with a `parse` function. */
  readonly validation: 'schema' | 'parse';
  readonly names: NamesSpec;
  readonly items: readonly ItemSpec[];
  /** Items any key may `ADD` to (their `names.counter` attribute). */
  readonly counters: readonly number[];
  readonly effects: readonly EffectSpec[];
  readonly keys: readonly KeySpec[];
  readonly strayPoison: readonly PoisonKind[];
  /** Inbox marks on home items instead of inbox rows (`inboxHome`); absent: an inbox row per event. */
  readonly inboxHome?: InboxHomeSpec;
}

/** The default map attribute of inbox marks on a home item (`InboxHome.attribute`). */
export const DEFAULT_HOME_ATTRIBUTE = '_inbox';
