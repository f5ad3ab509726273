/**
 * Writes the café sample input, `examples/cafe/samples/orders.jsonl`: a day of café orders as a producer
 * would emit them, with what at-least-once delivery brings. Deterministic (seeded), so the
 * committed file can be regenerated exactly:
 *
 *   npm run sample   (tsx examples/cafe/generate-sample.ts > examples/cafe/samples/orders.jsonl)
 *
 * What it holds: 150 orders on valid paths of the state machine; producer duplicates (the same
 * event sent twice); out-of-order deliveries (a successor written before its predecessor);
 * poison messages (not JSON, a blank body, a schema violation, no idempotency key, an unknown
 * type, a reused idempotency key with another payload, an impossible transition) and an event
 * whose predecessor never arrives (it exhausts its retries). Transient failures are not in the
 * file: the local runtime injects them (`--transient-failure-rate`).
 */

let seed = 20261129;
/** mulberry32: a small seeded PRNG, so the output never changes. */
function random(): number {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

const paths: ReadonlyArray<readonly [number, readonly string[]]> = [
  [0.4, ['OrderPlaced', 'OrderPaid', 'OrderShipped', 'OrderDelivered']],
  [0.2, ['OrderPlaced', 'OrderPaid', 'OrderShipped']],
  [0.15, ['OrderPlaced', 'OrderPaid']],
  [0.1, ['OrderPlaced', 'OrderCancelled']],
  [0.1, ['OrderPlaced', 'OrderPaid', 'OrderCancelled']],
  [0.05, ['OrderPlaced']],
];

function pickPath(): readonly string[] {
  let r = random();
  for (const [weight, path] of paths) {
    if (r < weight) return path;
    r -= weight;
  }
  return paths[0]![1];
}

interface Emitted {
  readonly at: number;
  readonly line: string;
}

const start = Date.UTC(2026, 10, 28, 7, 0, 0);
const emitted: Emitted[] = [];
const emit = (at: number, body: unknown) =>
  emitted.push({ at, line: typeof body === 'string' ? JSON.stringify(body) : JSON.stringify(body) });
let cancelledOrder: string | undefined;
let paidEvent: Record<string, unknown> | undefined;

for (let n = 1; n <= 150; n++) {
  const orderId = `O-${String(n).padStart(4, '0')}`;
  const path = pickPath();
  let at = start + Math.floor(random() * 10 * 3600 * 1000);
  const events = path.map((type, step) => {
    at += 60_000 + Math.floor(random() * 20 * 60_000);
    const event: Record<string, unknown> = {
      eventId: `${orderId}-${step + 1}-${type}`,
      type,
      orderId,
      occurredAt: new Date(at).toISOString(),
    };
    if (type === 'OrderPaid') event.points = 5 + Math.floor(random() * 96);
    return { at, event };
  });
  // Out of order: one successor delivered before its predecessor, for about one order in six.
  if (events.length > 1 && random() < 0.17) {
    const i = 1 + Math.floor(random() * (events.length - 1));
    const [a, b] = [events[i - 1]!, events[i]!];
    events[i - 1] = { at: a.at, event: b.event };
    events[i] = { at: b.at, event: a.event };
  }
  for (const { at: when, event } of events) {
    emit(when, event);
    // Producer retries: the same event sent again a little later.
    if (random() < 0.06) emit(when + 30_000, event);
    if (event.type === 'OrderPaid' && paidEvent === undefined) paidEvent = event;
  }
  if (path.at(-1) === 'OrderCancelled' && path.length === 2 && cancelledOrder === undefined) cancelledOrder = orderId;
}

const late = start + 11 * 3600 * 1000;
const iso = (offset: number) => new Date(late + offset * 60_000).toISOString();
// Poison messages: each ends in the dead-letter queue with its reason.
emit(late, 'not-json'); // ValidationError: not JSON at all
emit(late + 1, ' '); // ValidationError: a blank body (SQS refuses an empty one)
emit(late + 2, { eventId: 'poison-points', type: 'OrderPaid', orderId: 'O-0001', occurredAt: iso(2), points: 'ten' }); // ValidationError
emit(late + 3, { type: 'OrderPlaced', orderId: 'O-9001', occurredAt: iso(3) }); // MissingIdempotencyKey
emit(late + 4, { eventId: 'poison-type', type: 'OrderRefunded', orderId: 'O-0002', occurredAt: iso(4) }); // UnknownMessageType
if (paidEvent !== undefined) emit(late + 5, { ...paidEvent, points: Number(paidEvent.points) + 1000 }); // IdempotencyConflict
if (cancelledOrder !== undefined) {
  emit(late + 6, { eventId: `${cancelledOrder}-x-OrderShipped`, type: 'OrderShipped', orderId: cancelledOrder, occurredAt: iso(6) }); // BusinessRuleViolation
}
// A payment for an order that was never placed: retried, then RetriesExhausted.
emit(late + 7, { eventId: 'orphan-payment', type: 'OrderPaid', orderId: 'O-NEVER-PLACED', occurredAt: iso(7), points: 10 });

emitted.sort((a, b) => a.at - b.at);
process.stdout.write(`${emitted.map((e) => e.line).join('\n')}\n`);
