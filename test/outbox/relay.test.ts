/**
 * The relay handler against DynamoDB Local (items, stream, Powertools records) and the SQS/SNS
 * server: what it publishes, how it marks, what it skips, its partial batch responses, its
 * Powertools records and metrics.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { EnvironmentError } from '../../packages/idempotent-consumer/src/config/runtimeConfig.js';
import {
  createOutboxRelay,
  OutboxMetricName,
  type OutboxRelayRuntimeOptions,
} from '../../packages/idempotent-consumer/src/outbox/createOutboxRelay.js';
import type { OutboxDestination, OutboxMessage } from '../../packages/idempotent-consumer/src/outbox/OutboxDestination.js';
import { outboxFilterPattern } from '../../packages/idempotent-consumer/src/outbox/outboxStreamRecords.js';
import { redriveOutbox } from '../../packages/idempotent-consumer/src/outbox/redriveOutbox.js';
import { matchesFilterPattern } from '../../packages/local/src/outbox/matchesFilterPattern.js';
import { receiveOutboxDeliveries } from '../../packages/local/src/outbox/receiveOutboxDeliveries.js';
import {
  CONSUMER,
  commitOutboxItems,
  insertEvent,
  invocationContext,
  type OutboxResources,
  outboxItem,
  outboxResources,
  streamRecords,
} from './outboxHarness.js';
import { describeUnlessDeployedStack } from '../support/testResources.js';

const describe = describeUnlessDeployedStack('an inbox table with a stream and destination queues of its own');

/** An in-memory destination: records what it was given; fails for the message ids in `failFor`. */
class MemoryDestination implements OutboxDestination {
  readonly target = 'memory';
  readonly sent: OutboxMessage[] = [];
  readonly failFor = new Set<string>();
  async publish(message: OutboxMessage) {
    if (this.failFor.has(message.messageId)) throw new Error('destination unavailable');
    this.sent.push(message);
    return { destinationMessageId: `memory-${this.sent.length}` };
  }
}

const silentLogger = () => new Logger({ serviceName: CONSUMER, logLevel: 'SILENT' });
function quietMetrics() {
  const metrics = new Metrics({ namespace: 'OutboxTest', serviceName: CONSUMER });
  vi.spyOn(metrics, 'publishStoredMetrics').mockImplementation(() => metrics);
  return { metrics, added: vi.spyOn(metrics, 'addMetric') };
}

