/**
 * Counts what a side of the benchmark asks of DynamoDB and SQS, from the requests themselves: a
 * middleware on each AWS SDK client counts every request by command and bills its DynamoDB
 * capacity units with AWS's rules (`capacity.ts`). Production code is unchanged; the only
 * liberty taken is `ReturnValues: ALL_NEW` on an `UpdateItem` that asked for nothing back (so
 * that the updated item's size is known), and the returned item is removed again before the
 * caller sees the response.
 *
 * Write units depend on the size of the item already stored (a put bills the larger of the old
 * and the new item), so the meter keeps the size of every item written or read through a metered
 * client ({@link ItemSizes}). The benchmark's tables start empty and every request goes through a
 * metered client, so "unknown" means "absent".
 *
 * @module
 */
import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { marshall } from '@aws-sdk/util-dynamodb';
import { itemSizeBytes, READ_UNIT_BYTES, type ReadMode, readUnits, writeUnits } from './capacity.js';
import type { RequestInterval } from './roundTrips.js';

type AttributeMap = Record<string, AttributeValue>;

/** The sizes of the items stored in the benchmark's tables, as far as the metered requests show them. */
export class ItemSizes {
  readonly #keys = new Map<string, readonly string[]>();
  readonly #sizes = new Map<string, number>();

  /**
   * Declares a table's key attributes (partition key, then sort key).
   * @throws Error when the table is declared twice with other keys
   */
  registerTable(tableName: string, keyAttributes: readonly string[]): void {
    const known = this.#keys.get(tableName);
    if (known !== undefined && known.join('\u0000') !== keyAttributes.join('\u0000'))
      throw new Error(`table ${tableName} is declared with two key schemas`);
    this.#keys.set(tableName, keyAttributes);
  }

  /** The stored size of the item with this key (or the item itself), in bytes; 0 when absent or unknown. */
  get(tableName: string, keyOrItem: AttributeMap): number {
    return this.#sizes.get(this.#id(tableName, keyOrItem)) ?? 0;
  }

  /** Records the stored item's size, or its absence (`undefined`). */
  set(tableName: string, keyOrItem: AttributeMap, size: number | undefined): void {
    const id = this.#id(tableName, keyOrItem);
    if (size === undefined) this.#sizes.delete(id);
    else this.#sizes.set(id, size);
  }

  #id(tableName: string, keyOrItem: AttributeMap): string {
    const keys = this.#keys.get(tableName);
    if (keys === undefined) throw new Error(`the meter does not know the key schema of table ${tableName}`);
    return JSON.stringify([tableName, ...keys.map((name) => keyValue(keyOrItem[name]))]);
  }
}

function keyValue(value: AttributeValue | undefined): string {
  if (value?.S !== undefined) return `S${value.S}`;
  if (value?.N !== undefined) return `N${value.N}`;
  if (value?.B !== undefined) return `B${Buffer.from(value.B).toString('base64')}`;
  return '?';
}

/** What one side asked of DynamoDB and SQS during one run. */
export class Tally {
  /** DynamoDB requests by operation (`TransactWriteItems`, `GetItem`, …). */
  readonly dynamoDb = new Map<string, number>();
  /** SQS requests by operation (`SendMessage`, `ChangeMessageVisibilityBatch`, …). */
  readonly sqs = new Map<string, number>();
  /** Read request units, by AWS's rules. */
  readUnits = 0;
  /** Write request units, by AWS's rules. */
  writeUnits = 0;
  /** `TransactWriteItems` and `TransactGetItems` requests that were cancelled. */
  cancelledTransactions = 0;
  /** Single-item writes refused by their condition. */
  failedConditions = 0;
  /** Milliseconds spent waiting for DynamoDB, summed over the requests (concurrent ones overlap). */
  dynamoDbMs = 0;

  get dynamoDbRequests(): number {
    return sum(this.dynamoDb);
  }

  get sqsRequests(): number {
    return sum(this.sqs);
  }

  /** Adds another tally into this one. */
  add(other: Tally): void {
    for (const [command, n] of other.dynamoDb) increment(this.dynamoDb, command, n);
    for (const [command, n] of other.sqs) increment(this.sqs, command, n);
    this.readUnits += other.readUnits;
    this.writeUnits += other.writeUnits;
    this.cancelledTransactions += other.cancelledTransactions;
    this.failedConditions += other.failedConditions;
    this.dynamoDbMs += other.dynamoDbMs;
  }
}

