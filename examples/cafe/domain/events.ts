/**
 * The café's order events: what a message body holds.
 *
 * @module
 */
import { UnknownMessageType, ValidationError } from 'idempotent-consumer';
// Named imports, not the `z` namespace: a bundle then leaves out zod's locales and what the schema
// does not use (about 360 KiB of the handler's bundle, and a tenth of its import time).
import { discriminatedUnion, iso, literal, number, object, string, type infer as Infer } from 'zod';

/** The café's event types. */
export const OrderEventType = {
  OrderPlaced: 'OrderPlaced',
  OrderPaid: 'OrderPaid',
  OrderShipped: 'OrderShipped',
  OrderDelivered: 'OrderDelivered',
  OrderCancelled: 'OrderCancelled',
} as const;
export type OrderEventType = (typeof OrderEventType)[keyof typeof OrderEventType];

const eventTypes: readonly string[] = Object.values(OrderEventType);

/** Longest `eventId` and `orderId` accepted, in characters (they become DynamoDB keys). */
export const MAX_ID_LENGTH = 256;

const id = string().min(1).max(MAX_ID_LENGTH);
const common = {
  eventId: id,
  orderId: id,
  occurredAt: iso.datetime({ offset: true }),
};

/** Schema of an order event body (zod). Unknown extra fields are kept out of the parsed value. */
export const OrderEventSchema = discriminatedUnion('type', [
  object({ ...common, type: literal(OrderEventType.OrderPlaced) }),
  object({ ...common, type: literal(OrderEventType.OrderPaid), points: number().int().nonnegative().max(Number.MAX_SAFE_INTEGER) }),
  object({ ...common, type: literal(OrderEventType.OrderShipped) }),
  object({ ...common, type: literal(OrderEventType.OrderDelivered) }),
  object({ ...common, type: literal(OrderEventType.OrderCancelled) }),
]);

/** A validated order event. */
export type OrderEvent = Infer<typeof OrderEventSchema>;

/**
 * Parses a message body already read as JSON, in the order that gives the most useful reason:
 * the type first (an unknown one is `UnknownMessageType`), then the schema (`ValidationError`,
 * with each issue's path). The library has already checked that `eventId` is a non-empty string.
 *
 * @throws UnknownMessageType when `type` is not one of {@link OrderEventType}
 * @throws ValidationError (from the schema) when a field is missing or wrong
 */
export function parseOrderEvent(json: unknown): OrderEvent {
  const type = (json as { type?: unknown }).type;
  if (!eventTypes.includes(type as string)) throw new UnknownMessageType(type);
  const result = OrderEventSchema.safeParse(json);
  if (result.success) return result.data;
  const issues = result.error.issues.slice(0, 10).map((issue) => `${issue.path.join('.') || '(body)'}: ${issue.message.slice(0, 200)}`);
  throw new ValidationError(`the ${String(type)} event fails its schema: ${issues.join('; ')}`, issues);
}
