/**
 * Attribute values of the generated consumers, in three forms:
 *
 * - {@link ValueSpec}: plain JSON, as a schedule (and its replay file) holds it, with tagged
 *   objects for what JSON cannot say (`BigInt`, `NumberValue`, `Buffer`, `Uint8Array`, sets, a
 *   400 KB string, a value the document client refuses);
 * - native: what the user's code hands the AWS SDK v3 document client and gets back from it;
 * - {@link Av}: DynamoDB's own typed form, canonical (numbers in canonical decimal text, binary in
 *   base64, sets sorted), the form the reference model keeps and compares items in.
 *
 * Native values are turned into `Av` by the document client's own `marshall` (with the options
 * the engine's client uses), so what it refuses the model refuses too.
 *
 * @module
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { marshall, NumberValueImpl as NumberValue, unmarshall } from '@aws-sdk/util-dynamodb';
import { canonicalJson } from 'idempotent-consumer/internal';
import { canonicalNumber, significantDigits } from './decimal.js';

/** Values a document client cannot write (each makes `marshall` throw) or an outbox body cannot hold. */
export const badValueKinds = ['nan', 'inf', '-inf', 'emptySet', 'date', 'unsafe'] as const;
export type BadValueKind = (typeof badValueKinds)[number];

/**
 * An attribute value as a schedule holds it: JSON scalars and lists as themselves, a map as
 * `{ "$m": {…} }`, and tagged objects for the rest.
 */
export type ValueSpec =
  | string
  | number
  | boolean
  | null
  | readonly ValueSpec[]
  | { readonly $m: Readonly<Record<string, ValueSpec>> }
  /** A `BigInt` (decimal text). */
  | { readonly $big: string }
  /** lib-dynamodb's `NumberValue` (decimal text). */
  | { readonly $nv: string }
  /** A `Buffer` (base64). */
  | { readonly $buf: string }
  /** A `Uint8Array` (base64). */
  | { readonly $u8: string }
  /** A string set. */
  | { readonly $ss: readonly string[] }
  /** A number set of safe numbers. */
  | { readonly $ns: readonly number[] }
  /** A number set of `BigInt`s (decimal text). */
  | { readonly $nsBig: readonly string[] }
  /** A binary set of `Buffer`s (base64). */
  | { readonly $bs: readonly string[] }
  /** `text` repeated `n` times (a large attribute without a large schedule). */
  | { readonly $rep: string; readonly n: number }
  /** A value the document client cannot marshall. */
  | { readonly $bad: BadValueKind };

/** DynamoDB's typed form of a value, canonical. */
export type Av =
  | { readonly S: string }
  | { readonly N: string }
  | { readonly B: string }
  | { readonly BOOL: boolean }
  | { readonly NULL: true }
  | { readonly L: readonly Av[] }
  | { readonly M: AvItem }
  | { readonly SS: readonly string[] }
  | { readonly NS: readonly string[] }
  | { readonly BS: readonly string[] };

/** An item (or map) in {@link Av} form: attribute name → value. */
export type AvItem = Readonly<Record<string, Av>>;

/** The document client's marshalling options of the engine (`createIdempotentConsumer`). */
const MARSHALL_OPTIONS = { removeUndefinedValues: true } as const;

const tagged = (spec: object, tag: string): boolean => Object.keys(spec).length >= 1 && Object.hasOwn(spec, tag);

