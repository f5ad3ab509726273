/**
 * The Kafka path against the real DynamoDB Local and SQS server: the Kafka handler with the real
 * consumer (inbox, guarded notification, classifier, dead-letter queue, attempt log), fed MSK
 * events as Lambda's Kafka event source mapping sends them; then the local Kafka runtime end
 * to end.
 */
import type { Message } from '@aws-sdk/client-sqs';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lambdaEnvironment, type SettingsOverrides } from '../../config/settings.js';
import type { KafkaEvent, KafkaRecord } from '../../lambda/batch/kafkaEvent.js';
import { readRuntimeConfig, type RuntimeConfig } from '../../lambda/config/runtimeConfig.js';
import { createConsumer } from '../../lambda/createConsumer.js';
import { DeadLetterAttribute } from '../../lambda/dlq/deadLetterMessage.js';
import { createKafkaHandler } from '../../lambda/handlers/createKafkaHandler.js';
import { kafkaRecordIdentity } from '../../lambda/batch/kafkaDelivery.js';
import { DynamoDBKafkaAttemptLog } from '../../lambda/inbox/DynamoDBKafkaAttemptLog.js';
import type { KafkaRecordFailure } from '../../lambda/inbox/KafkaAttemptLog.js';
import { LEDGER_SK_PREFIX } from '../../lambda/inbox/DynamoDBInbox.js';
import { type OutcomeRecord, peekIds } from '../../lambda/observability/outcomes.js';
import type { OrderEventProcessor } from '../../lambda/processing/OrderEventProcessor.js';
import { NOTIFICATION_SK_PREFIX } from '../../lambda/sideEffects/Notifier.js';
import { readInputFile } from '../../local/inputFile.js';
import { runLocalKafka } from '../../local/kafka/runLocalKafka.js';
import { c8Event, kafkaRecord, MSK_CLUSTER_ARN, mskEvent } from '../support/kafkaEvents.js';
import { body, lambdaContext } from '../support/sqsEvents.js';
import { receiveAll } from '../support/sqsMessages.js';
import { testResources, type TestResources } from '../support/testResources.js';

/** Fails the first processing of each listed eventId with a retryable error (throttling). */
function failFirstAttemptOf(...eventIds: string[]) {
  const pending = new Set(eventIds);
  return (processor: OrderEventProcessor): Pick<OrderEventProcessor, 'process'> => ({
    process: async (message) => {
      const { eventId } = peekIds(message.body);
      if (eventId !== undefined && pending.delete(eventId)) {
        const error = new Error(`simulated throttling of ${eventId}`);
        error.name = 'ProvisionedThroughputExceededException';
        throw error;
      }
      return processor.process(message);
    },
  });
}

/** Fails every processing of the listed eventIds with a retryable error. */
function alwaysFail(...eventIds: string[]) {
  return (processor: OrderEventProcessor): Pick<OrderEventProcessor, 'process'> => ({
    process: async (message) => {
      const { eventId } = peekIds(message.body);
      if (eventId !== undefined && eventIds.includes(eventId)) {
        const error = new Error(`DynamoDB throttled ${eventId}`);
        error.name = 'ProvisionedThroughputExceededException';
        throw error;
      }
      return processor.process(message);
    },
  });
}

interface Harness {
  readonly env: TestResources;
  readonly config: RuntimeConfig;
  readonly attemptLog: DynamoDBKafkaAttemptLog;
  readonly outcomes: OutcomeRecord[];
  /** A cold-started Kafka handler, its processor wrapped by `wrapProcessor`. */
  handler(wrapProcessor?: (processor: OrderEventProcessor) => Pick<OrderEventProcessor, 'process'>): ReturnType<typeof createKafkaHandler>;
  /** Ledger entries and notifications of an order. */
  effects(orderId: string): Promise<{ ledger: number; notifications: number }>;
  /** The dead-letter queue's messages (they stay in flight afterwards). */
  deadLetters(): Promise<Message[]>;
}

const harnesses: Harness[] = [];
afterAll(async () => {
  for (const harness of harnesses) await harness.env.dispose();
});