describe('the outbox relay', () => {
  let env: OutboxResources;
  beforeAll(async () => {
    env = await outboxResources('relay');
  });
  afterAll(() => env.dispose());

  const runtime = (
    extra: Partial<OutboxRelayRuntimeOptions> = {},
    destinations: Record<string, string> = { default: env.fifoQueueUrl },
  ): OutboxRelayRuntimeOptions => ({
    environment: env.environment(destinations, { publishedTtlSeconds: 600 }),
    clients: { dynamoDb: env.dynamoDb, sqs: env.sqs, sns: env.sns },
    logger: silentLogger(),
    metrics: quietMetrics().metrics,
    ...extra,
  });

  it('publishes each new outbox item to its FIFO queue once and marks it published with a short TTL', async () => {
    const createdAt = new Date(Date.UTC(2026, 0, 1, 12, 0, 0));
    const ids = await commitOutboxItems(
      env,
      [
        {
          idempotencyKey: 'e-1',
          orderingKey: 'O-1',
          outbox: [{ body: { type: 'PaymentReceived', orderId: 'O-1' } }, { body: 'plain text', attributes: { kind: 'note' } }],
        },
        { idempotencyKey: 'e-2', orderingKey: 'O-2', outbox: [{ body: { type: 'PaymentReceived', orderId: 'O-2' } }] },
      ],
      createdAt,
    );
    const publishedAt = new Date(createdAt.getTime() + 1500);
    const { metrics, added } = quietMetrics();
    const handler = createOutboxRelay({}, runtime({ now: () => publishedAt, metrics }));

    const response = await handler(await insertEvent(env, ids), invocationContext().context);

    expect(JSON.stringify(response)).toBe('{"batchItemFailures":[]}');
    const deliveries = await receiveOutboxDeliveries(env.sqs, env.fifoQueueUrl);
    expect(deliveries.delivered).toBe(3);
    expect(new Set(deliveries.byMessageId.keys())).toEqual(new Set(ids));
    expect(deliveries.messages.map((m) => m.Body)).toEqual(
      expect.arrayContaining(['{"type":"PaymentReceived","orderId":"O-1"}', 'plain text']),
    );
    expect(deliveries.messages.find((m) => m.Body === 'plain text')?.MessageAttributes?.['kind']?.StringValue).toBe('note');
    for (const id of ids) {
      const item = await outboxItem(env, id);
      expect(item?.['publishedAt']).toBe(publishedAt.toISOString());
      expect(item?.['expiresAt']).toBe(Math.floor(publishedAt.getTime() / 1000) + 600);
    }
    expect(added).toHaveBeenCalledWith(OutboxMetricName.OutboxMessagesPublished, 'Count', 1);
    expect(added).toHaveBeenCalledWith(OutboxMetricName.OutboxPublishDelay, 'Milliseconds', 1500);
    expect(added.mock.calls.filter(([name]) => name === OutboxMetricName.OutboxMessagesPublished)).toHaveLength(3);
  });

  it('sends nothing again for a batch it already relayed (Powertools keyed on the message id, prefix the consumer name)', async () => {
    const ids = await commitOutboxItems(env, [{ idempotencyKey: 'e-3', outbox: [{ body: 'again' }] }]);
    const event = await insertEvent(env, ids);
    const handler = createOutboxRelay({}, runtime());
    await handler(event, invocationContext().context);
    const firstMark = await outboxItem(env, ids[0]!);

    const relayed: boolean[] = [];
    const retry = createOutboxRelay({}, runtime({ onRelayed: (r) => relayed.push(r.sent, r.marked) }));
    expect(await retry(event, invocationContext().context)).toEqual({ batchItemFailures: [] });

    expect(relayed).toEqual([false, false]);
    expect(await outboxItem(env, ids[0]!)).toEqual(firstMark);
    expect((await receiveOutboxDeliveries(env.sqs, env.fifoQueueUrl)).delivered).toBe(1);
    const records = (await env.documentClient.send(new ScanCommand({ TableName: env.idempotencyTable, ConsistentRead: true }))).Items ?? [];
    expect(records.length).toBeGreaterThan(0);
    for (const record of records) {
      expect(record['id']).toMatch(new RegExp(`^${CONSUMER}#[A-Za-z0-9+/=]{24}$`)); // not the function name
      expect(record['status']).toBe('COMPLETED');
    }
  });

  it('skips the stream records that are not new outbox items of its consumer, as the mapping’s filter does', async () => {
    await env.documentClient.send(
      new PutCommand({ TableName: env.inboxTable, Item: { pk: `${CONSUMER}#key#e-9`, kind: 'inbox', consumer: CONSUMER } }),
    );
    const [otherId] = await commitOutboxItems(
      env,
      [{ idempotencyKey: 'e-9', outbox: [{ body: 'not mine' }] }],
      new Date(),
      'other-consumer',
    );
    const records = await streamRecords(env);
    const pattern = outboxFilterPattern(CONSUMER);
    const kept = records.filter((record) => matchesFilterPattern(pattern, record));
    const dropped = records.filter((record) => !matchesFilterPattern(pattern, record));
    expect(
      kept.every(
        (r) =>
          r.eventName === 'INSERT' && r.dynamodb?.NewImage?.['kind']?.S === 'outbox' && r.dynamodb?.NewImage?.['consumer']?.S === CONSUMER,
      ),
    ).toBe(true);
    expect(dropped.map((r) => r.eventName)).toContain('MODIFY'); // the marks of the tests above
    expect(dropped.some((r) => r.dynamodb?.NewImage?.['kind']?.S === 'inbox')).toBe(true);
    expect(dropped.some((r) => r.dynamodb?.NewImage?.['messageId']?.S === otherId)).toBe(true);

    const memory = new MemoryDestination();
    const handler = createOutboxRelay({ destinations: { default: memory } }, runtime());
    expect(await handler({ Records: dropped }, invocationContext().context)).toEqual({ batchItemFailures: [] });
    expect(memory.sent).toEqual([]);
    expect((await outboxItem(env, otherId!, 'other-consumer'))?.['publishedAt']).toBeUndefined();
  });

  it('reports a failed record by its sequence number and still publishes the records after it; the retry from there sends only the failed one', async () => {
    const ids = await commitOutboxItems(env, [
      { idempotencyKey: 'p-1', outbox: [{ body: '1' }] },
      { idempotencyKey: 'p-2', outbox: [{ body: '2' }] },
      { idempotencyKey: 'p-3', outbox: [{ body: '3' }] },
    ]);
    const event = await insertEvent(env, ids);
    const sequence = event.Records.map((record) => record.dynamodb!.SequenceNumber!);
    const memory = new MemoryDestination();
    memory.failFor.add(ids[1]!);
    const { metrics, added } = quietMetrics();
    const handler = createOutboxRelay({ destinations: { default: memory } }, runtime({ metrics }));

    const response = await handler(event, invocationContext().context);

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: sequence[1] }] });
    expect(memory.sent.map((m) => m.messageId)).toEqual([ids[0], ids[2]]);
    expect((await outboxItem(env, ids[0]!))?.['publishedAt']).toEqual(expect.any(String));
    expect((await outboxItem(env, ids[1]!))?.['publishedAt']).toBeUndefined();
    expect((await outboxItem(env, ids[2]!))?.['publishedAt']).toEqual(expect.any(String));
    expect(added).toHaveBeenCalledWith(OutboxMetricName.OutboxPublishFailures, 'Count', 1);

    memory.failFor.clear();
    const retry = await handler({ Records: event.Records.slice(1) }, invocationContext().context); // Lambda resumes at the reported record
    expect(retry).toEqual({ batchItemFailures: [] });
    expect(memory.sent.map((m) => m.messageId)).toEqual([ids[0], ids[2], ids[1]]);
    for (const id of ids) expect((await outboxItem(env, id))?.['publishedAt']).toEqual(expect.any(String));
  });

  it('reports an item whose destination it does not have, and a full failure as all items (never throws)', async () => {
    const ids = await commitOutboxItems(env, [{ idempotencyKey: 'u-1', outbox: [{ body: 'x', destination: 'audit' }] }]);
    const event = await insertEvent(env, ids);
    const errors: unknown[] = [];
    const logger = silentLogger();
    vi.spyOn(logger, 'error').mockImplementation((...args: unknown[]) => void errors.push(args[1]));
    const handler = createOutboxRelay({}, runtime({ logger }));
    const response = await handler(event, invocationContext().context);
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: event.Records[0]!.dynamodb!.SequenceNumber }] });
    expect(JSON.stringify(errors)).toMatch(/OutboxMessageError.*no outbox destination named \\"audit\\": set OUTBOX_DESTINATION_AUDIT/);

    const withAudit = createOutboxRelay({}, runtime({}, { default: env.fifoQueueUrl, audit: env.standardQueueUrl }));
    expect(await withAudit(event, invocationContext().context)).toEqual({ batchItemFailures: [] });
    expect((await receiveOutboxDeliveries(env.sqs, env.standardQueueUrl)).byMessageId.get(ids[0]!)).toBe(1);
  });

  it('publishes to a FIFO topic with the same guarantees', async () => {
    const ids = await commitOutboxItems(env, [{ idempotencyKey: 't-1', outbox: [{ body: 'to the topic' }] }]);
    const handler = createOutboxRelay({}, runtime({}, { default: env.fifoTopicArn }));
    expect(await handler(await insertEvent(env, ids), invocationContext().context)).toEqual({ batchItemFailures: [] });
    const deliveries = await receiveOutboxDeliveries(env.sqs, env.fifoTopicSubscriberUrl);
    expect([...deliveries.byMessageId]).toEqual([[ids[0], 1]]);
  });

  it('redrives the items left unpublished (after the mapping gave them up) through the relay, once', async () => {
    const ids = await commitOutboxItems(env, [
      { idempotencyKey: 'r-1', outbox: [{ body: 'r1' }] },
      { idempotencyKey: 'r-2', outbox: [{ body: 'r2' }, { body: 'r2 audit', destination: 'audit' }] },
    ]);
    // The stream relay could publish r-1 only; the others were given up (no such destination then).
    const memory = new MemoryDestination();
    memory.failFor.add(ids[1]!);
    const live = createOutboxRelay({ destinations: { default: memory } }, runtime());
    const response = await live(await insertEvent(env, ids), invocationContext().context);
    expect(response.batchItemFailures).toHaveLength(2);

    memory.failFor.clear();
    const fixed = createOutboxRelay({ destinations: { default: memory } }, runtime({}, { audit: env.standardQueueUrl }));
    const first = await redriveOutbox({ relay: fixed, dynamoDb: env.dynamoDb, inboxTableName: env.inboxTable, consumerName: CONSUMER });
    expect(first.failed).toEqual([]);
    expect(first.relayed).toBe(first.found);
    for (const id of ids) expect((await outboxItem(env, id))?.['publishedAt']).toEqual(expect.any(String));
    expect(memory.sent.map((m) => m.messageId)).toEqual([ids[0], ids[1]]);
    expect((await receiveOutboxDeliveries(env.sqs, env.standardQueueUrl)).byMessageId.get(ids[2]!)).toBe(1);

    const again = await redriveOutbox({ relay: fixed, dynamoDb: env.dynamoDb, inboxTableName: env.inboxTable, consumerName: CONSUMER });
    expect(again).toEqual({ found: 0, relayed: 0, failed: [] });
  });

  it('fails its first invocation with every problem of its environment, and builds again once it is fixed', async () => {
    const environment: Record<string, string> = { ...env.environment({}), CONSUMER_NAME: '' };
    const handler = createOutboxRelay({}, { ...runtime(), environment });
    await expect(handler({ Records: [] }, invocationContext().context)).rejects.toThrow(EnvironmentError);
    environment['CONSUMER_NAME'] = CONSUMER;
    await expect(handler({ Records: [] }, invocationContext().context)).rejects.toThrow(
      /no outbox destination: set OUTBOX_DESTINATION_DEFAULT/,
    );
    environment['OUTBOX_DESTINATION_DEFAULT'] = env.fifoQueueUrl;
    expect(await handler({ Records: [] }, invocationContext().context)).toEqual({ batchItemFailures: [] });
  });
});