function sum(map: ReadonlyMap<string, number>): number {
  let total = 0;
  for (const n of map.values()) total += n;
  return total;
}

function increment(map: Map<string, number>, key: string, n = 1): void {
  map.set(key, (map.get(key) ?? 0) + n);
}

/** The AttributeValue type keys: an object holding exactly one of them is a marshalled value. */
const VALUE_TYPES = new Set(['S', 'N', 'B', 'SS', 'NS', 'BS', 'M', 'L', 'NULL', 'BOOL']);

/**
 * An item in marshalled form. The document client's responses come back unmarshalled (its
 * middleware converts them before the meter sees them), the low-level client's do not; an item
 * whose every value is a one-key object of an AttributeValue type is taken as marshalled.
 */
function asAttributeMap(item: unknown): AttributeMap | undefined {
  if (item === null || typeof item !== 'object') return undefined;
  const values = Object.values(item as Record<string, unknown>);
  const marshalled = values.every(
    (value) =>
      value !== null &&
      typeof value === 'object' &&
      !Array.isArray(value) &&
      Object.keys(value).length === 1 &&
      VALUE_TYPES.has(Object.keys(value)[0]!),
  );
  if (marshalled) return item as AttributeMap;
  return marshall(item as Record<string, unknown>, { removeUndefinedValues: true, convertClassInstanceToMap: true });
}

function sizeOf(item: unknown): number | undefined {
  const map = asAttributeMap(item);
  return map === undefined ? undefined : itemSizeBytes(map);
}

interface TransactWriteAction {
  readonly Put?: { TableName: string; Item: AttributeMap };
  readonly Update?: { TableName: string; Key: AttributeMap };
  readonly Delete?: { TableName: string; Key: AttributeMap };
  readonly ConditionCheck?: { TableName: string; Key: AttributeMap };
}

interface CancellationReason {
  readonly Code?: string;
  readonly Item?: AttributeMap;
}

/** A middleware's view of a request and its outcome. */
type Input = Record<string, unknown>;
type Output = Record<string, unknown> | undefined;

/**
 * Counts and bills the requests of the clients it instruments into {@link RequestMeter.tally},
 * which the benchmark replaces before each run.
 */
export class RequestMeter {
  /** Where requests are counted now. */
  tally = new Tally();
  /** When `false`, requests pass uncounted and no item size is kept (for the heap measurement). */
  enabled = true;
  /**
   * Where each request's start and end are recorded, when set: the benchmark sets a new array
   * before each invocation and reads the invocation's round trips from it (`roundTrips.ts`).
   */
  intervals: RequestInterval[] | undefined;

  constructor(readonly sizes: ItemSizes) {}

