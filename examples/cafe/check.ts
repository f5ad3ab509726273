/**
 * The café's own invariants, checked after a local run (`--check examples/cafe/check.ts`): on top
 * of the library's exactly-once check, what a paid order must look like in the `orders` table.
 *
 * @module
 */
import { paginateScan } from '@aws-sdk/lib-dynamodb';
import type { LocalCheck } from '@idempotent-consumer/local';
import { LEDGER_SK_PREFIX, NOTIFICATION_SK_PREFIX, ORDER_SK } from './consumer.js';

/**
 * - each order with a ledger entry has exactly one notification, and no order has a notification
 *   without a ledger entry;
 * - each order's `pointsAwarded` equals its ledger's points (a payment applied twice would show
 *   in both);
 * - each ledger entry has exactly one `PaymentReceived` outbox item.
 */
export const check: LocalCheck = async ({ documentClient, tables, inboxTable }) => {
  const problems: string[] = [];
  const ledger = new Map<string, number>();
  const ledgerPoints = new Map<string, number>();
  const notifications = new Map<string, number>();
  const awarded = new Map<string, number>();
  const add = (map: Map<string, number>, key: string, n = 1) => map.set(key, (map.get(key) ?? 0) + n);
  for await (const page of paginateScan({ client: documentClient }, { TableName: tables.orders, ConsistentRead: true })) {
    for (const item of page.Items ?? []) {
      const orderId = String(item.orderId);
      const sk = String(item.sk);
      if (sk.startsWith(LEDGER_SK_PREFIX)) {
        add(ledger, orderId);
        add(ledgerPoints, orderId, Number(item.points));
      } else if (sk.startsWith(NOTIFICATION_SK_PREFIX)) add(notifications, orderId);
      // A stub holds only the inbox marks of an order that does not exist (docs/inbox-home.md): no order.
      else if (sk === ORDER_SK && item._inboxStub !== true) awarded.set(orderId, Number(item.pointsAwarded));
    }
  }
  const payments = new Map<string, number>();
  for await (const page of paginateScan(
    { client: documentClient },
    { TableName: inboxTable, ConsistentRead: true, FilterExpression: 'kind = :k', ExpressionAttributeValues: { ':k': 'outbox' } },
  )) {
    for (const item of page.Items ?? []) {
      const body = JSON.parse(String(item.body)) as { type?: string; orderId?: string };
      if (body.type === 'PaymentReceived' && body.orderId !== undefined) add(payments, body.orderId);
    }
  }
  for (const orderId of ledger.keys()) {
    const sent = notifications.get(orderId) ?? 0;
    if (sent !== 1) problems.push(`order ${orderId} has a ledger entry and ${sent} notifications (expected 1)`);
    const published = payments.get(orderId) ?? 0;
    if (published !== 1) problems.push(`order ${orderId} has a ledger entry and ${published} PaymentReceived outbox items (expected 1)`);
  }
  for (const [orderId, sent] of notifications) {
    if (!ledger.has(orderId)) problems.push(`order ${orderId} has ${sent} notification(s) but no ledger entry`);
  }
  for (const [orderId, points] of awarded) {
    const inLedger = ledgerPoints.get(orderId) ?? 0;
    if (points !== inLedger) problems.push(`order ${orderId} shows ${points} points awarded, its ledger ${inLedger}`);
  }
  return problems;
};
