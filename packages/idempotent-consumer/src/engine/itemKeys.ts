import { ConsumerDefinitionError, ValidationError } from '../errors.js';
import type { Item, TableDefinition } from '../types.js';
import { canonicalNumber, isNumberValue } from './values.js';

/** DynamoDB's key size limits, in bytes (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html). */
const MAX_PARTITION_KEY_BYTES = 2048;
const MAX_SORT_KEY_BYTES = 1024;

/** An item of a business table, resolved: logical and physical table, its key, and an id unique within the batch. */
export interface ResolvedKey {
  /** The logical table name (a key of the consumer's `tables`). */
  readonly table: string;
  /** The physical table name. */
  readonly tableName: string;
  /** The primary key (only the key attributes). */
  readonly key: Item;
  /** `<logical table>\u0001<key values>`: the same for every mention of this item. */
  readonly id: string;
}

/**
 * A key attribute value as text for an item id, the same for every form of one DynamoDB value
 * (`1`, `1n` and `NumberValue('1.0')`; a `Buffer` and a `Uint8Array` of the same bytes);
 * `undefined` when it is not a valid key type.
 */
function keyPart(value: unknown): string | undefined {
  if (typeof value === 'string') return `S${value}`;
  if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'bigint') return `N${canonicalNumber(String(value))}`;
  if (isNumberValue(value)) {
    const canonical = canonicalNumber(value.value);
    return canonical === undefined ? undefined : `N${canonical}`;
  }
  if (value instanceof Uint8Array) return `B${Buffer.from(value).toString('base64')}`;
  return undefined;
}

/** The names of a table's key attributes: the partition key, then the sort key if any. */
export function keyNames(definition: TableDefinition): readonly string[] {
  return definition.sortKey === undefined ? [definition.partitionKey] : [definition.partitionKey, definition.sortKey];
}

/**
 * The id of the item of logical table `table` that `item` (an item or a key) holds the key of, as
 * {@link resolveKey} makes it; `undefined` when a key attribute is missing or not a key type.
 */
export function itemIdOf(table: string, definition: TableDefinition, item: Readonly<Item>): string | undefined {
  const parts: string[] = [];
  for (const name of keyNames(definition)) {
    const part = keyPart(item[name]);
    if (part === undefined) return undefined;
    parts.push(part);
  }
  return `${table}\u0001${JSON.stringify(parts)}`;
}

/**
 * Resolves the key of an item of `table`: checks the table is one of the consumer's and that the
 * key holds exactly its key attributes, with values DynamoDB accepts as keys.
 *
 * @param source - an item or key holding at least the key attributes (a `Put`'s `Item` holds more)
 * @param what - names the mention in error messages, e.g. `read()` or `a Put`
 * @throws ConsumerDefinitionError when the table is unknown or a key attribute is missing or of a wrong type
 * @throws ValidationError when a key value is empty, too long or not well-formed Unicode (it comes from the message)
 */
export function resolveKey(
  tables: Readonly<Record<string, TableDefinition>>,
  tableNames: Readonly<Record<string, string>>,
  table: string,
  source: Readonly<Item>,
  what: string,
): ResolvedKey {
  const definition = Object.hasOwn(tables, table) ? tables[table] : undefined;
  const tableName = Object.hasOwn(tableNames, table) ? tableNames[table] : undefined;
  if (definition === undefined || tableName === undefined) {
    throw new ConsumerDefinitionError(
      `${what} names table ${JSON.stringify(table)}, which is not one of the consumer's tables (${Object.keys(tables).join(', ') || 'none'})`,
    );
  }
  const names = keyNames(definition);
  const key: Item = {};
  const parts: string[] = [];
  names.forEach((name, index) => {
    const value = source[name];
    const part = keyPart(value);
    if (part === undefined) {
      throw new ConsumerDefinitionError(`${what} on table ${table} has no valid key attribute ${name} (a string, number or binary)`);
    }
    if (typeof value === 'string') {
      const limit = index === 0 ? MAX_PARTITION_KEY_BYTES : MAX_SORT_KEY_BYTES;
      if (value === '') throw new ValidationError(`${what} on table ${table}: key attribute ${name} is empty`);
      if (!value.isWellFormed()) throw new ValidationError(`${what} on table ${table}: key attribute ${name} is not well-formed Unicode`);
      if (Buffer.byteLength(value, 'utf8') > limit)
        throw new ValidationError(`${what} on table ${table}: key attribute ${name} is longer than ${limit} bytes`);
    }
    if (typeof value === 'number' && Math.abs(value) > Number.MAX_SAFE_INTEGER) {
      throw new ConsumerDefinitionError(
        `${what} on table ${table}: key attribute ${name} is a number beyond 2^53, which the AWS SDK refuses: give it as a BigInt or a NumberValue`,
      );
    }
    if (value instanceof Uint8Array) {
      const limit = index === 0 ? MAX_PARTITION_KEY_BYTES : MAX_SORT_KEY_BYTES;
      if (value.byteLength === 0) throw new ValidationError(`${what} on table ${table}: key attribute ${name} is empty`);
      if (value.byteLength > limit)
        throw new ValidationError(`${what} on table ${table}: key attribute ${name} is longer than ${limit} bytes`);
    }
    key[name] = value;
    parts.push(part);
  });
  if (what === 'read()' && Object.keys(source).length !== names.length) {
    throw new ConsumerDefinitionError(
      `read() gave table ${table} a key with attributes ${Object.keys(source).join(', ')}; its key is ${names.join(', ')}`,
    );
  }
  return { table, tableName, key, id: `${table}\u0001${JSON.stringify(parts)}` };
}
