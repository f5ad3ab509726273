import { describe, expect, it } from 'vitest';
import { defaultSettings, lambdaEnvironment, withOverrides } from '../../config/settings.js';
import type { RetryBackoff } from '../../lambda/batch/retryBackoff.js';
import { readRuntimeConfig } from '../../lambda/config/runtimeConfig.js';
import type { Consumer } from '../../lambda/createConsumer.js';
import type { DeadLetterContext } from '../../lambda/dlq/deadLetterMessage.js';
import { PredecessorNotApplied } from '../../lambda/errors.js';
import { createKafkaHandler } from '../../lambda/handlers/createKafkaHandler.js';
import type { KafkaAttemptLog, KafkaRecordFailure } from '../../lambda/inbox/KafkaAttemptLog.js';
import type { OutcomeRecord } from '../../lambda/observability/outcomes.js';
import { MessageConsumer } from '../../lambda/processing/MessageConsumer.js';
import type { InboundMessage, ProcessResult } from '../../lambda/processing/OrderEventProcessor.js';
import { parseOrderEvent } from '../../lambda/domain/events.js';
import { c8Event, kafkaRecord, MSK_CLUSTER_ARN, mskEvent } from '../support/kafkaEvents.js';
import { body, lambdaContext } from '../support/sqsEvents.js';

type Behaviour = (message: InboundMessage) => Promise<ProcessResult['outcome']>;

