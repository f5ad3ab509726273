/**
 * Item values as the AWS SDK v3 document client gives and takes them, handled exactly: numbers
 * that a JavaScript `number` cannot hold, binary values, sets. The engine reads, compares, clones
 * and writes the user's items through these functions only, so that no value loses precision or
 * changes type on its way through a decision.
 *
 * @module
 */
import { NumberValue } from '@aws-sdk/lib-dynamodb';
import type { marshallOptions, unmarshallOptions } from '@aws-sdk/util-dynamodb';

/**
 * The canonical text of a DynamoDB number, so that `1`, `1.0`, `1e0` and `10e-1` (one number to
 * DynamoDB, which trims leading and trailing zeros) print the same: an optional `-`, the
 * significant digits, `e`, the exponent of the last digit (`-15e-1` is -1.5). Zero is `0`.
 *
 * @param text - a number as DynamoDB writes it (`N`), or as `String()` writes a number or bigint
 * @returns `undefined` when `text` is not a decimal number
 */
export function canonicalNumber(text: string): string | undefined {
  const match = /^\s*([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?\s*$/.exec(text);
  if (match === null) return undefined;
  const [, sign, whole = '', fraction = '', exponentText] = match;
  if (whole === '' && fraction === '') return undefined;
  let digits = `${whole}${fraction}`.replace(/^0+/, '');
  let exponent = Number(exponentText ?? '0') - fraction.length;
  if (digits === '') return '0';
  const trailing = /0+$/.exec(digits)?.[0].length ?? 0;
  digits = digits.slice(0, digits.length - trailing);
  exponent += trailing;
  return `${sign === '-' ? '-' : ''}${digits}e${exponent}`;
}

/** Whether `value` is the document client's `NumberValue` (from this copy of the SDK or another one). */
export function isNumberValue(value: unknown): value is NumberValue {
  return (
    value instanceof NumberValue ||
    (value !== null &&
      typeof value === 'object' &&
      value.constructor?.name === 'NumberValue' &&
      typeof (value as { value?: unknown }).value === 'string')
  );
}

/**
 * How the engine reads a DynamoDB number (`wrapNumbers`): a `number` when a `number` holds it
 * exactly (and the SDK writes it back: an integer within ±2^53); a `bigint` for a larger
 * integer; a `NumberValue` (its exact text) otherwise. The
 * document client's default throws for a large decimal and silently rounds a long fraction.
 */
export function preciseNumber(text: string): number | bigint | NumberValue {
  const canonical = canonicalNumber(text);
  const number = Number(text);
  const writable = Number.isFinite(number) && (!Number.isInteger(number) || Number.isSafeInteger(number));
  if (canonical !== undefined && writable && canonicalNumber(String(number)) === canonical) return number;
  if (canonical !== undefined) {
    const [mantissa, exponent] = canonical.split('e') as [string, string];
    if (Number(exponent) >= 0) return BigInt(`${mantissa}${'0'.repeat(Number(exponent))}`);
  }
  return new NumberValue(text);
}

/**
 * The document client's marshalling of the engine's client: `undefined` attributes are left out.
 * Frozen: give the document client a copy (it sets options of its own on the object it is given).
 */
export const MARSHALL_OPTIONS: Readonly<marshallOptions> = Object.freeze({ removeUndefinedValues: true });
/** The document client's unmarshalling of the engine's client: numbers read exactly (`preciseNumber`). Frozen, as above. */
export const UNMARSHALL_OPTIONS: Readonly<unmarshallOptions> = Object.freeze({ wrapNumbers: preciseNumber });

/**
 * A deep copy of a document value: maps, lists, sets, `Uint8Array`/`Buffer` (copied, class
 * kept), `bigint` and `NumberValue` (immutable, kept). Unlike `structuredClone`, a
 * `NumberValue` stays one (a plain `{ value }` would be written back as a map).
 */
export function cloneValue<T>(value: T): T {
  const copy = (v: unknown): unknown => {
    if (v === null || typeof v !== 'object') return v;
    if (isNumberValue(v)) return v;
    if (Buffer.isBuffer(v)) return Buffer.from(v);
    if (v instanceof Uint8Array) return new Uint8Array(v);
    if (v instanceof Set) {
      // The SDK writes a number set as its first member's type: a `number` first cannot be
      // followed by a `bigint` beyond 2^53, so the exact members go first.
      const members = [...v].map(copy);
      const exact: unknown[] = members.filter((m) => typeof m === 'bigint' || isNumberValue(m));
      return new Set(exact.length === 0 ? members : [...exact, ...members.filter((m) => !exact.includes(m))]);
    }
    if (Array.isArray(v)) return v.map(copy);
    if (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null) {
      const out: Record<string, unknown> = {};
      for (const [key, inner] of Object.entries(v)) out[key] = copy(inner);
      return out;
    }
    return v;
  };
  return copy(value) as T;
}

/**
 * A comparable print of a document value: map keys sorted, set members sorted, numbers in their
 * canonical form whatever their type (`1`, `1n`, `NumberValue('1.0')` print alike), binary as
 * base64. Two values print the same exactly when DynamoDB would store the same value.
 */
export function printValue(value: unknown): string {
  const print = (v: unknown): string => {
    if (v === undefined) return 'u';
    if (v === null) return 'null';
    if (typeof v === 'string') return `S${JSON.stringify(v)}`;
    if (typeof v === 'boolean') return v ? 'true' : 'false';
    if (typeof v === 'number' || typeof v === 'bigint') return `N${canonicalNumber(String(v)) ?? String(v)}`;
    if (isNumberValue(v)) return `N${canonicalNumber(v.value) ?? v.value}`;
    if (v instanceof Uint8Array) return `B${Buffer.from(v).toString('base64')}`;
    if (v instanceof Set) return `SET[${[...v].map(print).sort().join(',')}]`;
    if (Array.isArray(v)) return `L[${v.map(print).join(',')}]`;
    if (typeof v === 'object') {
      const entries = Object.entries(v as Record<string, unknown>).filter(([, inner]) => inner !== undefined);
      entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      return `M{${entries.map(([key, inner]) => `${JSON.stringify(key)}:${print(inner)}`).join(',')}}`;
    }
    return `?${typeof v}`;
  };
  return print(value);
}
