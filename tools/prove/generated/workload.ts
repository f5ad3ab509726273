/**
 * A generated consumer as a workload of the proof suite: its producer's messages (each key's
 * events in order, producer copies, malformed bodies), the reference model per source, what is
 * stored of its items, and which failures are each message's own.
 *
 * @module
 */
import { type AttributeValue, BatchGetItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { FailureReason, type Item } from 'idempotent-consumer';
import type { PoisonKind } from '../poisonKinds.js';
import type { ProveSource } from '../proveSources.js';
import {
  ATTRIBUTABLE_ERRORS,
  type InputMessage,
  MessageRole,
  type ModelResult,
  type StoreClients,
  type StoredBusinessState,
  stubAttributeOf,
  type Workload,
  type WorkloadHomeItem,
  type WorkloadInboxHome,
} from '../workload.js';
import { buildGeneratedConsumer, DownstreamBusy, type GeneratedConsumer } from './consumer.js';
import { addNumbers, compareNumbers } from './decimal.js';
import { runGeneratedModel } from './model.js';
import type { GeneratedWorkloadSpec, NamesSpec } from './spec.js';
import { type AvItem, fromSdk, fromSdkItem, own, printAv } from './values.js';

/** Error types of a decision the document client cannot write (the marshaller's and `JSON.stringify`'s own). */
const UNWRITABLE_ERRORS = ['ConsumerDefinitionError', 'Error', 'TypeError', 'RangeError'];

/** A malformed body of a generated consumer and the reason it must be dead-lettered with. */
export function generatedPoison(
  kind: PoisonKind,
  names: NamesSpec,
  ids: { readonly id: string; readonly group: string; readonly k: number; readonly s: number },
): { body: string; reason: string } {
  const idField = names.idField ?? 'ref';
  const groupField = names.groupField ?? 'lane';
  const byField = names.idField !== null;
  const valid = { [idField]: ids.id, [groupField]: ids.group, k: ids.k, s: ids.s, note: 'x' };
  switch (kind) {
    case 'not-json':
      return { body: JSON.stringify(valid).slice(0, -3), reason: FailureReason.ValidationError };
    case 'array':
      return { body: JSON.stringify([valid]), reason: FailureReason.ValidationError };
    case 'missing-key': {
      const { [idField]: _id, ...rest } = valid;
      return { body: JSON.stringify(rest), reason: byField ? FailureReason.MissingIdempotencyKey : FailureReason.ValidationError };
    }
    case 'key-not-string':
      return {
        body: JSON.stringify({ ...valid, [idField]: 42 }),
        reason: byField ? FailureReason.MissingIdempotencyKey : FailureReason.ValidationError,
      };
    case 'unknown-type':
      return { body: JSON.stringify({ ...valid, s: 999 }), reason: FailureReason.UnknownMessageType };
    case 'bad-field':
      return { body: JSON.stringify({ ...valid, note: 42 }), reason: FailureReason.ValidationError };
  }
}

/**
 * The workload of a generated consumer.
 *
 * @param prefix - the schedule's prefix of ids (letters, digits, `-`)
 * @param salt - a positive integer unique to the schedule within its run: the salt of every key value
 */
export function generatedWorkload(
  spec: GeneratedWorkloadSpec,
  prefix: string,
  salt: number,
): Workload & { readonly spec: GeneratedWorkloadSpec; readonly consumerOf: GeneratedConsumer } {
  const consumer = buildGeneratedConsumer(spec, prefix, salt);
  const messages: InputMessage[] = [];
  let next = 0;
  const messageId = () => `${prefix}-m${(next += 1)}`;
  const keyOf = new Map<string, number>();
  spec.keys.forEach((key, k) => {
    key.steps.forEach((step, s) => {
      const id = consumer.eventId(k, s);
      const group = consumer.group(k);
      keyOf.set(id, k);
      if (step.poison !== undefined) {
        const poison = generatedPoison(step.poison, spec.names, { id, group, k, s });
        messages.push({ id: messageId(), body: poison.body, group, role: MessageRole.Poison, expectedReason: poison.reason });
        return;
      }
      const body = consumer.body(k, s);
      messages.push({ id: messageId(), body, group, role: MessageRole.Event, key: id });
      for (let copy = 0; copy < step.copies; copy += 1)
        messages.push({ id: messageId(), body, group, role: MessageRole.Duplicate, key: id });
    });
  });
  spec.strayPoison.forEach((kind, i) => {
    const group = `${prefix}-X${i}`;
    const poison = generatedPoison(kind, spec.names, { id: `${prefix}-x${i}`, group, k: 0, s: 0 });
    messages.push({ id: messageId(), body: poison.body, group, role: MessageRole.Poison, expectedReason: poison.reason });
  });

  const homeItems = new Set(spec.inboxHome?.items ?? []);
  const models = new Map<string, ModelResult & { readonly ownErrors: ReadonlyMap<string, ReadonlySet<string>> }>();
  const model = (source: ProveSource, forced: ReadonlySet<string> = new Set()) => {
    const id = `${source}|${[...forced].sort().join(',')}`;
    let result = models.get(id);
    if (result === undefined) {
      const run = runGeneratedModel(spec, consumer, source, forced);
      const items = new Map<string, Item>();
      // A home item that holds only its key is a stub once it holds a mark: absent to `decide` and to the checks.
      for (const [index, item] of run.items)
        if (!(homeItems.has(index) && keyOnly(spec, index, item))) items.set(consumer.itemIds[index]!, item as Item);
      result = {
        outcomes: new Map(
          [...run.verdicts].map(([key, verdict]) => [
            key,
            verdict.kind === 'applied' ? { kind: 'applied' as const } : { kind: 'dead-lettered' as const, reason: verdict.reason },
          ]),
        ),
        items,
        outbox: run.outbox,
        sideEffects: run.sideEffects,
        effectsAllowed: run.effectsAllowed,
        ownErrors: run.ownErrors,
      };
      models.set(id, result);
    }
    return result;
  };

  const throwNames = new Set(
    spec.keys.flatMap((key) =>
      key.steps.flatMap((step) => (step.throws === undefined ? [] : [step.throws.name, step.throws.reason ?? step.throws.name])),
    ),
  );
  const flaky = new Set(spec.effects.filter((effect) => effect.flaky).map((effect) => effect.name));
  const attributableErrors = new Set([
    ...ATTRIBUTABLE_ERRORS,
    ...UNWRITABLE_ERRORS,
    FailureReason.ConditionalWriteFailed,
    DownstreamBusy.name,
    ...throwNames,
  ]);

  /** What each event's own design may make it fail with, whatever the model says. */
  const designedErrors = (id: string): string[] => {
    const k = keyOf.get(id);
    const s = k === undefined ? undefined : Number(id.slice(id.lastIndexOf('.s') + 2));
    const step = k === undefined || s === undefined ? undefined : spec.keys[k]?.steps[s];
    if (step === undefined) return [];
    const errors: string[] = [];
    if (step.throws !== undefined && (step.intent === 'reject' || step.intent === 'wait' || step.intent === 'readThrow'))
      errors.push(step.throws.name, step.throws.reason ?? step.throws.name);
    if (step.intent === 'badValue' || step.intent === 'badOutbox') errors.push(...UNWRITABLE_ERRORS);
    if (step.intent === 'tooLarge' || step.intent === 'tooManyActions') errors.push(FailureReason.InvalidWrite);
    if (step.intent === 'conditionFails') errors.push(FailureReason.ConditionalWriteFailed);
    if (step.sideEffects.some((effect) => flaky.has(effect.name))) errors.push(DownstreamBusy.name);
    return errors;
  };

  return {
    consumer: 'generated',
    spec,
    consumerOf: consumer,
    options: consumer.options as never,
    tables: consumer.tables,
    messages,
    effectRuns: consumer.effects.runs,
    model,
    redrivable: (key) => spec.keys[keyOf.get(key) ?? -1]?.gated ?? true,
    attributableErrors,
    ownErrors: (key) => {
      const own = new Set(designedErrors(key));
      for (const source of ['sqs', 'fifo', 'kafka'] as const) {
        for (const error of model(source).ownErrors.get(key) ?? []) own.add(error);
        const outcome = model(source).outcomes.get(key);
        if (outcome?.kind === 'dead-lettered') own.add(outcome.reason);
      }
      return own;
    },
    outboxPositions: Math.max(3, ...spec.keys.flatMap((key) => key.steps.map((step) => step.outbox.length))),
    readStored: (clients, tableNames) => readGeneratedItems(clients, tableNames, spec, consumer),
    appliedTwice: (stored, appliedKeys) => appliedTwice(spec, consumer, stored, appliedKeys),
    ...(spec.inboxHome === undefined ? {} : { inboxHome: inboxHomeOf(spec, consumer, keyOf) }),
    ...(spec.inboxHome === undefined
      ? {}
      : {
          homeSwitchBlocker: (source: ProveSource) => {
            // The model's verdicts and items without inboxHome: a deploy that switches it must not change them.
            const { inboxHome: _home, ...withoutHome } = spec;
            const rows = runGeneratedModel(withoutHome, buildGeneratedConsumer(withoutHome, prefix, salt), source);
            const marks = runGeneratedModel(spec, consumer, source);
            for (const [key, verdict] of marks.verdicts) {
              const other = rows.verdicts.get(key);
              if (
                other?.kind !== verdict.kind ||
                (other.kind === 'dead-lettered' && verdict.kind === 'dead-lettered' && other.reason !== verdict.reason)
              )
                return `key ${key}: ${verdict.kind} with inboxHome, ${other?.kind ?? 'no verdict'} without`;
            }
            const print = (items: ReadonlyMap<number, AvItem>) =>
              [...items]
                .filter(([index, item]) => !(homeItems.has(index) && keyOnly(spec, index, item)))
                .map(([index, item]) => `${index}:${printAv(item)}`)
                .sort()
                .join('\n');
            if (print(marks.items) !== print(rows.items)) return 'the items differ without inboxHome';
            return undefined;
          },
        }),
  };
}

/** Whether an item holds nothing but its key attributes. */
function keyOnly(spec: GeneratedWorkloadSpec, index: number, item: Readonly<Record<string, unknown>>): boolean {
  const table = spec.tables[spec.items[index]!.table]!;
  return Object.keys(item).every((name) => name === table.partitionKey.name || name === table.sortKey?.name);
}

/** Where a generated consumer with an inbox home keeps its marks: each key's home item. */
function inboxHomeOf(spec: GeneratedWorkloadSpec, consumer: GeneratedConsumer, keyOf: ReadonlyMap<string, number>): WorkloadInboxHome {
  const home = spec.inboxHome!;
  const refs = new Map<number, WorkloadHomeItem>();
  for (const index of home.items) {
    if (refs.has(index)) continue;
    refs.set(index, {
      id: consumer.itemIds[index]!,
      table: spec.tables[spec.items[index]!.table]!.name,
      key: marshall(consumer.itemKey(index)) as Record<string, AttributeValue>,
    });
  }
  return {
    attribute: consumer.homeAttribute!,
    versionAttribute: consumer.versionAttribute,
    homes: [...refs.values()],
    homeOf: (key) => {
      const k = keyOf.get(key);
      return k === undefined ? undefined : refs.get(home.items[k]!);
    },
  };
}

/** Reads every item of the universe with the plain client (no unmarshalling), consistently; without the version attribute. */
async function readGeneratedItems(
  clients: StoreClients,
  tableNames: Readonly<Record<string, string>>,
  spec: GeneratedWorkloadSpec,
  consumer: GeneratedConsumer,
): Promise<StoredBusinessState> {
  const wanted = spec.items.map((item, index) => ({
    index,
    tableName: tableNames[spec.tables[item.table]!.name]!,
    key: marshall(consumer.itemKey(index)) as Record<string, AttributeValue>,
  }));
  const found = new Map<string, AvItem>();
  const homes = new Set(spec.inboxHome?.items ?? []);
  const homeAttribute = consumer.homeAttribute;
  const keyPrint = (tableName: string, key: Readonly<Record<string, AttributeValue>>, names: readonly string[]) =>
    `${tableName}|${names.map((name) => printAv(fromSdk(key[name] ?? { NULL: true }))).join('|')}`;
  const keyNames = (tableName: string) => {
    const table = spec.tables.find((t) => tableNames[t.name] === tableName)!;
    return table.sortKey === undefined ? [table.partitionKey.name] : [table.partitionKey.name, table.sortKey.name];
  };
  const byPrint = new Map<string, number[]>();
  for (const w of wanted) {
    const print = keyPrint(w.tableName, w.key, keyNames(w.tableName));
    byPrint.set(print, [...(byPrint.get(print) ?? []), w.index]);
  }
  for (let i = 0; i < wanted.length; i += 100) {
    let request: Record<string, { Keys: Record<string, AttributeValue>[]; ConsistentRead: true }> = {};
    for (const w of wanted.slice(i, i + 100)) {
      const entry = (request[w.tableName] ??= { Keys: [], ConsistentRead: true });
      if (
        !entry.Keys.some((key) => keyPrint(w.tableName, key, keyNames(w.tableName)) === keyPrint(w.tableName, w.key, keyNames(w.tableName)))
      )
        entry.Keys.push(w.key);
    }
    for (let round = 0; Object.keys(request).length > 0; round += 1) {
      if (round > 10) throw new Error('DynamoDB kept keys unprocessed');
      const output = await clients.dynamoDb.send(new BatchGetItemCommand({ RequestItems: request }));
      for (const [tableName, items] of Object.entries(output.Responses ?? {})) {
        for (const item of items) {
          const { [consumer.versionAttribute]: _version, ...rest } = fromSdkItem(item);
          for (const index of byPrint.get(keyPrint(tableName, item, keyNames(tableName))) ?? []) {
            if (!homes.has(index) || homeAttribute === undefined) {
              found.set(consumer.itemIds[index]!, rest);
              continue;
            }
            // A home item without its marks and stub flag (the checks read them apart); a stub (nothing but its key) is absent.
            const { [homeAttribute]: _marks, [stubAttributeOf(homeAttribute)]: _stub, ...business } = rest;
            if (!keyOnly(spec, index, business)) found.set(consumer.itemIds[index]!, business);
          }
        }
      }
      request = (output.UnprocessedKeys ?? {}) as typeof request;
    }
  }
  const effectRecords = new Map<string, number>();
  for (const effectKey of consumer.effects.completed.keys()) effectRecords.set(effectKey, 1);
  return { items: found as ReadonlyMap<string, Item>, effectRecords };
}

/** What in the stored items shows an event applied twice: an id twice in a head's log, a log entry of a key not applied, a counter that is not the sum of its applied `ADD`s. */
function appliedTwice(
  spec: GeneratedWorkloadSpec,
  consumer: GeneratedConsumer,
  stored: StoredBusinessState,
  appliedKeys: ReadonlySet<string>,
): string[] {
  const problems: string[] = [];
  const items = stored.items as ReadonlyMap<string, AvItem>;
  spec.keys.forEach((key, k) => {
    const head = items.get(consumer.itemIds[key.head]!);
    const log = own(head, spec.names.log);
    if (log === undefined || !('L' in log)) return;
    const ids = log.L.map((entry) => ('S' in entry ? entry.S : printAv(entry)));
    const twice = ids.filter((id, i) => ids.indexOf(id) !== i);
    if (twice.length > 0) problems.push(`key ${k}'s head logs event(s) ${[...new Set(twice)].join(', ')} twice`);
    for (const id of ids) if (!appliedKeys.has(id)) problems.push(`key ${k}'s head logs ${id}, which the inbox does not show applied`);
  });
  for (const counter of spec.counters) {
    let expected = '0';
    spec.keys.forEach((key, k) =>
      key.steps.forEach((step, s) => {
        if (!appliedKeys.has(consumer.eventId(k, s))) return;
        for (const write of step.writes) {
          if (write.item !== counter || write.kind !== 'Update') continue;
          for (const action of write.actions) {
            if (action.op !== 'add' || action.attr !== spec.names.counter) continue;
            const amount = action.value;
            expected = addNumbers(
              expected,
              typeof amount === 'number'
                ? String(amount)
                : amount !== null && typeof amount === 'object' && '$big' in amount
                  ? amount.$big
                  : '0',
            );
          }
        }
      }),
    );
    const value = own(items.get(consumer.itemIds[counter]!), spec.names.counter);
    const have = value !== undefined && 'N' in value ? value.N : '0';
    if (compareNumbers(have, expected) !== 0)
      problems.push(`shared counter ${consumer.itemIds[counter]} holds ${have}, but its applied ADDs add up to ${expected}`);
  }
  return problems;
}
