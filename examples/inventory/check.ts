/**
 * The inventory's own invariants, checked after a local run: each SKU's `reserved` equals the sum
 * of its held reservations, and no stock level is negative.
 *
 * @module
 */
import { paginateScan } from '@aws-sdk/lib-dynamodb';
import type { LocalCheck } from '@idempotent-consumer/local';

export const check: LocalCheck = async ({ documentClient, tables }) => {
  const problems: string[] = [];
  const held = new Map<string, number>();
  for await (const page of paginateScan({ client: documentClient }, { TableName: tables.reservations, ConsistentRead: true })) {
    for (const item of page.Items ?? []) {
      if (item.status === 'held') held.set(String(item.sku), (held.get(String(item.sku)) ?? 0) + Number(item.quantity));
    }
  }
  for await (const page of paginateScan({ client: documentClient }, { TableName: tables.stock, ConsistentRead: true })) {
    for (const item of page.Items ?? []) {
      const sku = String(item.sku);
      if (Number(item.available) < 0) problems.push(`${sku} has ${item.available} available`);
      if (Number(item.reserved) !== (held.get(sku) ?? 0))
        problems.push(`${sku} has ${item.reserved} reserved, its held reservations ${held.get(sku) ?? 0}`);
    }
  }
  return problems;
};
