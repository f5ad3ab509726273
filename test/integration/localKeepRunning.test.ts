/**
 * The local DLQ round trip: with `keepRunning`, the consumer keeps consuming after the report, so
 * a message redriven from the dead-letter queue (or any message sent later) is processed.
 */
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { handler } from '../../examples/inventory/handler.js';
import { inventorySettings } from '../../examples/inventory/settings.js';
import { inboxKey } from '../../packages/idempotent-consumer/src/inbox/inboxItems.js';
import { localClientConfig } from '../../packages/local/src/localClientConfig.js';
import { runLocal } from '../../packages/local/src/runLocal.js';
import { waitFor } from '../support/waitFor.js';

describe('runLocal with keepRunning', () => {
  it('processes a message sent after the report, until the signal aborts', async () => {
    const stop = new AbortController();
    const received = { requestId: 'late-1', kind: 'StockReceived', sku: 'SKU-LATE', quantity: 3, at: '2026-03-01T10:00:00.000Z' };
    let watching: Promise<Record<string, unknown>> | undefined;

    const result = await runLocal({
      handler,
      settings: inventorySettings,
      input: [
        {
          line: 1,
          body: JSON.stringify({ requestId: 'first-1', kind: 'StockReceived', sku: 'SKU-A', quantity: 1, at: '2026-03-01T09:00:00.000Z' }),
        },
      ],
      keepRunning: stop.signal,
      onReport: async (_report, running) => {
        const sqs = new SQSClient(localClientConfig(running.sqsEndpoint));
        const dynamoDb = DynamoDBDocumentClient.from(new DynamoDBClient(localClientConfig(running.dynamoDbEndpoint)));
        // As `dlq redrive` would: the message goes back to the source queue after the report.
        await sqs.send(new SendMessageCommand({ QueueUrl: running.resources.queueUrl, MessageBody: JSON.stringify(received) }));
        // The run keeps consuming once this returns; watch for the message meanwhile, then stop it.
        watching = waitFor(
          async () =>
            (
              await dynamoDb.send(
                new GetCommand({
                  TableName: running.resources.inboxTable,
                  Key: inboxKey(inventorySettings.consumerName, 'late-1'),
                  ConsistentRead: true,
                }),
              )
            ).Item,
          { timeoutMs: 60_000, what: 'the late message in the inbox' },
        ).finally(() => {
          sqs.destroy();
          dynamoDb.destroy();
          stop.abort();
        });
      },
    });

    expect(result.report.check.ok).toBe(true);
    expect(result.report.applied).toBe(1);
    expect(await watching).toMatchObject({ status: 'applied' });
  }, 180_000);
});