/** The native JavaScript value of a {@link ValueSpec}. */
export function toNative(spec: ValueSpec): unknown {
  if (spec === null || typeof spec !== 'object') return spec;
  if (Array.isArray(spec)) return spec.map((value: ValueSpec) => toNative(value));
  const s = spec as Record<string, unknown>;
  if (tagged(s, '$m'))
    return Object.fromEntries(Object.entries(s.$m as Record<string, ValueSpec>).map(([name, value]) => [name, toNative(value)]));
  if (tagged(s, '$big')) return BigInt(s.$big as string);
  if (tagged(s, '$nv')) return NumberValue.from(s.$nv as string);
  if (tagged(s, '$buf')) return Buffer.from(s.$buf as string, 'base64');
  if (tagged(s, '$u8')) return new Uint8Array(Buffer.from(s.$u8 as string, 'base64'));
  if (tagged(s, '$ss')) return new Set(s.$ss as string[]);
  if (tagged(s, '$ns')) return new Set(s.$ns as number[]);
  if (tagged(s, '$nsBig')) return new Set((s.$nsBig as string[]).map((text) => BigInt(text)));
  if (tagged(s, '$bs')) return new Set((s.$bs as string[]).map((text) => Buffer.from(text, 'base64')));
  if (tagged(s, '$rep')) return (s.$rep as string).repeat(s.n as number);
  if (tagged(s, '$bad')) return badNative(s.$bad as BadValueKind);
  throw new Error(`not a value spec: ${JSON.stringify(spec).slice(0, 100)}`);
}

function badNative(kind: BadValueKind): unknown {
  switch (kind) {
    case 'nan':
      return Number.NaN;
    case 'inf':
      return Number.POSITIVE_INFINITY;
    case '-inf':
      return Number.NEGATIVE_INFINITY;
    case 'emptySet':
      return new Set<string>();
    case 'date':
      return new Date(0);
    case 'unsafe':
      return 2 ** 60;
  }
}

/** Whether a spec holds a value the document client refuses. */
export function holdsBadValue(spec: ValueSpec): boolean {
  if (spec === null || typeof spec !== 'object') return false;
  if (Array.isArray(spec)) return spec.some((value: ValueSpec) => holdsBadValue(value));
  const s = spec as Record<string, unknown>;
  if (tagged(s, '$bad')) return true;
  if (tagged(s, '$m')) return Object.values(s.$m as Record<string, ValueSpec>).some((value) => holdsBadValue(value));
  return false;
}

/** An SDK `AttributeValue` (as `marshall` makes it or a read returns it) in canonical {@link Av} form. */
export function fromSdk(value: AttributeValue): Av {
  if (value.S !== undefined) return { S: value.S };
  if (value.N !== undefined) return { N: canonicalNumber(value.N) };
  if (value.B !== undefined) return { B: Buffer.from(value.B).toString('base64') };
  if (value.BOOL !== undefined) return { BOOL: value.BOOL };
  if (value.NULL !== undefined) return { NULL: true };
  if (value.L !== undefined) return { L: value.L.map(fromSdk) };
  if (value.M !== undefined) return { M: fromSdkItem(value.M) };
  if (value.SS !== undefined) return { SS: [...new Set(value.SS)].sort(compareText) };
  if (value.NS !== undefined) return { NS: [...new Set(value.NS.map((n) => canonicalNumber(n)))].sort(compareText) };
  if (value.BS !== undefined) return { BS: [...new Set(value.BS.map((b) => Buffer.from(b).toString('base64')))].sort(compareText) };
  throw new Error(`an attribute value of an unknown type: ${Object.keys(value).join(', ')}`);
}

/** An SDK item in canonical form. */
export function fromSdkItem(item: Readonly<Record<string, AttributeValue>>): AvItem {
  return Object.fromEntries(Object.entries(item).map(([name, value]) => [name, fromSdk(value)]));
}

/** The SDK form of a canonical value (binary as bytes). */
export function toSdk(value: Av): AttributeValue {
  if ('B' in value) return { B: Buffer.from(value.B, 'base64') };
  if ('L' in value) return { L: value.L.map(toSdk) };
  if ('M' in value) return { M: toSdkItem(value.M) };
  if ('BS' in value) return { BS: value.BS.map((b) => Buffer.from(b, 'base64')) };
  return value as AttributeValue;
}

