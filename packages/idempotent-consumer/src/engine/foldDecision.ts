/**
 * Checks one decision and folds its writes into the round's item actions: a decision that the
 * SDK cannot serialize or that DynamoDB would refuse by its limits fails alone, here, before it
 * can take a transaction shared with other messages down with it (case C28).
 *
 * @module
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { ConsumerDefinitionError, InvalidWrite } from '../errors.js';
import type { Decision, Item, Write } from '../types.js';
import { userCondition } from './conditions.js';
import type { ConsumerDefinition } from './ConsumerDefinition.js';
import { checkEffectKeys } from './effectKeys.js';
import { itemBytes, MAX_ITEM_BYTES } from './itemSize.js';
import { type ResolvedKey, resolveKey } from './itemKeys.js';
import type { ItemOp, Known, Unit } from './Unit.js';
import { MARSHALL_OPTIONS } from './values.js';

/** DynamoDB's limit of actions in one `TransactWriteItems` (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html). */
export const MAX_TRANSACTION_ACTIONS = 100;
/** Bytes an outbox item holds beside its body (keys, ids, timestamps), generously. */
const OUTBOX_ITEM_OVERHEAD_BYTES = 2_048;
/** SQS and SNS take 10 message attributes; the relay adds its own `outboxMessageId`. */
const MAX_OUTBOX_ATTRIBUTES = 9;

type WriteKind = 'Put' | 'Update' | 'Delete' | 'ConditionCheck';
type WriteAction = {
  TableName?: string;
  Item?: Item;
  Key?: Item;
  ConditionExpression?: string;
  UpdateExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Item;
};

/** What folding needs of the round. */
export interface FoldContext {
  readonly definition: ConsumerDefinition<unknown>;
  /** The business tables: logical → physical name. */
  readonly tableNames: Readonly<Record<string, string>>;
  /** What the engine believes of an item at the start of the round. */
  readonly believed: (key: ResolvedKey) => Known;
  /** A new version for an item action. */
  readonly newVersion: () => string;
}

/** The one kind of a write, and its action. @throws ConsumerDefinitionError when it has none or several */
export function writeKind(write: Write): { readonly kind: WriteKind; readonly action: WriteAction } {
  const kinds = (['Put', 'Update', 'Delete', 'ConditionCheck'] as const).filter(
    (kind) => write?.[kind] !== undefined && write[kind] !== null,
  );
  if (kinds.length !== 1) throw new ConsumerDefinitionError('each write must have exactly one of Put, Update, Delete, ConditionCheck');
  const kind = kinds[0]!;
  const action = write[kind] as WriteAction;
  if (typeof action !== 'object') throw new ConsumerDefinitionError(`a ${kind} must be an object`);
  return { kind, action };
}

/** Whether a write carries a condition of the user's own. */
export function hasUserCondition(write: Write | undefined): boolean {
  return write !== undefined && userCondition(writeKind(write).action) !== undefined;
}

/**
 * Marshals `value` as the engine's document client will; on failure names the first top-level
 * attribute that cannot be written and why.
 *
 * @throws ConsumerDefinitionError naming `what` and the attribute
 */
function checkMarshals(value: Readonly<Item> | undefined, what: string): Record<string, AttributeValue> {
  if (value === undefined) return {};
  try {
    return marshall(value as Item, MARSHALL_OPTIONS);
  } catch (error) {
    for (const [name, inner] of Object.entries(value)) {
      try {
        marshall({ [name]: inner }, MARSHALL_OPTIONS);
      } catch (innerError) {
        throw new ConsumerDefinitionError(
          `${what}: attribute ${JSON.stringify(name.slice(0, 64))} cannot be written to DynamoDB (${reasonOf(innerError)})`,
          { cause: innerError },
        );
      }
    }
    throw new ConsumerDefinitionError(`${what} cannot be written to DynamoDB (${reasonOf(error)})`, { cause: error });
  }
}

function reasonOf(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).slice(0, 200);
}

/**
 * Where a value cannot be written as JSON without losing data (a `bigint`, `NaN`, `Infinity`,
 * a function or a symbol, a cycle): its path, or `undefined` when it can.
 */
