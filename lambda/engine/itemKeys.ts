import { ConsumerDefinitionError, ValidationError } from '../errors.js';
import type { Item, TableDefinition } from '../types.js';

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

/** A key attribute value as text for an item id; `undefined` when it is not a valid key type. */
function keyPart(value: unknown): string | undefined {
  if (typeof value === 'string') return `S${value}`;
  if (typeof value === 'number' && Number.isFinite(value)) return `N${value}`;
  if (typeof value === 'bigint') return `N${value}`;
  if (value instanceof Uint8Array) return `B${Buffer.from(value).toString('base64')}`;
  return undefined;
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
    throw new ConsumerDefinitionError(`${what} names table ${JSON.stringify(table)}, which is not one of the consumer's tables (${Object.keys(tables).join(', ') || 'none'})`);
  }
  const names = definition.sortKey === undefined ? [definition.partitionKey] : [definition.partitionKey, definition.sortKey];
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
      if (Buffer.byteLength(value, 'utf8') > limit) throw new ValidationError(`${what} on table ${table}: key attribute ${name} is longer than ${limit} bytes`);
    }
    key[name] = value;
    parts.push(part);
  });
  if (what === 'read()' && Object.keys(source).length !== names.length) {
    throw new ConsumerDefinitionError(`read() gave table ${table} a key with attributes ${Object.keys(source).join(', ')}; its key is ${names.join(', ')}`);
  }
  return { table, tableName, key, id: `${table}\u0001${JSON.stringify(parts)}` };
}
