/**
 * A generated consumer, built from its spec with the library's public API only, as a user writes
 * one: `createIdempotentConsumer` options with a schema (zod) or a `parse` function, the
 * idempotency and ordering keys (body fields or functions), the tables, `read`, a pure `decide`,
 * inline side effects, outbox messages, `classifyError`, the user's own error classes, and (about
 * half of them) `inboxHome`: the event's inbox mark on a home item of its tables, chosen by its key.
 *
 * `decide` interprets the spec of the event's step: it waits for its predecessor (a gated key),
 * throws (a rule the event breaks, or a wait that never ends), and returns writes in
 * `TransactWriteItems` shape with values computed from the state it was given. The same
 * interpretation ({@link GeneratedConsumer.plan}) gives the reference model each write's in-memory
 * effect, rendered from the same spec as its expression.
 *
 * @module
 */
import { NumberValue } from '@aws-sdk/lib-dynamodb';
import {
  type Decision,
  type IdempotentConsumerOptions,
  type Item,
  type ItemKey,
  type OutgoingMessage,
  PredecessorNotApplied,
  RetryableError,
  type SideEffectContext,
  type State,
  type TableDefinition,
  UnknownMessageType,
  ValidationError,
  type Write,
} from 'idempotent-consumer';
import { z } from 'zod';
import { addNumbers } from './decimal.js';
import { classifierFor, makeError } from './errors.js';
import { Placeholders, renderCondition, renderUpdate } from './expressions.js';
import {
  type ConditionSpec,
  DEFAULT_HOME_ATTRIBUTE,
  type GeneratedWorkloadSpec,
  type KeyValueSpec,
  type StepSpec,
  type UpdateAction,
  type ValueExpr,
  type WriteSpec,
} from './spec.js';
import { marshallItem, nativeNumber, numberText, own, printAv, toNative } from './values.js';

/** A generated consumer's event (its body, validated). */
export interface GeneratedEvent {
  /** The idempotency key (body field `names.idField`, or `ref`). */
  readonly id: string;
  /** The ordering key (body field `names.groupField`, or `lane`). */
  readonly group: string;
  /** Its key (index into `keys`). */
  readonly k: number;
  /** Its step (index into the key's `steps`): its position in the key's stream. */
  readonly s: number;
  readonly note: string;
}

/** The in-memory side of one write of a decision, for the reference model. */
export interface WriteEffect {
  /** The item (index into `items`). */
  readonly item: number;
  readonly kind: 'Put' | 'Update' | 'Delete' | 'ConditionCheck';
  /** Named by the event's `read`. */
  readonly inReadSet: boolean;
  readonly condition: ConditionSpec | undefined;
  /** An `Update`'s actions and what they read of the event. */
  readonly update?: { readonly actions: readonly UpdateAction[]; readonly context: { readonly id: string; readonly position: number } };
}

/** A decision with the in-memory side of each of its writes (same order). */
export interface PlannedDecision {
  readonly decision: Decision;
  readonly effects: readonly WriteEffect[];
}

/** What the inline side effects did downstream, by effect key: runs, and runs that completed (the downstream keeps one record per effect key). */
export interface EffectLedger {
  readonly runs: Map<string, number>;
  readonly completed: Map<string, number>;
}

/** A generated consumer. */
export interface GeneratedConsumer {
  readonly options: IdempotentConsumerOptions<GeneratedEvent>;
  readonly tables: Readonly<Record<string, TableDefinition>>;
  /** The body of step `s` of key `k` (`prefix` keeps schedules apart). */
  body(k: number, s: number): string;
  /** The idempotency key of step `s` of key `k`. */
  eventId(k: number, s: number): string;
  /** The ordering key (FIFO message group, Kafka record key) of key `k`. */
  group(k: number): string;
  /** The native key of an item, as `read` names it (`mention`) or as a write gives it. */
  itemKey(item: number, mention?: boolean): Item;
  /** A comparable id of an item: `<logical table>|<canonical key>`. */
  readonly itemIds: readonly string[];
  /** The index of the item with this table and native key, if it is one of the universe's. */
  itemIndex(table: string, key: Readonly<Item>): number | undefined;
  /** `decide`, with the in-memory side of each write. */
  plan(event: GeneratedEvent, state: State): PlannedDecision;
  /** Runs of each inline side effect, by effect key (the downstream's view). */
  readonly effects: EffectLedger;
  readonly versionAttribute: string;
  /** The home item (index into `items`) of key `k`'s events, when the consumer keeps its inbox marks on home items (`inboxHome`). */
  homeItem(k: number): number | undefined;
  /** The marks' map attribute (`inboxHome.attribute`, or its default); `undefined` without `inboxHome`. */
  readonly homeAttribute: string | undefined;
}

