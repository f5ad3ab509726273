import { randomUUID } from 'node:crypto';
import { type DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { tableKeys } from '../../config/settings.js';
import type { PaymentNotification } from '../domain/order.js';

/** Sort key prefix of a sent notification in the business table: `NOTIFICATION#<sentAt>#<uuid>`. */
export const NOTIFICATION_SK_PREFIX = 'NOTIFICATION#';

/**
 * Sends the café's notifications: a side effect that is not part of the inbox transaction, and
 * so must be guarded (see `guardedNotifier.ts`). Replace the adapter with SES, SNS or an HTTP
 * call in a real deployment; the guard stays the same.
 */
export interface Notifier {
  /** Sends one "payment received" notification. Not idempotent by itself. */
  paymentReceived(notification: PaymentNotification): Promise<void>;
}

/**
 * The example's notifier: it records every notification it "sends" as its own item in the
 * business table (`NOTIFICATION#<sentAt>#<uuid>`), so a test or an operator can count them.
 * Deliberately not idempotent: a second send writes a second item, which is how a test sees
 * that the guard worked.
 */
export class DynamoDBNotificationLog implements Notifier {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly ordersTable: string,
  ) {}

  async paymentReceived(notification: PaymentNotification): Promise<void> {
    const sentAt = new Date().toISOString();
    await this.client.send(
      new PutCommand({
        TableName: this.ordersTable,
        Item: {
          [tableKeys.orders.partitionKey]: notification.orderId,
          [tableKeys.orders.sortKey]: `${NOTIFICATION_SK_PREFIX}${sentAt}#${randomUUID()}`,
          kind: 'PaymentReceived',
          eventId: notification.eventId,
          points: notification.points,
          sentAt,
        },
      }),
    );
  }
}