export function jsonProblem(value: unknown): string | undefined {
  const seen = new Set<object>();
  const stack: { value: unknown; path: string }[] = [{ value, path: 'body' }];
  while (stack.length > 0) {
    const { value: v, path } = stack.pop()!;
    if (typeof v === 'bigint') return `${path} is a BigInt`;
    if (typeof v === 'number' && !Number.isFinite(v)) return `${path} is ${String(v)}`;
    if (typeof v === 'function' || typeof v === 'symbol') return `${path} is a ${typeof v}`;
    if (v === null || typeof v !== 'object') continue;
    if (seen.has(v)) return `${path} refers back to itself`;
    seen.add(v);
    if (typeof (v as { toJSON?: unknown }).toJSON === 'function') continue;
    for (const [key, inner] of Object.entries(v)) stack.push({ value: inner, path: `${path}.${key.slice(0, 64)}` });
  }
  return undefined;
}

/**
 * Checks a decision (its writes, outgoing messages and side effects) and returns how to fold it
 * into the round's actions, or `'defer'` when it touches an item another unit of the round writes
 * in a way that cannot be combined (the unit then waits for that commit).
 *
 * @param reads - the items the unit named in `read`, by id
 * @throws ConsumerDefinitionError for a malformed write, an unknown table, a value the SDK cannot
 *   serialize (`NaN`, a number beyond 2^53, an empty set, a `bigint` in an outgoing message…), a
 *   write of the version attribute, an unknown side effect, a side effect's key that is not a string,
 *   two side-effect requests with one effect key
 * @throws InvalidWrite when it exceeds DynamoDB's limits: an item over 400 KB, more than 100
 *   actions for its commit
 * @throws ValidationError when a key value taken from the message is empty, too long or not
 *   well-formed, or a side effect's chosen key is (or holds `#`)
 */
