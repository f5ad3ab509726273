/**
 * The design pass: turns the grammar's raw material (`raw.ts`) into a coherent generated workload
 * (`spec.ts`) whose final state is well defined on the schedule's source.
 *
 * It places the items (owned by one key each, shared counters, items only read), then designs
 * each key's events in the key's order, on an in-memory state, with the reference model itself
 * (`decideStep`) as the judge:
 *
 * - an event meant to **apply** writes its key's head (its position, its id appended to the log),
 *   its conditions are made true on the state it will be decided on (a false one is negated), its
 *   updates are made valid (`#a + :n` on a missing attribute becomes `if_not_exists`, an `ADD` of
 *   another type a `SET`, …), and what the model still refuses is dropped; on a gated key it waits
 *   for exactly its predecessor;
 * - an event meant to **fail** (a rule, a wait that never ends, a throw from `read`, a user
 *   condition, a value the document client refuses, an outbox body JSON cannot hold, an item over
 *   400 KB, more than 100 actions) fails the same way in every state its key can be in when it is
 *   decided: on a gated key it waits until the head shows at least its predecessor, and its other
 *   writes are of forms DynamoDB accepts on any item (a failing condition there is a
 *   `ConditionCheck` of the head that no later state passes).
 *
 * @module
 */
import type { ProveSource } from '../proveSources.js';
import { buildGeneratedConsumer, type GeneratedEvent } from './consumer.js';
import { compareNumbers } from './decimal.js';
import { evaluateCondition } from './expressions.js';
import { decideStep, inboxActions, MAX_TRANSACTION_ACTIONS, type StepResult } from './model.js';
import type { RawHome, RawItem, RawKeyValue, RawSpec, RawStep, RawWrite } from './raw.js';
import type {
  ConditionSpec,
  GeneratedWorkloadSpec,
  InboxHomeSpec,
  ItemSpec,
  KeyType,
  KeyValueSpec,
  OutboxSpec,
  StepSpec,
  ThrowSpec,
  UpdateAction,
  ValueExpr,
  WriteSpec,
} from './spec.js';
import { type AvItem, own, type ValueSpec } from './values.js';

/** A large attribute that keeps an item within DynamoDB's 400 KB (200 KB). */
const LARGE = { $rep: 'Ωx', n: 68_000 } as const;
/** An attribute that makes an item exceed 400 KB on its own (450 KB). */
const OVERSIZE = { $rep: 'xyz', n: 153_600 } as const;
/** Most items one event reads. */
const MAX_READS = 10;

type MutableKey = { gated: boolean; head: number; steps: StepSpec[] };

/** The key value of a raw item for a key attribute of this type, unique to (`a`, `b`). */
function placeKey(type: KeyType, raw: RawKeyValue, a: number, b: number): KeyValueSpec {
  switch (type) {
    case 'S':
      return { S: `${raw.text}${a}.${b}` };
    case 'N':
      return {
        N: a * 1000 + b * 10 + (Math.abs(raw.n) % 10),
        style: raw.numberStyle,
        ...(raw.alt && (raw.numberStyle === 'int' || raw.numberStyle === 'nv') ? { alt: true } : {}),
      };
    case 'B':
      return {
        B: Buffer.concat([Buffer.from([a, b]), Buffer.from(raw.bytes, 'base64').subarray(0, 6)]).toString('base64'),
        style: raw.binaryStyle,
        ...(raw.alt ? { alt: true } : {}),
      };
  }
}

/**
 * Designs the workload of `raw` for `source` (see the module comment).
 *
 * @returns a spec whose every event's outcome is the same whatever order the source delivers in
 */
