/**
 * The inventory example on DynamoDB Local and the SQS server, through its public API only:
 * folding of several reservations of one SKU in a batch, its own dead-letter reason, a release
 * that waits for its reservation, and exactly-once under redelivery.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { createIdempotentConsumer, type OutcomeRecord } from 'idempotent-consumer';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { deadLetterAttribute } from '../../../test/support/deadLetterAttributes.js';
import { deadLetters } from '../../../test/support/cafeHarness.js';
import { lambdaContext, sqsEvent, sqsRecord } from '../../../test/support/sqsEvents.js';
import { type TestResources, testResources, describeUnlessDeployedStack } from '../../../test/support/testResources.js';
import { inventoryConsumerOptions } from '../consumer.js';
import { inventoryTables } from '../settings.js';

const describe = describeUnlessDeployedStack("the inventory consumer's tables, not the deployed café's");

const at = '2026-03-01T10:00:00Z';
const received = (requestId: string, sku: string, quantity: number) => ({ requestId, kind: 'StockReceived', sku, quantity, at });
const reserve = (requestId: string, sku: string, reservationId: string, quantity: number) => ({
  requestId,
  kind: 'ReservationRequested',
  sku,
  reservationId,
  quantity,
  at,
});
const release = (requestId: string, sku: string, reservationId: string) => ({
  requestId,
  kind: 'ReservationReleased',
  sku,
  reservationId,
  at,
});

describe('the inventory example', () => {
  let env: TestResources;
  const outcomes: OutcomeRecord[] = [];
  let handler: ReturnType<typeof createIdempotentConsumer>;
  const record = (messageId: string, body: object, receiveCount = 1) =>
    sqsRecord(messageId, body as Record<string, unknown>, { receiveCount, queueArn: env.resources.queueArn });
  const stock = async (sku: string) =>
    (await env.documentClient.send(new GetCommand({ TableName: env.resources.tables.stock, Key: { sku }, ConsistentRead: true }))).Item;

  beforeAll(async () => {
    env = await testResources('inventory', inventoryTables, { consumerName: 'inventory-reservations' });
    handler = createIdempotentConsumer(inventoryConsumerOptions, {
      environment: env.environment,
      clients: { dynamoDb: env.dynamoDb, sqs: env.sqs },
      observer: { onOutcome: (o) => outcomes.push(o) },
    });
  });
  afterAll(() => env.dispose());

  it('folds a SKU through a batch: stock received, three reservations, one too many, in one transaction', async () => {
    const response = await handler(
      sqsEvent(
        record('m-1', received('r-1', 'SKU-1', 5)),
        record('m-2', reserve('r-2', 'SKU-1', 'res-a', 2)),
        record('m-3', reserve('r-3', 'SKU-1', 'res-b', 2)),
        record('m-4', reserve('r-4', 'SKU-1', 'res-c', 2)),
      ),
      lambdaContext(),
    );
    expect(response).toEqual({ batchItemFailures: [] });
    expect(await stock('SKU-1')).toMatchObject({ available: 1, reserved: 4 });
    const dlq = await deadLetters(env);
    expect(dlq.map((m) => deadLetterAttribute(m, 'failureReason'))).toEqual(['OutOfStock']);
    expect(deadLetterAttribute(dlq[0], 'errorMessage')).toBe('SKU-1 has 1 available, 2 requested');
    expect(outcomes.map((o) => o.outcome)).toEqual(['applied', 'applied', 'applied', 'dead-lettered']);
  });

  it('keeps a release that arrives before its reservation for later, then applies both once', async () => {
    const early = await handler(sqsEvent(record('m-5', release('r-5', 'SKU-2', 'res-x'))), lambdaContext());
    expect(early).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-5' }] });
    const later = await handler(
      sqsEvent(
        record('m-6', received('r-6', 'SKU-2', 3)),
        record('m-7', reserve('r-7', 'SKU-2', 'res-x', 3)),
        record('m-5', release('r-5', 'SKU-2', 'res-x'), 2),
      ),
      lambdaContext(),
    );
    expect(later).toEqual({ batchItemFailures: [] });
    expect(await stock('SKU-2')).toMatchObject({ available: 3, reserved: 0 });
  });

  it('applies nothing twice when the whole history is delivered again', async () => {
    const before = await stock('SKU-1');
    const again = await handler(
      sqsEvent(
        record('m-1', received('r-1', 'SKU-1', 5), 2),
        record('m-2', reserve('r-2', 'SKU-1', 'res-a', 2), 2),
        record('m-3', reserve('r-3', 'SKU-1', 'res-b', 2), 2),
      ),
      lambdaContext(),
    );
    expect(again).toEqual({ batchItemFailures: [] });
    expect(await stock('SKU-1')).toEqual(before);
    expect(outcomes.slice(-3).map((o) => o.outcome)).toEqual(['duplicate', 'duplicate', 'duplicate']);
  });

  it("dead-letters a reservation id reused by another request with the example's own reason", async () => {
    await handler(
      sqsEvent(record('m-8', received('r-8', 'SKU-3', 10)), record('m-9', reserve('r-9', 'SKU-3', 'res-y', 1))),
      lambdaContext(),
    );
    await deadLetters(env);
    await handler(sqsEvent(record('m-10', reserve('r-10', 'SKU-3', 'res-y', 1))), lambdaContext());
    expect(outcomes.at(-1)).toMatchObject({ outcome: 'dead-lettered', reason: 'ReservationExists' });
  });
});
