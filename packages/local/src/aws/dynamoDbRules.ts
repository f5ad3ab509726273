/**
 * DynamoDB rules that DynamoDB Local does not enforce (or enforces only in part), as pure
 * functions over requests in the low-level `AttributeValue` form, for the strict DynamoDB layer
 * (`local/aws/strictDynamoDb.ts`).
 *
 * Sources: `TransactWriteItems` ("no two actions can target the same item"),
 * https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html ;
 * transaction conflicts, "Transaction conflict handling in DynamoDB",
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-conflict-handling
 *
 * @module
 */

/** An attribute value in DynamoDB's JSON form (`{ S }`, `{ N }`, `{ B }`, …). */
export type WireAttributeValue = Readonly<Record<string, unknown>>;

/** The key attribute names of a table. */
export interface KeySchema {
  readonly partitionKey: string;
  readonly sortKey?: string;
}

/** One action of a `TransactWriteItems` or `TransactGetItems`, reduced to what the rules need. */
export interface TransactionTarget {
  /** Position in `TransactItems`. */
  readonly index: number;
  /** `Put`, `Update`, `Delete`, `ConditionCheck` or `Get`. */
  readonly action: string;
  readonly tableName: string;
  /** The item's key attributes (a `Put`'s item is reduced to them once its table's key schema is known). */
  readonly key?: Readonly<Record<string, WireAttributeValue>>;
  /** A `Put`'s whole item (its key needs the table's key schema). */
  readonly item?: Readonly<Record<string, WireAttributeValue>>;
}

/**
 * The actions of `TransactItems` (of `TransactWriteItems` or `TransactGetItems`) with their
 * table and key; entries that are not well-formed are skipped (DynamoDB Local refuses those).
 */
export function transactionTargets(transactItems: unknown): TransactionTarget[] {
  if (!Array.isArray(transactItems)) return [];
  const targets: TransactionTarget[] = [];
  transactItems.forEach((entry: unknown, index) => {
    if (typeof entry !== 'object' || entry === null) return;
    for (const [action, body] of Object.entries(entry as Record<string, unknown>)) {
      if (typeof body !== 'object' || body === null) continue;
      const { TableName, Key, Item } = body as { TableName?: unknown; Key?: unknown; Item?: unknown };
      if (typeof TableName !== 'string') continue;
      targets.push({
        index,
        action,
        tableName: TableName,
        ...(isAttributeMap(Key) ? { key: Key } : {}),
        ...(isAttributeMap(Item) ? { item: Item } : {}),
      });
    }
  });
  return targets;
}

function isAttributeMap(value: unknown): value is Record<string, WireAttributeValue> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A string that is equal for two keys exactly when DynamoDB sees one item: the table name and
 * the key attributes (numbers compared as numbers, `1` = `1.0`; binary by its bytes).
 *
 * @param keySchema - needed when `key` may hold other attributes too (a `Put`'s item)
 * @returns `undefined` when a key attribute is missing (DynamoDB Local refuses such a request)
 */
export function itemIdentity(
  tableName: string,
  key: Readonly<Record<string, WireAttributeValue>>,
  keySchema?: KeySchema,
): string | undefined {
  const names = keySchema
    ? [keySchema.partitionKey, ...(keySchema.sortKey === undefined ? [] : [keySchema.sortKey])]
    : Object.keys(key).sort();
  const parts: string[] = [];
  for (const name of names) {
    const value = key[name];
    if (value === undefined) return undefined;
    parts.push(`${name}=${canonicalScalar(value)}`);
  }
  return JSON.stringify([tableName, ...parts]);
}

function canonicalScalar(value: WireAttributeValue): string {
  if (typeof value['S'] === 'string') return `S:${value['S']}`;
  if (typeof value['N'] === 'string') return `N:${canonicalNumber(value['N'])}`;
  const binary = value['B'];
  if (binary instanceof Uint8Array) return `B:${Buffer.from(binary).toString('base64')}`;
  if (typeof binary === 'string') return `B:${binary}`;
  return JSON.stringify(value);
}

/** A decimal number's canonical text: `-01.50e1` → `-15`, `0.0` → `0`. */
export function canonicalNumber(text: string): string {
  const match = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text.trim());
  if (!match) return text;
  const [, sign = '', integerPart = '', fractionPart = '', exponentText = '0'] = match;
  const digits = `${integerPart}${fractionPart}`;
  const firstSignificant = digits.search(/[1-9]/);
  if (firstSignificant === -1) return '0';
  const significant = digits.slice(firstSignificant).replace(/0+$/, '');
  // Position of the decimal point relative to the first significant digit.
  const pointAt = integerPart.length - firstSignificant + Number(exponentText);
  return `${sign === '-' ? '-' : ''}0.${significant}e${pointAt}`;
}

