/**
 * The baseline's Lambda entry point, bundled by the benchmark for its cold-start figures the way
 * the stack bundles the café handler. Like typical Powertools code it creates its clients at
 * module scope. Table names come from `TABLE_NAME_ORDERS`, `IDEMPOTENCY_TABLE_NAME` and
 * `OUTBOX_TABLE_NAME`.
 *
 * @module
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createPowertoolsBaseline } from './powertoolsBaseline.js';

export const handler = createPowertoolsBaseline({
  dynamoDb: new DynamoDBClient({}),
  ordersTable: process.env.TABLE_NAME_ORDERS ?? 'orders',
  idempotencyTable: process.env.IDEMPOTENCY_TABLE_NAME ?? 'idempotency',
  outboxTable: process.env.OUTBOX_TABLE_NAME ?? 'outbox',
});
