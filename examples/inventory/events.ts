/**
 * The inventory's events: stock arrives, customers reserve it, reservations are released.
 * Each event carries a `requestId` (the idempotency key) and a `sku` (the ordering key).
 *
 * @module
 */
import { z } from 'zod';

const common = {
  requestId: z.string().min(1).max(128),
  sku: z.string().regex(/^[A-Z0-9-]{1,64}$/),
  at: z.iso.datetime({ offset: true }),
};

/** The inventory event schema (zod: a Standard Schema the library validates with). */
export const InventoryEventSchema = z.discriminatedUnion('kind', [
  z.object({ ...common, kind: z.literal('StockReceived'), quantity: z.number().int().positive().max(1_000_000) }),
  z.object({
    ...common,
    kind: z.literal('ReservationRequested'),
    reservationId: z.string().min(1).max(128),
    quantity: z.number().int().positive().max(1_000),
  }),
  z.object({ ...common, kind: z.literal('ReservationReleased'), reservationId: z.string().min(1).max(128) }),
]);

/** A validated inventory event. */
export type InventoryEvent = z.infer<typeof InventoryEventSchema>;
