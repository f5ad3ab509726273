import { BatchGetCommand, type DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { SQSRecord } from 'aws-lambda';
import { describeError } from '../engine/describeError.js';
import { tableKeys } from '../settings/settings.js';
import { expiresAt } from './inboxItems.js';

/** The `kind` of a park item in the inbox table. */
export const PARKED_KIND = 'parked';
/** Prefix of a parked record's attribute on its park item: `parked:<messageId>`. */
const ENTRY_PREFIX = 'parked:';
/** `BatchGetItem` takes at most 100 keys (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchGetItem.html). */
const BATCH_GET_LIMIT = 100;
/** Rounds of asking again for the keys `BatchGetItem` left unprocessed. */
const UNPROCESSED_ROUNDS = 3;

/** One parked SQS record, as read back from its park item. */
export interface ParkedRecord {
  readonly orderingKey: string;
  /** The SQS record as Lambda delivered it when it was parked (its receipt handle is that receive's). */
  readonly record: SQSRecord;
  /** The attribute's stored text: a release removes the entry only while it is still this one. */
  readonly stored: string;
}

/** What to do with a parked record once its message is settled. */
export interface ParkRelease {
  readonly orderingKey: string;
  readonly messageId: string;
  /** The stored text read with the record; the entry is removed only while it is unchanged (without it: whatever it holds, if it is there). */
  readonly stored?: string;
  /** Delete the message from the queue with the parked receipt handle (it was settled from the park, not from a receive). */
  readonly deleteMessage?: { readonly receiptHandle: string; readonly eventSourceARN: string };
}

/** Deletes SQS messages by receipt handle (`RetryBackoff.deleteMessages`). */
export interface MessageDeleter {
  /** @returns how many were deleted; @throws the SQS client's error */
  deleteMessages(records: readonly { readonly receiptHandle: string; readonly eventSourceARN: string }[]): Promise<number>;
}

/** Options of {@link ParkedMessages}. */
export interface ParkedMessagesOptions {
  readonly client: DynamoDBDocumentClient;
  /** The inbox table, which holds the park items. */
  readonly tableName: string;
  readonly consumerName: string;
  /** How long a park item is kept after its last write, in seconds (the inbox window). */
  readonly ttlSeconds: number;
  readonly now: () => Date;
  /** Loaded at the first release that deletes a message. */
  readonly deleter: () => Promise<MessageDeleter>;
  readonly logger?: Logger;
}

/**
 * The park: out-of-order SQS messages waiting in the inbox table for their predecessor (see
 * `retry.parkOutOfOrder`, docs/parking.md).
 *
 * One **park item** per ordering key (`<consumer>#park#<ordering key>`) holds each parked message
 * as an attribute `parked:<messageId>` whose value is the SQS record as Lambda delivered it (JSON):
 * its body byte for byte, attributes, receive count and receipt handle. Parking is an `UpdateItem`
 * that sets that attribute (1 write unit per KB); the invocation that applies a message of the
 * ordering key reads the park item (strongly consistent, beside its commit), decides
 * each parked record again, and once one is settled removes its attribute and deletes the message
 * from the queue with the parked receipt handle.
 *
 * Nothing here decides a message: a record read from the park goes through the engine like a
 * receive (its inbox row decides whether it was applied already), so a stale or repeated park
 * entry costs a read, never a second application. A record missed here (a park written after the
 * read, an eventually consistent read that does not see it yet) waits for its visibility delay and
 * comes back from the queue: later, never lost.
 *
 * To read a park item as an operator:
 * `aws dynamodb get-item --table-name <inbox table> --key '{"pk":{"S":"<consumer>#park#<ordering key>"}}'`
 */
export class ParkedMessages {
  readonly #options: ParkedMessagesOptions;

  constructor(options: ParkedMessagesOptions) {
    this.#options = options;
  }

  /** The park item's partition key for an ordering key. */
  key(orderingKey: string): string {
    return `${this.#options.consumerName}#park#${orderingKey}`;
  }

  /**
   * Reads the park items of the ordering keys (strongly consistent `BatchGetItem`: a park written
   * before the read began is seen; 100 keys a request, unprocessed keys asked again up to 3 times).
   *
   * @returns the parked records by ordering key (keys with none are left out); never rejects: a
   *   failed read is logged and returns what was read (the records not read wait for their wake-up)
   */
  async read(orderingKeys: readonly string[]): Promise<Map<string, ParkedRecord[]>> {
    const { client, tableName, logger } = this.#options;
    const parked = new Map<string, ParkedRecord[]>();
    const byPk = new Map([...new Set(orderingKeys)].map((orderingKey) => [this.key(orderingKey), orderingKey]));
    const pk = tableKeys.inbox.partitionKey;
    const all = [...byPk.keys()];
    try {
      await Promise.all(
        chunks(all, BATCH_GET_LIMIT).map(async (keys) => {
          let pending: Record<string, unknown>[] = keys.map((key) => ({ [pk]: key }));
          for (let round = 0; pending.length > 0 && round <= UNPROCESSED_ROUNDS; round += 1) {
            const output = (await client.send(
              new BatchGetCommand({ RequestItems: { [tableName]: { Keys: pending, ConsistentRead: true } } }),
            )) as {
              Responses?: Record<string, Record<string, unknown>[]>;
              UnprocessedKeys?: Record<string, { Keys?: Record<string, unknown>[] }>;
            };
            for (const item of output.Responses?.[tableName] ?? []) {
              const orderingKey = byPk.get(String(item[pk]));
              if (orderingKey === undefined) continue;
              const records = parkedRecordsOf(orderingKey, item);
              if (records.length > 0) parked.set(orderingKey, records);
            }
            pending = output.UnprocessedKeys?.[tableName]?.Keys ?? [];
          }
        }),
      );
    } catch (error) {
      logger?.warn('could not read the parked messages; they come back at their wake-up', { error: describeError(error) });
    }
    return parked;
  }

  /**
   * Parks an SQS record under its ordering key (overwriting an earlier park of the same message:
   * the newer receipt handle and receive count win).
   *
   * @returns `true` when parked; `false` when the write failed (too large an item: a park item
   *   holds at most 400 KB; throttling; …): the message is then retried as without parking
   */
  async park(orderingKey: string, record: SQSRecord): Promise<boolean> {
    const { client, tableName, consumerName, ttlSeconds, now, logger } = this.#options;
    const at = now();
    try {
      await client.send(
        new UpdateCommand({
          TableName: tableName,
          Key: { [tableKeys.inbox.partitionKey]: this.key(orderingKey) },
          UpdateExpression:
            'SET #entry = :record, #kind = :kind, #consumer = :consumer, #orderingKey = :orderingKey, #expiresAt = :expiresAt',
          ExpressionAttributeNames: {
            '#entry': `${ENTRY_PREFIX}${record.messageId}`,
            '#kind': 'kind',
            '#consumer': 'consumer',
            '#orderingKey': 'orderingKey',
            '#expiresAt': tableKeys.inbox.ttlAttribute,
          },
          ExpressionAttributeValues: {
            ':record': JSON.stringify(record),
            ':kind': PARKED_KIND,
            ':consumer': consumerName,
            ':orderingKey': orderingKey,
            ':expiresAt': expiresAt(at, ttlSeconds),
          },
        }),
      );
      return true;
    } catch (error) {
      logger?.warn('could not park a message; it is retried as without parking', {
        messageId: record.messageId,
        error: describeError(error),
      });
      return false;
    }
  }

  /**
   * Removes settled messages from the park (each entry only while it is still the one read: a
   * newer park of the message stays) and deletes from the queue those settled from the park.
   * Never rejects: what fails is logged (an entry left behind is decided again, as a duplicate; a
   * message not deleted comes back at its wake-up, as a duplicate).
   */
  async release(releases: readonly ParkRelease[]): Promise<void> {
    const { client, tableName, logger } = this.#options;
    const deletions = releases.flatMap((release) => (release.deleteMessage === undefined ? [] : [release.deleteMessage]));
    await Promise.all([
      ...releases.map(async (release) => {
        try {
          await client.send(
            new UpdateCommand({
              TableName: tableName,
              Key: { [tableKeys.inbox.partitionKey]: this.key(release.orderingKey) },
              UpdateExpression: 'REMOVE #entry',
              ...(release.stored === undefined
                ? {
                    // Only where it is: an update of an absent item would create one.
                    ConditionExpression: 'attribute_exists(#entry)',
                    ExpressionAttributeNames: { '#entry': `${ENTRY_PREFIX}${release.messageId}` },
                  }
                : {
                    ConditionExpression: '#entry = :stored',
                    ExpressionAttributeNames: { '#entry': `${ENTRY_PREFIX}${release.messageId}` },
                    ExpressionAttributeValues: { ':stored': release.stored },
                  }),
            }),
          );
        } catch (error) {
          if (error instanceof Error && error.name === 'ConditionalCheckFailedException') return;
          logger?.warn('could not remove a settled message from the park', { messageId: release.messageId, error: describeError(error) });
        }
      }),
      (async () => {
        if (deletions.length === 0) return;
        try {
          await (await this.#options.deleter()).deleteMessages(deletions);
        } catch (error) {
          logger?.warn('could not delete messages settled from the park; they come back at their wake-up, as duplicates', {
            messages: deletions.length,
            error: describeError(error),
          });
        }
      })(),
    ]);
  }
}

/** The parked records an item holds, oldest receive first (by the record's `SentTimestamp`, then id). */
function parkedRecordsOf(orderingKey: string, item: Record<string, unknown>): ParkedRecord[] {
  const records: ParkedRecord[] = [];
  for (const [name, value] of Object.entries(item)) {
    if (!name.startsWith(ENTRY_PREFIX) || typeof value !== 'string') continue;
    try {
      const record = JSON.parse(value) as SQSRecord;
      if (typeof record?.messageId !== 'string' || typeof record.receiptHandle !== 'string') continue;
      records.push({ orderingKey, record, stored: value });
    } catch {
      // Not a record this library wrote: left alone.
    }
  }
  const sent = (record: SQSRecord) => Number(record.attributes?.SentTimestamp ?? 0);
  return records.sort((a, b) => sent(a.record) - sent(b.record) || a.record.messageId.localeCompare(b.record.messageId));
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
