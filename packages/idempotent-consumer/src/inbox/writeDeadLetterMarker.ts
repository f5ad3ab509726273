import { type DynamoDBDocumentClient, GetCommand, PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Classification } from '../classifier.js';
import type { RuntimeConfig } from '../config/runtimeConfig.js';
import { newVersion, unchangedCondition } from '../engine/conditions.js';
import type { ResolvedKey } from '../engine/itemKeys.js';
import type { AttributeValue, Item } from '../types.js';
import { deadLetterMark, type HomeSettings, hasMarks, markKey, markRow } from './homeMarks.js';
import { deadLetteredRowPut, expiresAt, type InboxRow, InboxStatus, toInboxRow } from './inboxItems.js';

/** Under `inboxHome`: the home item a dead-letter marker is also written on. */
export interface HomeTarget {
  readonly key: ResolvedKey;
  readonly settings: HomeSettings;
  /** The home table's partition key attribute. */
  readonly partitionKey: string;
  readonly versionAttribute: string;
}

/** Tries of the home item's mark when the item keeps changing between its read and the write. */
const HOME_MARK_TRIES = 4;

/** The message a dead-letter marker is written for. */
export interface DeadLetterMarker {
  readonly idempotencyKey: string;
  readonly payloadHash: string;
  /** The source's id of the message (its redeliveries carry the same one). */
  readonly messageId: string;
  /** Why it is dead-lettered: the reason, the error's type and message. */
  readonly failure: Pick<Classification, 'reason' | 'errorType' | 'errorMessage'>;
}

/**
 * Writes a message's dead-letter marker in the inbox: its key's row, `status = dead-lettered`,
 * with the reason and the message id, so a redelivery of that message is dead-lettered again
 * without being decided again. Never over an applied row.
 *
 * Under `inboxHome` (`home`), the marker is also a mark on the message's home item, in one
 * `TransactWriteItems` with the row: the home item is read (strongly consistent), then written
 * conditional on being that incarnation (a stub when it is absent); a mark of the key as applied
 * stops it like an applied row.
 *
 * @param now - when, for the row's timestamp and its expiry (`inboxTtlSeconds` later)
 * @returns `marked`, or `applied` with the row that stopped it (another delivery applied the key)
 * @throws whatever DynamoDB threw otherwise (throttling, a network error; a home item that kept
 *   changing): the caller retries the message
 */
export async function writeDeadLetterMarker(
  client: DynamoDBDocumentClient,
  config: Pick<RuntimeConfig, 'inboxTable' | 'consumerName' | 'inboxTtlSeconds'>,
  marker: DeadLetterMarker,
  now: Date,
  home?: HomeTarget,
): Promise<{ readonly kind: 'marked' } | { readonly kind: 'applied'; readonly row: InboxRow }> {
  const rowPut = deadLetteredRowPut({
    tableName: config.inboxTable,
    consumerName: config.consumerName,
    idempotencyKey: marker.idempotencyKey,
    payloadHash: marker.payloadHash,
    messageId: marker.messageId,
    reason: marker.failure.reason ?? 'Unknown',
    errorType: marker.failure.errorType,
    errorMessage: marker.failure.errorMessage,
    now,
    ttlSeconds: config.inboxTtlSeconds,
  });
  return home === undefined ? writeRowOnly(client, rowPut) : writeWithHomeMark(client, config, marker, now, home, rowPut);
}

/** The marker's row alone: conditional on no applied row (one stops it: `applied`). */
async function writeRowOnly(
  client: DynamoDBDocumentClient,
  rowPut: ReturnType<typeof deadLetteredRowPut>,
): Promise<{ readonly kind: 'marked' } | { readonly kind: 'applied'; readonly row: InboxRow }> {
  try {
    await client.send(new PutCommand(rowPut));
    return { kind: 'marked' };
  } catch (error) {
    const item = (error as { Item?: Record<string, unknown> }).Item;
    if (error instanceof Error && error.name === 'ConditionalCheckFailedException' && item !== undefined) {
      const row = toInboxRow(unmarshall(item as never) as Record<string, unknown>);
      if (row !== undefined && row.status === InboxStatus.Applied) return { kind: 'applied', row };
    }
    throw error;
  }
}

