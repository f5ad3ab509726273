/**
 * A dead letter of a FIFO message group or a Kafka partition is final before its successors
 * commit: were its marker lost after they committed, the message would come back and be decided
 * again on the state they left, and the final state would differ from the in-order one.
 *
 * The inventory example on a FIFO queue: group SKU-1 = [reserve 5 (only 2 in stock: OutOfStock),
 * receive 10]. In order, the reservation is refused and the stock ends at 12 available.
 */
import { emulatorDynamoDb } from '../support/hookedDynamoDb.js';
import { SQSClient } from '@aws-sdk/client-sqs';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { createIdempotentConsumer, type OutcomeRecord } from 'idempotent-consumer';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { inventoryConsumerOptions } from '../../examples/inventory/consumer.js';
import { inventoryTables } from '../../examples/inventory/settings.js';
import { deadLetterAttribute } from '../support/deadLetterAttributes.js';
import { deadLetters } from '../support/cafeHarness.js';
import { lambdaContext, sqsEvent, sqsRecord } from '../support/sqsEvents.js';
import { type TestResources, testResources, describeUnlessDeployedStack } from '../support/testResources.js';

const describe = describeUnlessDeployedStack("the inventory consumer's tables on a FIFO queue, not the deployed café's");

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

describe('a dead letter of a FIFO message group is marked before the rest of its group commits', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('ordered-dl', inventoryTables, { consumerName: 'inventory-reservations', queue: { fifo: true } });
  });
  afterAll(() => env.dispose());

  const stock = async (sku: string) =>
    (await env.documentClient.send(new GetCommand({ TableName: env.resources.tables.stock, Key: { sku }, ConsistentRead: true }))).Item;
  const record = (messageId: string, body: object, receiveCount = 1) =>
    sqsRecord(messageId, body as Record<string, unknown>, {
      receiveCount,
      groupId: (body as { sku: string }).sku,
      queueArn: env.resources.queueArn,
    });

  /** An execution environment whose DynamoDB client fails the first `failMarkers` dead-letter marker writes. */
  function environment(failMarkers: number) {
    const outcomes: OutcomeRecord[] = [];
    let failed = 0;
    const client = emulatorDynamoDb(env);
    client.middlewareStack.add(
      (next, context) => async (args) => {
        // Marshalled or not yet, depending on where the document client's own middleware runs.
        const status = (args.input as { Item?: { status?: string | { S?: string } } }).Item?.status;
        const marker = status === 'dead-lettered' || (typeof status === 'object' && status.S === 'dead-lettered');
        if (context.commandName === 'PutItemCommand' && marker && failed < failMarkers) {
          failed += 1;
          throw Object.assign(new Error('Throughput exceeds the current capacity of your table or index.'), {
            name: 'ThrottlingException',
            $fault: 'client',
          });
        }
        return next(args);
      },
      { step: 'initialize', name: 'failMarkers' },
    );
    const handler = createIdempotentConsumer(inventoryConsumerOptions, {
      environment: env.environment,
      clients: { dynamoDb: client, sqs: env.sqs, s3: env.s3 },
      observer: { onOutcome: (o) => outcomes.push(o) },
    });
    return { handler, outcomes, markerFailures: () => failed };
  }

  it('holds back the successors while the marker cannot be written, and ends in the in-order state', async () => {
    const setup = environment(0);
    expect(await setup.handler(sqsEvent(record('m-0', received('r-0', 'SKU-1', 2))), lambdaContext())).toEqual({ batchItemFailures: [] });

    // Attempt 1: the reservation is refused (OutOfStock); its marker write fails.
    const first = environment(1);
    const response = await first.handler(
      sqsEvent(record('m-1', reserve('r-1', 'SKU-1', 'res-1', 5)), record('m-2', received('r-2', 'SKU-1', 10))),
      lambdaContext(),
    );

    expect(first.markerFailures()).toBe(1);
    // Both come back: the refused reservation, and its successor, which did not commit.
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-1' }, { itemIdentifier: 'm-2' }] });
    expect(await stock('SKU-1')).toMatchObject({ available: 2, reserved: 0 });
    expect(first.outcomes.map((o) => o.outcome)).toEqual(['retried', 'retried']);

    // Attempt 2: decided on the same state, refused again, then the stock arrives.
    const second = environment(0);
    const retry = await second.handler(
      sqsEvent(record('m-1', reserve('r-1', 'SKU-1', 'res-1', 5), 2), record('m-2', received('r-2', 'SKU-1', 10), 2)),
      lambdaContext(),
    );

    expect(retry).toEqual({ batchItemFailures: [] });
    expect(second.outcomes.map((o) => `${o.messageId}:${o.outcome}`)).toEqual(['m-1:dead-lettered', 'm-2:applied']);
    expect(await stock('SKU-1')).toMatchObject({ available: 12, reserved: 0 }); // the in-order final state
    const dlq = await deadLetters(env);
    expect(dlq.map((m) => deadLetterAttribute(m, 'failureReason'))).toEqual(['OutOfStock']);
  });

  /** An SQS client whose first `failSends` SendMessageBatch calls (the dead-letter queue's) fail. */
  function failingSqs(failSends: number) {
    let failed = 0;
    const sqs = new SQSClient({
      endpoint: env.endpoints.sqsEndpoint,
      region: env.endpoints.region,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    sqs.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'SendMessageBatchCommand' && failed < failSends) {
          failed += 1;
          throw Object.assign(new Error('We encountered an internal error. Please try again.'), {
            name: 'InternalError',
            $fault: 'server',
          });
        }
        return next(args);
      },
      { step: 'initialize', name: 'failSends' },
    );
    return sqs;
  }

  it.each([
    ['refused by decide (OutOfStock)', 'p', (sku: string) => reserve(`${sku}-r`, sku, `${sku}-res`, 5)],
    [
      'a body that fails the schema',
      'q',
      (sku: string) => ({ requestId: `${sku}-r`, kind: 'ReservationRequested', sku, reservationId: `${sku}-res`, quantity: -1, at }),
    ],
  ])(
    'sends a dead letter %s before its successors commit: a send that fails stops the group, nothing is applied behind it',
    async (_what, prefix, poison) => {
      const sku = `SKU-${prefix.toUpperCase()}`;
      const setup = environment(0);
      expect(await setup.handler(sqsEvent(record(`${prefix}-0`, received(`${prefix}-s0`, sku, 2))), lambdaContext())).toEqual({
        batchItemFailures: [],
      });
      await deadLetters(env);
      const outcomes: OutcomeRecord[] = [];
      const handler = createIdempotentConsumer(inventoryConsumerOptions, {
        environment: env.environment,
        clients: { dynamoDb: env.dynamoDb, sqs: failingSqs(1), s3: env.s3 },
        observer: { onOutcome: (o) => outcomes.push(o) },
      });

      const response = await handler(
        sqsEvent(record(`${prefix}-1`, poison(sku)), record(`${prefix}-2`, received(`${prefix}-s2`, sku, 10))),
        lambdaContext(),
      );

      expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: `${prefix}-1` }, { itemIdentifier: `${prefix}-2` }] });
      // Each outcome agrees with the response: both retried, neither counted as an attempt.
      expect(outcomes.map((o) => `${o.outcome}:${o.countsAsAttempt}`)).toEqual(['retried:false', 'retried:false']);
      expect(await stock(sku)).toMatchObject({ available: 2, reserved: 0 });
      expect(await deadLetters(env)).toEqual([]);

      const retry = await handler(
        sqsEvent(record(`${prefix}-1`, poison(sku), 2), record(`${prefix}-2`, received(`${prefix}-s2`, sku, 10), 2)),
        lambdaContext(),
      );
      expect(retry).toEqual({ batchItemFailures: [] });
      expect(await stock(sku)).toMatchObject({ available: 12, reserved: 0 });
      expect((await deadLetters(env)).map((m) => m.Body)).toEqual([JSON.stringify(poison(sku))]);
    },
  );

  it('dead-letters a redelivery of a marked message again, with its reason, without deciding it on the new state', async () => {
    const setup = environment(0);
    expect(await setup.handler(sqsEvent(record('n-0', received('s-0', 'SKU-2', 1))), lambdaContext())).toEqual({ batchItemFailures: [] });
    // The marker is written (before the successor commits); then say the DLQ send is lost and the group comes back.
    const first = environment(0);
    await first.handler(
      sqsEvent(record('n-1', reserve('s-1', 'SKU-2', 'res-2', 3)), record('n-2', received('s-2', 'SKU-2', 10))),
      lambdaContext(),
    );
    expect(first.outcomes.map((o) => o.outcome)).toEqual(['dead-lettered', 'applied']);
    await deadLetters(env);

    const again = environment(0);
    await again.handler(sqsEvent(record('n-1', reserve('s-1', 'SKU-2', 'res-2', 3), 2)), lambdaContext());

    // 11 in stock now, yet the reservation stays refused: its verdict was final.
    expect(again.outcomes.map((o) => `${o.outcome}:${o.reason}`)).toEqual(['dead-lettered:OutOfStock']);
    expect(await stock('SKU-2')).toMatchObject({ available: 11, reserved: 0 });
  });
});