export function designWorkload(raw: RawSpec, source: ProveSource): GeneratedWorkloadSpec {
  const items: ItemSpec[] = [];
  const place = (item: RawItem, a: number, owner: number | null, b: number): number => {
    const table = item.table % raw.tables.length;
    const definition = raw.tables[table]!;
    items.push({
      table,
      partition: placeKey(definition.partitionKey.type, item.partition, a, b),
      ...(definition.sortKey === undefined ? {} : { sort: placeKey(definition.sortKey.type, item.sort, a, b + 50) }),
      owner,
    });
    return items.length - 1;
  };
  const owned = raw.keys.map((key, k) => key.items.map((item, i) => place(item, k, k, i)));
  const counters = raw.counterItems.map((item, j) => place(item, 90 + j, null, 0));
  raw.extraItems.forEach((item, j) => place(item, 95 + j, null, 0));
  const sharedOwned = new Set(raw.keys.flatMap((key, k) => (key.sharedItem && owned[k]!.length >= 2 ? [owned[k]!.at(-1)!] : [])));
  const allCounters = [...counters, ...sharedOwned];
  const inboxHome = raw.home === undefined ? undefined : placeHomes(raw, raw.home, owned, items, place);

  const reserved = new Set<string>([
    raw.versionAttribute ?? '_version',
    raw.names.seq,
    raw.names.log,
    raw.names.counter,
    ...raw.tables.flatMap((table) => [table.partitionKey.name, ...(table.sortKey === undefined ? [] : [table.sortKey.name])]),
  ]);
  const usable = (name: string) => !reserved.has(name) && name !== 'constructor' && name !== '__proto__';

  const keys: MutableKey[] = raw.keys.map((_, k) => ({ gated: source === 'sqs' || raw.keys[k]!.gated, head: owned[k]![0]!, steps: [] }));
  const spec: GeneratedWorkloadSpec = {
    kind: 'generated',
    tables: raw.tables,
    ...(raw.versionAttribute === undefined ? {} : { versionAttribute: raw.versionAttribute }),
    validation: raw.validation,
    names: raw.names,
    items,
    counters: allCounters,
    effects: raw.effects,
    keys,
    strayPoison: raw.strayPoison,
    ...(inboxHome === undefined ? {} : { inboxHome }),
  };
  const consumer = buildGeneratedConsumer(spec, 'design', 1, true);
  const state = new Map<number, AvItem>();

  keys.forEach((key, k) => {
    let prev = -1;
    raw.keys[k]!.steps.forEach((rawStep, s) => {
      const event: GeneratedEvent = { id: consumer.eventId(k, s), group: consumer.group(k), k, s, note: rawStep.note };
      const designer = new StepDesigner({
        rawStep,
        key,
        churn: raw.keys[k]!.churn,
        owned: owned[k]!,
        sharedOwned,
        counters: allCounters,
        itemCount: items.length,
        usable,
        names: raw.names,
        effects: raw.effects.map((e) => e.name),
        state,
        prev,
        home: inboxHome?.items[k],
      });
      if (rawStep.poison !== undefined) {
        key.steps.push({ ...designer.base('apply'), poison: rawStep.poison });
        return;
      }
      const judge = (candidate: StepSpec): StepResult => {
        key.steps[s] = candidate;
        return decideStep(consumer, state, event);
      };
      const { step, result } = designer.design(judge);
      key.steps[s] = step;
      if (result.verdict === 'applied') {
        for (const [item, after] of result.changes) {
          if (after === undefined) state.delete(item);
          else state.set(item, after);
        }
        prev = s;
      }
    });
  });
  return spec;
}

/** Marks' attribute names a decision may write, or the engine and the design use otherwise: never the marks' map. */
function homeAttribute(raw: RawSpec, attribute: string | undefined): string | undefined {
  if (attribute === undefined) return undefined;
  const taken = new Set([
    raw.versionAttribute ?? '_version',
    raw.names.seq,
    raw.names.log,
    raw.names.counter,
    ...raw.tables.flatMap((table) => [table.partitionKey.name, ...(table.sortKey === undefined ? [] : [table.sortKey.name])]),
  ]);
  return taken.has(attribute) ? undefined : attribute;
}

/**
 * Places the home items of a consumer that keeps its inbox marks on them (see `RawHome`): all in
 * one table; a key's home is a function of its events' `k` alone. A fresh home (an item nothing
 * writes) is owned by its key; the one home all keys share, by none.
 */