async function harness(name: string, overrides: SettingsOverrides = {}): Promise<Harness> {
  const env = await testResources(name, overrides);
  const config = readRuntimeConfig(lambdaEnvironment(env.settings, env.resources));
  const attemptLog = DynamoDBKafkaAttemptLog.fromConfig(config, env.dynamoDb);
  const outcomes: OutcomeRecord[] = [];
  const count = async (orderId: string, prefix: string) => {
    const { Count = 0 } = await env.documentClient.send(
      new QueryCommand({
        TableName: env.resources.ordersTable,
        KeyConditionExpression: 'orderId = :o AND begins_with(sk, :p)',
        ExpressionAttributeValues: { ':o': orderId, ':p': prefix },
        ConsistentRead: true,
      }),
    );
    return Count;
  };
  const created: Harness = {
    env,
    config,
    attemptLog,
    outcomes,
    handler: (wrapProcessor) =>
      createKafkaHandler(
        createConsumer(config, { dynamoDb: env.dynamoDb, sqs: env.sqs }, {
          observer: { onOutcome: (record) => outcomes.push(record) },
          ...(wrapProcessor !== undefined ? { wrapProcessor } : {}),
        }),
        { attemptLog },
      ),
    effects: async (orderId) => ({ ledger: await count(orderId, LEDGER_SK_PREFIX), notifications: await count(orderId, NOTIFICATION_SK_PREFIX) }),
    deadLetters: () => receiveAll(env.sqs, env.resources.deadLetterQueueUrl, 0),
  };
  harnesses.push(created);
  return created;
}

/** Applies an `OrderPlaced` for each order, through the Kafka handler (partition 9 of the topic). */
async function placeOrders(h: Harness, ...orderIds: string[]): Promise<void> {
  const records = orderIds.map((orderId, index) => kafkaRecord('orders', 9, index, body.placed(`placed-${orderId}`, orderId)));
  expect(await h.handler()(mskEvent(...records), lambdaContext())).toEqual({ batchItemFailures: [] });
}

/** The event with only the records of `partition` from `offset` on: what Lambda sends after resuming there. */
function resumedAt(event: KafkaEvent, partition: string, offset: number): KafkaEvent {
  return { ...event, records: { [partition]: (event.records[partition] ?? []).filter((r: KafkaRecord) => r.offset >= offset) } };
}

const attribute = (message: Message | undefined, name: string) => message?.MessageAttributes?.[name]?.StringValue;

describe('Kafka handler on DynamoDB Local and the SQS server', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await harness('kafka-c8');
    await placeOrders(h, 'O-10', 'O-11', 'O-12', 'O-13');
  });

  it('case C8: a poison record does not block its partition', async () => {
    const handler = h.handler(failFirstAttemptOf('e-12'));

    // Attempt 1: 10 applied, 11 dead-lettered, 12 fails (retryable), 13 not run.
    const first = await handler(c8Event(), lambdaContext());
    expect(JSON.stringify(first)).toBe('{"batchItemFailures":[{"itemIdentifier":{"partition":"orders-0","offset":12}}]}');

    const deadLetters = await h.deadLetters();
    expect(deadLetters).toHaveLength(1);
    const [poison] = deadLetters;
    expect(poison?.Body).toBe('not-json');
    expect(attribute(poison, DeadLetterAttribute.failureReason)).toBe('ValidationError');
    expect(attribute(poison, DeadLetterAttribute.originalMessageId)).toBe('orders-0@11');
    expect(attribute(poison, DeadLetterAttribute.source)).toBe(MSK_CLUSTER_ARN);
    expect(JSON.parse(attribute(poison, DeadLetterAttribute.coordinates) ?? '{}')).toMatchObject({
      topic: 'orders',
      partition: 0,
      offset: 11,
      timestamp: 1_767_268_800_011,
      key: 'O-11',
    });

    // The last error of offset 12 is findable by its coordinates.
    expect(await h.attemptLog.read({ topic: 'orders', partition: 0, offset: 12 })).toMatchObject({
      attempts: 1,
      lastErrorType: 'ProvisionedThroughputExceededException',
      lastFailureReason: undefined,
      source: MSK_CLUSTER_ARN,
    });

    // Lambda resumes orders-0 from offset 12.
    const retry = await handler(resumedAt(c8Event(), 'orders-0', 12), lambdaContext());
    expect(retry).toEqual({ batchItemFailures: [] });

    for (const orderId of ['O-10', 'O-12', 'O-13']) {
      expect(await h.effects(orderId), orderId).toEqual({ ledger: 1, notifications: 1 });
    }
    expect(await h.effects('O-11')).toEqual({ ledger: 0, notifications: 0 });
  });

  it('a replayed batch (the same offsets again after the partial failure) applies nothing twice', async () => {
    const before = h.outcomes.length;
    const handler = h.handler();

    // The whole batch again, as after an invocation that timed out, then the resumed part again.
    expect(await handler(c8Event(), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(await handler(resumedAt(c8Event(), 'orders-0', 12), lambdaContext())).toEqual({ batchItemFailures: [] });

    const replayed = h.outcomes.slice(before).map((o) => [o.messageId, o.outcome]);
    expect(replayed).toEqual([
      ['orders-0@10', 'duplicate'],
      ['orders-0@11', 'dead-lettered'],
      ['orders-0@12', 'duplicate'],
      ['orders-0@13', 'duplicate'],
      ['orders-0@12', 'duplicate'],
      ['orders-0@13', 'duplicate'],
    ]);
    for (const orderId of ['O-10', 'O-12', 'O-13']) {
      expect(await h.effects(orderId), orderId).toEqual({ ledger: 1, notifications: 1 });
    }
    expect(await h.effects('O-11')).toEqual({ ledger: 0, notifications: 0 });
  });
});

