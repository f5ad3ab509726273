import type { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, type DynamoDBDocumentClient, GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { tableKeys } from '../../config/settings.js';
import type { Order } from '../domain/order.js';
import { BusinessRuleViolation, TransactionConflict } from '../errors.js';
import type { CommitResult, Inbox, InboxEntry, StoredState, UnitOfWork } from './Inbox.js';

/** Sort key of an order's state item in the business table. */
export const ORDER_STATE_SK = 'ORDER';
/** Sort key prefix of the points ledger entries: `LEDGER#<rule>`. */
export const LEDGER_SK_PREFIX = 'LEDGER#';

/** Options of {@link DynamoDBInbox}. */
export interface DynamoDBInboxOptions {
  readonly client: DynamoDBDocumentClient;
  /** The inbox table (partition key `pk`, TTL attribute `expiresAt`). */
  readonly inboxTable: string;
  /** The business table (partition key `orderId`, sort key `sk`). */
  readonly ordersTable: string;
  /** This consumer's name: the inbox key is `<consumerName>#<idempotency key>`. */
  readonly consumerName: string;
  /** How long an inbox row lives, in seconds, before DynamoDB's TTL deletes it. */
  readonly ttlSeconds: number;
  /** The clock. @default () => new Date() */
  readonly now?: () => Date;
}

/**
 * The DynamoDB adapter of the {@link Inbox} port.
 *
 * One message's commit is one `TransactWriteItems`:
 * 1. `Put` the inbox row with `attribute_not_exists(pk)` and
 *    `ReturnValuesOnConditionCheckFailure: ALL_OLD`, so a duplicate is recognised, with the
 *    stored payload hash, without a second read;
 * 2. `Put` the order's state item on the condition that its `version` is still the one read
 *    (or that it does not exist, for `OrderPlaced`): optimistic concurrency;
 * 3. `Put` each new ledger entry with `attribute_not_exists`: one entry per (order, rule).
 *
 * The cancellation reasons of a cancelled transaction are in request order, which says which
 * of these failed (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html).
 */
export class DynamoDBInbox implements Inbox {
  readonly #options: DynamoDBInboxOptions;
  readonly #now: () => Date;
  /** Prefetched items by table key; `null` = known not to exist. Each serves one read. */
  readonly #prefetched = new Map<string, Record<string, unknown> | null>();

  constructor(options: DynamoDBInboxOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => new Date());
  }

  /** The inbox table key of an idempotency key. */
  inboxKey(idempotencyKey: string): Record<string, string> {
    return { [tableKeys.inbox.partitionKey]: `${this.#options.consumerName}#${idempotencyKey}` };
  }

  async read(idempotencyKey: string, orderId: string): Promise<StoredState> {
    const { client, inboxTable, ordersTable } = this.#options;
    const get = (table: string, key: Record<string, string>) => {
      const cacheKey = `${table}|${JSON.stringify(key)}`;
      if (this.#prefetched.has(cacheKey)) {
        const item = this.#prefetched.get(cacheKey);
        this.#prefetched.delete(cacheKey);
        return Promise.resolve(item ?? undefined);
      }
      return client.send(new GetCommand({ TableName: table, Key: key, ConsistentRead: true })).then((output) => output.Item);
    };
    const [inbox, order] = await Promise.all([get(inboxTable, this.inboxKey(idempotencyKey)), get(ordersTable, this.#orderKey(orderId))]);
    return {
      inbox: inbox === undefined ? undefined : toInboxEntry(inbox),
      order: order === undefined ? undefined : toOrder(order),
    };
  }

  /**
   * Reads the inbox rows and order states of a batch with `BatchGetItem` (strongly consistent,
   * 100 keys per request) instead of two `GetItem`s per message: a batch of 10 distinct
   * messages costs one request, a batch of duplicates one request and no write. Keys that
   * DynamoDB leaves unprocessed are simply read later by `read`.
   */
  async prefetch(keys: readonly { readonly idempotencyKey: string; readonly orderId: string }[]): Promise<void> {
    const { client, inboxTable, ordersTable } = this.#options;
    const wanted = new Map<string, { table: string; key: Record<string, string> }>();
    for (const { idempotencyKey, orderId } of keys) {
      for (const [table, key] of [
        [inboxTable, this.inboxKey(idempotencyKey)],
        [ordersTable, this.#orderKey(orderId)],
      ] as const) {
        wanted.set(`${table}|${JSON.stringify(key)}`, { table, key });
      }
    }
    const entries = [...wanted.values()];
    for (let i = 0; i < entries.length; i += 100) {
      const chunk = entries.slice(i, i + 100);
      const requestItems: Record<string, { Keys: Record<string, string>[]; ConsistentRead: true }> = {};
      for (const { table, key } of chunk) (requestItems[table] ??= { Keys: [], ConsistentRead: true }).Keys.push(key);
      const output = await client.send(new BatchGetCommand({ RequestItems: requestItems }));
      const unprocessed = new Set<string>();
      for (const [table, request] of Object.entries(output.UnprocessedKeys ?? {})) {
        for (const key of request.Keys ?? []) unprocessed.add(`${table}|${JSON.stringify(this.#keyOf(table, key))}`);
      }
      const found = new Map<string, Record<string, unknown>>();
      for (const [table, items] of Object.entries(output.Responses ?? {})) {
        for (const item of items) found.set(`${table}|${JSON.stringify(this.#keyOf(table, item))}`, item);
      }
      for (const { table, key } of chunk) {
        const cacheKey = `${table}|${JSON.stringify(key)}`;
        if (!unprocessed.has(cacheKey)) this.#prefetched.set(cacheKey, found.get(cacheKey) ?? null);
      }
    }
  }

  forget(): void {
    this.#prefetched.clear();
  }

  #orderKey(orderId: string): Record<string, string> {
    return { [tableKeys.orders.partitionKey]: orderId, [tableKeys.orders.sortKey]: ORDER_STATE_SK };
  }

  /** The key attributes of an item of `table`, in the order the cache keys use. */
  #keyOf(table: string, item: Record<string, unknown>): Record<string, string> {
    if (table === this.#options.inboxTable) return { [tableKeys.inbox.partitionKey]: String(item[tableKeys.inbox.partitionKey]) };
    return { [tableKeys.orders.partitionKey]: String(item[tableKeys.orders.partitionKey]), [tableKeys.orders.sortKey]: String(item[tableKeys.orders.sortKey]) };
  }

  async commit(unit: UnitOfWork): Promise<CommitResult> {
    const { client, inboxTable, ordersTable, consumerName, ttlSeconds } = this.#options;
    const now = this.#now();
    const { decision, entry } = unit;
    const { partitionKey: orderPk, sortKey: orderSk } = tableKeys.orders;
    const order = decision.next;

    const input: TransactWriteCommandInput = {
      TransactItems: [
        {
          Put: {
            TableName: inboxTable,
            Item: {
              ...this.inboxKey(entry.idempotencyKey),
              consumer: consumerName,
              idempotencyKey: entry.idempotencyKey,
              payloadHash: entry.payloadHash,
              messageId: entry.messageId,
              orderId: order.orderId,
              processedAt: now.toISOString(),
              [tableKeys.inbox.ttlAttribute]: Math.floor(now.getTime() / 1000) + ttlSeconds,
            },
            ConditionExpression: 'attribute_not_exists(#pk)',
            ExpressionAttributeNames: { '#pk': tableKeys.inbox.partitionKey },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          },
        },
        {
          Put: {
            TableName: ordersTable,
            Item: {
              [orderPk]: order.orderId,
              [orderSk]: ORDER_STATE_SK,
              status: order.status,
              history: order.history,
              pointsAwarded: order.pointsAwarded,
              version: order.version,
              updatedAt: now.toISOString(),
            },
            ...(decision.expectedVersion === undefined
              ? { ConditionExpression: 'attribute_not_exists(#pk)', ExpressionAttributeNames: { '#pk': orderPk } }
              : {
                  ConditionExpression: '#version = :expected',
                  ExpressionAttributeNames: { '#version': 'version' },
                  ExpressionAttributeValues: { ':expected': decision.expectedVersion },
                }),
          },
        },
        ...decision.ledger.map((ledger) => ({
          Put: {
            TableName: ordersTable,
            Item: {
              [orderPk]: ledger.orderId,
              [orderSk]: `${LEDGER_SK_PREFIX}${ledger.rule}`,
              rule: ledger.rule,
              points: ledger.points,
              eventId: ledger.eventId,
              createdAt: now.toISOString(),
            },
            ConditionExpression: 'attribute_not_exists(#pk)',
            ExpressionAttributeNames: { '#pk': orderPk },
          },
        })),
      ],
    };

    try {
      await client.send(new TransactWriteCommand(input));
      return { status: 'committed' };
    } catch (error) {
      if (!isTransactionCanceled(error)) throw error;
      const reasons = error.CancellationReasons ?? [];
      const [inboxReason, orderReason, ...ledgerReasons] = reasons;
      if (inboxReason?.Code === 'ConditionalCheckFailed' && inboxReason.Item !== undefined) {
        return { status: 'duplicate', existing: toInboxEntry(unmarshall(inboxReason.Item)) };
      }
      if (orderReason?.Code === 'ConditionalCheckFailed') {
        throw new TransactionConflict(
          `order ${order.orderId} changed since it was read (expected version ${decision.expectedVersion ?? 'none'})`,
          { cause: error },
        );
      }
      const ledgerIndex = ledgerReasons.findIndex((reason) => reason.Code === 'ConditionalCheckFailed');
      if (ledgerIndex !== -1) {
        const ledger = decision.ledger[ledgerIndex];
        throw new BusinessRuleViolation(
          `order ${order.orderId} already has a ledger entry for rule ${ledger?.rule}: points are awarded once per order and rule`,
          { cause: error },
        );
      }
      if (reasons.some((reason) => reason.Code === 'TransactionConflict')) {
        throw new TransactionConflict(`a concurrent transaction touched order ${order.orderId}`, { cause: error });
      }
      throw error;
    }
  }
}

/** By name, so that a second copy of the SDK in a bundle cannot defeat an `instanceof`. */
function isTransactionCanceled(error: unknown): error is TransactionCanceledException {
  return error instanceof Error && error.name === 'TransactionCanceledException';
}

function toInboxEntry(item: Record<string, unknown>): InboxEntry {
  return {
    idempotencyKey: String(item.idempotencyKey),
    payloadHash: String(item.payloadHash),
    messageId: String(item.messageId),
    processedAt: String(item.processedAt),
  };
}

function toOrder(item: Record<string, unknown>): Order {
  return {
    orderId: String(item.orderId),
    status: item.status as Order['status'],
    history: item.history as Order['history'],
    pointsAwarded: Number(item.pointsAwarded),
    version: Number(item.version),
  };
}
