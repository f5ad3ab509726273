/**
 * A Kafka dead letter recovered in the local runtime: with `keepRunning` on a Kafka source the
 * run serves its function on a local Lambda `Invoke` endpoint, and `dlq redrive --function`
 * invokes it with the dead letter's original record (its coordinates kept, marked as a redrive).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LambdaClient, InvokeCommand } from '@aws-sdk/client-lambda';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { handler } from '../../examples/inventory/handler.js';
import { inventorySettings } from '../../examples/inventory/settings.js';
import { createFunctionInvoker } from '../../packages/cli/src/dlq/functionInvoker.js';
import { redriveDeadLetters, type RedriveResult } from '../../packages/cli/src/dlq/redrive.js';
import { listDeadLetters } from '../../packages/cli/src/dlq/list.js';
import { inboxKey } from '../../packages/idempotent-consumer/src/inbox/inboxItems.js';
import { localClientConfig } from '../../packages/local/src/localClientConfig.js';
import { runLocal, type RunningLocalRuntime } from '../../packages/local/src/runLocal.js';

const at = '2026-03-01T09:00:00.000Z';
const line = (n: number, event: Record<string, unknown>) => ({ line: n, body: JSON.stringify({ ...event, at }) });

describe('a Kafka dead letter redriven in the local runtime (keepRunning)', () => {
  it('reaches the consumer again by an Invoke of its function, keeps its coordinates, and is applied', async () => {
    const stop = new AbortController();
    let running: RunningLocalRuntime | undefined;
    let redrive: RedriveResult | undefined;
    let reservation: Record<string, unknown> | undefined;
    let afterwards: Awaited<ReturnType<typeof listDeadLetters>> | undefined;
    let failure: unknown;

    const result = await runLocal({
      handler,
      settings: inventorySettings,
      source: 'kafka',
      partitions: 1,
      relay: false,
      input: [
        line(1, { requestId: 'stock-1', kind: 'StockReceived', sku: 'SKU-K', quantity: 1 }),
        // More than is available: dead-lettered as OutOfStock, with its coordinates.
        line(2, { requestId: 'reserve-1', kind: 'ReservationRequested', sku: 'SKU-K', reservationId: 'r-1', quantity: 5 }),
      ],
      keepRunning: stop.signal,
      onReport: async (_report, runtime) => {
        running = runtime;
        const sqs = new SQSClient(localClientConfig(runtime.sqsEndpoint));
        const lambda = new LambdaClient({ ...localClientConfig(runtime.lambda?.endpoint ?? 'http://127.0.0.1:1') });
        const dynamoDb = DynamoDBDocumentClient.from(new DynamoDBClient(localClientConfig(runtime.dynamoDbEndpoint)));
        try {
          expect(runtime.lambda?.functionName).toBe(inventorySettings.consumerName);
          // Stock arrives another way meanwhile: a direct Invoke with a record of its own (offset 100).
          const stock = {
            eventSource: 'aws:kafka',
            eventSourceArn: 'arn:aws:kafka:us-east-1:000000000000:cluster/local/00000000-0000-0000-0000-000000000000-1',
            bootstrapServers: '127.0.0.1:9092',
            records: {
              'inventory-0': [
                {
                  topic: 'inventory',
                  partition: 0,
                  offset: 100,
                  timestamp: Date.parse(at),
                  timestampType: 'CREATE_TIME',
                  value: Buffer.from(
                    JSON.stringify({ requestId: 'stock-2', kind: 'StockReceived', sku: 'SKU-K', quantity: 10, at }),
                  ).toString('base64'),
                  headers: [],
                },
              ],
            },
          };
          const invoked = await lambda.send(
            new InvokeCommand({ FunctionName: runtime.lambda!.functionName, Payload: Buffer.from(JSON.stringify(stock)) }),
          );
          expect(invoked.FunctionError).toBeUndefined();
          expect(JSON.parse(Buffer.from(invoked.Payload!).toString('utf8'))).toEqual({ batchItemFailures: [] });

          const listed = await listDeadLetters({ sqs }, { queueUrl: runtime.resources.deadLetterQueueUrl, waitTimeSeconds: 0 });
          expect(listed.groups.map((g) => g.reason)).toEqual(['OutOfStock']);

          const connection = { endpoint: runtime.sqsEndpoint, region: 'us-east-1', dummyCredentials: true };
          redrive = await redriveDeadLetters(
            { sqs, functions: createFunctionInvoker({ connection, env: { AWS_ENDPOINT_URL_LAMBDA: runtime.lambda!.endpoint } }) },
            {
              queueUrl: runtime.resources.deadLetterQueueUrl,
              functionName: runtime.lambda!.functionName,
              yes: true,
              waitTimeSeconds: 0,
              visibilityTimeoutSeconds: 30,
            },
          );
          const inboxRow = async () =>
            (
              await dynamoDb.send(
                new GetCommand({
                  TableName: runtime.resources.inboxTable,
                  Key: inboxKey(inventorySettings.consumerName, 'reserve-1'),
                  ConsistentRead: true,
                }),
              )
            ).Item;
          // The Invoke is synchronous: the consumer has decided the record when the redrive returns.
          reservation = await inboxRow();
          afterwards = await listDeadLetters({ sqs }, { queueUrl: runtime.resources.deadLetterQueueUrl, waitTimeSeconds: 0 });
        } catch (error) {
          failure = error;
        } finally {
          sqs.destroy();
          lambda.destroy();
          dynamoDb.destroy();
          stop.abort();
        }
      },
    });

    if (failure !== undefined) throw failure;
    expect(running).toBeDefined();
    expect(result.report.deadLettered).toBe(1);
    // The redrive moved it out of the DLQ, by an Invoke, naming the record's original coordinates.
    expect(redrive?.failed).toEqual([]);
    expect(redrive?.moved).toEqual([
      expect.objectContaining({
        reason: 'OutOfStock',
        target: `lambda:${inventorySettings.consumerName}`,
        coordinates: { topic: 'inventory', partition: 0, offset: 1 },
      }),
    ]);
    // The consumer decided it with its normal code path, at its original coordinates: applied now
    // that stock is there (its inbox row names the record), not dead-lettered again.
    expect(reservation).toMatchObject({ status: 'applied', messageId: 'inventory-0@1' });
    expect(afterwards?.listed).toBe(0);
  }, 240_000);
});
