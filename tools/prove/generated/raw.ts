/**
 * The raw material the grammar draws for a generated consumer, before the design pass
 * (`design.ts`) makes it coherent: which items exist, what each event of each key is meant to
 * do, and writes, reads, conditions and values drawn freely. Indexes are choices, taken modulo
 * what exists, so that shrinking (which removes keys, items and steps) keeps every choice valid.
 *
 * @module
 */
import type { PoisonKind } from '../poisonKinds.js';
import type { ConditionSpec, EffectSpec, Intent, NamesSpec, OutboxSpec, TableSpec, ThrowSpec, UpdateAction } from './spec.js';
import type { BadValueKind, ValueSpec } from './values.js';

/** Key value material; the table's key type says which part is used. */
export interface RawKeyValue {
  readonly text: string;
  readonly n: number;
  readonly numberStyle: 'int' | 'neg' | 'dec' | 'big' | 'nv';
  /** base64 */
  readonly bytes: string;
  readonly binaryStyle: 'buffer' | 'u8';
  /** `read` names the item in the value's other native form. */
  readonly alt: boolean;
}

/** An item before it is placed: table choice and key material. */
export interface RawItem {
  readonly table: number;
  readonly partition: RawKeyValue;
  readonly sort: RawKeyValue;
}

/** A write before the design pass: the item is a choice among the key's own items. */
export interface RawWrite {
  readonly kind: 'Put' | 'Update' | 'Delete' | 'ConditionCheck';
  readonly item: number;
  /** Not in the read set (when nothing of the item's state is needed). */
  readonly blind: boolean;
  readonly attrs: readonly (readonly [string, ValueSpec])[];
  readonly carry: 'none' | 'all' | 'allButVersion';
  /** Put: compute this attribute from the state (`plus`), when the item is read. */
  readonly plusAttr?: { readonly attr: string; readonly by: string };
  readonly actions: readonly UpdateAction[];
  readonly lowerCase: boolean;
  readonly condition?: ConditionSpec;
}

/** One event before the design pass. */
export interface RawStep {
  readonly intent: Intent;
  /** Over-reads: choices among all items. */
  readonly overReads: readonly number[];
  readonly writes: readonly RawWrite[];
  readonly outbox: readonly OutboxSpec[];
  readonly sideEffects: readonly { readonly effect: number; readonly input: ValueSpec }[];
  /** Blind `ADD`s to shared counters: counter choice and amount. */
  readonly shared: readonly { readonly counter: number; readonly by: ValueSpec }[];
  readonly throws: ThrowSpec;
  readonly badValue: BadValueKind;
  readonly badOutbox: 'bigint' | 'nan' | 'inf';
  /** An event meant to apply uses exactly 100 transaction actions (outbox messages fill it up). */
  readonly exactly100: boolean;
  /** An event meant to apply writes a large (200 KB) attribute. */
  readonly large: boolean;
  /** An event meant to apply also rewrites its key's shared-counter item (a `Put` that carries the item over). */
  readonly touchShared: boolean;
  /** On a churning key, an event that finds the churn item present rewrites it (from what it holds) instead of deleting it. */
  readonly churnModify: boolean;
  readonly note: string;
  readonly copies: number;
  readonly poison?: PoisonKind;
}

/** One key before the design pass. */
export interface RawKey {
  readonly gated: boolean;
  readonly items: readonly RawItem[];
  /** Its last item (of two or more) also takes shared counter `ADD`s from every key. */
  readonly sharedItem: boolean;
  /**
   * Its events meant to apply delete and re-create its second item in turn (a re-created item
   * must never pass for the one deleted: versions must not repeat).
   */
  readonly churn: boolean;
  readonly steps: readonly RawStep[];
}

/** Where each key's inbox marks live (`inboxHome`), before the design pass places the items. */
export type RawHomePlace = 'head' | 'other' | 'fresh' | 'shared' | 'cross';

/** A consumer that keeps its inbox marks on home items (`inboxHome`), before the design pass. */
export interface RawHome {
  /** The home table: the table of key 0's head, or a choice among the tables. */
  readonly table: 'head' | number;
  /**
   * By key (modulo): its home — its head; another of its items (its churn item when it has one);
   * a fresh item nothing writes; one fresh item all keys share; the next key's head. Each falls
   * back to the next that exists in the home table (`head` → `other` → `fresh`).
   */
  readonly places: readonly RawHomePlace[];
  /** The marks' map attribute (`undefined`: the default). */
  readonly attribute?: string;
  readonly alt: boolean;
}

/** A generated consumer before the design pass. */
export interface RawSpec {
  readonly tables: readonly TableSpec[];
  readonly versionAttribute?: string;
  readonly validation: 'schema' | 'parse';
  readonly names: NamesSpec;
  readonly counterItems: readonly RawItem[];
  readonly extraItems: readonly RawItem[];
  readonly effects: readonly EffectSpec[];
  readonly keys: readonly RawKey[];
  readonly strayPoison: readonly PoisonKind[];
  /** Inbox marks on home items (`inboxHome`); absent: inbox rows. */
  readonly home?: RawHome;
}