  /**
   * Records when each request of `client` is sent and when its response (or error) reaches the
   * caller: the outermost middleware (first of the `initialize` step), so the interval holds
   * everything the caller waits for, the SDK's retries included.
   */
  #recordIntervals(client: DynamoDBClient | SQSClient, service: 'dynamodb' | 'sqs'): void {
    (client as DynamoDBClient).middlewareStack.add(
      (next, context) => async (args) => {
        const intervals = this.enabled ? this.intervals : undefined;
        if (intervals === undefined) return next(args);
        const operation = (context.commandName ?? 'Unknown').replace(/Command$/, '');
        const startMs = performance.now();
        try {
          return await next(args);
        } finally {
          intervals.push({ service, operation, startMs, endMs: performance.now() });
        }
      },
      { step: 'initialize', priority: 'high', name: 'benchmarkRoundTrips' },
    );
  }

  /** Counts and bills every request of `client` from now on. */
  instrumentDynamoDb(client: DynamoDBClient): void {
    this.#recordIntervals(client, 'dynamodb');
    // Before serialization: ask an UpdateItem for the updated item, and hide it from the caller again.
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as Input;
        const patch =
          this.enabled &&
          context.commandName === 'UpdateItemCommand' &&
          (input.ReturnValues === undefined || input.ReturnValues === 'NONE');
        if (!patch) return next(args);
        const result = await next({ ...args, input: { ...input, ReturnValues: 'ALL_NEW' } });
        delete (result.output as unknown as Record<string, unknown>).Attributes;
        return result;
      },
      { step: 'initialize', priority: 'low', name: 'benchmarkReturnValues' },
    );
    // After serialization (the input is marshalled), outside the SDK's retries: one count per call.
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (!this.enabled) return next(args);
        const command = (context.commandName ?? 'Unknown').replace(/Command$/, '');
        const tally = this.tally;
        increment(tally.dynamoDb, command);
        const started = performance.now();
        try {
          const result = await next(args);
          tally.dynamoDbMs += performance.now() - started;
          this.#bill(tally, command, args.input as Input, result.output as unknown as Output, undefined);
          return result;
        } catch (error) {
          tally.dynamoDbMs += performance.now() - started;
          this.#bill(tally, command, args.input as Input, undefined, error);
          throw error;
        }
      },
      { step: 'build', priority: 'high', name: 'benchmarkDynamoDbMeter' },
    );
  }

  /** Counts every request of `client` from now on. */
  instrumentSqs(client: SQSClient): void {
    this.#recordIntervals(client, 'sqs');
    client.middlewareStack.add(
      (next, context) => (args) => {
        if (this.enabled) increment(this.tally.sqs, (context.commandName ?? 'Unknown').replace(/Command$/, ''));
        return next(args);
      },
      { step: 'initialize', name: 'benchmarkSqsMeter' },
    );
  }

  #bill(tally: Tally, command: string, input: Input, output: Output, error: unknown): void {
    const sizes = this.sizes;
    const errorName = error instanceof Error ? error.name : undefined;
    const conditionFailed = errorName === 'ConditionalCheckFailedException';
    const cancelled = errorName === 'TransactionCanceledException';
    if (error !== undefined && !conditionFailed && !cancelled) return; // refused before any work: nothing is billed
    if (conditionFailed) tally.failedConditions += 1;
    if (cancelled) tally.cancelledTransactions += 1;
    const oldItem = conditionFailed ? ((error as { Item?: AttributeMap }).Item ?? undefined) : undefined;

    switch (command) {
      case 'GetItem': {
        const table = input.TableName as string;
        const size = sizeOf(output?.Item) ?? 0;
        tally.readUnits += readUnits(size, input.ConsistentRead === true ? 'strong' : 'eventual');
        sizes.set(table, input.Key as AttributeMap, output?.Item === undefined ? undefined : size);
        return;
      }
      case 'BatchGetItem': {
        const requests = (input.RequestItems ?? {}) as Record<string, { Keys: AttributeMap[]; ConsistentRead?: boolean }>;
        const responses = (output?.Responses ?? {}) as Record<string, unknown[]>;
        const unprocessed = (output?.UnprocessedKeys ?? {}) as Record<string, { Keys?: AttributeMap[] }>;
        for (const [table, request] of Object.entries(requests)) {
          const skipped = new Set((unprocessed[table]?.Keys ?? []).map((key) => JSON.stringify(key)));
          const read = request.Keys.filter((key) => !skipped.has(JSON.stringify(key)));
          // A key the response does not hold is absent; then the items it holds have their sizes.
          for (const key of read) sizes.set(table, key, undefined);
          for (const item of responses[table] ?? []) {
            const map = asAttributeMap(item)!;
            sizes.set(table, map, itemSizeBytes(map));
          }
          for (const key of read)
            tally.readUnits += readUnits(sizes.get(table, key), request.ConsistentRead === true ? 'strong' : 'eventual');
        }
        return;
      }
      case 'TransactGetItems': {
        const gets = (input.TransactItems ?? []) as { Get: { TableName: string; Key: AttributeMap } }[];
        const responses = (output?.Responses ?? []) as ({ Item?: unknown } | undefined)[];
        gets.forEach(({ Get }, i) => {
          const item = cancelled ? undefined : responses[i]?.Item;
          const size = cancelled ? sizes.get(Get.TableName, Get.Key) : (sizeOf(item) ?? 0);
          tally.readUnits += readUnits(size, 'transactional');
          if (!cancelled) sizes.set(Get.TableName, Get.Key, item === undefined ? undefined : size);
        });
        return;
      }
      case 'Query':
      case 'Scan': {
        const mode: ReadMode = input.ConsistentRead === true ? 'strong' : 'eventual';
        const items = (output?.Items ?? []) as unknown[];
        const total = items.reduce<number>((sum, item) => sum + (sizeOf(item) ?? 0), 0);
        // All items of the response are one read: their total size, rounded up to 4 KB (items a filter dropped are not seen here).
        tally.readUnits += readUnits(Math.max(1, Math.ceil(total / READ_UNIT_BYTES)) * READ_UNIT_BYTES, mode);
        return;
      }
      case 'PutItem': {
        const table = input.TableName as string;
        const item = input.Item as AttributeMap;
        const stored = oldItem !== undefined ? itemSizeBytes(oldItem) : sizes.get(table, item);
        if (conditionFailed) {
          tally.writeUnits += writeUnits(stored, false);
          if (oldItem !== undefined) sizes.set(table, item, stored);
          return;
        }
        const size = itemSizeBytes(item);
        tally.writeUnits += writeUnits(Math.max(stored, size), false);
        sizes.set(table, item, size);
        return;
      }
      case 'UpdateItem': {
        const table = input.TableName as string;
        const key = input.Key as AttributeMap;
        const stored = oldItem !== undefined ? itemSizeBytes(oldItem) : sizes.get(table, key);
        if (conditionFailed) {
          tally.writeUnits += writeUnits(stored, false);
          return;
        }
        // ALL_NEW was asked for by the meter (or by the caller); other ReturnValues leave the new size unknown: the old one stands in.
        const after =
          input.ReturnValues === 'ALL_NEW' || input.ReturnValues === undefined || input.ReturnValues === 'NONE'
            ? sizeOf(output?.Attributes)
            : undefined;
        tally.writeUnits += writeUnits(Math.max(stored, after ?? 0), false);
        sizes.set(table, key, after ?? stored);
        return;
      }
      case 'DeleteItem': {
        const table = input.TableName as string;
        const key = input.Key as AttributeMap;
        const stored = oldItem !== undefined ? itemSizeBytes(oldItem) : sizes.get(table, key);
        tally.writeUnits += writeUnits(stored, false);
        if (!conditionFailed) sizes.set(table, key, undefined);
        return;
      }
      case 'BatchWriteItem': {
        const requests = (input.RequestItems ?? {}) as Record<
          string,
          { PutRequest?: { Item: AttributeMap }; DeleteRequest?: { Key: AttributeMap } }[]
        >;
        const unprocessed = (output?.UnprocessedItems ?? {}) as Record<string, unknown[]>;
        for (const [table, writes] of Object.entries(requests)) {
          const skipped = new Set((unprocessed[table] ?? []).map((w) => JSON.stringify(w)));
          for (const write of writes) {
            if (skipped.has(JSON.stringify(write))) continue;
            if (write.PutRequest !== undefined) {
              const size = itemSizeBytes(write.PutRequest.Item);
              tally.writeUnits += writeUnits(Math.max(size, sizes.get(table, write.PutRequest.Item)), false);
              sizes.set(table, write.PutRequest.Item, size);
            } else if (write.DeleteRequest !== undefined) {
              tally.writeUnits += writeUnits(sizes.get(table, write.DeleteRequest.Key), false);
              sizes.set(table, write.DeleteRequest.Key, undefined);
            }
          }
        }
        return;
      }
      case 'TransactWriteItems': {
        const actions = (input.TransactItems ?? []) as TransactWriteAction[];
        const reasons = cancelled
          ? (((error as { CancellationReasons?: CancellationReason[] }).CancellationReasons ?? []) as CancellationReason[])
          : [];
        actions.forEach((action, i) => {
          if (action.Put !== undefined) {
            const { TableName, Item } = action.Put;
            const size = itemSizeBytes(Item);
            tally.writeUnits += writeUnits(Math.max(size, sizes.get(TableName, Item)), true);
            if (!cancelled) sizes.set(TableName, Item, size);
          } else {
            const target = (action.Update ?? action.Delete ?? action.ConditionCheck)!;
            // An update's new size is not returned by a transaction: the stored size stands in for it.
            tally.writeUnits += writeUnits(sizes.get(target.TableName, target.Key), true);
            if (!cancelled && action.Delete !== undefined) sizes.set(target.TableName, target.Key, undefined);
          }
          // A failed condition returned the stored item (ALL_OLD): its size is now known.
          const returned = reasons[i]?.Item;
          if (returned !== undefined) {
            const target = (action.Put ?? action.Update ?? action.Delete ?? action.ConditionCheck)!;
            sizes.set(
              target.TableName,
              'Item' in target ? (target.Item as AttributeMap) : (target as { Key: AttributeMap }).Key,
              itemSizeBytes(returned),
            );
          }
        });
        return;
      }
      default:
        return; // table management and other control-plane calls: not billed per request
    }
  }
}
