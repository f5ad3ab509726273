/**
 * The outbox relay publishing to an EventBridge bus named in its environment (the bus ARN in
 * `OUTBOX_DESTINATION_DEFAULT`, as the `OutboxRelay` construct sets it), end to end: outbox items
 * committed in DynamoDB Local, read from its stream, published through the real SDK client to the
 * local EventBridge, which fails chosen entries. An entry that keeps failing is reported by its
 * sequence number and published on the stream's retry; the others are not sent twice; every message
 * reaches the bus once, with its stable id in the detail, and is marked published.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it, vi } from 'vitest';
import { createOutboxRelay, type OutboxRelayRuntimeOptions } from '../../packages/idempotent-consumer/src/outbox/createOutboxRelay.js';
import { outboxRelaySettings } from '../../packages/idempotent-consumer/src/outbox/outboxRelaySettings.js';
import { type LocalEventBridge, startEventBridgeServer } from '../../packages/local/src/aws/eventBridgeServer.js';
import { localClientConfig } from '../../packages/local/src/localClientConfig.js';
import { countOutboxItems } from '../../packages/local/src/outbox/countOutboxItems.js';
import { type LocalRelay, startLocalRelay } from '../../packages/local/src/outbox/startLocalRelay.js';
import {
  CONSUMER,
  commitOutboxItems,
  insertEvent,
  invocationContext,
  type OutboxResources,
  outboxItem,
  outboxResources,
} from './outboxHarness.js';
import { describeUnlessDeployedStack } from '../support/testResources.js';

const describe = describeUnlessDeployedStack('an inbox table with a stream of its own and the local EventBridge');

const quiet = () => {
  const metrics = new Metrics({ namespace: 'OutboxTest', serviceName: CONSUMER });
  vi.spyOn(metrics, 'publishStoredMetrics').mockImplementation(() => metrics);
  return { logger: new Logger({ serviceName: CONSUMER, logLevel: 'SILENT' }), metrics };
};

describe('the outbox relay to an EventBridge bus', () => {
  let eventBridge: LocalEventBridge;
  let client: EventBridgeClient;
  let env: OutboxResources;
  let busArn: string;
  let relay: LocalRelay | undefined;
  beforeAll(async () => {
    eventBridge = await startEventBridgeServer();
    client = new EventBridgeClient(localClientConfig(eventBridge.endpoint));
  });
  afterAll(async () => {
    client.destroy();
    await eventBridge.stop();
  });
  // Each test has its own tables (a relay reads its stream from the trim horizon) and its own bus.
  beforeEach(async () => {
    env = await outboxResources('eb');
    busArn = eventBridge.createEventBus(`${env.prefix}bus`);
  });
  afterEach(async () => {
    await relay?.stop();
    relay = undefined;
    await env.dispose();
  });

  const eventsOf = (messageId: string) => eventBridge.events(busArn).filter((event) => event.detail.outboxMessageId === messageId);

  it('reports an entry EventBridge keeps failing by its sequence number, publishes it on the retry, and sends no other twice', async () => {
    const ids = await commitOutboxItems(env, [
      {
        idempotencyKey: 'e-1',
        orderingKey: 'O-1',
        outbox: [{ body: { type: 'PaymentReceived', orderId: 'O-1' } }, { body: { type: 'ReceiptIssued', orderId: 'O-1' } }],
      },
      { idempotencyKey: 'e-2', orderingKey: 'O-2', outbox: [{ body: { type: 'PaymentReceived', orderId: 'O-2' } }] },
    ]);
    const failing = ids[1]!;
    // More failures than the destination's attempts in one call (3): the first invocation gives up on it.
    eventBridge.failEntries({ errorCode: 'ThrottlingException', times: 3, match: (entry) => entry.Detail?.includes(failing) ?? false });
    const runtime: OutboxRelayRuntimeOptions = {
      environment: env.environment({ default: busArn }),
      clients: { dynamoDb: env.dynamoDb, eventBridge: client },
      ...quiet(),
    };
    const handler = createOutboxRelay({}, runtime);
    const event = await insertEvent(env, ids);
    const failingSequenceNumber = event.Records[1]!.dynamodb!.SequenceNumber!;

    const first = await handler(event, invocationContext().context);
    expect(first).toEqual({ batchItemFailures: [{ itemIdentifier: failingSequenceNumber }] });
    expect(ids.map((id) => eventsOf(id).length)).toEqual([1, 0, 1]);
    expect((await outboxItem(env, failing))?.['publishedAt']).toBeUndefined();

    // Lambda retries the batch (from the reported record; here the whole batch, the stricter case).
    const second = await handler(event, invocationContext().context);
    expect(second).toEqual({ batchItemFailures: [] });
    expect(ids.map((id) => eventsOf(id).length)).toEqual([1, 1, 1]);
    for (const id of ids) expect((await outboxItem(env, id))?.['publishedAt']).toEqual(expect.any(String));
    const [receipt] = eventsOf(failing);
    expect(receipt).toMatchObject({
      source: CONSUMER,
      'detail-type': 'ReceiptIssued',
      detail: { outboxMessageId: failing, orderId: 'O-1' },
    });
  });

  it('a message EventBridge cannot take (not a JSON object) is reported, never sent, and does not hold back the others', async () => {
    const ids = await commitOutboxItems(env, [{ idempotencyKey: 'e-3', outbox: [{ body: 'plain text' }, { body: { type: 'Fine' } }] }]);
    const handler = createOutboxRelay(
      {},
      { environment: env.environment({ default: busArn }), clients: { dynamoDb: env.dynamoDb, eventBridge: client }, ...quiet() },
    );
    const event = await insertEvent(env, ids);
    const before = eventBridge.calls().length;
    expect(await handler(event, invocationContext().context)).toEqual({
      batchItemFailures: [{ itemIdentifier: event.Records[0]!.dynamodb!.SequenceNumber! }],
    });
    expect(eventBridge.calls().length - before).toBe(1); // only the good one was sent
    expect(eventsOf(ids[1]!)).toHaveLength(1);
  });

  it('the local relay on the stream publishes through partial failures: written == published, each event on the bus once', async () => {
    const { logger, metrics } = quiet();
    relay = await startLocalRelay({
      dynamoDb: env.dynamoDb,
      streams: env.streams,
      consumerName: CONSUMER,
      inboxTableName: env.inboxTable,
      idempotencyTableName: env.idempotencyTable,
      destinations: { default: busArn },
      clients: { eventBridge: client },
      settings: outboxRelaySettings({ batchSize: 10, retryAttempts: 10 }),
      logger,
      metrics,
    });
    const events = Array.from({ length: 6 }, (_, i) => ({
      idempotencyKey: `l-${i}`,
      orderingKey: `O-${i % 2}`,
      outbox: [{ body: { type: 'StockReserved', n: i } }],
    }));
    const ids = await commitOutboxItems(env, events);
    // Two entries fail more often than one publish retries them: their records go back to the stream.
    for (const id of [ids[1]!, ids[4]!]) {
      eventBridge.failEntries({ errorCode: 'InternalFailure', times: 4, match: (entry) => entry.Detail?.includes(id) ?? false });
    }
    await relay.drain({ timeoutMs: 120_000 });

    expect(await countOutboxItems(env.dynamoDb, env.inboxTable, CONSUMER)).toEqual({ written: 6, published: 6 });
    expect(relay.published()).toBe(6);
    expect(relay.gaveUp()).toEqual([]);
    expect(ids.map((id) => eventsOf(id).length)).toEqual([1, 1, 1, 1, 1, 1]);
    expect(eventBridge.events(busArn).map((event) => event['detail-type'])).toEqual(Array(6).fill('StockReserved'));
  });
});
