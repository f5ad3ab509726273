/**
 * The size DynamoDB gives an item, by its documented rules
 * (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html):
 * attribute names and string values in UTF-8 bytes, binary values in bytes, a number about one
 * byte per two significant digits plus one (at most 21), booleans and nulls one byte, lists and
 * maps three bytes beside their contents (a map's keys count as names), sets the sum of their
 * members.
 *
 * @module
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { canonicalNumber } from './values.js';

/** DynamoDB's largest item, in bytes (400 KB). */
export const MAX_ITEM_BYTES = 400 * 1024;

function numberBytes(text: string): number {
  const digits = (canonicalNumber(text) ?? text).replace(/^-/, '').split('e')[0]!.length;
  return Math.min(21, Math.ceil(digits / 2) + 1);
}

/** The size of one marshalled value, in bytes. Iterative (values may nest 32 levels). */
export function attributeValueBytes(value: AttributeValue): number {
  let total = 0;
  const stack: AttributeValue[] = [value];
  while (stack.length > 0) {
    const v = stack.pop()!;
    if (v.S !== undefined) total += Buffer.byteLength(v.S, 'utf8');
    else if (v.N !== undefined) total += numberBytes(v.N);
    else if (v.B !== undefined) total += v.B.byteLength;
    else if (v.BOOL !== undefined || v.NULL !== undefined) total += 1;
    else if (v.SS !== undefined) total += v.SS.reduce((sum, s) => sum + Buffer.byteLength(s, 'utf8'), 0);
    else if (v.NS !== undefined) total += v.NS.reduce((sum, n) => sum + numberBytes(n), 0);
    else if (v.BS !== undefined) total += v.BS.reduce((sum, b) => sum + b.byteLength, 0);
    else if (v.L !== undefined) {
      total += 3;
      stack.push(...v.L);
    } else if (v.M !== undefined) {
      total += 3;
      for (const [name, inner] of Object.entries(v.M)) {
        total += Buffer.byteLength(name, 'utf8');
        stack.push(inner);
      }
    }
  }
  return total;
}

/** The size of a marshalled item (or key, or map of expression values), in bytes. */
export function itemBytes(item: Readonly<Record<string, AttributeValue>>): number {
  let total = 0;
  for (const [name, value] of Object.entries(item)) total += Buffer.byteLength(name, 'utf8') + attributeValueBytes(value);
  return total;
}