export function foldDecision(
  unit: Unit,
  decision: Decision,
  ops: Map<string, ItemOp>,
  reads: ReadonlyMap<string, ResolvedKey>,
  context: FoldContext,
): { fold: () => void } | 'defer' {
  const { definition, tableNames, believed } = context;
  const versionAttribute = definition.versionAttribute;
  const steps: (() => void)[] = [];
  const touched = new Set<string>();
  const writes = decision.writes ?? [];
  if (!Array.isArray(writes)) throw new ConsumerDefinitionError('decide() returned `writes` that is not an array');
  let deferred = false;
  for (const [position, write] of writes.entries()) {
    const { kind, action } = writeKind(write);
    const table = action.TableName ?? '';
    const source = kind === 'Put' ? action.Item : action.Key;
    if (source === undefined || source === null || typeof source !== 'object')
      throw new ConsumerDefinitionError(`a ${kind} on ${table} has no ${kind === 'Put' ? 'Item' : 'Key'}`);
    const key = resolveKey(definition.tables, tableNames, table, source, `a ${kind}`);
    const what = `write ${position} (${kind} on ${table})`;
    if (touched.has(key.id))
      throw new ConsumerDefinitionError(
        `decide() wrote the same item of ${table} twice; DynamoDB allows one action per item in a transaction`,
      );
    touched.add(key.id);
    checkVersionUntouched(kind, action, versionAttribute, what);
    const home = definition.home;
    if (home !== undefined && key.table === home.table) checkMarksUntouched(kind, action, [home.attribute, home.stubAttribute], what);
    const marshalled = checkMarshals(kind === 'Put' ? action.Item : action.Key, what);
    checkMarshals(action.ExpressionAttributeValues, `${what}, its ExpressionAttributeValues`);
    if (kind === 'Put') {
      const bytes = itemBytes(marshalled) + Buffer.byteLength(versionAttribute) + 18;
      if (bytes > MAX_ITEM_BYTES)
        throw new InvalidWrite(`${what}: the item is about ${bytes} bytes, more than DynamoDB's ${MAX_ITEM_BYTES} (400 KB)`);
    }

    const inReadSet = reads.has(key.id);
    const existing = ops.get(key.id);
    const userConditioned = userCondition(action) !== undefined;
    if (!inReadSet) {
      // A blind write: sent as given (with a new version); it cannot share its item with another unit's action.
      if (existing !== undefined) deferred = true;
      steps.push(() => {
        const version = context.newVersion();
        ops.set(key.id, {
          key,
          base: believed(key),
          inReadSet: false,
          kind: kind === 'Put' ? 'put' : kind === 'Delete' ? 'delete' : kind === 'Update' ? 'update' : 'check',
          current: kind === 'Put' ? { ...(action.Item as Item), [versionAttribute]: version } : undefined,
          write,
          opaque: true,
          version,
          authors: [unit],
          readers: [],
        });
      });
      continue;
    }
    const foldedByOthers = existing !== undefined && existing.authors.length > 0;
    if ((kind === 'Update' || userConditioned) && foldedByOthers) deferred = true;
    if (kind === 'ConditionCheck' && !userConditioned) continue; // the engine's own check of the read covers it
    steps.push(() => {
      const op = existing ?? readOp(key, believed(key), ops, context);
      op.authors.push(unit);
      if (kind === 'Put') {
        op.kind = 'put';
        op.current = { ...(action.Item as Item), [versionAttribute]: op.version };
      } else if (kind === 'Delete') {
        op.kind = 'delete';
        op.current = undefined;
      } else if (kind === 'Update') {
        op.kind = 'update';
        op.current = undefined;
      } else {
        op.kind = 'check';
      }
      op.write = write;
      op.opaque = kind === 'Update' || userConditioned;
    });
  }
  const outbox = decision.outbox ?? [];
  if (!Array.isArray(outbox)) throw new ConsumerDefinitionError('decide() returned `outbox` that is not an array');
  for (const [position, message] of outbox.entries()) checkOutgoingMessage(message, position);
  const sideEffects = decision.sideEffects ?? [];
  if (!Array.isArray(sideEffects)) throw new ConsumerDefinitionError('decide() returned `sideEffects` that is not an array');
  for (const effect of sideEffects) {
    if (typeof effect?.name !== 'string' || !Object.hasOwn(definition.sideEffects, effect.name)) {
      throw new ConsumerDefinitionError(
        `decide() asked for side effect ${JSON.stringify(effect?.name)}, which is not in the consumer's sideEffects`,
      );
    }
  }
  checkEffectKeys(unit.idempotencyKey, sideEffects);
  const items = new Set([...reads.keys(), ...touched]).size;
  const actions = 1 + outbox.length + items;
  if (actions > MAX_TRANSACTION_ACTIONS) {
    throw new InvalidWrite(
      `its commit needs ${actions} actions (its inbox row, ${outbox.length} outgoing messages, ${items} items), more than one DynamoDB transaction takes (${MAX_TRANSACTION_ACTIONS})`,
    );
  }
  if (deferred) return 'defer';
  return {
    fold: () => {
      for (const step of steps) step();
      // Items read: a condition that they did not change (folded into the item's action if written).
      for (const key of reads.values()) {
        const op = ops.get(key.id) ?? readOp(key, believed(key), ops, context);
        if (!op.readers.includes(unit)) op.readers.push(unit);
      }
    },
  };
}

/** An item's action that only checks it is as believed (until a unit writes it). */
export function readOp(key: ResolvedKey, base: Known, ops: Map<string, ItemOp>, context: Pick<FoldContext, 'newVersion'>): ItemOp {
  const op: ItemOp = {
    key,
    base,
    inReadSet: true,
    kind: 'check',
    current: base.item,
    write: undefined,
    opaque: false,
    version: context.newVersion(),
    authors: [],
    readers: [],
  };
  ops.set(key.id, op);
  return op;
}

