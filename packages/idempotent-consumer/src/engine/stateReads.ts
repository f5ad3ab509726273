/**
 * The engine's reads of units' inbox rows and items, when what it believes is not enough: a
 * strongly consistent `BatchGetItem` (before a retry or a side effect), or a serializable
 * `TransactGetItems` snapshot (before a verdict that dead-letters a message).
 *
 * @module
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { BatchGetCommand, type DynamoDBDocumentClient, TransactGetCommand } from '@aws-sdk/lib-dynamodb';
import type { RuntimeConfig } from '../config/runtimeConfig.js';
import { inboxKey } from '../inbox/inboxItems.js';
import type { Item, TableDefinition } from '../types.js';
import { describeError } from './describeError.js';
import { itemIdOf } from './itemKeys.js';
import type { Unit } from './Unit.js';
import { printValue } from './values.js';

/** `BatchGetItem` takes at most 100 keys (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchGetItem.html). */
const MAX_BATCH_GET_KEYS = 100;
/** `TransactGetItems` takes at most 100 items (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactGetItems.html). */
const MAX_TRANSACT_GET_ITEMS = 100;
/** Rounds of asking again for the keys `BatchGetItem` left unprocessed. */
const UNPROCESSED_ROUNDS = 4;
/** Tries of a `TransactGetItems` that a concurrent transaction cancelled. */
const SNAPSHOT_TRIES = 3;

/** What the reads need. */
export interface StateReadDeps {
  readonly client: DynamoDBDocumentClient;
  readonly config: Pick<RuntimeConfig, 'inboxTable' | 'consumerName' | 'tables'>;
  readonly tables: Readonly<Record<string, TableDefinition>>;
  readonly sleep: (ms: number) => Promise<void>;
  readonly logger?: Logger;
}

/** The id under which a unit's inbox row is read. */
export function inboxId(unit: Unit): string {
  return `inbox\u0001${unit.idempotencyKey}`;
}

/** What a read found: items by id (`undefined`: absent), and the units it could not read. */
export interface ReadResult {
  readonly found: ReadonlyMap<string, Item | undefined>;
  /** Units whose inbox row or items could not be read (throttled, an error), with the error. */
  readonly unread: ReadonlyMap<Unit, unknown>;
}

interface Wanted {
  readonly tableName: string;
  readonly key: Item;
}

/** The id under which a unit's inbox record is read: its inbox row's, or under `inboxHome` its home item's. */
export function inboxRecordId(unit: Unit): string {
  return unit.home === undefined ? inboxId(unit) : unit.home.id;
}

/**
 * The keys of the units' inbox rows and reads (but those of `inboxOnly`), by id. A unit with a
 * home item (`inboxHome`) has no row to read (but before `inboxHome.rowsUntil`: `checkRow`): its
 * mark is on its home item, one of its reads.
 */
function wantedKeys(units: readonly Unit[], config: StateReadDeps['config'], inboxOnly?: ReadonlySet<Unit>): Map<string, Wanted> {
  const wanted = new Map<string, Wanted>();
  for (const unit of units) {
    if (unit.home === undefined || unit.checkRow === true)
      wanted.set(inboxId(unit), { tableName: config.inboxTable, key: inboxKey(config.consumerName, unit.idempotencyKey) });
    if (unit.home !== undefined) wanted.set(unit.home.id, { tableName: unit.home.tableName, key: unit.home.key });
    if (inboxOnly?.has(unit) === true) continue;
    for (const read of unit.reads) wanted.set(read.id, { tableName: read.tableName, key: read.key });
  }
  return wanted;
}

/**
 * Reads the units' inbox rows and reads with strongly consistent `BatchGetItem`s (up to 100 keys
 * each, in parallel; keys left unprocessed asked again with a backoff; a unit left unread is
 * reported). An item returned is matched to its id by its key, whatever the form of its key values.
 *
 * @param options.inboxOnly - units of `units` whose inbox row alone is read (1 read unit each), not their items
 */
