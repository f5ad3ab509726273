import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BusinessRuleViolation, PredecessorNotApplied } from 'idempotent-consumer';
import { type OrderEvent, parseOrderEvent } from '../domain/events.js';
import { decideOrder, type LedgerEntry, type Order, type OrderChange, PointsRule } from '../domain/order.js';
import { body } from './bodies.js';

const event = (b: Record<string, unknown>): OrderEvent => parseOrderEvent(b);

/** The order state machine with the ledger rules `ledger` already holds. */
const decide = (order: Order | undefined, e: OrderEvent, ledger: readonly LedgerEntry[] = []): OrderChange =>
  decideOrder(order, e, new Set(ledger.filter((entry) => entry.orderId === e.orderId).map((entry) => entry.rule)));

/** Applies events in order, failing on any error. */
function applyAll(events: readonly OrderEvent[]): { order: Order | undefined; ledger: LedgerEntry[]; notifications: number } {
  let order: Order | undefined;
  const ledger: LedgerEntry[] = [];
  let notifications = 0;
  for (const e of events) {
    const decision: OrderChange = decide(order, e, ledger);
    order = decision.next;
    ledger.push(...decision.ledger);
    if (decision.paymentReceived) notifications += 1;
  }
  return { order, ledger, notifications };
}

describe('decide: the order state machine', () => {
  it('walks Created → Paid → Shipped → Delivered with one ledger entry and one notification', () => {
    const { order, ledger, notifications } = applyAll([
      event(body.placed('e-1', 'O-1')),
      event(body.paid('e-2', 'O-1', 25)),
      event(body.shipped('e-3', 'O-1')),
      event(body.delivered('e-4', 'O-1')),
    ]);
    expect(order?.status).toBe('Delivered');
    expect(order?.history.map((h) => h.status)).toEqual(['Created', 'Paid', 'Shipped', 'Delivered']);
    expect(ledger).toEqual([{ orderId: 'O-1', rule: 'purchase', points: 25, eventId: 'e-2' }]);
    expect(notifications).toBe(1);
  });

  it('refuses a second ledger entry for the same rule', () => {
    const placed = decide(undefined, event(body.placed('e-1', 'O-1')));
    const ledger: LedgerEntry[] = [{ orderId: 'O-1', rule: PointsRule.Purchase, points: 5, eventId: 'e-0' }];
    expect(() => decide(placed.next, event(body.paid('e-2', 'O-1')), ledger)).toThrow(BusinessRuleViolation);
  });

  it.each([
    ['OrderPaid before OrderPlaced', undefined, body.paid('e-2', 'O-1')],
    ['OrderCancelled before OrderPlaced', undefined, body.cancelled('e-2', 'O-1')],
    ['OrderShipped before OrderPaid', [body.placed('e-1', 'O-1')], body.shipped('e-3', 'O-1')],
    ['OrderDelivered before OrderShipped', [body.placed('e-1', 'O-1'), body.paid('e-2', 'O-1')], body.delivered('e-4', 'O-1')],
  ])('%s is retryable (PredecessorNotApplied)', (_what, before, next) => {
    const state = before === undefined ? undefined : applyAll(before.map(event));
    expect(() => decide(state?.order, event(next), state?.ledger)).toThrow(PredecessorNotApplied);
  });

  it.each([
    ['OrderShipped for a Cancelled order', [body.placed('e-1', 'O-1'), body.cancelled('e-5', 'O-1')], body.shipped('e-3', 'O-1')],
    ['OrderDelivered for a Cancelled order', [body.placed('e-1', 'O-1'), body.cancelled('e-5', 'O-1')], body.delivered('e-4', 'O-1')],
    [
      'OrderCancelled for a Shipped order',
      [body.placed('e-1', 'O-1'), body.paid('e-2', 'O-1'), body.shipped('e-3', 'O-1')],
      body.cancelled('e-5', 'O-1'),
    ],
    ['a second OrderPlaced', [body.placed('e-1', 'O-1')], body.placed('e-9', 'O-1')],
    ['a second OrderPaid', [body.placed('e-1', 'O-1'), body.paid('e-2', 'O-1')], body.paid('e-9', 'O-1')],
    [
      'OrderPaid after a cancellation that happened first',
      [body.placed('e-1', 'O-1', 0), body.cancelled('e-5', 'O-1', 1)],
      body.paid('e-2', 'O-1', 10, 2),
    ],
  ])('%s is non-retryable (BusinessRuleViolation)', (_what, before, next) => {
    const state = applyAll(before.map(event));
    expect(() => decide(state.order, event(next), state.ledger)).toThrow(BusinessRuleViolation);
  });

  it('applies a payment that happened before the cancellation but arrived after it', () => {
    const late = applyAll([
      event(body.placed('e-1', 'O-1', 0)),
      event(body.cancelled('e-3', 'O-1', 5)),
      event(body.paid('e-2', 'O-1', 30, 2)),
    ]);
    const inOrder = applyAll([
      event(body.placed('e-1', 'O-1', 0)),
      event(body.paid('e-2', 'O-1', 30, 2)),
      event(body.cancelled('e-3', 'O-1', 5)),
    ]);
    expect(late.order?.status).toBe('Cancelled');
    expect(late.order?.history).toEqual(inOrder.order?.history);
    expect(late.ledger).toEqual(inOrder.ledger);
    expect(late.notifications).toBe(1);
  });
});

