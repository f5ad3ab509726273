/**
 * The café example's settings and tables: the one source the café's handler, its CDK stack and
 * its local run read.
 *
 * @module
 */
import { withOverrides } from 'idempotent-consumer/settings';
import type { TableDefinition } from 'idempotent-consumer';

/** The café's business table: order state items (`sk = "ORDER"`) and points ledger entries (`sk = "LEDGER#<rule>"`). */
export const cafeTables = {
  orders: { partitionKey: 'orderId', sortKey: 'sk' },
} as const satisfies Record<string, TableDefinition>;

/** The café's logical table names: what its `read`, `state.get`, writes and `context.tableName` may name (a misspelt one does not compile). */
export type CafeTable = keyof typeof cafeTables;

/**
 * The café consumer's settings: the library's defaults with its own name and Kafka topic, and
 * out-of-order events parked (a payment that arrives before its order waits in the inbox table
 * and is applied by the invocation that applies the order, instead of coming back from the queue).
 */
export const cafeSettings = withOverrides({ consumerName: 'cafe-orders', kafka: { topic: 'orders' }, retry: { parkOutOfOrder: true } });
