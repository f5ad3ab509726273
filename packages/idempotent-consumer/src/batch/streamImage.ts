import type { AttributeValue } from 'aws-lambda';
import { canonicalNumber } from '../engine/values.js';

/** An item image of a DynamoDB stream record, as Lambda puts it in the event: attribute name → typed value (DynamoDB JSON). */
export type StreamImage = Readonly<Record<string, AttributeValue>>;

/**
 * A DynamoDB stream image (DynamoDB JSON, as in the event) as plain JSON, the form a consumer's
 * schema parses:
 *
 * - `S` → string, `BOOL` → boolean, `NULL` → `null`, `M` → object, `L` → array;
 * - `N` → number when a JavaScript `number` holds it exactly (an integer within ±2^53, or a
 *   decimal whose shortest form is the same number), else the number's text as DynamoDB wrote it
 *   (no silent rounding);
 * - `B` → the base64 text Lambda sends; `SS`, `NS`, `BS` → arrays (numbers as for `N`).
 *
 * Pure; attribute order is kept.
 *
 * @throws TypeError when a value has none of the DynamoDB JSON types
 */
export function streamImageToJson(image: StreamImage): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(image)) result[name] = attributeToJson(value);
  return result;
}

function attributeToJson(value: AttributeValue): unknown {
  if (value.S !== undefined) return value.S;
  if (value.N !== undefined) return numberToJson(value.N);
  if (value.BOOL !== undefined) return value.BOOL;
  if (value.NULL !== undefined) return null;
  if (value.M !== undefined) return streamImageToJson(value.M);
  if (value.L !== undefined) return value.L.map(attributeToJson);
  if (value.B !== undefined) return value.B;
  if (value.SS !== undefined) return [...value.SS];
  if (value.NS !== undefined) return value.NS.map(numberToJson);
  if (value.BS !== undefined) return [...value.BS];
  throw new TypeError(`not a DynamoDB attribute value: ${JSON.stringify(value)?.slice(0, 100)}`);
}

function numberToJson(text: string): number | string {
  const number = Number(text);
  const exact = Number.isFinite(number) && (!Number.isInteger(number) || Number.isSafeInteger(number));
  return exact && canonicalNumber(String(number)) === canonicalNumber(text) ? number : text;
}
