/**
 * The inventory example's tables and settings: the one source its handler, its stack and its
 * local run read.
 *
 * @module
 */
import type { TableDefinition } from 'idempotent-consumer';
import { withOverrides } from 'idempotent-consumer/settings';

/** Stock levels by SKU, and reservations by id. */
export const inventoryTables = {
  stock: { partitionKey: 'sku' },
  reservations: { partitionKey: 'reservationId' },
} as const satisfies Record<string, TableDefinition>;

/** The inventory's logical table names: what its `read`, `state.get` and writes may name (a misspelt one does not compile). */
export type InventoryTable = keyof typeof inventoryTables;

/** The inventory consumer's settings: the defaults, its own name, a FIFO-friendly topic name for Kafka. */
export const inventorySettings = withOverrides({ consumerName: 'inventory-reservations', kafka: { topic: 'inventory' } });
