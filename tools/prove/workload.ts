/**
 * What a schedule's producer sends, and what must come of it: the input messages of a workload
 * (valid event sequences, producer duplicates, malformed bodies), and the **in-order model** —
 * the consumer's own pure pieces (`parse`/`schema`, `read`, `decide`) applied to the events one
 * by one, in the order the producer emitted them, on an in-memory copy of the tables. Its
 * result is what the stored state must equal after any schedule of faults.
 *
 * @module
 */
import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  FailureReason,
  type IdempotentConsumerOptions,
  type Item,
  type OutgoingMessage,
  type SideEffectRequest,
  type TableDefinition,
} from 'idempotent-consumer';
import { marshall } from '@aws-sdk/util-dynamodb';
import { classify } from 'idempotent-consumer/internal';
import { canonicalJson } from 'idempotent-consumer/internal';
import type { ProveConsumer, ProveSource } from './schedule.js';

/** What a message is to the workload. */
export const MessageRole = {
  /** Applied before the schedule's faults begin (e.g. stock received). */
  Setup: 'setup',
  /** An event of a valid sequence. */
  Event: 'event',
  /** The producer sent an event again (same body). */
  Duplicate: 'duplicate',
  /** A malformed body. */
  Poison: 'poison',
} as const;
export type MessageRole = (typeof MessageRole)[keyof typeof MessageRole];

/** One message the producer sends. */
export interface InputMessage {
  /** Unique within the schedule; the SQS message id. */
  readonly id: string;
  readonly body: string;
  /** The ordering key: FIFO message group, Kafka record key. */
  readonly group: string;
  readonly role: MessageRole;
  /** The idempotency key (events, duplicates, set-up). */
  readonly key?: string;
  /** A poison body's dead-letter reason. */
  readonly expectedReason?: string;
}

/** The model's verdict on one idempotency key. */
export type ExpectedOutcome = { readonly kind: 'applied' } | { readonly kind: 'dead-lettered'; readonly reason: string };

/** What the in-order model ends with. */
export interface ModelResult {
  /** By idempotency key. */
  readonly outcomes: ReadonlyMap<string, ExpectedOutcome>;
  /** Business items, by {@link itemId}, without the engine's version attribute. */
  readonly items: ReadonlyMap<string, Item>;
  /** By idempotency key of an applied event: its outgoing messages. */
  readonly outbox: ReadonlyMap<string, readonly OutgoingMessage[]>;
  /** By idempotency key of an applied event: its inline side effects. */
  readonly sideEffects: ReadonlyMap<string, readonly SideEffectRequest[]>;
  /**
   * Effect keys (`<idempotency key>#<name>#<position>`) that may have run although their event
   * was not applied: its decision asked for them and failed only at its commit.
   */
  readonly effectsAllowed?: ReadonlySet<string>;
}

/** What is stored of a workload's business tables. */
export interface StoredBusinessState {
  /** Business items (those the model knows of), by {@link itemId}, without the version attribute. */
  readonly items: ReadonlyMap<string, Item>;
  /** Records a guarded side effect left downstream, by effect key: how many. */
  readonly effectRecords: ReadonlyMap<string, number>;
}

/** The clients the checks read the stores with (no faults, no guard). */
export interface StoreClients {
  readonly document: DynamoDBDocumentClient;
  /** The plain client: reads values the document client cannot unmarshall. */
  readonly dynamoDb: DynamoDBClient;
}

/** A home item of inbox marks (`inboxHome`). */
export interface WorkloadHomeItem {
  /** A comparable id: `<logical table>|<canonical key>`. */
  readonly id: string;
  /** Its logical table. */
  readonly table: string;
  /** Its key in DynamoDB's typed form. */
  readonly key: Readonly<Record<string, AttributeValue>>;
}

