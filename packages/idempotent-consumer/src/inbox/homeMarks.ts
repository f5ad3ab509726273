/**
 * Inbox marks on a home item (`inboxHome`): instead of an inbox row of its own, an event's inbox
 * record is an entry of a map attribute on an item of the user's table that the consumer names
 * for the event (its home item), written in the transaction that applies the event.
 *
 * - The map, `<attribute>`, holds one entry per idempotency key, `<consumer>#<idempotency key>` ({@link markKey}): {@link StoredMark}.
 * - A home item that holds nothing but its key, its version and marks is a **stub**, flagged by
 *   `<attribute>Stub = true`: written where an applied event leaves its home absent (a decision
 *   that deletes it, or never creates it). `decide` sees a stub as absent, and never sees the
 *   marks or the flag.
 * - Marks whose expiry (`x`, epoch seconds: the inbox window after they were written) has passed
 *   are removed at the item's next write by the engine; until then they count, as an inbox row
 *   counts until DynamoDB's TTL deletes it.
 *
 * Every write of a home item by the engine is conditional on the item being the incarnation it
 * believes (its version), so it always knows the map it extends.
 *
 * @module
 */
import type { Item } from '../types.js';
import { type InboxRow, InboxStatus } from './inboxItems.js';

/** The default name of the marks attribute. */
export const DEFAULT_MARK_ATTRIBUTE = '_inbox';
/** Longest error message kept in a dead-letter mark, in characters (the row keeps 1,024). */
const MARK_ERROR_MESSAGE_LENGTH = 256;
/** Expired marks removed by one write (an expression stays well under DynamoDB's 4 KB): the rest go at the next. */
export const MAX_PRUNED_PER_WRITE = 40;

/** The home-item settings of a consumer, normalized. */
export interface HomeSettings {
  /** The logical table of home items. */
  readonly table: string;
  /** The marks map attribute. */
  readonly attribute: string;
  /** The stub flag attribute: `<attribute>Stub`. */
  readonly stubAttribute: string;
  /**
   * The attributes a stub holds beside its marks and flag: the table's key attributes and the
   * engine's version attribute. Given, an item that holds any other attribute is no stub, whatever
   * its flag says (another writer's `UpdateItem` on a stub made it an item).
   */
  readonly stubAttributes?: readonly string[];
  /**
   * `false` (`inboxHome.marks: false`): no mark and no stub is written any more; inbox rows are, and
   * the marks and stubs already stored are still read (and hidden from `decide`).
   * @default true
   */
  readonly writeMarks?: boolean;
}

/** One mark as stored: an applied event (`s` absent), or a dead-lettered one. */
export interface StoredMark {
  /** SHA-256 (hex) of the body's canonical JSON. */
  readonly h: string;
  /** The source's message id. */
  readonly m: string;
  /** Expiry, epoch seconds. */
  readonly x: number;
  /** `dead-lettered`; absent: applied. */
  readonly s?: string;
  /** Dead letters: reason, error type, error message (cut). */
  readonly r?: string;
  readonly t?: string;
  readonly e?: string;
}

/** The stub flag attribute of a marks attribute. */
export function stubAttributeOf(attribute: string): string {
  return `${attribute}Stub`;
}

/**
 * The key of an idempotency key's entry in the marks map: `<consumer name>#<idempotency key>`, as
 * an inbox row's is `<consumer>#key#<idempotency key>`: two consumers that share a home table keep
 * apart marks, so neither takes the other's event for its own. The prefix also keeps any entry
 * from being named `__proto__` (an idempotency key may be any string, and the AWS SDK's `marshall`
 * and `unmarshall` build maps by assignment: such an entry would be dropped on the way in and
 * taken for the object's prototype on the way out).
 */
export function markKey(consumerName: string, idempotencyKey: string): string {
  return `${consumerName}#${idempotencyKey}`;
}

/** The marks map of a stored item (an empty object when it has none), by entry key ({@link markKey}). */
export function marksOf(item: Readonly<Item> | undefined, attribute: string): Readonly<Record<string, StoredMark>> {
  const marks = item?.[attribute];
  return marks !== null && typeof marks === 'object' && !Array.isArray(marks) && !(marks instanceof Uint8Array) && !(marks instanceof Set)
    ? (marks as Record<string, StoredMark>)
    : {};
}

/** Whether a stored item has a marks map. */
export function hasMarks(item: Readonly<Item> | undefined, attribute: string): boolean {
  const marks = item?.[attribute];
  return marks !== undefined && marks !== null && typeof marks === 'object';
}

