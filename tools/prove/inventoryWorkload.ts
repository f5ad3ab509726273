/**
 * The inventory example as a second consumer under test: each SKU's stock is received first
 * (set-up, applied before the faults begin), then reservations that the stock always covers, in
 * any order (so the final state does not depend on the delivery order), releases (which wait for
 * their reservation), a restock, and a reservation larger than all the stock there ever is
 * (always `OutOfStock`, the example's own dead-letter reason).
 *
 * @module
 */
import { BatchGetCommand } from '@aws-sdk/lib-dynamodb';
import type { Item } from 'idempotent-consumer';
import { inventoryConsumerOptions } from '@idempotent-consumer/example-inventory/consumer';
import { inventoryTables } from '@idempotent-consumer/example-inventory/settings';
import type { InventoryWorkloadSpec, PoisonKind } from './schedule.js';
import {
  eventTime,
  inOrderParts,
  type InputMessage,
  itemId,
  MessageRole,
  type StoreClients,
  type StoredBusinessState,
  type Workload,
  withoutVersion,
} from './workload.js';

/** A reservation larger than any stock a workload holds. */
const OVER_RESERVATION = 999;

/** A malformed inventory body and the reason it must be dead-lettered with. */
export function inventoryPoison(
  kind: PoisonKind,
  ids: { readonly requestId: string; readonly sku: string },
): { body: string; reason: string } {
  const { requestId, sku } = ids;
  const at = eventTime(0);
  switch (kind) {
    case 'not-json':
      return { body: `{"requestId":"${requestId}","kind":"StockReceived","sku":"${sku}"`, reason: 'ValidationError' };
    case 'array':
      return { body: JSON.stringify([{ requestId, kind: 'StockReceived', sku, quantity: 1, at }]), reason: 'ValidationError' };
    case 'missing-key':
      return { body: JSON.stringify({ kind: 'StockReceived', sku, quantity: 1, at }), reason: 'MissingIdempotencyKey' };
    case 'key-not-string':
      return { body: JSON.stringify({ requestId: 42, kind: 'StockReceived', sku, quantity: 1, at }), reason: 'MissingIdempotencyKey' };
    case 'unknown-type':
      return { body: JSON.stringify({ requestId, kind: 'StockAudited', sku, at }), reason: 'ValidationError' };
    case 'bad-field':
      return {
        body: JSON.stringify({ requestId, kind: 'ReservationRequested', sku, reservationId: `${requestId}-R`, quantity: -1, at }),
        reason: 'ValidationError',
      };
  }
}

/**
 * The inventory workload of a schedule. Ids start with `prefix` (upper-cased for SKUs, whose
 * schema takes `A-Z`, `0-9` and `-`).
 */
