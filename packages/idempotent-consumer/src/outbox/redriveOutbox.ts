import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { Context, DynamoDBRecord } from 'aws-lambda';
import { tableKeys } from '../settings/settings.js';
import type { OutboxRelayHandler } from './createOutboxRelay.js';
import { OUTBOX_KIND } from './outboxItems.js';

/** Options of {@link redriveOutbox}. */
export interface RedriveOutboxOptions {
  /**
   * The relay that publishes: `createOutboxRelay(options, runtime)` with the deployed relay's
   * environment (`outboxRelayEnvironment()`: same consumer, tables, destinations) and clients.
   */
  readonly relay: OutboxRelayHandler;
  /** A client for the inbox table's account and region. */
  readonly dynamoDb: DynamoDBClient;
  /** The physical name of the consumer's inbox table, which holds its outbox items (the stack's `InboxTableName` output). */
  readonly inboxTableName: string;
  /** The consumer's name (`settings.consumerName`): only its outbox items are redriven. */
  readonly consumerName: string;
  /**
   * Only items committed before this time (their `createdAt`): leave the newest ones to the
   * running relay. @default no limit (a concurrent publish by the relay is harmless: Powertools
   * lets one of the two through and the other is counted as failed)
   */
  readonly createdBefore?: Date;
  /** Items per relay call. @default 25 */
  readonly batchSize?: number;
  /** How long one relay call may take, in milliseconds (the in-progress lock of each publish expires then). @default 60000 */
  readonly callTimeoutMs?: number;
}

/** What {@link redriveOutbox} did. */
export interface RedriveOutboxResult {
  /** Unpublished outbox items found. */
  readonly found: number;
  /** Those the relay published (or found published before) and marked. */
  readonly relayed: number;
  /** Message ids of those that failed again (see the relay's log for why). */
  readonly failed: readonly string[];
}

/**
 * Publishes the outbox items of a consumer that are still unpublished (no `publishedAt`), through
 * the relay itself: the redrive after the relay gave up stream records (its on-failure queue holds
 * their metadata only) or after the stream lost them (records leave a DynamoDB stream after 24
 * hours). Each item goes through the same path as from the stream: Powertools idempotency on its
 * message id (a publish that completed before is not sent again), the destination's deduplication
 * id, the mark.
 *
 * It scans the inbox table (consistent reads) for `kind = "outbox"`, `consumer = consumerName`
 * and no `publishedAt`, and calls the relay with batches of synthetic `INSERT` records (sequence
 * numbers `1`, `2`, … within a batch).
 *
 * @throws whatever the scan throws; a failed publish is returned in `failed`, not thrown
 */
export async function redriveOutbox(options: RedriveOutboxOptions): Promise<RedriveOutboxResult> {
  const client = DynamoDBDocumentClient.from(options.dynamoDb);
  const batchSize = options.batchSize ?? 25;
  const callTimeoutMs = options.callTimeoutMs ?? 60_000;
  const items: Record<string, unknown>[] = [];
  let exclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await client.send(
      new ScanCommand({
        TableName: options.inboxTableName,
        ConsistentRead: true,
        FilterExpression: '#kind = :outbox AND #consumer = :consumer AND attribute_not_exists(#publishedAt)',
        ExpressionAttributeNames: { '#kind': 'kind', '#consumer': 'consumer', '#publishedAt': 'publishedAt' },
        ExpressionAttributeValues: { ':outbox': OUTBOX_KIND, ':consumer': options.consumerName },
        ...(exclusiveStartKey === undefined ? {} : { ExclusiveStartKey: exclusiveStartKey }),
      }),
    );
    for (const item of page.Items ?? []) {
      const createdAt = typeof item['createdAt'] === 'string' ? Date.parse(item['createdAt']) : Number.NaN;
      if (options.createdBefore !== undefined && !(createdAt < options.createdBefore.getTime())) continue;
      items.push(item);
    }
    exclusiveStartKey = page.LastEvaluatedKey;
  } while (exclusiveStartKey !== undefined);
  items.sort((a, b) => String(a['createdAt']).localeCompare(String(b['createdAt'])) || Number(a['position']) - Number(b['position']));

  let relayed = 0;
  const failed: string[] = [];
  for (let start = 0; start < items.length; start += batchSize) {
    const batch = items.slice(start, start + batchSize);
    const records: DynamoDBRecord[] = batch.map((item, index) => ({
      eventID: `redrive-${start + index}`,
      eventName: 'INSERT',
      eventVersion: '1.1',
      eventSource: 'aws:dynamodb',
      awsRegion: 'redrive',
      eventSourceARN: `redrive:${options.inboxTableName}`,
      dynamodb: {
        Keys: marshall({ [tableKeys.inbox.partitionKey]: item[tableKeys.inbox.partitionKey] }) as never,
        NewImage: marshall(item, { removeUndefinedValues: true }) as never,
        SequenceNumber: String(index + 1),
        StreamViewType: 'NEW_IMAGE',
      },
    }));
    const response = await options.relay({ Records: records }, redriveContext(callTimeoutMs));
    const failedSequence = new Set((response.batchItemFailures ?? []).map((failure) => failure.itemIdentifier));
    batch.forEach((item, index) => {
      if (failedSequence.has(String(index + 1))) failed.push(String(item['messageId']));
      else relayed += 1;
    });
  }
  return { found: items.length, relayed, failed };
}

/** A Lambda-like context for one relay call made outside Lambda: its deadline bounds each publish's in-progress lock. */
function redriveContext(timeoutMs: number): Context {
  const deadline = Date.now() + timeoutMs;
  const unsupported = (): never => {
    throw new Error('not supported outside Lambda');
  };
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName: 'outbox-redrive',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:redrive:000000000000:function:outbox-redrive',
    memoryLimitInMB: '0',
    awsRequestId: `redrive-${deadline}`,
    logGroupName: 'outbox-redrive',
    logStreamName: 'outbox-redrive',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: unsupported,
    fail: unsupported,
    succeed: unsupported,
  };
}
