/**
 * Units, definitions and plan contexts for the engine's unit tests (no server): a small consumer
 * over two tables, `accounts` (partition key `id`) and `lines` (`id`, sort key `n`).
 *
 * @module
 */
import { classify } from '../../../packages/idempotent-consumer/src/classifier.js';
import { type ConsumerDefinition, defineConsumer } from '../../../packages/idempotent-consumer/src/engine/ConsumerDefinition.js';
import type { Delivery } from '../../../packages/idempotent-consumer/src/engine/Delivery.js';
import { type ResolvedKey, resolveKey } from '../../../packages/idempotent-consumer/src/engine/itemKeys.js';
import type { PlanContext } from '../../../packages/idempotent-consumer/src/engine/planRound.js';
import type { Known, Unit, UnitVerdict } from '../../../packages/idempotent-consumer/src/engine/Unit.js';
import type { Decision, IdempotentConsumerOptions, Item, ItemKey, State } from '../../../packages/idempotent-consumer/src/types.js';

export const tables = { accounts: { partitionKey: 'id' }, lines: { partitionKey: 'id', sortKey: 'n' } } as const;
export const tableNames = { accounts: 'phys-accounts', lines: 'phys-lines' } as const;

/** The event the test consumer decides on. */
export interface TestEvent {
  readonly key: string;
  readonly account: string;
  readonly [field: string]: unknown;
}

/** A definition whose `decide` is the test's. */
export function definitionOf(
  decide: (event: TestEvent, state: State) => Decision | undefined | void,
  options: Partial<IdempotentConsumerOptions<TestEvent>> = {},
): ConsumerDefinition<TestEvent> {
  return defineConsumer<TestEvent>({
    parse: (json) => json as TestEvent,
    idempotencyKey: 'key',
    orderingKey: 'account',
    tables,
    read: (event) => [{ table: 'accounts', key: { id: event.account } }],
    sideEffects: { notify: async () => undefined },
    decide,
    ...options,
  });
}

/** The resolved key of an account. */
export function accountKey(id: string): ResolvedKey {
  return resolveKey(tables, tableNames, 'accounts', { id }, 'read()');
}

/** A delivery of an SQS message. */
export function delivery(messageId: string, options: { scope?: string; redriveOf?: string; receiveCount?: number } = {}): Delivery {
  return {
    messageId,
    body: '{}',
    ...(options.scope === undefined ? {} : { scope: options.scope }),
    attempts: { kind: 'receive-count', receiveCount: options.receiveCount ?? 1, sourceId: `sqs:${messageId}` },
    deadLetter: { source: 'arn:aws:sqs:us-east-1:000000000000:q' },
    ...(options.redriveOf === undefined ? {} : { redriveOf: options.redriveOf }),
  };
}

let next = 0;

/** A pending unit. */
export function unit(
  event: Partial<TestEvent> & { key?: string },
  options: {
    index?: number;
    scope?: string;
    reads?: readonly ItemKey[];
    payloadHash?: string;
    verified?: boolean;
    snapshot?: boolean;
    inboxRead?: boolean;
    redriveOf?: string;
    messageId?: string;
    verdict?: UnitVerdict;
  } = {},
): Unit<TestEvent> {
  const index = options.index ?? next++;
  const full: TestEvent = { key: event.key ?? `k-${index}`, account: event.account ?? 'A', ...event };
  const reads = (options.reads ?? [{ table: 'accounts', key: { id: full.account } }]).map((read) =>
    resolveKey(tables, tableNames, read.table, read.key, 'read()'),
  );
  return {
    ok: true,
    delivery: delivery(options.messageId ?? `m-${index}`, {
      ...(options.scope === undefined ? {} : { scope: options.scope }),
      ...(options.redriveOf === undefined ? {} : { redriveOf: options.redriveOf }),
    }),
    event: full,
    idempotencyKey: full.key,
    orderingKey: full.account,
    payloadHash: options.payloadHash ?? `hash-${full.key}`,
    reads,
    fields: {},
    index,
    verified: options.verified ?? false,
    snapshot: options.snapshot ?? false,
    ...(options.inboxRead === undefined ? {} : { inboxRead: options.inboxRead }),
    losses: 0,
    solo: false,
    verdict: options.verdict,
    settledAt: undefined,
  };
}

/** Units with indexes 0, 1, … in the order given. */
export function batch(...specs: readonly Parameters<typeof unit>[]): Unit<TestEvent>[] {
  return specs.map(([event, options], index) => unit(event, { ...options, index }));
}

/** A plan context whose beliefs come from `items` (by account id; absent otherwise). */
export function planContext(
  definition: ConsumerDefinition<TestEvent>,
  items: Readonly<Record<string, Item>> = {},
  overrides: Partial<PlanContext> = {},
): PlanContext {
  let version = 0;
  return {
    definition: definition as ConsumerDefinition<unknown>,
    tableNames,
    believed: (key): Known => {
      const item = key.table === 'accounts' ? items[String(key.key.id)] : undefined;
      return { exists: item !== undefined, item, verified: false };
    },
    newVersion: () => `v${(version += 1)}`,
    stops: new Map(),
    deferred: new Set(),
    settle: (u, verdict) => {
      if (u.verdict === undefined) u.verdict = verdict;
    },
    fail: (u, error) => {
      const failure = classify(error, definition.classifyError);
      if (u.verdict === undefined) u.verdict = { kind: 'failed', failure };
      return failure;
    },
    ...overrides,
  };
}

/** A `Put` of an account. */
export function putAccount(id: string, fields: Record<string, unknown> = {}) {
  return { Put: { TableName: 'accounts', Item: { id, ...fields } } };
}