export async function readConsistently(
  units: readonly Unit[],
  deps: StateReadDeps,
  options: { readonly inboxOnly?: ReadonlySet<Unit> } = {},
): Promise<ReadResult> {
  const { client, config, tables, logger } = deps;
  const wanted = wantedKeys(units, config, options.inboxOnly);
  const logicalOf = new Map(Object.entries(config.tables).map(([logical, physical]) => [physical, logical]));
  const idOf = (tableName: string, item: Item): string | undefined => {
    if (tableName === config.inboxTable) return typeof item.idempotencyKey === 'string' ? `inbox\u0001${item.idempotencyKey}` : undefined;
    const logical = logicalOf.get(tableName);
    const definition = logical === undefined ? undefined : tables[logical];
    return logical === undefined || definition === undefined ? undefined : itemIdOf(logical, definition, item);
  };
  const idByKey = new Map([...wanted].map(([id, { tableName, key }]) => [`${tableName}\u0000${printValue(key)}`, id]));
  const found = new Map<string, Item | undefined>();
  const failed = new Map<string, unknown>();
  const ids = [...wanted.keys()];
  const chunks = Array.from({ length: Math.ceil(ids.length / MAX_BATCH_GET_KEYS) }, (_, i) =>
    ids.slice(i * MAX_BATCH_GET_KEYS, (i + 1) * MAX_BATCH_GET_KEYS),
  );
  await Promise.all(
    chunks.map(async (chunk) => {
      let pending = chunk;
      for (let round = 0; round < UNPROCESSED_ROUNDS && pending.length > 0; round += 1) {
        if (round > 0) await deps.sleep(20 * 2 ** round + Math.random() * 40);
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
          for (const id of pending) failed.set(id, error);
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
            const id = idByKey.get(`${tableName}\u0000${printValue(key)}`);
            if (id !== undefined) unprocessed.add(id);
          }
        }
        for (const id of pending) if (!answered.has(id) && !unprocessed.has(id)) found.set(id, undefined);
        pending = pending.filter((id) => unprocessed.has(id));
      }
      for (const id of pending) failed.set(id, new Error('DynamoDB left its key unprocessed (throttled)'));
    }),
  );
  const unread = new Map<Unit, unknown>();
  for (const unit of units) {
    const error =
      failed.get(inboxRecordId(unit)) ??
      (unit.checkRow === true ? failed.get(inboxId(unit)) : undefined) ??
      (options.inboxOnly?.has(unit) === true ? undefined : unit.reads.map((read) => failed.get(read.id)).find((e) => e !== undefined));
    if (error !== undefined) unread.set(unit, error);
  }
  return { found, unread };
}

/**
 * Takes serializable snapshots (`TransactGetItems`) of the units' inbox rows and reads, in chunks
 * of at most 100 distinct items with each unit's items in one chunk; a chunk a concurrent
 * transaction cancels is read again (three tries).
 */
export async function readSnapshot(units: readonly Unit[], deps: StateReadDeps): Promise<ReadResult> {
  const { client, config, logger } = deps;
  const chunks: { units: Unit[]; keys: Map<string, Wanted> }[] = [];
  for (const unit of units) {
    const keys = wantedKeys([unit], config);
    let chunk = chunks.at(-1);
    if (chunk === undefined || new Set([...chunk.keys.keys(), ...keys.keys()]).size > MAX_TRANSACT_GET_ITEMS) {
      chunk = { units: [], keys: new Map() };
      chunks.push(chunk);
    }
    chunk.units.push(unit);
    for (const [id, key] of keys) chunk.keys.set(id, key);
  }
  const found = new Map<string, Item | undefined>();
  const unread = new Map<Unit, unknown>();
  await Promise.all(
    chunks.map(async (chunk) => {
      const ids = [...chunk.keys.keys()];
      let lastError: unknown;
      for (let attempt = 0; attempt < SNAPSHOT_TRIES; attempt += 1) {
        try {
          const output = await client.send(
            new TransactGetCommand({
              TransactItems: ids.map((id) => ({ Get: { TableName: chunk.keys.get(id)!.tableName, Key: chunk.keys.get(id)!.key } })),
            }),
          );
          ids.forEach((id, i) => found.set(id, output.Responses?.[i]?.Item as Item | undefined));
          return;
        } catch (error) {
          lastError = error;
          if (!(error instanceof Error && error.name === 'TransactionCanceledException')) break;
          await deps.sleep(20 + Math.random() * 80);
        }
      }
      logger?.warn('could not read a consistent snapshot; the messages will be retried', { error: describeError(lastError) });
      for (const unit of chunk.units) unread.set(unit, lastError);
    }),
  );
  return { found, unread };
}
