/**
 * The Kafka retry policy (`kafka.retry`, issue 20 item 6) on the real engine against DynamoDB
 * Local and the SQS server, driven by the local Kafka event source mapping (`KafkaEventSourcePoller`)
 * on a virtual clock: the handler's `sleep` advances it, the invocations' contexts count the
 * function timeout down on it, so a 60 s outage takes no real minute.
 *
 * The downstream is the café's "payment received" notification (an inline side effect): it fails
 * retryably, as a 503 would, from its first call until the outage is over.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { createIdempotentConsumer, type OutcomeRecord, RetryableError } from 'idempotent-consumer';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cafeConsumerOptions, cafeSideEffects } from '../../examples/cafe/consumer.js';
import { kafkaRetryAttempts, settingsProblems } from '../../packages/idempotent-consumer/src/settings/index.js';
import { KafkaEventSourcePoller, type KafkaOnFailureRecord } from '../../packages/local/src/kafka/KafkaEventSourcePoller.js';
import { PartitionedLog } from '../../packages/local/src/kafka/PartitionedLog.js';
import { cafeResources, deadLetters, ledgerOf, notificationsOf, orderState } from '../support/cafeHarness.js';
import { deadLetterAttribute } from '../support/deadLetterAttributes.js';
import { body } from '../support/sqsEvents.js';
import { describeUnlessDeployedStack, type TestResources } from '../support/testResources.js';

const describe = describeUnlessDeployedStack(
  "assertions over the whole dead-letter queue and fixed order ids: on a shared stack other tests' items would be found",
);

class DownstreamUnavailable extends RetryableError {
  constructor() {
    super('the notification service answered 503');
    this.name = 'DownstreamUnavailable';
  }
}

/** A clock that moves only when the handler sleeps. */
function virtualClock() {
  let ms = Date.now();
  return {
    now: () => ms,
    date: () => new Date(ms),
    sleep: async (wait: number) => {
      ms += wait;
    },
  };
}

type Clock = ReturnType<typeof virtualClock>;

/**
 * The café's notification, down from its first call for `outageMs` (inclusive); `calls` counts the
 * calls made during the outage.
 */
function flakyDownstream(clock: Clock, outageMs: number) {
  let endsAt: number | undefined;
  const failed: number[] = [];
  const notifyCustomer: typeof cafeSideEffects.notifyCustomer = async (payment, context) => {
    endsAt ??= clock.now() + outageMs;
    if (clock.now() <= endsAt) {
      failed.push(clock.now());
      throw new DownstreamUnavailable();
    }
    return cafeSideEffects.notifyCustomer(payment, context);
  };
  return { sideEffects: { notifyCustomer }, failed };
}

/** A café handler on the virtual clock, its local Kafka mapping from the settings, and what it gave up. */
function mappingOf(env: TestResources, clock: Clock, sideEffects: typeof cafeSideEffects, log: PartitionedLog) {
  const outcomes: OutcomeRecord[] = [];
  const handler = createIdempotentConsumer(
    { ...cafeConsumerOptions, sideEffects },
    {
      environment: env.environment,
      clients: { dynamoDb: env.dynamoDb, sqs: env.sqs, s3: env.s3 },
      now: clock.date,
      sleep: clock.sleep,
      observer: { onOutcome: (record) => outcomes.push(record) },
    },
  );
  const gaveUp: KafkaOnFailureRecord[] = [];
  const poller = new KafkaEventSourcePoller({
    log,
    createHandler: () => handler,
    batchSize: env.settings.kafka.batchSize,
    retryAttempts: kafkaRetryAttempts(env.settings),
    functionTimeoutSeconds: env.settings.function.timeoutSeconds,
    now: clock.now,
    onFailure: (record) => void gaveUp.push(record),
  });
  return { poller, gaveUp, outcomes };
}

/** Two orders placed and paid on two partitions; returns where each payment was written. */
function ordersTopic(prefix: string, partitions = 2) {
  const log = new PartitionedLog({ topic: 'orders', partitions });
  const payments = new Map<string, { partition: number; offset: number }>();
  for (const [index, orderId] of [`${prefix}-1`, `${prefix}-2`].entries()) {
    log.append({ key: orderId, partition: index, value: JSON.stringify(body.placed(`placed-${orderId}`, orderId)) });
    payments.set(orderId, log.append({ key: orderId, partition: index, value: JSON.stringify(body.paid(`paid-${orderId}`, orderId, 10)) }));
  }
  return { log, payments };
}

async function failedAttempts(env: TestResources, at: { partition: number; offset: number }): Promise<number | undefined> {
  const output = await env.documentClient.send(
    new GetCommand({
      TableName: env.resources.inboxTable,
      Key: { pk: `cafe-orders#attempt#kafka:orders-${at.partition}@${at.offset}` },
      ConsistentRead: true,
    }),
  );
  return output.Item?.attempts as number | undefined;
}