describe('Kafka handler: mixed partitions and order within a partition', () => {
  it('applies each partition in offset order, stops only the failing partition, and finishes it on the retry', async () => {
    const h = await harness('kafka-mixed');
    await placeOrders(h, 'O-1', 'O-3');
    const handler = h.handler(failFirstAttemptOf('e-3'));
    const event = mskEvent(
      // orders-0: a whole order in one partition, in order: placed, paid, shipped, delivered.
      kafkaRecord('orders', 0, 0, body.placed('e-20', 'O-20', 0)),
      kafkaRecord('orders', 0, 1, body.paid('e-21', 'O-20', 10, 1)),
      kafkaRecord('orders', 0, 2, body.shipped('e-22', 'O-20', 2)),
      kafkaRecord('orders', 0, 3, body.delivered('e-23', 'O-20', 3)),
      // orders-1: a poison record, then a good one.
      kafkaRecord('orders', 1, 40, body.paid('e-bad', 'O-1', 'ten')),
      kafkaRecord('orders', 1, 41, body.paid('e-1', 'O-1')),
      // orders-2: fails on its first attempt; the record after it waits.
      kafkaRecord('orders', 2, 7, body.paid('e-3', 'O-3')),
      kafkaRecord('orders', 2, 8, body.shipped('e-4', 'O-3')),
    );

    const first = await handler(event, lambdaContext());

    expect(first).toEqual({ batchItemFailures: [{ itemIdentifier: { partition: 'orders-2', offset: 7 } }] });
    expect(await h.effects('O-20')).toEqual({ ledger: 1, notifications: 1 });
    expect(await h.effects('O-1')).toEqual({ ledger: 1, notifications: 1 });
    expect(await h.effects('O-3')).toEqual({ ledger: 0, notifications: 0 });
    const history = await h.env.documentClient.send(
      new QueryCommand({ TableName: h.env.resources.ordersTable, KeyConditionExpression: 'orderId = :o AND sk = :s', ExpressionAttributeValues: { ':o': 'O-20', ':s': 'ORDER' } }),
    );
    expect(history.Items?.[0]?.status).toBe('Delivered');
    expect((history.Items?.[0]?.history as { status: string }[]).map((step) => step.status)).toEqual(['Created', 'Paid', 'Shipped', 'Delivered']);
    const deadLetters = await h.deadLetters();
    expect(deadLetters.map((m) => [attribute(m, DeadLetterAttribute.originalMessageId), attribute(m, DeadLetterAttribute.failureReason)])).toEqual([
      ['orders-1@40', 'ValidationError'],
    ]);

    expect(await handler(resumedAt(event, 'orders-2', 7), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(await h.effects('O-3')).toEqual({ ledger: 1, notifications: 1 });
  });
});

describe('Kafka handler: retries exhausted', () => {
  it('dead-letters a record as RetriesExhausted on attempt retryAttempts + 1, with the attempts and the last error', async () => {
    const h = await harness('kafka-exhausted', { kafka: { retryAttempts: 2 } });
    await placeOrders(h, 'O-7');
    const handler = h.handler(alwaysFail('e-7'));
    const event = mskEvent(kafkaRecord('orders', 3, 70, body.paid('e-7', 'O-7')), kafkaRecord('orders', 3, 71, body.paid('e-8', 'O-8')));

    const responses = [];
    for (let attempt = 1; attempt <= 3; attempt += 1) responses.push(await handler(event, lambdaContext()));

    expect(responses.map((r) => r.batchItemFailures)).toEqual([
      [{ itemIdentifier: { partition: 'orders-3', offset: 70 } }],
      [{ itemIdentifier: { partition: 'orders-3', offset: 70 } }],
      [{ itemIdentifier: { partition: 'orders-3', offset: 71 } }], // 70 dead-lettered; 71 waits for its OrderPlaced
    ]);
    const [exhausted] = await h.deadLetters();
    expect(exhausted?.Body).toBe(JSON.stringify(body.paid('e-7', 'O-7')));
    expect(attribute(exhausted, DeadLetterAttribute.failureReason)).toBe('RetriesExhausted');
    expect(attribute(exhausted, DeadLetterAttribute.errorType)).toBe('ProvisionedThroughputExceededException');
    expect(attribute(exhausted, DeadLetterAttribute.attempts)).toBe('3');
    expect(await h.attemptLog.read({ topic: 'orders', partition: 3, offset: 70 })).toMatchObject({
      attempts: 3,
      lastErrorType: 'ProvisionedThroughputExceededException',
      lastErrorMessage: 'DynamoDB throttled e-7',
    });
    expect(await h.effects('O-7')).toEqual({ ledger: 0, notifications: 0 });
  });
});

describe('Kafka attempt log: the count belongs to one record', () => {
  it('restarts at attempt 1 when the same coordinates hold a different record (a recreated topic, a fresh local log)', async () => {
    const h = await harness('kafka-attempt-identity');
    const coordinates = { topic: 'orders', partition: 4, offset: 0 };
    const first = kafkaRecord('orders', 4, 0, body.paid('e-old', 'O-old'), { timestamp: 1_000 });
    const other = kafkaRecord('orders', 4, 0, body.paid('e-new', 'O-new'), { timestamp: 2_000 });
    const failure = (record: KafkaRecord, errorType: string, reason?: string): KafkaRecordFailure => ({
      ...coordinates,
      recordIdentity: kafkaRecordIdentity(record),
      source: MSK_CLUSTER_ARN,
      errorType,
      errorMessage: `${errorType} of ${record.timestamp}`,
      reason,
    });

    const counts = [];
    for (let i = 0; i < 3; i += 1) counts.push(await h.attemptLog.recordFailure(failure(first, 'ProvisionedThroughputExceededException', 'x')));
    expect(counts).toEqual([1, 2, 3]);

    expect(await h.attemptLog.recordFailure(failure(other, 'PredecessorNotApplied'))).toBe(1);
    expect(await h.attemptLog.read(coordinates)).toMatchObject({
      attempts: 1,
      recordIdentity: kafkaRecordIdentity(other),
      lastErrorType: 'PredecessorNotApplied',
      lastErrorMessage: 'PredecessorNotApplied of 2000',
      lastFailureReason: undefined,
    });
    expect(await h.attemptLog.recordFailure(failure(other, 'PredecessorNotApplied'))).toBe(2);

    // The first record again (e.g. a replay of the old topic): its old count is gone, it starts over.
    expect(await h.attemptLog.recordFailure(failure(first, 'ProvisionedThroughputExceededException'))).toBe(1);
  });

  it('does not dead-letter a record as RetriesExhausted on its first delivery when its coordinates held another record', async () => {
    const h = await harness('kafka-reused-offset', { kafka: { retryAttempts: 2 } });
    await placeOrders(h, 'O-30');
    const handler = h.handler(alwaysFail('e-30', 'e-31'));
    const old = mskEvent(kafkaRecord('orders', 5, 0, body.paid('e-30', 'O-30'), { timestamp: 1_000 }));
    for (let attempt = 1; attempt <= 3; attempt += 1) await handler(old, lambdaContext());
    expect((await h.deadLetters()).map((m) => attribute(m, DeadLetterAttribute.failureReason))).toEqual(['RetriesExhausted']);

    // The topic is recreated: offset 0 now holds another record.
    const fresh = mskEvent(kafkaRecord('orders', 5, 0, body.paid('e-31', 'O-30'), { timestamp: 9_000 }));
    expect(await handler(fresh, lambdaContext())).toEqual({ batchItemFailures: [{ itemIdentifier: { partition: 'orders-5', offset: 0 } }] });
    expect(await h.attemptLog.read({ topic: 'orders', partition: 5, offset: 0 })).toMatchObject({ attempts: 1 });
  });
});

describe('Kafka handler: a value SQS refuses as text', () => {
  it('dead-letters a value holding NUL with the value in base64 and bodyEncoding base64, on its first delivery', async () => {
    const h = await harness('kafka-nul');
    const bytes = Buffer.from('\u0000nul body', 'utf8');
    const record = { ...kafkaRecord('orders', 6, 0, null, { key: 'O-40' }), value: bytes.toString('base64') };

    expect(await h.handler()(mskEvent(record), lambdaContext())).toEqual({ batchItemFailures: [] });

    const [deadLetter, ...rest] = await h.deadLetters();
    expect(rest).toHaveLength(0);
    expect(attribute(deadLetter, DeadLetterAttribute.failureReason)).toBe('ValidationError');
    expect(attribute(deadLetter, DeadLetterAttribute.bodyEncoding)).toBe('base64');
    expect(Buffer.from(deadLetter?.Body ?? '', 'base64')).toEqual(bytes);
  });
});

describe('local Kafka runtime (npm start -- --source kafka)', () => {
  it('runs input through the partitioned log with the same report and exactly-once check as the SQS run', async () => {
    const env = await testResources('kafka-run-clients');
    harnesses.push({ env } as Harness);
    const lines = [
      body.placed('r-1', 'R-1'),
      body.paid('r-2', 'R-1', 15),
      body.placed('r-3', 'R-2'),
      body.paid('r-2', 'R-1', 15), // producer duplicate
      'not-json',
      '',
      body.paid('r-4', 'R-2', 'ten'),
      body.shipped('r-5', 'R-1'),
      body.cancelled('r-6', 'R-2'),
    ].map((line, index) => ({ line: index + 1, body: typeof line === 'string' ? line : JSON.stringify(line) }));

    const report = await runLocalKafka({
      input: lines,
      settings: env.settings,
      transientFailureRate: 0.5,
      partitions: 2,
      logLevel: 'SILENT',
      endpoints: { dynamoDb: env.endpoints.dynamoDbEndpoint, sqs: env.endpoints.sqsEndpoint, prefix: `${env.prefix}run-` },
    });

    expect(report.check).toEqual({ ok: true, problems: [] });
    expect(report).toMatchObject({ source: 'kafka', messagesIn: 9, applied: 5, duplicates: 1, deadLettered: 3 });
    expect(report.deadLetteredByReason).toEqual({ ValidationError: 3 });
  });

  it('runs the bundled sample with every poison message dead-lettered once, and applies nothing new on a second run', async () => {
    const env = await testResources('kafka-sample');
    harnesses.push({ env } as Harness);
    const input = await readInputFile(new URL('../../samples/orders.jsonl', import.meta.url).pathname);
    const run = () =>
      runLocalKafka({
        input,
        settings: env.settings,
        transientFailureRate: 0.05,
        logLevel: 'SILENT',
        endpoints: { dynamoDb: env.endpoints.dynamoDbEndpoint, sqs: env.endpoints.sqsEndpoint, prefix: `${env.prefix}sample-` },
      });

    const first = await run();
    expect(first.check).toEqual({ ok: true, problems: [] });
    expect(first.deadLetteredByReason).toEqual({
      ValidationError: 3,
      MissingIdempotencyKey: 1,
      UnknownMessageType: 1,
      IdempotencyConflict: 1,
      BusinessRuleViolation: 1,
      RetriesExhausted: 1,
    });

    const second = await run();
    expect(second.check).toEqual({ ok: true, problems: [] });
    expect(second.applied).toBe(0);
    expect(second.duplicates + second.deadLettered).toBe(input.length);
  });
});
