import { createHash } from 'node:crypto';
import { tableKeys } from '../settings/settings.js';
import { expiresAt } from '../inbox/inboxItems.js';
import { isTraceHeader } from '../observability/traceHeader.js';
import type { OutgoingMessage } from '../types.js';

/** The `kind` attribute of outbox items: the relay's event filter selects on it. */
export const OUTBOX_KIND = 'outbox';

/**
 * The stable id of the `position`-th outgoing message of the event with `idempotencyKey`:
 * SHA-256 (hex, 64 characters) of consumer name, key and position. Every redelivery of the event
 * produces the same id, which the relay passes to the destination as its deduplication id.
 */
export function outboxMessageId(consumerName: string, idempotencyKey: string, position: number): string {
  return createHash('sha256').update(`${consumerName}\u0000${idempotencyKey}\u0000${position}`).digest('hex');
}

/**
 * The outbox item of one outgoing message, as a conditional `Put` for the batch's transaction.
 * `traceHeader` (the X-Ray trace header of the message whose decision emitted it) is stored as the
 * item's `traceHeader` attribute when well formed, for the relay to publish with; items written
 * before it existed have none and are published without one.
 */
export function outboxPut(options: {
  readonly tableName: string;
  readonly consumerName: string;
  readonly idempotencyKey: string;
  readonly orderingKey: string;
  readonly position: number;
  readonly message: OutgoingMessage;
  readonly now: Date;
  readonly ttlSeconds: number;
  readonly traceHeader?: string | undefined;
  /**
   * The payload hash of the event that emits the message (SHA-256, hex, of its body's canonical
   * JSON), stored as `sourcePayloadHash`: a later event with the same idempotency key whose outbox
   * item is refused tells from it whether it is that event again (a duplicate) or another one (an
   * `IdempotencyConflict`). Items written without it have none.
   */
  readonly sourcePayloadHash?: string | undefined;
}) {
  const { tableName, consumerName, idempotencyKey, orderingKey, position, message, now, ttlSeconds, traceHeader, sourcePayloadHash } =
    options;
  const messageId = outboxMessageId(consumerName, idempotencyKey, position);
  const body = typeof message.body === 'string' ? message.body : JSON.stringify(message.body);
  return {
    TableName: tableName,
    Item: {
      [tableKeys.inbox.partitionKey]: `${consumerName}#outbox#${messageId}`,
      kind: OUTBOX_KIND,
      consumer: consumerName,
      messageId,
      idempotencyKey,
      position,
      destination: message.destination ?? 'default',
      messageGroupId: message.messageGroupId ?? orderingKey,
      body,
      ...(message.attributes === undefined || Object.keys(message.attributes).length === 0
        ? {}
        : { attributes: { ...message.attributes } }),
      ...(isTraceHeader(traceHeader) ? { traceHeader } : {}),
      ...(sourcePayloadHash === undefined ? {} : { sourcePayloadHash }),
      createdAt: now.toISOString(),
      [tableKeys.inbox.ttlAttribute]: expiresAt(now, ttlSeconds),
    },
    ConditionExpression: 'attribute_not_exists(#pk)',
    ExpressionAttributeNames: { '#pk': tableKeys.inbox.partitionKey },
  };
}