describe('Kafka retry policy: a 30 s delay rides out a 60 s downstream outage', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await cafeResources('kafka-retry-delay', {
      function: { timeoutSeconds: 60 },
      queue: { visibilityTimeoutSeconds: 360 },
      kafka: { retry: { delaySeconds: 30 } },
    });
  });
  afterAll(() => env?.dispose());

  it('the settings are valid as the stack would check them', () => {
    expect(settingsProblems(env.settings)).toEqual([]);
  });

  it('applies every payment once after the outage and dead-letters nothing, each attempt counted once', async () => {
    const clock = virtualClock();
    const started = clock.now();
    const downstream = flakyDownstream(clock, 60_000);
    const { log, payments } = ordersTopic('D');
    const { poller, gaveUp } = mappingOf(env, clock, downstream.sideEffects, log);

    await poller.runUntilIdle({ maxInvocations: 20 });

    expect(gaveUp).toEqual([]);
    expect(await deadLetters(env)).toEqual([]);
    for (const orderId of payments.keys()) {
      expect((await orderState(env, orderId))?.status, orderId).toBe('Paid');
      expect(await ledgerOf(env, orderId), orderId).toHaveLength(1);
      expect(await notificationsOf(env, orderId), orderId).toHaveLength(1);
    }
    // Attempts 30 s apart, at 0, 30, 60 (failed: the outage lasts 60 s) and 90 s (applied): the first
    // invocation (60 s) holds two, the mapping's retry waits the rest of the delay in this
    // environment, and ends at 90 s. Each failed attempt counted once, never the reports.
    const firstFailures = [...new Set(downstream.failed)].map((at) => at - started);
    expect(firstFailures).toEqual([0, 30_000, 60_000]);
    expect(clock.now() - started).toBeGreaterThanOrEqual(90_000);
    for (const [orderId, at] of payments) expect(await failedAttempts(env, at), orderId).toBe(3);
    expect(poller.invocations).toBe(3);
  });

  it('without the policy the same outage dead-letters the payments (the mapping retries at once)', async () => {
    const control = await cafeResources('kafka-retry-none', { function: { timeoutSeconds: 60 } });
    try {
      const clock = virtualClock();
      const downstream = flakyDownstream(clock, 60_000);
      const { log, payments } = ordersTopic('N');
      const { poller, gaveUp } = mappingOf(control, clock, downstream.sideEffects, log);

      await poller.runUntilIdle({ maxInvocations: 50 });

      expect(gaveUp).toEqual([]);
      const exhausted = (await deadLetters(control)).filter((m) => deadLetterAttribute(m, 'failureReason') === 'RetriesExhausted');
      expect(exhausted.map((m) => JSON.parse(m.Body ?? '{}').orderId).sort()).toEqual([...payments.keys()].sort());
      expect(await notificationsOf(control, 'N-1')).toHaveLength(0);
    } finally {
      await control.dispose();
    }
  });
});

describe('Kafka retry policy: until it succeeds', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await cafeResources('kafka-retry-until', {
      function: { timeoutSeconds: 60 },
      queue: { visibilityTimeoutSeconds: 360 },
      retry: { maxAttempts: 2 },
      kafka: { retry: { delaySeconds: 30, untilSuccess: true } },
    });
  });
  afterAll(() => env?.dispose());

  it('needs the mapping to retry 10000 times, the most short of infinite', () => {
    expect(settingsProblems(env.settings)).toEqual([]);
    expect(kafkaRetryAttempts(env.settings)).toBe(10_000);
  });

  it('retries a payment past maxAttempts through a 5-minute outage, and still dead-letters poison at once', async () => {
    const clock = virtualClock();
    const downstream = flakyDownstream(clock, 300_000);
    const { log, payments } = ordersTopic('U', 3);
    const poison = log.append({ key: 'U-3', partition: 2, value: 'not-json' });
    const { poller, gaveUp, outcomes } = mappingOf(env, clock, downstream.sideEffects, log);

    await poller.runUntilIdle({ maxInvocations: 50 });

    expect(gaveUp).toEqual([]);
    const letters = await deadLetters(env);
    expect(letters.map((m) => [m.Body, deadLetterAttribute(m, 'failureReason')])).toEqual([['not-json', 'ValidationError']]);
    // The poison (alone in its partition) was dead-lettered on its first delivery, not retried.
    expect(outcomes.filter((o) => o.messageId === `orders-2@${poison.offset}`).map((o) => [o.outcome, o.reason])).toEqual([
      ['dead-lettered', 'ValidationError'],
    ]);
    for (const [orderId, at] of payments) {
      expect(await notificationsOf(env, orderId), orderId).toHaveLength(1);
      expect(await ledgerOf(env, orderId), orderId).toHaveLength(1);
      // 0, 30, …, 300 s failed: 11 attempts, far past maxAttempts 2, none RetriesExhausted.
      expect(await failedAttempts(env, at), orderId).toBe(11);
    }
  });
});