function placeHomes(
  raw: RawSpec,
  home: RawHome,
  owned: readonly (readonly number[])[],
  items: readonly ItemSpec[],
  place: (item: RawItem, a: number, owner: number | null, b: number) => number,
): InboxHomeSpec {
  const table = home.table === 'head' ? items[owned[0]![0]!]!.table : home.table % raw.tables.length;
  const inTable = (item: number | undefined): item is number => item !== undefined && items[item]!.table === table;
  let shared: number | undefined;
  const homes = raw.keys.map((key, k) => {
    const choice = home.places[k % home.places.length]!;
    if (choice === 'shared') return (shared ??= place({ ...raw.keys[0]!.items[0]!, table }, 98, null, 0));
    const next = owned[(k + 1) % owned.length]![0];
    if (choice === 'cross' && owned.length > 1 && inTable(next)) return next;
    const head = owned[k]![0];
    if ((choice === 'cross' || choice === 'head') && inTable(head)) return head;
    // Another of its items: its churn item first (deleted and re-created: its marks stay on a stub).
    const other = owned[k]!.slice(1).find(inTable);
    if (choice !== 'fresh' && other !== undefined) return other;
    return place({ ...key.items[0]!, table }, k, k, 40);
  });
  const attribute = homeAttribute(raw, home.attribute);
  return { table, items: homes, ...(attribute === undefined ? {} : { attribute }), ...(home.alt ? { alt: true } : {}) };
}

interface DesignerOptions {
  readonly rawStep: RawStep;
  readonly key: MutableKey;
  /** The key deletes and re-creates its second item in turn. */
  readonly churn: boolean;
  readonly owned: readonly number[];
  readonly sharedOwned: ReadonlySet<number>;
  readonly counters: readonly number[];
  readonly itemCount: number;
  readonly usable: (name: string) => boolean;
  readonly names: RawSpec['names'];
  readonly effects: readonly string[];
  readonly state: ReadonlyMap<number, AvItem>;
  /** The key's last applied position (−1: none). */
  readonly prev: number;
  /** The key's inbox home item (`inboxHome`), if the consumer keeps its marks on one. */
  readonly home: number | undefined;
}

/** Designs one event (see the module comment). */
class StepDesigner {
  readonly #o: DesignerOptions;

  constructor(options: DesignerOptions) {
    this.#o = options;
  }

  /** The event's parts that do not depend on what it does. */
  base(intent: StepSpec['intent']): StepSpec {
    const { rawStep } = this.#o;
    return { intent, reads: [], writes: [], outbox: [], sideEffects: [], note: rawStep.note, copies: rawStep.copies };
  }

  design(judge: (step: StepSpec) => StepResult): { step: StepSpec; result: StepResult } {
    const intent = this.#o.rawStep.intent;
    if (intent === 'apply') return this.#designApply(judge);
    let step = this.#designFailure();
    let result = judge(step);
    if (result.verdict === 'applied') {
      // Not the failure it was meant to be: a rule it breaks, whatever the state.
      step = { ...this.#gated(this.base('reject')), throws: throwOf(this.#o.rawStep.throws, 'reject') };
      result = judge(step);
    }
    return { step, result };
  }

  #gated(step: StepSpec, exact = false): StepSpec {
    const { key, prev } = this.#o;
    return key.gated ? { ...step, gate: { prev, exact } } : step;
  }

