/**
 * DynamoDB's billing rules, applied to the requests themselves: the size of an item, and the read
 * and write units a request consumes. DynamoDB Local does not report consumed capacity the way
 * AWS bills it (it reports one item per table for a transaction), so the benchmark counts units
 * from what it sends and what comes back.
 *
 * Sources (AWS documentation):
 * - item sizes, and units per operation (4 KB read units, 1 KB write units, eventually consistent
 *   reads at half a unit, a read of a missing item still costs the minimum, a failed conditional
 *   write still costs write units):
 *   https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html
 *   and https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html
 * - transactions: "DynamoDB performs two underlying reads or writes of every item in the
 *   transaction: one to prepare the transaction and one to commit the transaction" (2 units per
 *   4 KB read or 1 KB write):
 *   https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-capacity-handling
 * - on-demand prices: https://aws.amazon.com/dynamodb/pricing/on-demand/
 *
 * What AWS does not document, and what this module assumes instead:
 * - **A cancelled `TransactWriteItems`** is counted as if every one of its actions had been
 *   written (2 write units per started KB of each item), the same as a committed one. AWS states
 *   the two underlying writes per item but not what a cancellation refunds; counting the full
 *   charge is an upper bound, and it can only make the engine look worse (the baseline sends no
 *   transaction that is cancelled in these scenarios). A cancelled `TransactGetItems` likewise
 *   counts 2 read units per item.
 * - **A `ConditionCheck`** in a transaction counts as a write of its item (2 units per started KB
 *   of the stored item, at least 2).
 * - **Numbers** are sized as AWS estimates them: 1 byte per two significant digits, plus 1.
 *
 * @module
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';

/** 4 KB: the size of one read unit. */
export const READ_UNIT_BYTES = 4096;
/** 1 KB: the size of one write unit. */
export const WRITE_UNIT_BYTES = 1024;

/**
 * On-demand prices of the Standard table class in US East (N. Virginia), `us-east-1`, in US
 * dollars per million request units, as listed on https://aws.amazon.com/dynamodb/pricing/on-demand/
 * (the prices in force since AWS's on-demand price reduction of 1 November 2024). One write
 * request unit (WRU) is one write unit above; one read request unit (RRU) one read unit.
 */
export const ON_DEMAND_PRICES = {
  region: 'us-east-1',
  tableClass: 'Standard',
  usdPerMillionWriteRequestUnits: 0.625,
  usdPerMillionReadRequestUnits: 0.125,
  source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/',
} as const;

/**
 * US dollars per million messages at on-demand prices, from units per message.
 *
 * @param readUnitsPerMessage - read request units per message
 * @param writeUnitsPerMessage - write request units per message
 */
export function usdPerMillionMessages(readUnitsPerMessage: number, writeUnitsPerMessage: number): number {
  return (
    readUnitsPerMessage * ON_DEMAND_PRICES.usdPerMillionReadRequestUnits +
    writeUnitsPerMessage * ON_DEMAND_PRICES.usdPerMillionWriteRequestUnits
  );
}

/** The size of one attribute value, in bytes, by AWS's rules (without its name). */
export function attributeValueSize(value: AttributeValue): number {
  if (value.S !== undefined) return Buffer.byteLength(value.S, 'utf8');
  if (value.N !== undefined) return numberSize(value.N);
  if (value.B !== undefined) return value.B.byteLength;
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.SS !== undefined) return value.SS.reduce((sum, s) => sum + Buffer.byteLength(s, 'utf8'), 0);
  if (value.NS !== undefined) return value.NS.reduce((sum, n) => sum + numberSize(n), 0);
  if (value.BS !== undefined) return value.BS.reduce((sum, b) => sum + b.byteLength, 0);
  // List or Map: 3 bytes of overhead, plus the nested elements (a map's with their names).
  if (value.L !== undefined) return 3 + value.L.reduce((sum, element) => sum + attributeValueSize(element), 0);
  if (value.M !== undefined) return 3 + itemSizeBytes(value.M);
  return 0;
}

/** A number's size: 1 byte per two significant digits (leading and trailing zeros trimmed), plus 1. */
function numberSize(text: string): number {
  const digits = text
    .replace(/^[-+]/, '')
    .replace(/[eE].*$/, '')
    .replace('.', '')
    .replace(/^0+/, '')
    .replace(/0+$/, '');
  return Math.ceil(Math.max(1, digits.length) / 2) + 1;
}

/** The size of an item in bytes: the sum of its attribute names' UTF-8 lengths and its values' sizes. */
export function itemSizeBytes(item: Readonly<Record<string, AttributeValue>>): number {
  let size = 0;
  for (const [name, value] of Object.entries(item)) size += Buffer.byteLength(name, 'utf8') + attributeValueSize(value);
  return size;
}

/** How a read is billed. */
export type ReadMode = 'eventual' | 'strong' | 'transactional';

/**
 * Read units of one item read: its size rounded up to 4 KB (a missing item counts as the
 * minimum), × 0.5 eventually consistent, × 1 strongly consistent, × 2 transactional.
 *
 * @param bytes - the item's size; 0 for a missing item
 */
export function readUnits(bytes: number, mode: ReadMode): number {
  const blocks = Math.max(1, Math.ceil(bytes / READ_UNIT_BYTES));
  return blocks * (mode === 'eventual' ? 0.5 : mode === 'strong' ? 1 : 2);
}

/**
 * Write units of one item write: its size rounded up to 1 KB (at least 1), × 2 in a transaction.
 *
 * @param bytes - the size that counts: the larger of the item before and after (a put or an
 *   update), the deleted item, or the stored item (a failed condition, a condition check)
 */
export function writeUnits(bytes: number, transactional: boolean): number {
  const blocks = Math.max(1, Math.ceil(bytes / WRITE_UNIT_BYTES));
  return blocks * (transactional ? 2 : 1);
}