/** A side effect's own retryable failure (its first run for each effect key, when `flaky`). */
export class DownstreamBusy extends RetryableError {}

/** The salt's text before a string key: keeps schedules apart in shared tables. */
const SALT_SEPARATOR = '~';

/**
 * A key value of the spec in native form, salted.
 *
 * @param mention - `read` names it: in the value's other native form when the spec says `alt`
 */
export function keyValue(spec: KeyValueSpec, salt: number, mention = false): unknown {
  if ('S' in spec) return `${salt}${SALT_SEPARATOR}${spec.S}`;
  const alt = mention && spec.alt === true;
  if ('N' in spec) {
    const base = salt * 1_000_000 + spec.N;
    switch (spec.style) {
      case 'int':
        return alt ? BigInt(base) : base;
      case 'neg':
        return -base - 1;
      case 'dec':
        return base + 0.25;
      case 'big':
      case 'nv': {
        const big = BigInt(salt) * 10n ** 24n + BigInt(spec.N);
        return spec.style === 'nv' && !alt ? NumberValue.from(big.toString()) : big;
      }
    }
  }
  const salted = Buffer.concat([
    Buffer.from([(salt >>> 24) & 255, (salt >>> 16) & 255, (salt >>> 8) & 255, salt & 255]),
    Buffer.from(spec.B, 'base64'),
  ]);
  const asBuffer = spec.style === 'buffer' ? !alt : alt;
  return asBuffer ? salted : new Uint8Array(salted);
}

const num = (value: unknown): string | undefined => numberText(value);

/**
 * Builds the consumer of `spec`.
 *
 * @param prefix - letters, digits and `-`: the schedule's prefix of every id
 * @param salt - a positive integer unique to the schedule: the salt of every key value
 * @param lazy - the spec's steps are still being added (the design pass): read them at each call
 */
