/** Café order event bodies with the field cases' defaults; `minute` sets `occurredAt`. */
const at = (minute: number) => new Date(Date.UTC(2026, 0, 1, 12, minute)).toISOString();

export const body = {
  placed: (eventId: string, orderId: string, minute = 0) =>
    ({ eventId, type: 'OrderPlaced', orderId, occurredAt: at(minute) }) as Record<string, unknown>,
  paid: (eventId: string, orderId: string, points: unknown = 10, minute = 1) =>
    ({ eventId, type: 'OrderPaid', orderId, occurredAt: at(minute), points }) as Record<string, unknown>,
  shipped: (eventId: string, orderId: string, minute = 2) =>
    ({ eventId, type: 'OrderShipped', orderId, occurredAt: at(minute) }) as Record<string, unknown>,
  delivered: (eventId: string, orderId: string, minute = 3) =>
    ({ eventId, type: 'OrderDelivered', orderId, occurredAt: at(minute) }) as Record<string, unknown>,
  cancelled: (eventId: string, orderId: string, minute = 4) =>
    ({ eventId, type: 'OrderCancelled', orderId, occurredAt: at(minute) }) as Record<string, unknown>,
};