  /** Reads: the head first on a gated key, then what the writes need, then over-reads. */
  #reads(needed: readonly number[]): number[] {
    const { key, rawStep, itemCount } = this.#o;
    const reads = new Set<number>(key.gated ? [key.head] : []);
    for (const item of needed) reads.add(item);
    for (const choice of rawStep.overReads) if (reads.size < MAX_READS) reads.add(choice % itemCount);
    return [...reads];
  }

  #designApply(judge: (step: StepSpec) => StepResult): { step: StepSpec; result: StepResult } {
    const { rawStep, key, state } = this.#o;
    const lifecycle = this.#lifecycle();
    let writes = [...this.#writes('apply').filter((w) => !lifecycle.some((l) => l.item === w.item)), ...lifecycle];
    let outbox = rawStep.outbox.filter((message) => message.bad === undefined);
    let sideEffects = this.#sideEffects();
    const shared = this.#sharedAdds(new Set(writes.map((w) => w.item)));
    const head = this.#headWrite();
    if (rawStep.large) writes = withLarge(writes);
    const assemble = (): StepSpec => {
      const all = [head.write, ...writes, ...shared];
      const reads = this.#reads([...(head.read ? [key.head] : []), ...writes.filter((w) => needsRead(w)).map((w) => w.item)]);
      let out = outbox;
      if (rawStep.exactly100) {
        const touched = new Set([...reads, ...all.map((w) => w.item)]);
        out = padOutbox(outbox, MAX_TRANSACTION_ACTIONS - inboxActions(touched, this.#o.home));
      }
      return { ...this.#gated(this.base('apply'), true), reads, writes: all.map((w) => trueCondition(w, state)), outbox: out, sideEffects };
    };
    let step = assemble();
    let result = judge(step);
    for (let round = 0; round < 6 && result.verdict !== 'applied'; round += 1) {
      const failed = result.write === undefined ? undefined : step.writes[result.write];
      if (
        failed !== undefined &&
        failed !== head.write &&
        (result.cause === 'invalidUpdate' || result.cause === 'size' || result.cause === 'condition' || result.cause === 'unwritable')
      ) {
        writes = writes.filter((w) => w !== failed && !(w.item === failed.item && w.kind === failed.kind));
      } else if (result.cause === 'actions' || result.cause === 'outbox') {
        outbox = [];
      } else {
        writes = [];
        outbox = [];
        sideEffects = [];
      }
      step = assemble();
      result = judge(step);
    }
    if (result.verdict !== 'applied') {
      step = { ...this.#gated(this.base('reject'), false), throws: throwOf(rawStep.throws, 'reject') };
      result = judge(step);
    }
    return { step, result };
  }

  /**
   * Writes of the key's item life cycle: the churn item deleted or rewritten when it exists, and
   * re-created when it does not (a rewrite carries what it holds of the item over, with a count
   * computed from it: a memory of an earlier incarnation shows);
   * the shared-counter item rewritten by a `Put` that carries it over (other keys' `ADD`s must
   * survive it). Each replaces the event's own write of the same item.
   */
  #lifecycle(): WriteSpec[] {
    const { churn, owned, sharedOwned, state, rawStep, key, usable } = this.#o;
    const writes: WriteSpec[] = [];
    const churnItem = owned[1];
    if (churn && churnItem !== undefined && !sharedOwned.has(churnItem)) {
      const rewrite: WriteSpec = {
        kind: 'Put',
        item: churnItem,
        attrs: [
          ['incarnation', { position: true }],
          ['count', { plus: { attr: 'count', by: '1' } }],
        ],
        carry: 'all',
      };
      writes.push(state.has(churnItem) && !rawStep.churnModify ? { kind: 'Delete', item: churnItem } : rewrite);
    }
    const shared = owned.find((item) => sharedOwned.has(item));
    if (rawStep.touchShared && shared !== undefined && shared !== key.head) {
      const name = rawStep.writes.flatMap((w) => w.attrs.map(([n]) => n)).find(usable) ?? 'meta';
      writes.push({ kind: 'Put', item: shared, attrs: [[name, { position: true }]], carry: 'allButVersion' });
    }
    return writes;
  }

  /** An event meant to fail, and to fail the same way in every state its key can be in then. */
  #designFailure(): StepSpec {
    const { rawStep, key, owned, sharedOwned, prev, names } = this.#o;
    const intent = rawStep.intent;
    const base = this.#gated(this.base(intent));
    switch (intent) {
      case 'reject':
      case 'wait':
      case 'readThrow':
        return { ...base, reads: this.#reads([]), throws: throwOf(rawStep.throws, intent) };
      case 'conditionFails': {
        let writes = this.#writes('robust');
        if (key.gated) {
          // The head is at or past its predecessor whenever it is decided: this never holds then.
          writes = [
            ...writes.filter((w) => w.item !== key.head),
            { kind: 'ConditionCheck', item: key.head, condition: { c: 'lt', attr: names.seq, value: String(prev) } },
          ];
        } else {
          writes = falseSomewhere(writes, this.#o.state, owned[0]!, this.#firstUsable());
        }
        return {
          ...base,
          reads: this.#reads(writes.filter(needsRead).map((w) => w.item)),
          writes,
          outbox: rawStep.outbox.filter((m) => m.bad === undefined).slice(0, 2),
          sideEffects: this.#sideEffects(),
        };
      }
      case 'badValue': {
        const writes = withBadValue(
          this.#writes('robust'),
          rawStep.badValue,
          owned.find((item) => !sharedOwned.has(item)) ?? key.head,
          this.#firstUsable(),
        );
        return { ...base, reads: this.#reads(writes.filter(needsRead).map((w) => w.item)), writes, sideEffects: this.#sideEffects() };
      }
      case 'badOutbox': {
        const writes = this.#writes('robust');
        const bad: OutboxSpec = { ...(rawStep.outbox[0] ?? { body: { $m: { note: rawStep.note } } }), bad: rawStep.badOutbox };
        return {
          ...base,
          reads: this.#reads(writes.filter(needsRead).map((w) => w.item)),
          writes,
          outbox: [...rawStep.outbox.filter((m) => m.bad === undefined).slice(0, 1), bad],
          sideEffects: this.#sideEffects(),
        };
      }
      case 'tooLarge': {
        const item = owned.find((candidate) => !sharedOwned.has(candidate)) ?? key.head;
        const write: WriteSpec = { kind: 'Put', item, attrs: [[this.#firstUsable(), { lit: OVERSIZE }]], carry: 'none' };
        return { ...base, reads: this.#reads([]), writes: [write], sideEffects: this.#sideEffects() };
      }
      case 'tooManyActions': {
        const writes = this.#writes('robust').slice(0, 3);
        const reads = this.#reads(writes.filter(needsRead).map((w) => w.item));
        const touched = new Set([...reads, ...writes.map((w) => w.item)]);
        const outbox = padOutbox(
          rawStep.outbox.filter((m) => m.bad === undefined),
          MAX_TRANSACTION_ACTIONS + 1 - inboxActions(touched, this.#o.home) + (rawStep.copies % 2),
        );
        return { ...base, reads, writes, outbox, sideEffects: this.#sideEffects() };
      }
      case 'apply':
        throw new Error('not a failure');
    }
  }

  #firstUsable(): string {
    const candidates = ['value', 'v2', 'data', 'payload_x', 'z9'];
    return candidates.find((name) => this.#o.usable(name))!;
  }

  #sideEffects(): StepSpec['sideEffects'] {
    const { rawStep, effects } = this.#o;
    if (effects.length === 0) return [];
    return rawStep.sideEffects.map((effect) => ({ name: effects[effect.effect % effects.length]!, input: effect.input }));
  }

  /** Blind `ADD`s of the shared counters (items this event does not write otherwise). */
  #sharedAdds(written: ReadonlySet<number>): WriteSpec[] {
    const { rawStep, counters, names, key } = this.#o;
    if (counters.length === 0) return [];
    const adds: WriteSpec[] = [];
    const used = new Set(written);
    used.add(key.head);
    for (const { counter, by } of rawStep.shared) {
      const item = counters[counter % counters.length]!;
      if (used.has(item)) continue;
      used.add(item);
      const amount: ValueSpec =
        typeof by === 'number' && Number.isSafeInteger(by) ? by : by !== null && typeof by === 'object' && '$big' in by ? by : 1;
      adds.push({ kind: 'Update', item, actions: [{ op: 'add', attr: names.counter, value: amount }], lowerCase: false });
    }
    return adds;
  }

  /** The head's write of an event meant to apply: its position and its id in the log. */
  #headWrite(): { write: WriteSpec; read: boolean } {
    const { rawStep, key, names, state } = this.#o;
    const mine = rawStep.writes.find((w) => this.#o.owned[w.item % this.#o.owned.length] === key.head);
    if (mine?.kind === 'Put') {
      const attrs: [string, ValueExpr][] = [
        [names.seq, { position: true }],
        [names.log, { appendId: names.log }],
        ...mine.attrs
          .filter(([name]) => this.#o.usable(name))
          .slice(0, 3)
          .map(([name, value]): [string, ValueExpr] => [name, { lit: value }]),
      ];
      return { write: { kind: 'Put', item: key.head, attrs: dedupe(attrs), carry: mine.carry }, read: true };
    }
    const extra = mine?.kind === 'Update' ? fixActions(mine.actions, state.get(key.head), 'apply', this.#o.usable).slice(0, 3) : [];
    const actions: UpdateAction[] = [{ op: 'setPosition', attr: names.seq }, { op: 'appendId', attr: names.log }, ...extra];
    return { write: { kind: 'Update', item: key.head, actions, lowerCase: mine?.lowerCase ?? false }, read: key.gated };
  }

  /**
   * The event's writes of its own items but the head: `apply` (valid on the state it is decided
   * on) or `robust` (of forms DynamoDB takes on any item: `Put`, `Delete`, `SET` of a value,
   * `if_not_exists`, `REMOVE`, `ConditionCheck`).
   */
  #writes(mode: 'apply' | 'robust'): WriteSpec[] {
    const { rawStep, owned, key, sharedOwned, usable, state } = this.#o;
    const writes: WriteSpec[] = [];
    const used = new Set<number>([key.head]);
    for (const w of rawStep.writes) {
      const item = owned[w.item % owned.length]!;
      if (used.has(item)) continue;
      const shared = sharedOwned.has(item);
      const condition = w.condition;
      const write = buildWrite(w, item, shared, mode, usable, state.get(item), condition);
      if (write === undefined) continue;
      used.add(item);
      writes.push(write);
    }
    return writes;
  }
}

/** Whether a write needs its item's state (it carries it, or computes a value from it): the item must be read. */
function needsRead(write: WriteSpec): boolean {
  if (write.kind === 'Put') return write.carry !== 'none' || write.attrs.some(([, value]) => !('lit' in value));
  return false;
}

function dedupe<T extends readonly [string, unknown]>(pairs: readonly T[]): T[] {
  const seen = new Set<string>();
  return pairs.filter(([name]) => {
    if (seen.has(name)) return false;
    seen.add(name);
    return true;
  });
}

/** One write from its raw material, or `undefined` when nothing of it is left. */
function buildWrite(
  w: RawWrite,
  item: number,
  shared: boolean,
  mode: 'apply' | 'robust',
  usable: (name: string) => boolean,
  current: AvItem | undefined,
  condition: ConditionSpec | undefined,
): WriteSpec | undefined {
  const withCondition = <T extends WriteSpec>(write: T): T => (condition === undefined ? write : { ...write, condition });
  switch (w.kind) {
    case 'Put': {
      const attrs: [string, ValueExpr][] = dedupe(
        w.attrs.filter(([name]) => usable(name)).map(([name, value]): [string, ValueExpr] => [name, { lit: value }]),
      );
      const plus = w.plusAttr;
      const before = plus === undefined ? undefined : own(current, plus.attr);
      const base = before !== undefined && 'N' in before ? before.N : '0';
      if (
        mode === 'apply' &&
        plus !== undefined &&
        usable(plus.attr) &&
        !attrs.some(([name]) => name === plus.attr) &&
        safeSum(base, plus.by)
      )
        attrs.push([plus.attr, { plus }]);
      // A shared counter lives in the item: a Put keeps it only by carrying the item over.
      const carry = shared && w.carry === 'none' ? 'allButVersion' : w.blind && !shared ? 'none' : w.carry;
      return withCondition({ kind: 'Put', item, attrs, carry });
    }
    case 'Update': {
      const actions = fixActions(w.actions, current, mode, usable);
      if (actions.length === 0) return undefined;
      return withCondition({ kind: 'Update', item, actions, lowerCase: w.lowerCase });
    }
    case 'Delete':
      if (shared) {
        const name = w.attrs.map(([n]) => n).find(usable);
        return name === undefined
          ? undefined
          : withCondition({ kind: 'Update', item, actions: [{ op: 'remove', attr: name }], lowerCase: w.lowerCase });
      }
      return withCondition({ kind: 'Delete', item });
    case 'ConditionCheck':
      return {
        kind: 'ConditionCheck',
        item,
        condition: condition ?? { c: 'notExists', attr: w.attrs.map(([n]) => n).find(usable) ?? 'absent_attribute' },
      };
  }
}

/** Two actions may not name one attribute; a number operation must keep DynamoDB's precision. */
function fixActions(
  actions: readonly UpdateAction[],
  current: AvItem | undefined,
  mode: 'apply' | 'robust',
  usable: (name: string) => boolean,
): UpdateAction[] {
  const seen = new Set<string>();
  const fixed: UpdateAction[] = [];
  for (const action of actions) {
    if (!usable(action.attr) || seen.has(action.attr)) continue;
    const next = mode === 'robust' ? robustAction(action) : validAction(action, own(current, action.attr));
    if (next === undefined) continue;
    seen.add(action.attr);
    fixed.push(next);
  }
  return fixed;
}

/** An action DynamoDB takes on any item, or `undefined`. */
function robustAction(action: UpdateAction): UpdateAction | undefined {
  switch (action.op) {
    case 'set':
    case 'setIfNotExists':
    case 'remove':
      return action;
    default:
      return undefined;
  }
}

/**
 * Whether `a + b` stays a number the document client reads back: two integers of at most 30
 * digits, or small numbers (a decimal beyond 2^53 cannot be read: it is neither a safe `number`
 * nor a `BigInt`).
 */
export function safeSum(a: string, b: string): boolean {
  const integer = (text: string) => /^-?\d+$/.test(text);
  const small = (text: string) => compareNumbers(text.replace('-', ''), '1000000000') < 0;
  if (integer(a) && integer(b)) return a.replace('-', '').length <= 30 && b.replace('-', '').length <= 30;
  return small(a) && small(b);
}

/** The canonical text of a number value spec (`0` for anything else). */
function numberOf(value: ValueSpec): string {
  if (typeof value === 'number') return String(value);
  if (value !== null && typeof value === 'object' && '$big' in value) return value.$big;
  return '0';
}

/** An action valid on the attribute's current value (a `SET` of a value when the operation is not). */
function validAction(action: UpdateAction, value: import('./values.js').Av | undefined): UpdateAction | undefined {
  const type = value === undefined ? undefined : Object.keys(value)[0];
  const asSet = (v: ValueSpec): UpdateAction => ({ op: 'set', attr: action.attr, value: v });
  switch (action.op) {
    case 'setPlus':
    case 'setMinus':
      if (type === 'N' && safeSum((value as { N: string }).N, action.by)) return action;
      return type === undefined ? { op: 'setIfNotExistsPlus', attr: action.attr, start: '0', by: action.by } : asSet(Number(action.by));
    case 'setIfNotExistsPlus':
      if (type === undefined ? safeSum(action.start, action.by) : type === 'N' && safeSum((value as { N: string }).N, action.by))
        return action;
      return asSet(Number(action.start));
    case 'appendList':
      return type === undefined || type === 'L' ? action : asSet(action.values);
    case 'add': {
      const v = action.value;
      const numeric = typeof v === 'number' || (v !== null && typeof v === 'object' && '$big' in v);
      const setType =
        v !== null && typeof v === 'object'
          ? '$ss' in v
            ? 'SS'
            : '$ns' in v || '$nsBig' in v
              ? 'NS'
              : '$bs' in v
                ? 'BS'
                : undefined
          : undefined;
      if (numeric) return type === undefined || (type === 'N' && safeSum((value as { N: string }).N, numberOf(v))) ? action : asSet(v);
      if (setType === undefined) return asSet(v);
      return type === undefined || type === setType ? action : asSet(v);
    }
    case 'deleteFromSet': {
      const v = action.value;
      const setType =
        v !== null && typeof v === 'object'
          ? '$ss' in v
            ? 'SS'
            : '$ns' in v || '$nsBig' in v
              ? 'NS'
              : '$bs' in v
                ? 'BS'
                : undefined
          : undefined;
      if (setType === undefined) return { op: 'remove', attr: action.attr };
      return type === undefined || type === setType ? action : { op: 'remove', attr: action.attr };
    }
    default:
      return action;
  }
}

/** Each write's condition made true on the state it is decided on. */
function trueCondition(write: WriteSpec, state: ReadonlyMap<number, AvItem>): WriteSpec {
  if (write.condition === undefined) return write;
  if (evaluateCondition(write.condition, state.get(write.item))) return write;
  return { ...write, condition: { c: 'not', a: write.condition } } as WriteSpec;
}

/** Makes one write's condition false on the state (an ungated key decides on exactly it), adding a `ConditionCheck` when no write has one. */
function falseSomewhere(writes: readonly WriteSpec[], state: ReadonlyMap<number, AvItem>, fallbackItem: number, attr: string): WriteSpec[] {
  const index = writes.findIndex((w) => w.condition !== undefined);
  if (index === -1) {
    const check: WriteSpec = {
      kind: 'ConditionCheck',
      item: writes[0]?.item === fallbackItem ? fallbackItem : fallbackItem,
      condition: { c: 'exists', attr: `${attr}_never` },
    };
    return [...writes.filter((w) => w.item !== fallbackItem), check];
  }
  return writes.map((w, i) => {
    if (i !== index || w.condition === undefined) return w;
    const holds = evaluateCondition(w.condition, state.get(w.item));
    return (holds ? { ...w, condition: { c: 'not', a: w.condition } } : w) as WriteSpec;
  });
}

/** Puts a value the document client refuses into the first write that can hold one (or a new `Put`). */
function withBadValue(
  writes: readonly WriteSpec[],
  kind: import('./values.js').BadValueKind,
  fallbackItem: number,
  attr: string,
): WriteSpec[] {
  const bad: ValueSpec = { $bad: kind };
  const index = writes.findIndex((w) => w.kind === 'Put' || w.kind === 'Update');
  if (index === -1)
    return [
      ...writes.filter((w) => w.item !== fallbackItem),
      { kind: 'Put', item: fallbackItem, attrs: [[attr, { lit: bad }]], carry: 'none' },
    ];
  return writes.map((w, i) => {
    if (i !== index) return w;
    if (w.kind === 'Put') return { ...w, attrs: [...w.attrs.filter(([name]) => name !== attr), [attr, { lit: bad }]] };
    if (w.kind === 'Update') return { ...w, actions: [...w.actions.filter((a) => a.attr !== attr), { op: 'set', attr, value: bad }] };
    return w;
  });
}

/** A 200 KB attribute in the first `Put` (or a `SET` in the first `Update`). */
function withLarge(writes: readonly WriteSpec[]): WriteSpec[] {
  const index = writes.findIndex((w) => w.kind === 'Put' || w.kind === 'Update');
  return writes.map((w, i) => {
    if (i !== index) return w;
    if (w.kind === 'Put') return { ...w, attrs: [...w.attrs, ['large_blob', { lit: LARGE }]] };
    if (w.kind === 'Update') return { ...w, actions: [...w.actions, { op: 'set', attr: 'large_blob', value: LARGE }] };
    return w;
  });
}

/** `outbox` padded with small messages (or cut) to `count` messages. */
function padOutbox(outbox: readonly OutboxSpec[], count: number): OutboxSpec[] {
  const target = Math.max(0, count);
  const padded = outbox.slice(0, target);
  for (let i = padded.length; i < target; i += 1) padded.push({ body: { $m: { n: i } } });
  return padded;
}

/** The throw of a failing event, of a kind that fits its intent. */
function throwOf(raw: ThrowSpec, intent: 'reject' | 'wait' | 'readThrow'): ThrowSpec {
  const kinds: Record<typeof intent, readonly ThrowSpec['kind'][]> = {
    reject: ['nonRetryable', 'classified'],
    wait: ['retryable', 'unknown'],
    readThrow: ['nonRetryable', 'retryable'],
  };
  const allowed = kinds[intent];
  const kind = allowed.includes(raw.kind) ? raw.kind : allowed[raw.name.length % allowed.length]!;
  const reason = kind === 'nonRetryable' || kind === 'classified' ? raw.reason : undefined;
  return { kind, name: raw.name, ...(reason === undefined ? {} : { reason }) };
}
