/**
 * The inventory consumer: stock levels per SKU and reservations, each change exactly once.
 *
 * - `StockReceived` adds to a SKU's `available`.
 * - `ReservationRequested` takes from it and publishes `ReservationConfirmed` through the outbox;
 *   when not enough is left the request can never apply as sent: it is dead-lettered with the
 *   inventory's own reason, `OutOfStock`.
 * - `ReservationReleased` gives the quantity back; a release that arrives before its reservation
 *   waits for it (retryable).
 *
 * @module
 */
import { type IdempotentConsumerOptions, NonRetryableError, PredecessorNotApplied, type Write } from 'idempotent-consumer';
import { type InventoryEvent, InventoryEventSchema } from './events.js';
import { type InventoryTable, inventoryTables } from './settings.js';

/** A reservation asks for more than is available: it can never apply as sent. Its name is the dead-letter reason. */
export class OutOfStock extends NonRetryableError {
  constructor(message: string) {
    super(message, { reason: 'OutOfStock' });
    this.name = 'OutOfStock';
  }
}

/** A reservation id was already used by another request: the producer reused it for another reservation. */
export class ReservationExists extends NonRetryableError {
  constructor(message: string) {
    super(message, { reason: 'ReservationExists' });
    this.name = 'ReservationExists';
  }
}

/** A SKU's stock item. */
export type StockItem = {
  readonly sku: string;
  readonly available: number;
  readonly reserved: number;
};

/** A reservation item. */
export type ReservationItem = {
  readonly reservationId: string;
  readonly sku: string;
  readonly quantity: number;
  readonly status: 'held' | 'released';
};

const stockKey = (sku: string) => ({ sku });
const reservationKey = (reservationId: string) => ({ reservationId });

/** The inventory consumer's options: pure pieces only. Its table names are typed: a misspelt one does not compile. */
export const inventoryConsumerOptions: IdempotentConsumerOptions<InventoryEvent, InventoryTable> = {
  schema: InventoryEventSchema,
  idempotencyKey: 'requestId',
  orderingKey: 'sku',
  logFields: (event) => ({ kind: event.kind, sku: event.sku }),
  tables: inventoryTables,
  read: (event) =>
    event.kind === 'StockReceived'
      ? [{ table: 'stock', key: stockKey(event.sku) }]
      : [
          { table: 'stock', key: stockKey(event.sku) },
          { table: 'reservations', key: reservationKey(event.reservationId) },
        ],
  decide: (event, state) => {
    const stock = state.get<StockItem>('stock', stockKey(event.sku)) ?? { sku: event.sku, available: 0, reserved: 0 };
    const put = (item: StockItem): Write<'stock'> => ({
      Put: { TableName: 'stock', Item: { sku: item.sku, available: item.available, reserved: item.reserved } },
    });
    switch (event.kind) {
      case 'StockReceived':
        return { writes: [put({ ...stock, available: stock.available + event.quantity })] };
      case 'ReservationRequested': {
        const existing = state.get('reservations', reservationKey(event.reservationId));
        if (existing !== undefined) throw new ReservationExists(`reservation ${event.reservationId} was already made by another request`);
        if (stock.available < event.quantity) {
          throw new OutOfStock(`${event.sku} has ${stock.available} available, ${event.quantity} requested`);
        }
        const reservation: ReservationItem = {
          reservationId: event.reservationId,
          sku: event.sku,
          quantity: event.quantity,
          status: 'held',
        };
        return {
          writes: [
            put({ ...stock, available: stock.available - event.quantity, reserved: stock.reserved + event.quantity }),
            { Put: { TableName: 'reservations', Item: { ...reservation } } },
          ],
          outbox: [
            { body: { type: 'ReservationConfirmed', reservationId: event.reservationId, sku: event.sku, quantity: event.quantity } },
          ],
        };
      }
      case 'ReservationReleased': {
        const reservation = state.get<ReservationItem>('reservations', reservationKey(event.reservationId));
        if (reservation === undefined) throw new PredecessorNotApplied(`reservation ${event.reservationId} is not known yet`);
        if (reservation.status === 'released') return {}; // released by another request already: nothing to change
        return {
          writes: [
            put({ ...stock, available: stock.available + reservation.quantity, reserved: stock.reserved - reservation.quantity }),
            { Put: { TableName: 'reservations', Item: { ...reservation, status: 'released' } } },
          ],
        };
      }
    }
  },
};