/** Where a consumer with an inbox home (`inboxHome`) keeps its events' inbox marks. */
export interface WorkloadInboxHome {
  /** The marks' map attribute. */
  readonly attribute: string;
  /** The engine's version attribute (a stub holds it). */
  readonly versionAttribute: string;
  /** Every home item. */
  readonly homes: readonly WorkloadHomeItem[];
  /** The home item of an idempotency key's events. */
  homeOf(key: string): WorkloadHomeItem | undefined;
}

import { DEFAULT_HOME_ATTRIBUTE } from './generated/spec.js';

export { DEFAULT_HOME_ATTRIBUTE };

/** The stub flag of a home item whose marks are in `attribute` (`true` on a stub: an item absent to `decide`). */
export function stubAttributeOf(attribute: string): string {
  return `${attribute}Stub`;
}

/**
 * Where a consumer with an inbox home (`options.inboxHome`) keeps the marks of these messages'
 * events: each idempotency key's home item, from its event (`undefined` without `inboxHome`).
 */
export function inboxHomeOfOptions(
  options: IdempotentConsumerOptions<never>,
  tables: Readonly<Record<string, TableDefinition>>,
  messages: readonly InputMessage[],
): WorkloadInboxHome | undefined {
  const home = options.inboxHome as { table: string; key: (event: unknown) => Readonly<Item>; attribute?: string } | undefined;
  if (home === undefined) return undefined;
  const homes = new Map<string, WorkloadHomeItem>();
  const byKey = new Map<string, WorkloadHomeItem>();
  for (const message of messages) {
    if (message.key === undefined || message.role === MessageRole.Poison || byKey.has(message.key)) continue;
    const key = home.key(parseEvent(options, message.body));
    const id = itemId(tables, home.table, key);
    const ref = homes.get(id) ?? { id, table: home.table, key: marshall(key) as Record<string, AttributeValue> };
    homes.set(id, ref);
    byKey.set(message.key, ref);
  }
  return {
    attribute: home.attribute ?? DEFAULT_HOME_ATTRIBUTE,
    versionAttribute: options.versionAttribute ?? '_version',
    homes: [...homes.values()],
    homeOf: (key) => byKey.get(key),
  };
}

/**
 * A stored item of a consumer with an inbox home as `decide` and the model see it: without the
 * marks and the stub flag; a stub is absent (`undefined`).
 */
export function withoutMarks(item: Readonly<Item>, attribute: string): Item | undefined {
  const { [attribute]: _marks, [stubAttributeOf(attribute)]: stub, ...rest } = item;
  return stub === true ? undefined : rest;
}

/** Which consumer a workload drives: an example, or one drawn from the grammar. */
export type WorkloadConsumer = ProveConsumer | 'generated';

