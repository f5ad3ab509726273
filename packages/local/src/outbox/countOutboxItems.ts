import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { OUTBOX_KIND } from 'idempotent-consumer/outbox';

/** The outbox items of a consumer, as stored (the local report's `"outbox":{"written":…,"published":…}`). */
export interface OutboxItemCounts {
  /** Outbox items in the inbox table: every outgoing message committed (and not expired yet). */
  readonly written: number;
  /** Those the relay has marked published (`publishedAt` set). */
  readonly published: number;
}

/**
 * Counts the outbox items of `consumerName` in the inbox table (a consistent scan filtered on
 * `kind = "outbox"`), and how many of them are marked published. Published items expire by TTL
 * after `publishedTtlSeconds` (DynamoDB Local never deletes by TTL), so on AWS a count long after
 * the run is lower.
 */
export async function countOutboxItems(dynamoDb: DynamoDBClient, inboxTableName: string, consumerName: string): Promise<OutboxItemCounts> {
  const client = DynamoDBDocumentClient.from(dynamoDb);
  let written = 0;
  let published = 0;
  let exclusiveStartKey: Record<string, unknown> | undefined;
  do {
    const page = await client.send(
      new ScanCommand({
        TableName: inboxTableName,
        ConsistentRead: true,
        FilterExpression: '#kind = :outbox AND #consumer = :consumer',
        ProjectionExpression: '#publishedAt',
        ExpressionAttributeNames: { '#kind': 'kind', '#consumer': 'consumer', '#publishedAt': 'publishedAt' },
        ExpressionAttributeValues: { ':outbox': OUTBOX_KIND, ':consumer': consumerName },
        ...(exclusiveStartKey === undefined ? {} : { ExclusiveStartKey: exclusiveStartKey }),
      }),
    );
    for (const item of page.Items ?? []) {
      written += 1;
      if (typeof item['publishedAt'] === 'string') published += 1;
    }
    exclusiveStartKey = page.LastEvaluatedKey;
  } while (exclusiveStartKey !== undefined);
  return { written, published };
}