/** Two or more actions of one transaction on one item. */
export interface DuplicateTarget {
  readonly identity: string;
  /** Positions in `TransactItems`, in order. */
  readonly indexes: readonly number[];
}

/**
 * The items that more than one action of a transaction targets. AWS refuses such a
 * `TransactWriteItems` (or `TransactGetItems`) with `ValidationException: Transaction request
 * cannot include multiple operations on one item`, whatever the actions and their order.
 *
 * @param keySchemaOf - the key schema of a table (to find a `Put`'s key in its item)
 */
export function duplicateTargets(
  targets: readonly TransactionTarget[],
  keySchemaOf: (tableName: string) => KeySchema | undefined,
): DuplicateTarget[] {
  const byIdentity = new Map<string, number[]>();
  for (const target of targets) {
    const identity = identityOf(target, keySchemaOf);
    if (identity === undefined) continue;
    byIdentity.set(identity, [...(byIdentity.get(identity) ?? []), target.index]);
  }
  return [...byIdentity].filter(([, indexes]) => indexes.length > 1).map(([identity, indexes]) => ({ identity, indexes }));
}

/** The identity of a transaction action's item, or `undefined` when it cannot be known (no key, unknown schema). */
export function identityOf(target: TransactionTarget, keySchemaOf: (tableName: string) => KeySchema | undefined): string | undefined {
  if (target.key !== undefined) return itemIdentity(target.tableName, target.key);
  if (target.item !== undefined) {
    const schema = keySchemaOf(target.tableName);
    return schema === undefined ? undefined : itemIdentity(target.tableName, target.item, schema);
  }
  return undefined;
}

/** What holds an item right now. */
type Holder = 'transaction' | 'write';

/**
 * The items that requests in flight are changing, to raise DynamoDB's transaction conflicts
 * (DynamoDB Local runs overlapping transactions one after the other and never reports one):
 *
 * - a `TransactWriteItems` whose item is part of another ongoing `TransactWriteItems` is
 *   cancelled (`TransactionCanceledException`, reason `TransactionConflict` for that item);
 * - a `PutItem`, `UpdateItem` or `DeleteItem` of an item in an ongoing `TransactWriteItems`
 *   fails with `TransactionConflictException`;
 * - a `TransactGetItems` whose item is part of an ongoing `TransactWriteItems` or single-item
 *   write is cancelled (`TransactionConflict`).
 *
 * A request holds its items from the moment it is sent until its response arrives. Share one
 * tracker between all clients of one DynamoDB (the default of `installStrictDynamoDb` is one per
 * process).
 */
export class ConflictTracker {
  readonly #held = new Map<string, Map<Holder, number>>();

  /** Whether `identity` is held by a request of one of `kinds`. */
  isHeld(identity: string, kinds: readonly Holder[]): boolean {
    const holders = this.#held.get(identity);
    return holders !== undefined && kinds.some((kind) => (holders.get(kind) ?? 0) > 0);
  }

  /**
   * Holds `identities` for a request of `kind` until the returned release is called (once).
   */
  hold(identities: Iterable<string>, kind: Holder): () => void {
    const taken = [...new Set(identities)];
    for (const identity of taken) {
      const holders = this.#held.get(identity) ?? new Map<Holder, number>();
      holders.set(kind, (holders.get(kind) ?? 0) + 1);
      this.#held.set(identity, holders);
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const identity of taken) {
        const holders = this.#held.get(identity);
        if (holders === undefined) continue;
        const count = (holders.get(kind) ?? 1) - 1;
        if (count > 0) holders.set(kind, count);
        else holders.delete(kind);
        if (holders.size === 0) this.#held.delete(identity);
      }
    };
  }

  /** Items held right now (for tests and diagnostics). */
  get size(): number {
    return this.#held.size;
  }
}
