import type { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
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
    const [inbox, order] = await Promise.all([
      client.send(new GetCommand({ TableName: inboxTable, Key: this.inboxKey(idempotencyKey), ConsistentRead: true })),
      client.send(
        new GetCommand({
          TableName: ordersTable,
          Key: { [tableKeys.orders.partitionKey]: orderId, [tableKeys.orders.sortKey]: ORDER_STATE_SK },
          ConsistentRead: true,
        }),
      ),
    ]);
    return {
      inbox: inbox.Item === undefined ? undefined : toInboxEntry(inbox.Item),
      order: order.Item === undefined ? undefined : toOrder(order.Item),
    };
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