/** @throws ConsumerDefinitionError when a write of the home table names the inbox marks or the stub flag (`inboxHome`) */
function checkMarksUntouched(kind: WriteKind, action: WriteAction, names: readonly string[], what: string): void {
  const expressions = [action.UpdateExpression, action.ConditionExpression].filter((e): e is string => typeof e === 'string');
  for (const name of names) {
    const named = Object.entries(action.ExpressionAttributeNames ?? {}).some(
      ([placeholder, value]) => value === name && expressions.some((e) => e.includes(placeholder)),
    );
    const literal = new RegExp(`(^|[^#:A-Za-z0-9_])${name}($|[^A-Za-z0-9_])`);
    if (
      (kind === 'Put' && action.Item !== undefined && Object.hasOwn(action.Item, name)) ||
      named ||
      expressions.some((e) => literal.test(e))
    )
      throw new ConsumerDefinitionError(
        `${what} names ${name}, where the engine keeps the inbox marks of home items (inboxHome): leave it to the engine`,
      );
  }
}

/** @throws ConsumerDefinitionError when an `Update` writes the engine's version attribute */
function checkVersionUntouched(kind: WriteKind, action: WriteAction, versionAttribute: string, what: string): void {
  if (kind !== 'Update') return;
  const expression = action.UpdateExpression;
  if (typeof expression !== 'string' || expression.trim() === '') throw new ConsumerDefinitionError(`${what} has no UpdateExpression`);
  const named = Object.entries(action.ExpressionAttributeNames ?? {}).some(
    ([placeholder, name]) => name === versionAttribute && expression.includes(placeholder),
  );
  const literal = new RegExp(`(^|[^#:A-Za-z0-9_])${versionAttribute.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}($|[^A-Za-z0-9_])`).test(
    expression,
  );
  if (named || literal)
    throw new ConsumerDefinitionError(`${what} writes ${versionAttribute}, the engine's version attribute: leave it to the engine`);
}

/** @throws ConsumerDefinitionError or InvalidWrite for an outgoing message that cannot be written */
function checkOutgoingMessage(message: unknown, position: number): void {
  const what = `outgoing message ${position}`;
  if (message === null || typeof message !== 'object' || !('body' in message)) throw new ConsumerDefinitionError(`${what} has no body`);
  const { body, attributes, destination, messageGroupId } = message as {
    body: unknown;
    attributes?: Record<string, unknown>;
    destination?: unknown;
    messageGroupId?: unknown;
  };
  let text: string | undefined;
  if (typeof body === 'string') text = body;
  else {
    const problem = jsonProblem(body);
    if (problem !== undefined) throw new ConsumerDefinitionError(`${what} cannot be written as JSON: its ${problem}`);
    text = JSON.stringify(body);
    if (typeof text !== 'string') throw new ConsumerDefinitionError(`${what} has a body that is not JSON (${typeof body})`);
  }
  if (destination !== undefined && (typeof destination !== 'string' || destination === ''))
    throw new ConsumerDefinitionError(`${what} has a destination that is not a non-empty string`);
  if (messageGroupId !== undefined && (typeof messageGroupId !== 'string' || messageGroupId === ''))
    throw new ConsumerDefinitionError(`${what} has a messageGroupId that is not a non-empty string`);
  const entries = Object.entries(attributes ?? {});
  if (entries.length > MAX_OUTBOX_ATTRIBUTES)
    throw new ConsumerDefinitionError(
      `${what} has ${entries.length} attributes; at most ${MAX_OUTBOX_ATTRIBUTES} (the relay adds outboxMessageId)`,
    );
  for (const [name, value] of entries) {
    if (
      name === 'outboxMessageId' ||
      !/^(?!\.)(?!.*\.\.)(?!.*\.$)(?!(?:aws|amazon)\.)[A-Za-z0-9_.-]{1,256}$/i.test(name) ||
      typeof value !== 'string' ||
      value === ''
    ) {
      throw new ConsumerDefinitionError(
        `${what}: attribute ${JSON.stringify(name)} is reserved, not a name SQS and SNS accept, or has no string value`,
      );
    }
  }
  const bytes =
    Buffer.byteLength(text, 'utf8') +
    OUTBOX_ITEM_OVERHEAD_BYTES +
    entries.reduce((sum, [name, value]) => sum + name.length + String(value).length, 0);
  if (bytes > MAX_ITEM_BYTES)
    throw new InvalidWrite(`${what} is about ${bytes} bytes as an outbox item, more than DynamoDB's ${MAX_ITEM_BYTES} (400 KB)`);
}