export function inventoryWorkload(spec: InventoryWorkloadSpec, prefix: string): Workload {
  const skuPrefix = prefix.toUpperCase().replace(/[^A-Z0-9-]/g, '-');
  const setup: InputMessage[] = [];
  const run: InputMessage[] = [];
  let next = 0;
  const id = () => `${prefix}-m${(next += 1)}`;
  const skus: string[] = [];
  const reservationIds: string[] = [];
  const receipts: { requestId: string; sku: string; quantity: number }[] = [];

  spec.skus.forEach((skuSpec, i) => {
    const sku = `${skuPrefix}-S${i}`;
    skus.push(sku);
    const at = eventTime(i);
    const total = skuSpec.reservations.reduce((sum, r) => sum + r.quantity, 0);
    const initial = { requestId: `${sku}-initial`, kind: 'StockReceived', sku, quantity: total + skuSpec.slack, at };
    setup.push({ id: id(), body: JSON.stringify(initial), group: sku, role: MessageRole.Setup, key: initial.requestId });
    receipts.push({ requestId: initial.requestId, sku, quantity: initial.quantity });

    const events: { requestId: string; body: Record<string, unknown> }[] = [];
    skuSpec.reservations.forEach((reservation, j) => {
      const reservationId = `${sku}-R${j}`;
      reservationIds.push(reservationId);
      events.push({
        requestId: `${sku}-q${j}`,
        body: { kind: 'ReservationRequested', sku, reservationId, quantity: reservation.quantity, at },
      });
    });
    if (skuSpec.restock > 0) {
      events.push({ requestId: `${sku}-restock`, body: { kind: 'StockReceived', sku, quantity: skuSpec.restock, at } });
      receipts.push({ requestId: `${sku}-restock`, sku, quantity: skuSpec.restock });
    }
    if (skuSpec.overReserve) {
      reservationIds.push(`${sku}-RX`);
      events.push({
        requestId: `${sku}-over`,
        body: { kind: 'ReservationRequested', sku, reservationId: `${sku}-RX`, quantity: OVER_RESERVATION, at },
      });
    }
    skuSpec.reservations.forEach((reservation, j) => {
      if (reservation.released)
        events.push({ requestId: `${sku}-rel${j}`, body: { kind: 'ReservationReleased', sku, reservationId: `${sku}-R${j}`, at } });
    });

    events.forEach((event, position) => {
      if (skuSpec.poisonAt === position) {
        const poison = inventoryPoison(skuSpec.poisonKind ?? 'bad-field', { requestId: event.requestId, sku });
        run.push({ id: id(), body: poison.body, group: sku, role: MessageRole.Poison, expectedReason: poison.reason });
        return;
      }
      const body = JSON.stringify({ requestId: event.requestId, ...event.body });
      run.push({ id: id(), body, group: sku, role: MessageRole.Event, key: event.requestId });
      if (skuSpec.duplicates.includes(position))
        run.push({ id: id(), body, group: sku, role: MessageRole.Duplicate, key: event.requestId });
    });
  });
  spec.strayPoison.forEach((kind, i) => {
    const sku = `${skuPrefix}-X${i}`;
    skus.push(sku);
    const poison = inventoryPoison(kind, { requestId: `${sku}-x`, sku });
    run.push({ id: id(), body: poison.body, group: sku, role: MessageRole.Poison, expectedReason: poison.reason });
  });

  const options = inventoryConsumerOptions;
  const versionAttribute = options.versionAttribute ?? '_version';
  const messages = [...setup, ...run];
  return {
    consumer: 'inventory',
    options: options as never,
    tables: inventoryTables,
    messages,
    ...inOrderParts(options as never, messages),
    effectRuns: new Map(),
    async readStored({ document: client }: StoreClients, tableNames: Readonly<Record<string, string>>): Promise<StoredBusinessState> {
      const items = new Map<string, Item>();
      const wanted: { table: 'stock' | 'reservations'; key: Item }[] = [
        ...skus.map((sku) => ({ table: 'stock' as const, key: { sku } })),
        ...reservationIds.map((reservationId) => ({ table: 'reservations' as const, key: { reservationId } })),
      ];
      for (let i = 0; i < wanted.length; i += 100) {
        const chunk = wanted.slice(i, i + 100);
        let request: Record<string, { Keys: Item[]; ConsistentRead: true }> = {};
        for (const { table, key } of chunk) (request[tableNames[table]!] ??= { Keys: [], ConsistentRead: true }).Keys.push(key);
        for (let round = 0; Object.keys(request).length > 0; round += 1) {
          if (round > 10) throw new Error('DynamoDB kept keys unprocessed');
          const output = await client.send(new BatchGetCommand({ RequestItems: request }));
          for (const [tableName, found] of Object.entries(output.Responses ?? {})) {
            const table = tableName === tableNames.stock ? 'stock' : 'reservations';
            for (const item of found) items.set(itemId(inventoryTables, table, item), withoutVersion(item, versionAttribute));
          }
          request = (output.UnprocessedKeys ?? {}) as typeof request;
        }
      }
      return { items, effectRecords: new Map() };
    },
    appliedTwice(stored, appliedKeys) {
      // Stock movements: what a SKU holds is what its applied receipts brought, split between
      // available and the quantities of its applied reservations still held.
      const problems: string[] = [];
      for (const sku of skus) {
        const stock = stored.items.get(itemId(inventoryTables, 'stock', { sku }));
        const received = receipts.filter((r) => r.sku === sku && appliedKeys.has(r.requestId)).reduce((sum, r) => sum + r.quantity, 0);
        const held = [...stored.items.values()]
          .filter((item) => item.sku === sku && item.reservationId !== undefined && item.status === 'held')
          .reduce((sum, item) => sum + Number(item.quantity), 0);
        const available = Number(stock?.available ?? 0);
        const reserved = Number(stock?.reserved ?? 0);
        if (available + reserved !== received)
          problems.push(`SKU ${sku} holds ${available} available + ${reserved} reserved, but its applied receipts brought ${received}`);
        if (reserved !== held) problems.push(`SKU ${sku} has ${reserved} reserved, but its held reservations add up to ${held}`);
      }
      return problems;
    },
  };
}
