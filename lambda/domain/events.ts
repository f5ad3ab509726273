import { createHash } from 'node:crypto';
import { parse } from '@aws-lambda-powertools/parser';
import { z } from 'zod';
import { MissingIdempotencyKey, UnknownMessageType, ValidationError } from '../errors.js';

/** The café's event types. */
export const OrderEventType = {
  OrderPlaced: 'OrderPlaced',
  OrderPaid: 'OrderPaid',
  OrderShipped: 'OrderShipped',
  OrderDelivered: 'OrderDelivered',
  OrderCancelled: 'OrderCancelled',
} as const;
export type OrderEventType = (typeof OrderEventType)[keyof typeof OrderEventType];

const eventTypes = Object.values(OrderEventType) as [OrderEventType, ...OrderEventType[]];

/** Longest `eventId` and `orderId` accepted, in characters (they become DynamoDB keys). */
export const MAX_ID_LENGTH = 256;

const id = z.string().min(1).max(MAX_ID_LENGTH);
const common = {
  eventId: id,
  orderId: id,
  occurredAt: z.iso.datetime({ offset: true }),
};

/** Schema of an order event body (zod). Unknown extra fields are kept out of the parsed value. */
export const OrderEventSchema = z.discriminatedUnion('type', [
  z.object({ ...common, type: z.literal(OrderEventType.OrderPlaced) }),
  z.object({
    ...common,
    type: z.literal(OrderEventType.OrderPaid),
    points: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  }),
  z.object({ ...common, type: z.literal(OrderEventType.OrderShipped) }),
  z.object({ ...common, type: z.literal(OrderEventType.OrderDelivered) }),
  z.object({ ...common, type: z.literal(OrderEventType.OrderCancelled) }),
]);

/** A validated order event. */
export type OrderEvent = z.infer<typeof OrderEventSchema>;

/** A validated event with the hash of its payload, ready for the inbox. */
export interface ParsedMessage {
  readonly event: OrderEvent;
  /** SHA-256 (hex) of the body's canonical JSON: key order and white space do not change it. */
  readonly payloadHash: string;
}

/**
 * Parses and validates one message body, in the order that gives the most useful reason:
 * JSON, then the idempotency key, then the type, then the full schema.
 *
 * @param body - the message body as received (an SQS `body`, a decoded Kafka `value`)
 * @throws ValidationError when the body is empty, not JSON, not an object, or fails the schema
 * @throws MissingIdempotencyKey when `eventId` is absent, not a string, or empty
 * @throws UnknownMessageType when `type` is not one of {@link OrderEventType}
 */
export function parseOrderEvent(body: string): ParsedMessage {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (error) {
    const preview = body.length === 0 ? 'the body is empty' : `the body is not JSON (${(error as Error).message})`;
    throw new ValidationError(preview, [], { cause: error });
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new ValidationError(`the body must be a JSON object, got ${Array.isArray(json) ? 'an array' : typeof json}`);
  }
  const record = json as Record<string, unknown>;
  if (typeof record.eventId !== 'string' || record.eventId.trim() === '') {
    throw new MissingIdempotencyKey('the body has no eventId (the idempotency key), or it is empty');
  }
  if (!eventTypes.includes(record.type as OrderEventType)) {
    throw new UnknownMessageType(record.type);
  }
  const result = parse(record, undefined, OrderEventSchema, true);
  if (!result.success) {
    const issues = describeIssues(result.error);
    throw new ValidationError(`the ${String(record.type)} event fails its schema: ${issues.join('; ')}`, issues);
  }
  return { event: result.data, payloadHash: payloadHash(record) };
}

/** SHA-256 (hex) of a JSON value's canonical form (object keys sorted, no white space). */
export function payloadHash(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The parser's error carries Standard Schema issues (`{ path, message }`) as its `cause`. */
function describeIssues(error: unknown): string[] {
  const cause = (error as { cause?: unknown }).cause;
  if (Array.isArray(cause) && cause.length > 0) {
    return cause.map((issue: { path?: readonly unknown[]; message?: string }) => {
      const path = (issue.path ?? []).map((segment) => (typeof segment === 'object' && segment !== null && 'key' in segment ? String(segment.key) : String(segment)));
      return `${path.join('.') || '(body)'}: ${issue.message ?? 'invalid'}`;
    });
  }
  return [error instanceof Error ? error.message : String(error)];
}
