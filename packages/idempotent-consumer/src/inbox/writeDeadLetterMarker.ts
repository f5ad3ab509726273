import { type DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Classification } from '../classifier.js';
import type { RuntimeConfig } from '../config/runtimeConfig.js';
import { deadLetteredRowPut, type InboxRow, InboxStatus, toInboxRow } from './inboxItems.js';

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
 * @param now - when, for the row's timestamp and its expiry (`inboxTtlSeconds` later)
 * @returns `marked`, or `applied` with the row that stopped it (another delivery applied the key)
 * @throws whatever DynamoDB threw otherwise (throttling, a network error): the caller retries the message
 */
export async function writeDeadLetterMarker(
  client: DynamoDBDocumentClient,
  config: Pick<RuntimeConfig, 'inboxTable' | 'consumerName' | 'inboxTtlSeconds'>,
  marker: DeadLetterMarker,
  now: Date,
): Promise<{ readonly kind: 'marked' } | { readonly kind: 'applied'; readonly row: InboxRow }> {
  try {
    await client.send(
      new PutCommand(
        deadLetteredRowPut({
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
        }),
      ),
    );
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
