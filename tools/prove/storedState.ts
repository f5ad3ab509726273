/**
 * What a schedule left in the stores, read back consistently: the inbox rows and outbox items of
 * the workload's idempotency keys, the inbox marks on home items (`inboxHome`), the business
 * items, the dead-letter queue.
 *
 * @module
 */
import { type AttributeValue, type DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { DeleteMessageBatchCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { BatchGetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { canonicalJson, inboxKey } from 'idempotent-consumer/internal';
import { outboxMessageId } from 'idempotent-consumer/outbox';
import { tableKeys } from 'idempotent-consumer/settings';
import { readDeadLetterAttributes } from 'idempotent-consumer/dlq';
import { stubAttributeOf } from './workload.js';

/** An inbox row as stored. */
export interface StoredInboxRow {
  readonly status: string;
  readonly messageId: string;
  readonly payloadHash: string;
}

/** An outbox item as stored. */
export interface StoredOutboxItem {
  readonly body: string;
  readonly position: number;
  readonly destination: string;
}

/** A dead letter as read from the dead-letter queue. */
export interface DeadLetter {
  readonly body: string;
  /** `ic.failureReason`; `undefined` for a message without the consumer's attributes. */
  readonly reason: string | undefined;
  readonly errorType: string | undefined;
  /** `ic.context.originalMessageId`. */
  readonly originalMessageId: string | undefined;
  readonly attempts: number | undefined;
  /** `ic.context.bodyEncoding`, when the body is not the original text. */
  readonly bodyEncoding: string | undefined;
}

/** How many outbox positions of each key are read by default (a workload says when its decisions write more). */
export const OUTBOX_POSITIONS = 3;

/** Reads items by key with `BatchGetItem`, consistently, 100 keys per request; returns them by the given ids. */
async function batchGet(
  client: DynamoDBDocumentClient,
  tableName: string,
  keys: ReadonlyMap<string, Record<string, unknown>>,
): Promise<Map<string, Record<string, unknown>>> {
  const pk = tableKeys.inbox.partitionKey;
  const byPk = new Map<string, string>();
  for (const [id, key] of keys) byPk.set(String(key[pk]), id);
  const found = new Map<string, Record<string, unknown>>();
  const all = [...keys.values()];
  for (let i = 0; i < all.length; i += 100) {
    let request: Record<string, { Keys: Record<string, unknown>[]; ConsistentRead: true }> | undefined = {
      [tableName]: { Keys: all.slice(i, i + 100), ConsistentRead: true },
    };
    for (let round = 0; request !== undefined && Object.keys(request).length > 0; round += 1) {
      if (round > 10) throw new Error('DynamoDB kept keys unprocessed');
      const output = await client.send(new BatchGetCommand({ RequestItems: request }));
      for (const item of output.Responses?.[tableName] ?? []) {
        const id = byPk.get(String(item[pk]));
        if (id !== undefined) found.set(id, item);
      }
      request = output.UnprocessedKeys as typeof request;
    }
  }
  return found;
}

/** The inbox rows of these idempotency keys, by key. */
export async function readInboxRows(
  client: DynamoDBDocumentClient,
  inboxTable: string,
  consumerName: string,
  keys: readonly string[],
): Promise<Map<string, StoredInboxRow>> {
  const wanted = new Map(keys.map((key) => [key, inboxKey(consumerName, key) as Record<string, unknown>]));
  const found = await batchGet(client, inboxTable, wanted);
  const rows = new Map<string, StoredInboxRow>();
  for (const [key, item] of found)
    rows.set(key, { status: String(item.status), messageId: String(item.messageId), payloadHash: String(item.payloadHash) });
  return rows;
}

/**
 * The prefix of a consumer's mark entry names in a marks map: `<consumer name>#<idempotency key>`
 * (the engine's `markKey`: consumers that share a home table keep their marks apart, and no entry
 * is named `__proto__`).
 */
export function markEntryPrefix(consumerName: string): string {
  return `${consumerName}#`;
}

/**
 * An inbox mark on a home item (`inboxHome`), as stored: the map entry `<attribute>.<consumer
 * name>#<idempotency key>` = `{ h: payload hash, m: message id, x: expiry (epoch seconds) }`, and
 * for a dead letter `s` (its status), `r` (its reason), `t` and `e` (its error type and message).
 */
export interface StoredMark {
  /** `applied` (no `s`), or the entry's `s` (`dead-lettered`). */
  readonly status: string;
  readonly messageId: string;
  readonly payloadHash: string;
  /** `x`, epoch seconds (`NaN` when it is not a number). */
  readonly expiresAt: number;
  /** `r`. */
  readonly reason: string | undefined;
  /** What is wrong with the entry's shape, if anything. */
  readonly malformed?: string;
}

/** A home item to read: its comparable id, physical table, and key in DynamoDB's typed form. */
export interface HomeItemRead {
  readonly id: string;
  readonly tableName: string;
  readonly key: Readonly<Record<string, AttributeValue>>;
}

/** What the home items hold of inbox marks. */
export interface HomeMarks {
  /** By home item id: its marks by idempotency key (an absent item, or one without the attribute, has none). */
  readonly byHome: ReadonlyMap<string, ReadonlyMap<string, StoredMark>>;
  /** Home items that are stubs (flagged `<attribute>Stub`): only their key attributes, the version attribute and the marks. */
  readonly stubs: ReadonlySet<string>;
  /** What is wrong with a home item, by id: a marks attribute that is not a map, a stub flag on an item with attributes of its own. */
  readonly problems: ReadonlyMap<string, string>;
}

function markOf(value: AttributeValue): StoredMark {
  const entry = value.M;
  if (entry === undefined)
    return { status: '(not a map)', messageId: '', payloadHash: '', expiresAt: Number.NaN, reason: undefined, malformed: 'not a map' };
  const problems: string[] = [];
  const text = (name: string, required: boolean): string | undefined => {
    const v = entry[name];
    if (v === undefined) {
      if (required) problems.push(`no ${name}`);
      return undefined;
    }
    if (v.S === undefined) {
      problems.push(`${name} is not a string`);
      return undefined;
    }
    return v.S;
  };
  const h = text('h', true);
  const m = text('m', true);
  const s = text('s', false);
  const r = text('r', false);
  const x = entry.x?.N === undefined ? Number.NaN : Number(entry.x.N);
  if (entry.x?.N === undefined) problems.push('x is not a number');
  // t, e: a dead letter's error type and message.
  const extra = Object.keys(entry).filter((name) => !['h', 'm', 'x', 's', 'r', 't', 'e'].includes(name));
  if (extra.length > 0) problems.push(`unknown fields ${extra.join(', ')}`);
  return {
    status: s ?? 'applied',
    messageId: m ?? '',
    payloadHash: h ?? '',
    expiresAt: x,
    reason: r,
    ...(problems.length === 0 ? {} : { malformed: problems.join('; ') }),
  };
}

/**
 * Reads the inbox marks of home items (`inboxHome`) with the plain client (key values the
 * document client cannot read back), consistently, one `GetItem` each.
 *
 * @param attribute - the marks' map attribute
 * @param versionAttribute - the engine's version attribute (a stub holds it)
 * @param consumerName - the consumer whose marks these are (the prefix of their entry names)
 */
export async function readHomeMarks(
  dynamoDb: DynamoDBClient,
  homes: readonly HomeItemRead[],
  attribute: string,
  versionAttribute: string,
  consumerName: string,
): Promise<HomeMarks> {
  const byHome = new Map<string, Map<string, StoredMark>>();
  const stubs = new Set<string>();
  const problems = new Map<string, string>();
  const seen = new Set<string>();
  for (const home of homes) {
    if (seen.has(home.id)) continue;
    seen.add(home.id);
    const output = await dynamoDb.send(new GetItemCommand({ TableName: home.tableName, Key: { ...home.key }, ConsistentRead: true }));
    const item = output.Item;
    const marks = new Map<string, StoredMark>();
    byHome.set(home.id, marks);
    if (item === undefined) continue;
    const flag = item[stubAttributeOf(attribute)];
    if (flag !== undefined) {
      // `decide` sees a stub as absent: it must hold nothing of its own.
      const own = Object.keys(item).filter(
        (name) => name !== attribute && name !== stubAttributeOf(attribute) && name !== versionAttribute && !(name in home.key),
      );
      if (flag.BOOL !== true) problems.set(home.id, `its stub flag ${stubAttributeOf(attribute)} is not true: ${JSON.stringify(flag)}`);
      else if (own.length > 0)
        problems.set(home.id, `it is flagged a stub (absent to decide) but holds attributes of its own: ${own.join(', ')}`);
      else stubs.add(home.id);
    }
    const map = item[attribute];
    if (map === undefined) continue;
    if (map.M === undefined) {
      problems.set(home.id, `its ${attribute} is not a map: ${Object.keys(map).join('')}`);
      continue;
    }
    const prefix = markEntryPrefix(consumerName);
    for (const [name, value] of Object.entries(map.M)) {
      if (name.startsWith(prefix)) marks.set(name.slice(prefix.length), markOf(value));
      else marks.set(name, { ...markOf(value), malformed: `its entry name ${JSON.stringify(name)} lacks the consumer's prefix ${prefix}` });
    }
  }
  return { byHome, stubs, problems };
}

/** The skips of these SQS messages' attempt records (`<consumer>#attempt#sqs:<message id>`), by message id. */
export async function readAttemptSkips(
  client: DynamoDBDocumentClient,
  inboxTable: string,
  consumerName: string,
  messageIds: readonly string[],
): Promise<Map<string, number>> {
  const pk = tableKeys.inbox.partitionKey;
  const wanted = new Map(messageIds.map((id) => [id, { [pk]: `${consumerName}#attempt#sqs:${id}` } as Record<string, unknown>]));
  const found = await batchGet(client, inboxTable, wanted);
  return new Map([...found].map(([id, item]) => [id, Number(item.skips ?? 0)]));
}

/** The outbox items of these idempotency keys at positions 0..`positions`−1, by key. */
export async function readOutboxItems(
  client: DynamoDBDocumentClient,
  inboxTable: string,
  consumerName: string,
  keys: readonly string[],
  positions = OUTBOX_POSITIONS,
): Promise<Map<string, StoredOutboxItem[]>> {
  const pk = tableKeys.inbox.partitionKey;
  const wanted = new Map<string, Record<string, unknown>>();
  for (const key of keys) {
    for (let position = 0; position < positions; position += 1) {
      wanted.set(`${position}\u0000${key}`, { [pk]: `${consumerName}#outbox#${outboxMessageId(consumerName, key, position)}` });
    }
  }
  const found = await batchGet(client, inboxTable, wanted);
  const items = new Map<string, StoredOutboxItem[]>();
  for (const [id, item] of found) {
    const key = id.slice(id.indexOf('\u0000') + 1);
    items.set(
      key,
      [...(items.get(key) ?? []), { body: String(item.body), position: Number(item.position), destination: String(item.destination) }].sort(
        (a, b) => a.position - b.position,
      ),
    );
  }
  return items;
}

/**
 * Receives and deletes every message of the dead-letter queue. The suite runs one schedule at a
 * time per queue, so what it finds belongs to the schedule that just ran.
 */
export async function drainDeadLetters(sqs: SQSClient, queueUrl: string): Promise<DeadLetter[]> {
  const letters: DeadLetter[] = [];
  for (let empty = 0; empty < 2; ) {
    const output = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 0,
        VisibilityTimeout: 300,
        MessageAttributeNames: ['All'],
        MessageSystemAttributeNames: ['All'],
      }),
    );
    const messages = output.Messages ?? [];
    if (messages.length === 0) {
      empty += 1;
      continue;
    }
    empty = 0;
    for (const message of messages) {
      const info = readDeadLetterAttributes(message.MessageAttributes ?? {});
      letters.push({
        body: message.Body ?? '',
        reason: info?.failureReason,
        errorType: info?.errorType,
        originalMessageId: info?.context.originalMessageId,
        attempts: info?.context.attempts,
        bodyEncoding: info?.context.bodyEncoding,
      });
    }
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: messages.map((message, i) => ({ Id: String(i), ReceiptHandle: message.ReceiptHandle! })),
      }),
    );
  }
  return letters;
}

/** A comparable print of a stored value. */
export function print(value: unknown): string {
  return value === undefined ? '(absent)' : canonicalJson(value);
}