/** One consumer under test with its input. */
export interface Workload {
  readonly consumer: WorkloadConsumer;
  /** The consumer's options (the example's, with its side effects counted downstream). */
  readonly options: IdempotentConsumerOptions<never>;
  readonly tables: Readonly<Record<string, TableDefinition>>;
  /** Set-up messages first, then the run's in the order the producer emits each group. */
  readonly messages: readonly InputMessage[];
  /** Runs of each side effect, by effect key (the downstream's view of the sends). */
  readonly effectRuns: Map<string, number>;
  /**
   * What must come of the messages on this source (see {@link inOrderModel}).
   *
   * @param forced - idempotency keys that ran out of attempts by faults on a source that keeps
   *   their key's order, and are not redriven (see {@link Workload.redrivable}): the model takes
   *   them as dead-lettered where they stand
   */
  model(source: ProveSource, forced?: ReadonlySet<string>): ModelResult;
  /**
   * Whether a `RetriesExhausted` dead letter of this key, which the model applies, is redriven
   * to converge (its successors waited for it). `false` for a key whose successors went on
   * without it (a generated key without a gate, on FIFO or Kafka): the model is run again with it
   * dead-lettered instead.
   */
  redrivable(key: string): boolean;
  /** Reads what is stored of the workload's business items and side-effect records. */
  readStored(clients: StoreClients, tableNames: Readonly<Record<string, string>>): Promise<StoredBusinessState>;
  /**
   * What in the stored items shows an event applied twice (an order history entry twice, a
   * ledger that does not add up, a stock movement counted twice), given the keys the inbox says
   * were applied. One sentence per problem.
   */
  appliedTwice(stored: StoredBusinessState, appliedKeys: ReadonlySet<string>): string[];
  /**
   * Error types (and dead-letter reasons) that name a failure of one message's own event: a
   * write DynamoDB refuses, a decision the document client cannot write, the consumer's own
   * errors. A message's attempt counted for one of these that is not its own breaks `own-attempts`.
   */
  readonly attributableErrors: ReadonlySet<string>;
  /** The error types and reasons the messages of this idempotency key may fail with themselves. */
  ownErrors(key: string): ReadonlySet<string>;
  /** Outbox positions the checks read per key (at least the most messages one event sends). */
  readonly outboxPositions: number;
  /**
   * Where the consumer keeps its events' inbox marks, when it has an inbox home (`inboxHome`): an
   * applied event's record is then a mark on its home item, not an inbox row. Absent: inbox rows.
   */
  readonly inboxHome?: WorkloadInboxHome;
  /**
   * Why a deploy that switches `inboxHome` cannot run on this workload (its in-order model gives
   * other verdicts or items without `inboxHome`: an event at the limit of a transaction's actions
   * with its home item), or `undefined` when it can. Absent: no switch.
   */
  homeSwitchBlocker?(source: ProveSource): string | undefined;
}

/** Error types that are always some message's own doing. */
export const ATTRIBUTABLE_ERRORS: readonly string[] = [FailureReason.InvalidWrite, 'ConsumerDefinitionError'];

/**
 * The parts of a workload that the in-order model gives an example consumer: the same verdicts
 * on every source, every exhausted event redriven, no error of the example's attributable to
 * another message.
 */
export function inOrderParts(
  options: IdempotentConsumerOptions<never>,
  messages: readonly InputMessage[],
): Pick<Workload, 'model' | 'redrivable' | 'attributableErrors' | 'ownErrors' | 'outboxPositions'> {
  let model: ModelResult | undefined;
  const get = () => (model ??= inOrderModel(options, messages));
  return {
    model: () => get(),
    redrivable: () => true,
    attributableErrors: new Set(ATTRIBUTABLE_ERRORS),
    ownErrors: (key) => {
      const outcome = get().outcomes.get(key);
      return new Set(outcome?.kind === 'dead-lettered' ? [outcome.reason] : []);
    },
    outboxPositions: 3,
  };
}

/** The id of a business item: `<logical table>|<canonical JSON of its key attributes>`. */
export function itemId(tables: Readonly<Record<string, TableDefinition>>, table: string, item: Readonly<Item>): string {
  const definition = tables[table];
  if (definition === undefined) throw new Error(`unknown table ${table}`);
  const key: Record<string, unknown> = { [definition.partitionKey]: item[definition.partitionKey] };
  if (definition.sortKey !== undefined) key[definition.sortKey] = item[definition.sortKey];
  return `${table}|${canonicalJson(key)}`;
}

/** An item without the engine's version attribute. */
export function withoutVersion(item: Readonly<Item>, versionAttribute: string): Item {
  const { [versionAttribute]: _version, ...rest } = item;
  return rest;
}

/** Parses a body as the consumer does (`parse`, or the Standard Schema). @throws what they throw */
export function parseEvent(options: IdempotentConsumerOptions<never>, body: string): unknown {
  const json: unknown = JSON.parse(body);
  if (options.parse !== undefined) return options.parse(json);
  const result = options.schema!['~standard'].validate(json);
  if (result instanceof Promise) throw new Error('the in-order model needs a synchronous schema');
  if (result.issues !== undefined)
    throw new Error(`the model's event fails the schema: ${result.issues.map((issue) => issue.message).join('; ')}`);
  return result.value;
}