/** The inbox record a home item holds for `idempotencyKey`, in an inbox row's shape; `undefined` when none. */
export function markRow(
  item: Readonly<Item> | undefined,
  attribute: string,
  consumerName: string,
  idempotencyKey: string,
): InboxRow | undefined {
  const marks = marksOf(item, attribute);
  const entry = markKey(consumerName, idempotencyKey);
  if (!Object.hasOwn(marks, entry)) return undefined;
  const mark = marks[entry]!;
  if (typeof mark !== 'object' || mark === null || typeof mark.h !== 'string') return undefined;
  const deadLettered = mark.s === InboxStatus.DeadLettered;
  return {
    status: deadLettered ? InboxStatus.DeadLettered : InboxStatus.Applied,
    idempotencyKey,
    payloadHash: mark.h,
    messageId: String(mark.m),
    ...(typeof mark.r === 'string' ? { reason: mark.r } : {}),
    ...(typeof mark.t === 'string' ? { errorType: mark.t } : {}),
    ...(typeof mark.e === 'string' ? { errorMessage: mark.e } : {}),
  };
}

/** The mark of an applied event. */
export function appliedMark(payloadHash: string, messageId: string, expiresAtSeconds: number): StoredMark {
  return { h: payloadHash, m: messageId, x: expiresAtSeconds };
}

/** The mark of a dead-lettered event. */
export function deadLetterMark(options: {
  readonly payloadHash: string;
  readonly messageId: string;
  readonly expiresAtSeconds: number;
  readonly reason: string;
  readonly errorType: string;
  readonly errorMessage: string;
}): StoredMark {
  return {
    h: options.payloadHash,
    m: options.messageId,
    x: options.expiresAtSeconds,
    s: InboxStatus.DeadLettered,
    r: options.reason,
    t: options.errorType,
    e: options.errorMessage.slice(0, MARK_ERROR_MESSAGE_LENGTH),
  };
}

/** The entry keys of the marks past their expiry at `nowSeconds`, at most {@link MAX_PRUNED_PER_WRITE}. */
export function expiredMarks(item: Readonly<Item> | undefined, attribute: string, nowSeconds: number): string[] {
  const expired: string[] = [];
  for (const [key, mark] of Object.entries(marksOf(item, attribute))) {
    if (typeof mark?.x === 'number' && mark.x < nowSeconds) expired.push(key);
    if (expired.length >= MAX_PRUNED_PER_WRITE) break;
  }
  return expired;
}

/**
 * Whether a stored item is a stub: flagged, and (when `home.stubAttributes` is given) holding
 * nothing but its key, its version, its marks and its flag. An `UpdateItem` of another writer (or
 * of a consumer without `inboxHome`) that adds attributes to a stub keeps the flag: the item is
 * then what it holds, not absent.
 */
export function isStub(item: Readonly<Item> | undefined, home: HomeSettings): boolean {
  if (item?.[home.stubAttribute] !== true) return false;
  const own = home.stubAttributes;
  if (own === undefined) return true;
  return Object.keys(item).every((name) => name === home.attribute || name === home.stubAttribute || own.includes(name));
}

/**
 * The item as `decide` sees it: without the marks and the stub flag; a stub is absent. Items of
 * other tables are returned as they are.
 */
export function homeView(item: Item | undefined, home: HomeSettings | undefined): Item | undefined {
  if (item === undefined || home === undefined) return item;
  if (!(home.attribute in item) && !(home.stubAttribute in item)) return item;
  if (isStub(item, home)) return undefined;
  const { [home.attribute]: _marks, [home.stubAttribute]: _stub, ...rest } = item;
  return rest;
}

/**
 * The marks map after a write: `base`'s marks without the expired ones a write removes
 * ({@link expiredMarks}), with `added` (by entry
 * key; an added mark replaces a dead-letter mark of its key: a redrive).
 */
export function mergedMarks(
  base: Readonly<Item> | undefined,
  attribute: string,
  added: Readonly<Record<string, StoredMark>>,
  nowSeconds: number,
): Record<string, StoredMark> {
  // The same expired marks as an update removes (at most MAX_PRUNED_PER_WRITE), so that what the
  // environment remembers of the item is what is stored.
  const expired = new Set(expiredMarks(base, attribute, nowSeconds));
  const merged: Record<string, StoredMark> = {};
  for (const [key, mark] of Object.entries(marksOf(base, attribute))) {
    if (expired.has(key)) continue;
    merged[key] = mark;
  }
  for (const [key, mark] of Object.entries(added)) merged[key] = mark;
  return merged;
}