/** The sequences a producer may validly emit for one order, in emission order. */
const validSequences = [
  ['placed'],
  ['placed', 'paid'],
  ['placed', 'paid', 'shipped'],
  ['placed', 'paid', 'shipped', 'delivered'],
  ['placed', 'cancelled'],
  ['placed', 'paid', 'cancelled'],
] as const;

function emit(sequence: readonly string[]): OrderEvent[] {
  return sequence.map((kind, minute) => {
    const id = `e-${minute}`;
    switch (kind) {
      case 'placed':
        return event(body.placed(id, 'O-1', minute));
      case 'paid':
        return event(body.paid(id, 'O-1', 40, minute));
      case 'shipped':
        return event(body.shipped(id, 'O-1', minute));
      case 'delivered':
        return event(body.delivered(id, 'O-1', minute));
      default:
        return event(body.cancelled(id, 'O-1', minute));
    }
  });
}

/**
 * Delivers `events` in the given order with at-least-once semantics: a retryable failure goes
 * back to the end of the queue; a duplicate (same eventId already applied) is acknowledged.
 */
function deliver(events: readonly OrderEvent[]) {
  const queue = [...events];
  const applied = new Set<string>();
  let order: Order | undefined;
  const ledger: LedgerEntry[] = [];
  let notifications = 0;
  let attemptsLeft = 100;
  while (queue.length > 0 && attemptsLeft-- > 0) {
    const next = queue.shift() as OrderEvent;
    if (applied.has(next.eventId)) continue;
    try {
      const decision = decide(order, next, ledger);
      order = decision.next;
      ledger.push(...decision.ledger);
      if (decision.paymentReceived) notifications += 1;
      applied.add(next.eventId);
    } catch (error) {
      if (error instanceof PredecessorNotApplied) queue.push(next);
      else throw error;
    }
  }
  return { order, ledger, notifications, undelivered: queue.length };
}

describe('decide: delivery order does not change the outcome (property)', () => {
  it('any permutation, with duplicates, of a valid sequence ends in the in-order state', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...validSequences),
        fc.infiniteStream(fc.nat()),
        fc.array(fc.nat({ max: 3 }), { maxLength: 4 }),
        (sequence, randomness, duplicateIndexes) => {
          const events = emit(sequence);
          const withDuplicates = [...events, ...duplicateIndexes.filter((i) => i < events.length).map((i) => events[i] as OrderEvent)];
          const shuffled = [...withDuplicates];
          const random = randomness[Symbol.iterator]();
          for (let i = shuffled.length - 1; i > 0; i--) {
            const j = (random.next().value as number) % (i + 1);
            [shuffled[i], shuffled[j]] = [shuffled[j] as OrderEvent, shuffled[i] as OrderEvent];
          }
          const expected = applyAll(events);
          const actual = deliver(shuffled);
          expect(actual.undelivered).toBe(0);
          expect(actual.order).toEqual(expected.order);
          expect(actual.ledger).toEqual(expected.ledger);
          expect(actual.notifications).toBe(expected.notifications);
        },
      ),
      { numRuns: 500 },
    );
  });
});
