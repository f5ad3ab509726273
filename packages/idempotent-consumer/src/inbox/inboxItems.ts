/**
 * The items the library keeps in its inbox table (partition key `pk`, TTL attribute
 * `expiresAt`), and the conditions that make processing idempotent. One table holds, keyed apart
 * by a marker after the consumer name:
 *
 * - inbox rows `<consumer>#key#<idempotency key>`: one per applied (or dead-lettered) event;
 * - attempt records `<consumer>#attempt#<source id>` (see `AttemptLog.ts`);
 * - outbox items `<consumer>#outbox#<message id>` (see `outbox/outboxItems.ts`).
 *
 * @module
 */
import { tableKeys } from '../settings/settings.js';
import type { ProvenanceAttributes } from './provenance.js';

/** What an inbox row records. */
export const InboxStatus = {
  /** The event's state change committed (in the same transaction as this row). */
  Applied: 'applied',
  /**
   * The event was dead-lettered: written *before* the dead-letter send, so a concurrent or later
   * delivery of the same message never applies it behind the dead letter's back. A producer's copy
   * of it (another message with the key) is a duplicate of the dead letter; only a redrive of the
   * dead letter (a delivery whose `redriveOf` is the row's `messageId`) applies it.
   */
  DeadLettered: 'dead-lettered',
} as const;
export type InboxStatus = (typeof InboxStatus)[keyof typeof InboxStatus];

/** An inbox row as stored. */
export interface InboxRow {
  readonly status: InboxStatus;
  readonly idempotencyKey: string;
  /** SHA-256 (hex) of the body's canonical JSON. */
  readonly payloadHash: string;
  /** The source's id of the message that wrote the row (SQS `messageId`, Kafka `<topic>-<partition>@<offset>`). */
  readonly messageId: string;
  /** For a dead-lettered row: why. */
  readonly reason?: string;
  readonly errorType?: string;
  readonly errorMessage?: string;
}

const { partitionKey: PK, ttlAttribute: TTL } = tableKeys.inbox;

/** The inbox table key of an idempotency key. */
export function inboxKey(consumerName: string, idempotencyKey: string): Record<string, string> {
  return { [PK]: `${consumerName}#key#${idempotencyKey}` };
}

/** Epoch seconds `ttlSeconds` after `now`: an item's `expiresAt`. */
export function expiresAt(now: Date, ttlSeconds: number): number {
  return Math.floor(now.getTime() / 1000) + ttlSeconds;
}

/**
 * The `Put` of an applied inbox row, for the batch's `TransactWriteItems` (lib-dynamodb shape),
 * conditional on the key's row being absent — or, for a redrive (`redriveOf`), being the
 * dead-letter marker of the message it redrives. A dead-lettered key is applied only by a redrive
 * of its dead letter: a producer's copy of the event is a duplicate of the dead letter (case C27).
 */
export function appliedRowPut(options: {
  readonly tableName: string;
  readonly consumerName: string;
  readonly idempotencyKey: string;
  readonly payloadHash: string;
  readonly messageId: string;
  readonly now: Date;
  readonly ttlSeconds: number;
  /** The source's id of the dead-lettered message this delivery redrives. */
  readonly redriveOf?: string | undefined;
  /** Under provenance, the keys the message wrote (see `provenance.ts`); absent, the row has no such attributes. */
  readonly provenance?: ProvenanceAttributes | undefined;
}) {
  const { tableName, consumerName, idempotencyKey, payloadHash, messageId, now, ttlSeconds, redriveOf, provenance } = options;
  return {
    TableName: tableName,
    Item: {
      ...inboxKey(consumerName, idempotencyKey),
      kind: 'inbox',
      status: InboxStatus.Applied,
      consumer: consumerName,
      idempotencyKey,
      payloadHash,
      messageId,
      processedAt: now.toISOString(),
      [TTL]: expiresAt(now, ttlSeconds),
      ...(provenance === undefined ? {} : provenance),
    },
    ...(redriveOf === undefined
      ? { ConditionExpression: 'attribute_not_exists(#pk)', ExpressionAttributeNames: { '#pk': PK } as Record<string, string> }
      : {
          ConditionExpression: 'attribute_not_exists(#pk) OR (#status = :deadLettered AND #messageId = :redriveOf)',
          ExpressionAttributeNames: { '#pk': PK, '#status': 'status', '#messageId': 'messageId' } as Record<string, string>,
          ExpressionAttributeValues: { ':deadLettered': InboxStatus.DeadLettered, ':redriveOf': redriveOf },
        }),
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
  };
}

/** The conditional `PutItem` input of a dead-letter marker, written before the dead-letter send. */
export function deadLetteredRowPut(options: {
  readonly tableName: string;
  readonly consumerName: string;
  readonly idempotencyKey: string;
  readonly payloadHash: string;
  readonly messageId: string;
  readonly reason: string;
  readonly errorType: string;
  readonly errorMessage: string;
  readonly now: Date;
  readonly ttlSeconds: number;
}) {
  const { tableName, consumerName, idempotencyKey, payloadHash, messageId, now, ttlSeconds } = options;
  return {
    TableName: tableName,
    Item: {
      ...inboxKey(consumerName, idempotencyKey),
      kind: 'inbox',
      status: InboxStatus.DeadLettered,
      consumer: consumerName,
      idempotencyKey,
      payloadHash,
      messageId,
      reason: options.reason,
      errorType: options.errorType,
      errorMessage: options.errorMessage.slice(0, 1024),
      deadLetteredAt: now.toISOString(),
      [TTL]: expiresAt(now, ttlSeconds),
    },
    // Never over an applied row: an applied message is never dead-lettered.
    ConditionExpression: 'attribute_not_exists(#pk) OR #status = :deadLettered',
    ExpressionAttributeNames: { '#pk': PK, '#status': 'status' },
    ExpressionAttributeValues: { ':deadLettered': InboxStatus.DeadLettered },
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
  };
}

/** Reads an inbox row from a stored item; `undefined` when the item is not one. */
export function toInboxRow(item: Readonly<Record<string, unknown>> | undefined): InboxRow | undefined {
  if (item === undefined || typeof item.payloadHash !== 'string') return undefined;
  const status = item.status === InboxStatus.DeadLettered ? InboxStatus.DeadLettered : InboxStatus.Applied;
  return {
    status,
    idempotencyKey: String(item.idempotencyKey),
    payloadHash: item.payloadHash,
    messageId: String(item.messageId),
    ...(typeof item.reason === 'string' ? { reason: item.reason } : {}),
    ...(typeof item.errorType === 'string' ? { errorType: item.errorType } : {}),
    ...(typeof item.errorMessage === 'string' ? { errorMessage: item.errorMessage } : {}),
  };
}