/**
 * Applies the workload's events in the order the producer emitted them, with the consumer's own
 * pure functions, on in-memory tables: the result every schedule must end with.
 *
 * Each idempotency key is decided once (its first message). An event whose decision throws a
 * retryable error waits and is tried again after every event that applies; what still waits at
 * the end runs out of attempts (`RetriesExhausted`). A non-retryable error dead-letters it with
 * its reason. Only `Put` and `Delete` writes are modelled (both examples use only those).
 *
 * @throws Error when a valid message does not parse or a decision asks for a write the model cannot apply
 */
export function inOrderModel(options: IdempotentConsumerOptions<never>, messages: readonly InputMessage[]): ModelResult {
  const tables = options.tables ?? {};
  const versionAttribute = options.versionAttribute ?? '_version';
  const items = new Map<string, Item>();
  const outcomes = new Map<string, ExpectedOutcome>();
  const outbox = new Map<string, readonly OutgoingMessage[]>();
  const sideEffects = new Map<string, readonly SideEffectRequest[]>();
  const readKey = (table: string, key: Readonly<Item>) => itemId(tables, table, key);

  const events: { key: string; event: never }[] = [];
  for (const message of messages) {
    if (message.key === undefined || message.role === MessageRole.Poison) continue;
    if (events.some((e) => e.key === message.key)) continue;
    events.push({ key: message.key, event: parseEvent(options, message.body) as never });
  }

  /** `true` applied, `false` waits; a dead letter is recorded. */
  const apply = ({ key, event }: { key: string; event: never }): boolean => {
    const named = new Set((options.read?.(event) ?? []).map((k) => readKey(k.table, k.key)));
    let decision;
    try {
      decision =
        options.decide(event, {
          get: <T extends Item = Item>(table: string, key: Readonly<Item>): T | undefined => {
            const id = readKey(table, key);
            if (!named.has(id)) throw new Error(`decide() read ${id}, which read() did not name`);
            const item = items.get(id);
            return item === undefined ? undefined : (structuredClone(item) as T);
          },
        }) ?? {};
    } catch (error) {
      const verdict = classify(error, options.classifyError);
      if (verdict.retryable) return false;
      outcomes.set(key, { kind: 'dead-lettered', reason: verdict.reason ?? 'Unknown' });
      return true;
    }
    for (const write of decision.writes ?? []) {
      if (write.Put !== undefined) {
        const item = withoutVersion(write.Put.Item as Item, versionAttribute);
        items.set(readKey(write.Put.TableName!, item), item);
      } else if (write.Delete !== undefined) {
        items.delete(readKey(write.Delete.TableName!, write.Delete.Key as Item));
      } else {
        throw new Error('the in-order model applies Put and Delete writes only');
      }
    }
    outcomes.set(key, { kind: 'applied' });
    outbox.set(key, decision.outbox ?? []);
    sideEffects.set(key, decision.sideEffects ?? []);
    return true;
  };

  let waiting: { key: string; event: never }[] = [];
  for (const entry of events) {
    if (!apply(entry)) {
      waiting.push(entry);
      continue;
    }
    for (let progress = true; progress; ) {
      progress = false;
      const still: typeof waiting = [];
      for (const waiter of waiting) {
        if (apply(waiter)) progress = true;
        else still.push(waiter);
      }
      waiting = still;
    }
  }
  for (const { key } of waiting) outcomes.set(key, { kind: 'dead-lettered', reason: FailureReason.RetriesExhausted });
  return { outcomes, items, outbox, sideEffects };
}

/** Base time of the workloads' events. */
export const EVENT_EPOCH = Date.UTC(2026, 0, 1, 12, 0, 0);

/** An ISO 8601 timestamp `minute` minutes after {@link EVENT_EPOCH}. */
export function eventTime(minute: number): string {
  return new Date(EVENT_EPOCH + minute * 60_000).toISOString();
}