/** The SDK form of a canonical item. */
export function toSdkItem(item: AvItem): Record<string, AttributeValue> {
  return Object.fromEntries(Object.entries(item).map(([name, value]) => [name, toSdk(value)]));
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * A native item as the document client writes it, in canonical form.
 *
 * @throws Error when the document client refuses it (`NaN`, an empty set, a number beyond 2^53,
 *   a class instance, …): the message is the client's
 */
export function marshallItem(item: Readonly<Record<string, unknown>>): AvItem {
  return fromSdkItem(marshall(item as Record<string, unknown>, MARSHALL_OPTIONS) as Record<string, AttributeValue>);
}

/** One native value as the document client writes it. @throws Error as {@link marshallItem} */
export function marshallValue(value: unknown): Av {
  const item = marshallItem({ v: value });
  const av = item.v;
  if (av === undefined) throw new Error('the value was removed (undefined)');
  return av;
}

/** A canonical item as the document client returns it after a read (numbers beyond 2^53 as `BigInt`, binary as `Uint8Array`). */
export function toNativeItem(item: AvItem): Record<string, unknown> {
  return unmarshall(toSdkItem(item) as never) as Record<string, unknown>;
}

/** A comparable print of a canonical value or item (`(absent)` for `undefined`). */
export function printAv(value: Av | AvItem | undefined): string {
  return value === undefined ? '(absent)' : canonicalJson(value);
}

/**
 * A comparable print of any native value as the document client would store it: a value it
 * cannot marshall prints as its type; plain JSON prints as its canonical JSON.
 */
export function printNative(value: unknown): string {
  if (value === undefined) return '(absent)';
  try {
    return canonicalJson(marshallValue(value));
  } catch {
    return `(unmarshallable ${Object.prototype.toString.call(value)})`;
  }
}

/** UTF-8 bytes of a string. */
function utf8(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** Bytes of a value by DynamoDB's item size rules (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html). */
export function valueSize(value: Av): number {
  if ('S' in value) return utf8(value.S);
  if ('N' in value) return Math.ceil(significantDigits(value.N) / 2) + 1;
  if ('B' in value) return Buffer.from(value.B, 'base64').length;
  if ('BOOL' in value || 'NULL' in value) return 1;
  if ('L' in value) return 3 + value.L.reduce((sum, element) => sum + valueSize(element) + 1, 0);
  if ('M' in value) return 3 + Object.entries(value.M).reduce((sum, [name, element]) => sum + utf8(name) + valueSize(element) + 1, 0);
  if ('SS' in value) return value.SS.reduce((sum, s) => sum + utf8(s), 0);
  if ('NS' in value) return value.NS.reduce((sum, n) => sum + Math.ceil(significantDigits(n) / 2) + 1, 0);
  return value.BS.reduce((sum, b) => sum + Buffer.from(b, 'base64').length, 0);
}

/** Bytes of an item: its attribute names and values. */
export function itemSize(item: AvItem): number {
  return Object.entries(item).reduce((sum, [name, value]) => sum + utf8(name) + valueSize(value), 0);
}

/**
 * An item's own attribute `name` (never one of `Object.prototype`'s: an attribute may be called
 * `toString` or `hasOwnProperty`).
 */
export function own<T>(item: Readonly<Record<string, T>> | undefined, name: string): T | undefined {
  return item !== undefined && Object.hasOwn(item, name) ? item[name] : undefined;
}

/** DynamoDB's item size limit, in bytes. */
export const MAX_ITEM_BYTES = 400 * 1024;

/** A number in canonical text, from a native number, `BigInt` or `NumberValue`; `undefined` for anything else. */
export function numberText(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return canonicalNumber(value);
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof NumberValue) return canonicalNumber(value.toString());
  return undefined;
}

/**
 * The native form of canonical number text as the document client returns it: a `number` when
 * it is exact as one, else a `BigInt` (an integer beyond 2^53).
 */
export function nativeNumber(text: string): number | bigint {
  const n = Number(text);
  if (Number.isSafeInteger(n) || (!/^-?\d+$/.test(text) && String(n) === text)) return n;
  return BigInt(text);
}
