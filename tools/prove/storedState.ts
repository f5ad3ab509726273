/**
 * What a schedule left in the stores, read back consistently: the inbox rows and outbox items of
 * the workload's idempotency keys, the business items, the dead-letter queue.
 *
 * @module
 */
import { DeleteMessageBatchCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { BatchGetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { canonicalJson, inboxKey } from 'idempotent-consumer/internal';
import { outboxMessageId } from 'idempotent-consumer/outbox';
import { tableKeys } from 'idempotent-consumer/settings';
import { readDeadLetterAttributes } from 'idempotent-consumer/dlq';

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