/** An in-memory attempt log: failures counted per `<topic>-<partition>@<offset>`. */
function memoryAttemptLog(): KafkaAttemptLog & { failures: KafkaRecordFailure[] } {
  const counts = new Map<string, number>();
  const failures: KafkaRecordFailure[] = [];
  return {
    failures,
    recordFailure: async (failure) => {
      failures.push(failure);
      const key = `${failure.topic}-${failure.partition}@${failure.offset}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
      return counts.get(key)!;
    },
    read: async () => undefined,
  };
}

/** A Kafka handler over a consumer whose processor parses the body, then follows `behaviour`. */
function fakeKafkaHandler(behaviour: Behaviour, attemptLog: KafkaAttemptLog = memoryAttemptLog(), maxAttempts = 5) {
  const calls: string[] = [];
  const deadLetters: DeadLetterContext[] = [];
  const outcomes: OutcomeRecord[] = [];
  const config = readRuntimeConfig(
    lambdaEnvironment(withOverrides({ kafka: { retryAttempts: maxAttempts - 1 } }, defaultSettings), {
      inboxTable: 'i',
      ordersTable: 'o',
      idempotencyTable: 'p',
      deadLetterQueueUrl: 'http://127.0.0.1:9/q',
    }),
  );
  const consumer: Consumer = {
    config,
    inbox: {},
    notifier: { registerLambdaContext: () => undefined, paymentReceived: async () => undefined },
    retryBackoff: {} as RetryBackoff,
    messageConsumer: new MessageConsumer({
      processor: {
        process: async (message) => {
          calls.push(message.messageId);
          const { event } = parseOrderEvent(message.body);
          return { outcome: await behaviour(message), event };
        },
      },
      deadLetterQueue: { send: async (context) => void deadLetters.push(context) },
      observer: { onOutcome: (record) => outcomes.push(record) },
    }),
  };
  return { handler: createKafkaHandler(consumer, { attemptLog }), calls, deadLetters, outcomes };
}

const failOn =
  (ids: readonly string[]): Behaviour =>
  async (message) => {
    if (ids.includes(message.messageId)) throw new PredecessorNotApplied(`${message.messageId} not yet`);
    return 'applied';
  };

describe('createKafkaHandler: case C8, a poison record must not block its partition', () => {
  it('returns exactly the failure at offset 12, dead-letters offset 11 with its coordinates, and runs 13 after the retry', async () => {
    let firstAttempt = true;
    const { handler, calls, deadLetters } = fakeKafkaHandler(async (message) => {
      if (message.messageId === 'orders-0@12' && firstAttempt) {
        firstAttempt = false;
        throw new PredecessorNotApplied('retryable, first attempt only');
      }
      return 'applied';
    });

    const first = await handler(c8Event(), lambdaContext());

    expect(JSON.stringify(first)).toBe('{"batchItemFailures":[{"itemIdentifier":{"partition":"orders-0","offset":12}}]}');
    expect(calls).toEqual(['orders-0@10', 'orders-0@11', 'orders-0@12']); // 13 is not run: its partition stopped at 12
    expect(deadLetters).toHaveLength(1);
    expect(deadLetters[0]).toMatchObject({
      body: 'not-json',
      originalMessageId: 'orders-0@11',
      source: MSK_CLUSTER_ARN,
      failure: { reason: 'ValidationError' },
      coordinates: { topic: 'orders', partition: 0, offset: 11 },
    });

    // Lambda resumes orders-0 at offset 12: the retry holds 12 and 13.
    const event = c8Event();
    const retry = await handler({ ...event, records: { 'orders-0': event.records['orders-0']!.filter((r) => r.offset >= 12) } }, lambdaContext());
    expect(retry).toEqual({ batchItemFailures: [] });
    expect(calls.slice(3)).toEqual(['orders-0@12', 'orders-0@13']);
  });
});

describe('createKafkaHandler: the partial batch response', () => {
  it('lets the other partitions of a mixed batch go on and does not throw when every partition fails', async () => {
    const { handler } = fakeKafkaHandler(failOn(['orders-0@1', 'orders-1@4']));
    const event = mskEvent(
      kafkaRecord('orders', 0, 1, body.paid('e-1', 'O-1')),
      kafkaRecord('orders', 0, 2, body.paid('e-2', 'O-2')),
      kafkaRecord('orders', 1, 4, body.paid('e-4', 'O-4')),
      kafkaRecord('orders', 2, 9, body.paid('e-9', 'O-9')),
    );

    const response = await handler(event, lambdaContext());

    expect(response.batchItemFailures).toEqual([
      { itemIdentifier: { partition: 'orders-0', offset: 1 } },
      { itemIdentifier: { partition: 'orders-1', offset: 4 } },
    ]);
    const all = await fakeKafkaHandler(failOn(['orders-0@1', 'orders-1@4', 'orders-2@9'])).handler(event, lambdaContext());
    expect(all.batchItemFailures).toHaveLength(3);
  });
});

describe('createKafkaHandler: retries exhausted', () => {
  it('counts failed attempts by coordinates and dead-letters the attempt that reaches the maximum as RetriesExhausted', async () => {
    const attemptLog = memoryAttemptLog();
    const { handler, deadLetters, outcomes } = fakeKafkaHandler(failOn(['orders-0@7']), attemptLog, 3);
    const event = mskEvent(kafkaRecord('orders', 0, 7, body.paid('e-7', 'O-7')));

    const responses = [];
    for (let i = 0; i < 3; i += 1) responses.push(await handler(event, lambdaContext()));

    expect(responses.map((r) => r.batchItemFailures.length)).toEqual([1, 1, 0]);
    expect(attemptLog.failures).toHaveLength(3);
    expect(deadLetters).toHaveLength(1);
    expect(deadLetters[0]).toMatchObject({
      attempts: 3,
      failure: { reason: 'RetriesExhausted', errorType: 'PredecessorNotApplied' },
      coordinates: { topic: 'orders', partition: 0, offset: 7 },
    });
    expect(outcomes.map((o) => [o.outcome, o.attempt])).toEqual([
      ['retried', 1],
      ['retried', 2],
      ['dead-lettered', 3],
    ]);
  });

  it('keeps retrying when the attempt log fails: the event source mapping retry limit is then the safety net', async () => {
    const broken: KafkaAttemptLog = {
      recordFailure: async () => {
        throw new Error('DynamoDB unavailable');
      },
      read: async () => undefined,
    };
    const { handler, deadLetters } = fakeKafkaHandler(failOn(['orders-0@7']), broken, 1);

    const response = await handler(mskEvent(kafkaRecord('orders', 0, 7, body.paid('e-7', 'O-7'))), lambdaContext());

    expect(response.batchItemFailures).toHaveLength(1);
    expect(deadLetters).toEqual([]);
  });

  it('records non-retryable failures too, so their last error is findable by coordinates', async () => {
    const attemptLog = memoryAttemptLog();
    const { handler, deadLetters } = fakeKafkaHandler(failOn([]), attemptLog);

    await handler(mskEvent(kafkaRecord('orders', 0, 11, 'not-json', { key: 'O-11' })), lambdaContext());

    expect(attemptLog.failures).toEqual([expect.objectContaining({ offset: 11, reason: 'ValidationError', errorType: 'ValidationError' })]);
    expect(deadLetters[0]?.attempts).toBe(1);
  });
});
