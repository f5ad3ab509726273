/**
 * The café's order state machine: pure, it reads nothing and writes nothing.
 *
 * @module
 */
import { BusinessRuleViolation, PredecessorNotApplied } from 'idempotent-consumer';
import { type OrderEvent, OrderEventType } from './events.js';

/** States of an order: `Created → Paid → Shipped → Delivered`, and `Created|Paid → Cancelled`. */
export const OrderStatus = {
  Created: 'Created',
  Paid: 'Paid',
  Shipped: 'Shipped',
  Delivered: 'Delivered',
  Cancelled: 'Cancelled',
} as const;
export type OrderStatus = (typeof OrderStatus)[keyof typeof OrderStatus];

/** One step of an order's history. */
export interface HistoryEntry {
  readonly status: OrderStatus;
  readonly eventId: string;
  /** The event's `occurredAt` (ISO 8601). */
  readonly occurredAt: string;
}

/** An order. */
export interface Order {
  readonly orderId: string;
  readonly status: OrderStatus;
  /** The steps the order went through, in the order they happened (by `occurredAt`). */
  readonly history: readonly HistoryEntry[];
  /** Loyalty points awarded to the order so far. */
  readonly pointsAwarded: number;
}

/** Rules that award points. The ledger holds at most one entry per (orderId, rule). */
export const PointsRule = {
  /** Points an `OrderPaid` event awards. */
  Purchase: 'purchase',
} as const;
export type PointsRule = (typeof PointsRule)[keyof typeof PointsRule];

/** One entry of the points ledger. */
export interface LedgerEntry {
  readonly orderId: string;
  readonly rule: PointsRule;
  readonly points: number;
  /** The event that awarded them. */
  readonly eventId: string;
}

/** The "payment received" a paid order announces: a notification to the customer and an outgoing event. */
export interface PaymentReceived {
  readonly orderId: string;
  readonly eventId: string;
  readonly points: number;
}

/** What applying an event changes. */
export interface OrderChange {
  /** The order after the event. */
  readonly next: Order;
  /** Ledger entries to add. */
  readonly ledger: readonly LedgerEntry[];
  /** The payment to announce, or `undefined`. */
  readonly paymentReceived: PaymentReceived | undefined;
}

/**
 * Decides what `event` does to `order` (`undefined` if the order has no state yet), given the
 * ledger rules the order already has entries for.
 *
 * Out-of-order deliveries on a standard queue: an event whose predecessor has not been applied
 * yet throws the retryable {@link PredecessorNotApplied}; an event that can never apply throws
 * the non-retryable {@link BusinessRuleViolation}. One case needs time: a payment that happened
 * *before* the cancellation but arrives after it is applied to the cancelled order (points and
 * notification, history in time order, status stays `Cancelled`), so the final state of a
 * validly emitted sequence does not depend on the delivery order.
 *
 * @throws PredecessorNotApplied when the event may apply later
 * @throws BusinessRuleViolation when the event can never apply (also a second ledger entry for a rule)
 */
export function decideOrder(order: Order | undefined, event: OrderEvent, ledgerRules: ReadonlySet<PointsRule> = new Set()): OrderChange {
  const at = (status: OrderStatus): HistoryEntry => ({ status, eventId: event.eventId, occurredAt: event.occurredAt });
  const waitFor = (what: string) =>
    new PredecessorNotApplied(`${event.type} ${event.eventId} for order ${event.orderId} waits for ${what}`);
  const never = (why: string) => new BusinessRuleViolation(`${event.type} ${event.eventId} cannot apply to order ${event.orderId}: ${why}`);

  if (event.type === OrderEventType.OrderPlaced) {
    if (order !== undefined) throw never(`the order was already placed by ${order.history[0]?.eventId ?? 'another event'}`);
    return {
      next: { orderId: event.orderId, status: OrderStatus.Created, history: [at(OrderStatus.Created)], pointsAwarded: 0 },
      ledger: [],
      paymentReceived: undefined,
    };
  }
  if (order === undefined) throw waitFor('its OrderPlaced');

  /** Records `step` in the history (by time) and sets the status to `status` (the step itself unless told). */
  const move = (step: OrderStatus, extra: Partial<Order> = {}, status: OrderStatus = step): OrderChange => ({
    next: { ...order, ...extra, status, history: insertByTime(order.history, at(step)) },
    ledger: [],
    paymentReceived: undefined,
  });

  switch (event.type) {
    case OrderEventType.OrderPaid: {
      if (ledgerRules.has(PointsRule.Purchase))
        throw never('it already has a ledger entry for rule purchase: points are awarded once per order and rule');
      const paid = (status: OrderStatus): OrderChange => ({
        ...move(OrderStatus.Paid, { pointsAwarded: order.pointsAwarded + event.points }, status),
        ledger: [{ orderId: event.orderId, rule: PointsRule.Purchase, points: event.points, eventId: event.eventId }],
        paymentReceived: { orderId: event.orderId, eventId: event.eventId, points: event.points },
      });
      if (order.status === OrderStatus.Created) return paid(OrderStatus.Paid);
      if (order.status === OrderStatus.Cancelled) {
        const cancelled = order.history.find((h) => h.status === OrderStatus.Cancelled);
        const alreadyPaid = order.history.some((h) => h.status === OrderStatus.Paid);
        if (!alreadyPaid && cancelled !== undefined && isBefore(event.occurredAt, cancelled.occurredAt)) return paid(OrderStatus.Cancelled);
        throw never('the order is Cancelled and the payment is not older than the cancellation');
      }
      throw never(`the order is already ${order.status}`);
    }
    case OrderEventType.OrderShipped:
      if (order.status === OrderStatus.Paid) return move(OrderStatus.Shipped);
      if (order.status === OrderStatus.Created) throw waitFor('its OrderPaid');
      throw never(`the order is ${order.status}`);
    case OrderEventType.OrderDelivered:
      if (order.status === OrderStatus.Shipped) return move(OrderStatus.Delivered);
      if (order.status === OrderStatus.Created || order.status === OrderStatus.Paid) throw waitFor('its OrderShipped');
      throw never(`the order is ${order.status}`);
    case OrderEventType.OrderCancelled:
      if (order.status === OrderStatus.Created || order.status === OrderStatus.Paid) return move(OrderStatus.Cancelled);
      throw never(`the order is ${order.status}`);
  }
}

function isBefore(a: string, b: string): boolean {
  return Date.parse(a) < Date.parse(b);
}

/** Inserts `entry` after every entry that did not happen later than it. */
function insertByTime(history: readonly HistoryEntry[], entry: HistoryEntry): HistoryEntry[] {
  const index = history.findIndex((h) => isBefore(entry.occurredAt, h.occurredAt));
  return index === -1 ? [...history, entry] : [...history.slice(0, index), entry, ...history.slice(index)];
}
