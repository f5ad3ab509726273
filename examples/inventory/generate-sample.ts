/**
 * Writes the inventory sample input, `examples/inventory/samples/reservations.jsonl`
 * (deterministic, seeded): stock arriving for 20 SKUs, 120 reservation requests (some asking for
 * more than is left: `OutOfStock`), releases (some delivered before their reservation), producer
 * duplicates, a reused reservation id, and a few bodies that are not events.
 *
 *   npx tsx examples/inventory/generate-sample.ts > examples/inventory/samples/reservations.jsonl
 */
let seed = 20261130;
function random(): number {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (n: number) => Math.floor(random() * n);
const at = (minute: number) => new Date(Date.UTC(2026, 2, 1, 9, minute)).toISOString();

const lines: string[] = [];
const emit = (body: unknown) => lines.push(typeof body === 'string' ? JSON.stringify(body) : JSON.stringify(body));
const skus = Array.from({ length: 20 }, (_, i) => `SKU-${String(i + 1).padStart(3, '0')}`);
let request = 0;
const nextRequest = () => `req-${String(++request).padStart(4, '0')}`;

for (const sku of skus) emit({ requestId: nextRequest(), kind: 'StockReceived', sku, quantity: 5 + pick(10), at: at(0) });
const reservations: { reservationId: string; sku: string }[] = [];
for (let i = 0; i < 120; i += 1) {
  const sku = skus[pick(skus.length)]!;
  const reservationId = `res-${String(i + 1).padStart(4, '0')}`;
  const body = { requestId: nextRequest(), kind: 'ReservationRequested', sku, reservationId, quantity: 1 + pick(3), at: at(1 + i) };
  emit(body);
  reservations.push({ reservationId, sku });
  if (random() < 0.08) emit(body); // a producer duplicate
}
for (let i = 0; i < 30; i += 1) {
  const { reservationId, sku } = reservations[pick(reservations.length)]!;
  const body = { requestId: nextRequest(), kind: 'ReservationReleased', sku, reservationId, at: at(200 + i) };
  // Some releases arrive before their reservation: put them early in the file.
  if (random() < 0.2) lines.splice(20 + pick(10), 0, JSON.stringify(body));
  else emit(body);
}
const reused = reservations[0]!;
emit({
  requestId: nextRequest(),
  kind: 'ReservationRequested',
  sku: reused.sku,
  reservationId: reused.reservationId,
  quantity: 1,
  at: at(300),
});
emit('not-json');
emit({ kind: 'StockReceived', sku: 'SKU-001', quantity: 1, at: at(301) });
emit({ requestId: nextRequest(), kind: 'StockAudited', sku: 'SKU-001', at: at(302) });
emit({ requestId: nextRequest(), kind: 'StockReceived', sku: 'sku lower', quantity: 1, at: at(303) });
process.stdout.write(`${lines.join('\n')}\n`);