export function buildGeneratedConsumer(spec: GeneratedWorkloadSpec, prefix: string, salt: number, lazy = false): GeneratedConsumer {
  const versionAttribute = spec.versionAttribute ?? '_version';
  const tables: Record<string, TableDefinition> = {};
  for (const table of spec.tables)
    tables[table.name] =
      table.sortKey === undefined
        ? { partitionKey: table.partitionKey.name }
        : { partitionKey: table.partitionKey.name, sortKey: table.sortKey.name };
  const idField = spec.names.idField ?? 'ref';
  const groupField = spec.names.groupField ?? 'lane';
  const home = spec.inboxHome;

  const itemKey = (index: number, alt = false): Item => {
    const item = spec.items[index]!;
    const table = spec.tables[item.table]!;
    const key: Item = { [table.partitionKey.name]: keyValue(item.partition, salt, alt) };
    if (table.sortKey !== undefined && item.sort !== undefined) key[table.sortKey.name] = keyValue(item.sort, salt, alt);
    return key;
  };
  const keyPrint = (table: number, key: Readonly<Item>): string => {
    const definition = spec.tables[table]!;
    const names =
      definition.sortKey === undefined ? [definition.partitionKey.name] : [definition.partitionKey.name, definition.sortKey.name];
    const picked: Record<string, unknown> = {};
    for (const name of names) picked[name] = key[name];
    try {
      return `${definition.name}|${printAv(marshallItem(picked))}`;
    } catch {
      return `${definition.name}|(unmarshallable key)`;
    }
  };
  const itemIds = spec.items.map((item, index) => keyPrint(item.table, itemKey(index)));
  const byId = new Map(itemIds.map((id, index) => [id, index]));
  const tableIndex = new Map(spec.tables.map((table, index) => [table.name, index]));
  const tableOf = (index: number) => spec.tables[spec.items[index]!.table]!.name;

  const eventId = (k: number, s: number) => `${prefix}-k${k}.s${s}`;
  const group = (k: number) => `${prefix}-K${k}`;
  const stepOf = (event: GeneratedEvent): StepSpec => {
    const step = spec.keys[event.k]?.steps[event.s];
    if (step === undefined) throw new UnknownMessageType(`step ${event.k}.${event.s}`);
    return step;
  };

  const effects: EffectLedger = { runs: new Map(), completed: new Map() };
  const sideEffects: Record<string, (input: unknown, context: SideEffectContext) => Promise<unknown>> = {};
  for (const effect of spec.effects) {
    sideEffects[effect.name] = async (_input, context) => {
      const runs = (effects.runs.get(context.effectKey) ?? 0) + 1;
      effects.runs.set(context.effectKey, runs);
      if (effect.flaky && runs === 1) throw new DownstreamBusy(`${effect.name} is busy, try again`);
      effects.completed.set(context.effectKey, (effects.completed.get(context.effectKey) ?? 0) + 1);
      return { ok: context.effectKey };
    };
  }

  const plan = (event: GeneratedEvent, state: State): PlannedDecision => {
    const step = stepOf(event);
    const keySpec = spec.keys[event.k]!;
    const read = (index: number) => state.get(tableOf(index), itemKey(index));
    if (step.gate !== undefined) {
      const head = read(keySpec.head);
      const position = Number(num(own(head, spec.names.seq)) ?? '-1');
      const ready = step.gate.exact ? position === step.gate.prev : position >= step.gate.prev;
      if (!ready)
        throw new PredecessorNotApplied(`event ${event.s} of its key waits for event ${step.gate.prev} (the key is at ${position})`);
    }
    if ((step.intent === 'reject' || step.intent === 'wait') && step.throws !== undefined) {
      throw makeError(
        step.throws,
        `event ${event.s} of its key ${step.intent === 'reject' ? 'breaks a rule' : 'waits for what never comes'}`,
      );
    }
    const context = { id: event.id, position: event.s };
    const writes: Write[] = [];
    const writeEffects: WriteEffect[] = [];
    for (const write of step.writes) {
      const rendered = renderWrite(write, context, (index) => read(index));
      writes.push(rendered);
      writeEffects.push({
        item: write.item,
        kind: write.kind,
        inReadSet: step.reads.includes(write.item),
        condition: write.condition,
        ...(write.kind === 'Update' ? { update: { actions: write.actions, context } } : {}),
      });
    }
    const outbox: OutgoingMessage[] = step.outbox.map((message) => {
      let body = toNative(message.body);
      if (message.bad !== undefined) {
        const bad = message.bad === 'bigint' ? 10n ** 20n : message.bad === 'nan' ? Number.NaN : Number.POSITIVE_INFINITY;
        body = { payload: body, amount: bad };
      }
      return {
        body,
        ...(message.destination === undefined ? {} : { destination: message.destination }),
        ...(message.messageGroupId === undefined ? {} : { messageGroupId: message.messageGroupId }),
        ...(message.attributes === undefined ? {} : { attributes: message.attributes }),
      };
    });
    const decision: Decision = {
      ...(writes.length === 0 ? {} : { writes }),
      ...(outbox.length === 0 ? {} : { outbox }),
      ...(step.sideEffects.length === 0
        ? {}
        : { sideEffects: step.sideEffects.map((effect) => ({ name: effect.name, input: toNative(effect.input) })) }),
    };
    return { decision, effects: writeEffects };
  };

  /** One write in lib-dynamodb's `TransactWriteItem` shape (logical table name), from its spec and the state. */
  const renderWrite = (
    write: WriteSpec,
    context: { readonly id: string; readonly position: number },
    current: (index: number) => Item | undefined,
  ): Write => {
    const TableName = tableOf(write.item);
    const p = new Placeholders();
    const condition = write.condition === undefined ? {} : { ConditionExpression: renderCondition(write.condition, p) };
    const placeholders = () => ({
      ...(Object.keys(p.names).length === 0 ? {} : { ExpressionAttributeNames: p.names }),
      ...(Object.keys(p.values).length === 0 ? {} : { ExpressionAttributeValues: p.values }),
    });
    switch (write.kind) {
      case 'Put': {
        const before = write.carry === 'none' && !write.attrs.some(([, value]) => !('lit' in value)) ? undefined : current(write.item);
        const item: Item = {};
        if (write.carry !== 'none' && before !== undefined) {
          for (const [name, value] of Object.entries(before)) if (write.carry === 'all' || name !== versionAttribute) item[name] = value;
        }
        for (const [name, value] of write.attrs) item[name] = evaluate(value, before, context);
        Object.assign(item, itemKey(write.item));
        return { Put: { TableName, Item: item, ...condition, ...placeholders() } };
      }
      case 'Update': {
        const UpdateExpression = renderUpdate(write.actions, p, context, write.lowerCase);
        return { Update: { TableName, Key: itemKey(write.item), UpdateExpression, ...condition, ...placeholders() } };
      }
      case 'Delete':
        return { Delete: { TableName, Key: itemKey(write.item), ...condition, ...placeholders() } };
      case 'ConditionCheck':
        return {
          ConditionCheck: {
            TableName,
            Key: itemKey(write.item),
            ConditionExpression: condition.ConditionExpression ?? renderCondition(write.condition, p),
            ...placeholders(),
          },
        } as Write;
    }
  };

  const schema = z.object({
    [idField]: z.string().min(1),
    [groupField]: z.string().min(1),
    k: z.number().int().nonnegative(),
    s: z.number().int().nonnegative(),
    note: z.string(),
  });
  // The event keeps the body's own key fields: a key given by field name is read from the event.
  const toEvent = (json: Record<string, unknown>): GeneratedEvent =>
    ({
      [idField]: json[idField],
      [groupField]: json[groupField],
      id: json[idField] as string,
      group: json[groupField] as string,
      k: json.k as number,
      s: json.s as number,
      note: json.note as string,
    }) as GeneratedEvent;
  const parse = (json: unknown): GeneratedEvent => {
    if (json === null || typeof json !== 'object' || Array.isArray(json)) throw new ValidationError('the body is not an object');
    const body = json as Record<string, unknown>;
    if (typeof body.k !== 'number' || typeof body.s !== 'number' || spec.keys[body.k]?.steps[body.s] === undefined)
      throw new UnknownMessageType(body.s);
    if (typeof body[idField] !== 'string' || typeof body[groupField] !== 'string' || typeof body.note !== 'string')
      throw new ValidationError('a field is missing or of the wrong type');
    return toEvent(body);
  };

  const options: IdempotentConsumerOptions<GeneratedEvent> = {
    ...(spec.validation === 'schema'
      ? { schema: schema.transform((body) => toEvent(body as Record<string, unknown>)) as never }
      : { parse }),
    idempotencyKey: spec.names.idField ?? ((event: GeneratedEvent) => event.id),
    orderingKey: spec.names.groupField ?? ((event: GeneratedEvent) => event.group),
    logFields: (event) => ({ k: event.k, s: event.s }),
    tables,
    read: (event): ItemKey[] => {
      const step = stepOf(event);
      if (step.intent === 'readThrow' && step.throws !== undefined)
        throw makeError(step.throws, `read() cannot name the items of event ${event.s}`);
      return step.reads.map((index) => ({ table: tableOf(index), key: itemKey(index, true) }));
    },
    decide: (event, state) => plan(event, state).decision,
    sideEffects,
    ...(spec.versionAttribute === undefined ? {} : { versionAttribute: spec.versionAttribute }),
    ...(home === undefined
      ? {}
      : {
          inboxHome: {
            table: spec.tables[home.table]!.name,
            // A function of the event alone: its key's home item.
            key: (event: GeneratedEvent) => itemKey(home.items[event.k]!, home.alt === true),
            ...(home.attribute === undefined ? {} : { attribute: home.attribute }),
          },
        }),
  };
  const throwsOf = () => spec.keys.flatMap((key) => key.steps.flatMap((step) => (step.throws === undefined ? [] : [step.throws])));
  // While a spec is being designed its steps grow: its classifier reads them at each call.
  const classify = lazy ? (error: unknown) => classifierFor(throwsOf())?.(error) : classifierFor(throwsOf());
  const withClassifier: IdempotentConsumerOptions<GeneratedEvent> =
    classify === undefined ? options : { ...options, classifyError: classify };

  return {
    options: withClassifier,
    tables,
    body: (k, s) => JSON.stringify({ [idField]: eventId(k, s), [groupField]: group(k), k, s, note: spec.keys[k]!.steps[s]!.note }),
    eventId,
    group,
    itemKey,
    itemIds,
    itemIndex: (table, key) => {
      const index = tableIndex.get(table);
      return index === undefined ? undefined : byId.get(keyPrint(index, key));
    },
    plan,
    effects,
    versionAttribute,
    homeItem: (k) => home?.items[k],
    homeAttribute: home === undefined ? undefined : (home.attribute ?? DEFAULT_HOME_ATTRIBUTE),
  };
}

/** The native value of a value expression, on the item's state before the write. */
function evaluate(value: ValueExpr, before: Item | undefined, context: { readonly id: string; readonly position: number }): unknown {
  if ('lit' in value) return toNative(value.lit);
  if ('plus' in value) {
    const sum = addNumbers(num(own(before, value.plus.attr)) ?? '0', value.plus.by);
    return nativeNumber(sum);
  }
  if ('appendId' in value) {
    const list = own(before, value.appendId);
    return [...(Array.isArray(list) ? list : []), context.id];
  }
  return context.position;
}
