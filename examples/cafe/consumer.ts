/**
 * The café's consumer: its events, what a decision reads, the decision itself, and the customer
 * notification — the pure pieces `createIdempotentConsumer` takes. `handler.ts` builds the Lambda
 * handler from them; the tests build their own variants.
 *
 * Items of the `orders` table (partition key `orderId`, sort key `sk`):
 * - the order's state, `sk = "ORDER"`: `status`, `history`, `pointsAwarded`;
 * - one points-ledger entry per rule, `sk = "LEDGER#<rule>"`: `rule`, `points`, `eventId`;
 * - the notifications sent, `sk = "NOTIFICATION#<effect key>"` (one per effect key, written
 *   conditionally: a repeated send is absorbed).
 *
 * @module
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { IdempotentConsumerOptions, Item, SideEffectContext, Write } from 'idempotent-consumer';
import { type OrderEvent, OrderEventType, parseOrderEvent } from './domain/events.js';
import { decideOrder, type LedgerEntry, type Order, type PaymentReceived, PointsRule } from './domain/order.js';
import { type CafeTable, cafeTables } from './settings.js';

/** Sort key of an order's state item. */
export const ORDER_SK = 'ORDER';
/** Sort key prefix of the points ledger entries: `LEDGER#<rule>`. */
export const LEDGER_SK_PREFIX = 'LEDGER#';
/** Sort key prefix of a sent notification: `NOTIFICATION#<effect key>`. */
export const NOTIFICATION_SK_PREFIX = 'NOTIFICATION#';
/** The name of the inline side effect that notifies the customer. */
export const NOTIFY_CUSTOMER = 'notifyCustomer';

const orderKey = (orderId: string) => ({ orderId, sk: ORDER_SK });
const ledgerKey = (orderId: string, rule: PointsRule) => ({ orderId, sk: `${LEDGER_SK_PREFIX}${rule}` });

/**
 * Sends the "payment received" notification. The café records it as an item of its own, written
 * only if no notification with this effect key exists, so a repeated send (a crash between the
 * send and Powertools' completion record) is absorbed: exactly one notification per payment.
 * Replace it with SES, SNS or an HTTP call that passes `effectKey` as its idempotency key.
 */
export async function notifyCustomer(payment: PaymentReceived, context: SideEffectContext<CafeTable>): Promise<void> {
  try {
    await context.documentClient.send(
      new PutCommand({
        TableName: context.tableName('orders'),
        Item: {
          orderId: payment.orderId,
          sk: `${NOTIFICATION_SK_PREFIX}${context.effectKey}`,
          kind: 'PaymentReceived',
          eventId: payment.eventId,
          points: payment.points,
          sentAt: new Date().toISOString(),
        },
        ConditionExpression: 'attribute_not_exists(sk)',
      }),
    );
  } catch (error) {
    if (!(error instanceof Error && error.name === 'ConditionalCheckFailedException')) throw error;
  }
}

/** The order as stored, or `undefined`. */
function toOrder(item: Item | undefined): Order | undefined {
  if (item === undefined) return undefined;
  return {
    orderId: String(item.orderId),
    status: item.status as Order['status'],
    history: item.history as Order['history'],
    pointsAwarded: Number(item.pointsAwarded),
  };
}

function orderPut(order: Order): Write<CafeTable> {
  return {
    Put: {
      TableName: 'orders',
      Item: { ...orderKey(order.orderId), status: order.status, history: order.history, pointsAwarded: order.pointsAwarded },
    },
  };
}

function ledgerPut(entry: LedgerEntry): Write<CafeTable> {
  return {
    Put: {
      TableName: 'orders',
      Item: { ...ledgerKey(entry.orderId, entry.rule), rule: entry.rule, points: entry.points, eventId: entry.eventId },
    },
  };
}

/** The café's inline side effects, by name: a decision's request for one is checked against its input type. */
export const cafeSideEffects = { [NOTIFY_CUSTOMER]: notifyCustomer };

/** The café consumer's options. Its table names and side effects are typed: a misspelt name, or a wrong input, does not compile. */
export const cafeConsumerOptions: IdempotentConsumerOptions<OrderEvent, CafeTable, typeof cafeSideEffects> = {
  parse: parseOrderEvent,
  idempotencyKey: 'eventId',
  orderingKey: 'orderId',
  logFields: (event) => ({ type: event.type, orderId: event.orderId }),
  tables: cafeTables,
  // Each event's inbox mark lives on its order (docs/inbox-home.md): an OrderPlaced commits one item.
  inboxHome: { table: 'orders', key: (event) => orderKey(event.orderId) },
  read: (event) =>
    event.type === OrderEventType.OrderPaid
      ? [
          { table: 'orders', key: orderKey(event.orderId) },
          { table: 'orders', key: ledgerKey(event.orderId, PointsRule.Purchase) },
        ]
      : [{ table: 'orders', key: orderKey(event.orderId) }],
  decide: (event, state) => {
    const order = toOrder(state.get('orders', orderKey(event.orderId)));
    const rules = new Set<PointsRule>();
    if (event.type === OrderEventType.OrderPaid && state.get('orders', ledgerKey(event.orderId, PointsRule.Purchase)) !== undefined)
      rules.add(PointsRule.Purchase);
    const change = decideOrder(order, event, rules);
    const payment = change.paymentReceived;
    return {
      writes: [orderPut(change.next), ...change.ledger.map(ledgerPut)],
      ...(payment === undefined
        ? {}
        : {
            sideEffects: [{ name: NOTIFY_CUSTOMER, input: payment }],
            outbox: [{ body: { type: 'PaymentReceived', ...payment }, messageGroupId: payment.orderId }],
          }),
    };
  },
  sideEffects: cafeSideEffects,
};