async function writeWithHomeMark(
  client: DynamoDBDocumentClient,
  config: Pick<RuntimeConfig, 'inboxTtlSeconds' | 'consumerName'>,
  marker: DeadLetterMarker,
  now: Date,
  home: HomeTarget,
  rowPut: ReturnType<typeof deadLetteredRowPut>,
): Promise<{ readonly kind: 'marked' } | { readonly kind: 'applied'; readonly row: InboxRow }> {
  const { settings, versionAttribute } = home;
  const mark = deadLetterMark({
    payloadHash: marker.payloadHash,
    messageId: marker.messageId,
    expiresAtSeconds: expiresAt(now, config.inboxTtlSeconds),
    reason: marker.failure.reason ?? 'Unknown',
    errorType: marker.failure.errorType,
    errorMessage: marker.failure.errorMessage,
  });
  for (let attempt = 0; attempt < HOME_MARK_TRIES; attempt += 1) {
    let read: { Item?: Record<string, unknown> };
    try {
      read = await client.send(new GetCommand({ TableName: home.key.tableName, Key: home.key.key, ConsistentRead: true }));
    } catch (error) {
      // DynamoDB refuses the home's key itself (a key value of the wrong type: the same refusal
      // that dead-letters the message): no mark can go there; the row alone keeps its reason.
      if (error instanceof Error && error.name === 'ValidationException') return writeRowOnly(client, rowPut);
      throw error;
    }
    const item = read.Item as Item | undefined;
    const existing = markRow(item, settings.attribute, config.consumerName, marker.idempotencyKey);
    if (existing?.status === InboxStatus.Applied) return { kind: 'applied', row: existing };
    const unchanged = unchangedCondition({ exists: item !== undefined, item }, home.partitionKey, versionAttribute);
    const version = newVersion();
    const condition = {
      ConditionExpression: unchanged.expression,
      ExpressionAttributeNames: { ...unchanged.names },
      ...(Object.keys(unchanged.values).length > 0 ? { ExpressionAttributeValues: { ...unchanged.values } } : {}),
    };
    const homeAction =
      item === undefined
        ? {
            Put: {
              TableName: home.key.tableName,
              Item: {
                ...home.key.key,
                [versionAttribute]: version,
                [settings.attribute]: { [markKey(config.consumerName, marker.idempotencyKey)]: mark } as unknown as AttributeValue,
                [settings.stubAttribute]: true,
              },
              ...condition,
            },
          }
        : {
            Update: {
              TableName: home.key.tableName,
              Key: home.key.key,
              UpdateExpression: hasMarks(item, settings.attribute)
                ? 'SET #__ic_marks.#__ic_key = :__ic_mark, #__ic_v2 = :__ic_next'
                : 'SET #__ic_marks = :__ic_map, #__ic_v2 = :__ic_next',
              ...condition,
              ExpressionAttributeNames: {
                ...condition.ExpressionAttributeNames,
                '#__ic_marks': settings.attribute,
                '#__ic_v2': versionAttribute,
                ...(hasMarks(item, settings.attribute) ? { '#__ic_key': markKey(config.consumerName, marker.idempotencyKey) } : {}),
              },
              ExpressionAttributeValues: {
                ...(condition.ExpressionAttributeValues ?? {}),
                ':__ic_next': version,
                ...(hasMarks(item, settings.attribute)
                  ? { ':__ic_mark': mark as unknown as AttributeValue }
                  : { ':__ic_map': { [markKey(config.consumerName, marker.idempotencyKey)]: mark } as unknown as AttributeValue }),
              },
            },
          };
    try {
      await client.send(new TransactWriteCommand({ TransactItems: [{ Put: rowPut }, homeAction] }));
      return { kind: 'marked' };
    } catch (error) {
      if (error instanceof Error && error.name === 'ValidationException') {
        // The home item cannot take one more mark (400 KB): the row alone marks the dead letter, so
        // that it is sent with its reason rather than retried for ever (docs/inbox-home.md).
        return writeRowOnly(client, rowPut);
      }
      if (!(error instanceof Error && error.name === 'TransactionCanceledException')) throw error;
      const reasons = (error as { CancellationReasons?: { Code?: string; Item?: Record<string, unknown> }[] }).CancellationReasons ?? [];
      const rowReason = reasons[0];
      if (rowReason?.Code === 'ConditionalCheckFailed' && rowReason.Item !== undefined) {
        const row = toInboxRow(unmarshall(rowReason.Item as never) as Record<string, unknown>);
        if (row !== undefined && row.status === InboxStatus.Applied) return { kind: 'applied', row };
      }
      if (reasons[1]?.Code === 'ValidationError') return writeRowOnly(client, rowPut);
      if (reasons[1]?.Code !== 'ConditionalCheckFailed' && reasons[1]?.Code !== 'TransactionConflict') throw error;
      // The home item changed between the read and the write, or another marker of the same home
      // was being written (two dead letters of one home in one batch): read it again.
      await new Promise((resolve) => setTimeout(resolve, 10 + Math.random() * 40 * (attempt + 1)));
    }
  }
  throw new Error(`the home item of ${marker.idempotencyKey.slice(0, 64)} kept changing; its dead-letter marker could not be written`);
}

/** The home target of a unit's marker under `inboxHome`; `undefined` without one (no home, or no event to name it). */
export function homeTargetOf(
  definition:
    | {
        readonly home?: HomeSettings | undefined;
        readonly tables: Readonly<Record<string, { readonly partitionKey: string }>>;
        readonly versionAttribute: string;
      }
    | undefined,
  key: ResolvedKey | undefined,
): HomeTarget | undefined {
  const settings = definition?.home;
  // With inboxHome.marks false, a dead letter writes its row alone, as without inboxHome.
  if (settings === undefined || settings.writeMarks === false || key === undefined) return undefined;
  return {
    key,
    settings: { table: settings.table, attribute: settings.attribute, stubAttribute: settings.stubAttribute },
    partitionKey: definition!.tables[key.table]!.partitionKey,
    versionAttribute: definition!.versionAttribute,
  };
}
