/**
 * The consumer's Kafka handler against the real DynamoDB Local and SQS server: cases C8 (with
 * C12's response), C12, C18 on a partition, and the attempt budget counted by coordinates.
 */
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { RetryableError } from 'idempotent-consumer';
import type { KafkaBatchResponse, KafkaEvent } from 'idempotent-consumer/kafka';
import { cafeConsumerOptions } from '../../examples/cafe/consumer.js';
import {
  cafeResources,
  deadLetters,
  executionEnvironment,
  ledgerOf,
  notificationsOf,
  orderState,
  queueRecord,
} from '../support/cafeHarness.js';
import { deadLetterAttribute } from '../support/deadLetterAttributes.js';
import { base64, c8Event, kafkaRecord, MSK_CLUSTER_ARN, mskEvent } from '../support/kafkaEvents.js';
import { body, lambdaContext, sqsEvent } from '../support/sqsEvents.js';
import { describeUnlessDeployedStack, type TestResources } from '../support/testResources.js';

const describe = describeUnlessDeployedStack(
  "fixed order ids and assertions over a whole table or dead-letter queue: on a shared stack other tests' items (and a second run's) would be found",
);

class InjectedFailure extends RetryableError {
  constructor(message = 'injected retryable failure') {
    super(message);
    this.name = 'InjectedFailure';
  }
}

/** The event with each partition resumed from its lowest reported offset (one reading of AWS's rule). */
function resumed(event: KafkaEvent, response: KafkaBatchResponse): KafkaEvent {
  const lowest = new Map<string, number>();
  for (const { itemIdentifier } of response.batchItemFailures)
    lowest.set(itemIdentifier.partition, Math.min(lowest.get(itemIdentifier.partition) ?? Infinity, itemIdentifier.offset));
  return {
    ...event,
    records: Object.fromEntries(
      [...lowest].map(([partition, offset]) => [partition, (event.records[partition] ?? []).filter((r) => r.offset >= offset)]),
    ),
  };
}

/** The event with only the reported records (the other reading of AWS's rule). */
function onlyReported(event: KafkaEvent, response: KafkaBatchResponse): KafkaEvent {
  const reported = new Set(response.batchItemFailures.map(({ itemIdentifier }) => `${itemIdentifier.partition}@${itemIdentifier.offset}`));
  return {
    ...event,
    records: Object.fromEntries(
      Object.entries(event.records)
        .map(([partition, records]) => [partition, (records ?? []).filter((r) => reported.has(`${partition}@${r.offset}`))])
        .filter(([, records]) => (records ?? []).length > 0),
    ),
  };
}

async function placeOrders(env: TestResources, ...orderIds: string[]) {
  const { handler } = executionEnvironment(env);
  expect(
    await handler(
      sqsEvent(...orderIds.map((orderId) => queueRecord(env, `placed-${orderId}`, body.placed(`placed-${orderId}`, orderId)))),
      lambdaContext(),
    ),
  ).toEqual({ batchItemFailures: [] });
}

/** A café environment whose decision fails (retryably) for the given event ids while `failing` holds them. */
function flakyEnvironment(env: TestResources, failing: Set<string>) {
  return executionEnvironment(env, {
    consumer: {
      decide: (e, state) => {
        if (failing.has(e.eventId)) throw new InjectedFailure(`${e.eventId} fails`);
        return cafeConsumerOptions.decide(e, state);
      },
    },
  });
}

describe('case C8: a poison record does not block its partition (with C12 reporting)', () => {
  const envs: TestResources[] = [];
  afterAll(() => Promise.all(envs.map((env) => env.dispose())));

  it.each([
    ['resumes from the lowest reported offset', resumed],
    ['retries only the reported records', onlyReported],
  ])('dead-letters offset 11, reports 12 and 13, and applies 10, 12 and 13 once when Lambda %s', async (_reading, retryOf) => {
    const env = await cafeResources('c8');
    envs.push(env);
    await placeOrders(env, 'O-10', 'O-11', 'O-12', 'O-13');
    const failing = new Set(['e-12']);
    const { handler } = flakyEnvironment(env, failing);
    const event = c8Event();
    const first = (await handler(event, lambdaContext())) as KafkaBatchResponse;
    expect(JSON.stringify(first)).toBe(
      '{"batchItemFailures":[{"itemIdentifier":{"partition":"orders-0","offset":12}},{"itemIdentifier":{"partition":"orders-0","offset":13}}]}',
    );

    failing.clear();
    expect(await handler(retryOf(event, first), lambdaContext())).toEqual({ batchItemFailures: [] });
    for (const orderId of ['O-10', 'O-12', 'O-13']) {
      expect(await ledgerOf(env, orderId), orderId).toHaveLength(1);
      expect(await notificationsOf(env, orderId), orderId).toHaveLength(1);
    }
    expect(await ledgerOf(env, 'O-11')).toHaveLength(0);
    const poison = (await deadLetters(env)).filter((m) => m.Body === 'not-json');
    expect(poison.length).toBeGreaterThanOrEqual(1);
    expect(deadLetterAttribute(poison[0], 'failureReason')).toBe('ValidationError');
    const context = JSON.stringify(poison[0]?.MessageAttributes);
    expect(context).toContain('orders-0@11');
    expect(context).toContain(MSK_CLUSTER_ARN);
  });
});

describe('case C12: every unprocessed record of a stopped partition is reported', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await cafeResources('c12');
  });
  afterAll(() => env.dispose());

  it.each([
    ['resumes from the lowest reported offset', resumed, 'P'],
    ['retries only the reported records', onlyReported, 'Q'],
  ])(
    'reports 12, 13 and 14 of orders-0 and nothing of a partition that succeeded; each applied once when Lambda %s',
    async (_reading, retryOf, prefix) => {
      const ids = [10, 11, 12, 13, 14].map((offset) => `${prefix}-${offset}`);
      const failing = new Set([`e-${prefix}-12`]);
      const { handler } = flakyEnvironment(env, failing);
      const event = mskEvent(
        ...ids.map((orderId, i) => kafkaRecord('orders', 0, 10 + i, body.placed(`e-${orderId}`, orderId))),
        kafkaRecord('orders', 1, 5, body.placed(`e-${prefix}-other`, `${prefix}-other`)),
      );
      const first = (await handler(event, lambdaContext())) as KafkaBatchResponse;
      expect(first.batchItemFailures.map((f) => f.itemIdentifier)).toEqual(
        [12, 13, 14].map((offset) => ({ partition: 'orders-0', offset })),
      );
      expect(await orderState(env, `${prefix}-13`)).toBeUndefined();

      failing.clear();
      expect(await handler(retryOf(event, first), lambdaContext())).toEqual({ batchItemFailures: [] });
      for (const orderId of [...ids, `${prefix}-other`]) {
        const order = await orderState(env, orderId);
        expect(
          order?.history.filter((step) => step.status === 'Created'),
          orderId,
        ).toHaveLength(1);
      }
    },
  );
});

describe('Kafka: attempts counted by coordinates', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await cafeResources('kafka-attempts', { retry: { maxAttempts: 3 } });
    await placeOrders(env, 'O-7');
  });
  afterAll(() => env.dispose());

  it('dead-letters a record as RetriesExhausted on its last attempt, with the attempts and the last error, and the partition moves on', async () => {
    const { handler } = flakyEnvironment(env, new Set(['e-7']));
    const event = mskEvent(kafkaRecord('orders', 3, 70, body.paid('e-7', 'O-7')), kafkaRecord('orders', 3, 71, body.placed('e-8', 'O-8')));
    const responses = [];
    for (let attempt = 1; attempt <= 3; attempt += 1) responses.push(await handler(event, lambdaContext()));
    expect(responses.map((r) => r.batchItemFailures)).toEqual([
      [{ itemIdentifier: { partition: 'orders-3', offset: 70 } }, { itemIdentifier: { partition: 'orders-3', offset: 71 } }],
      [{ itemIdentifier: { partition: 'orders-3', offset: 70 } }, { itemIdentifier: { partition: 'orders-3', offset: 71 } }],
      [{ itemIdentifier: { partition: 'orders-3', offset: 71 } }],
    ]);
    const exhausted = (await deadLetters(env)).find((m) => deadLetterAttribute(m, 'failureReason') === 'RetriesExhausted');
    expect(exhausted?.Body).toBe(JSON.stringify(body.paid('e-7', 'O-7')));
    expect(deadLetterAttribute(exhausted, 'errorType')).toBe('InjectedFailure');
    expect(deadLetterAttribute(exhausted, 'attempts')).toBe('3');
    const record = await env.documentClient.send(
      new GetCommand({ TableName: env.resources.inboxTable, Key: { pk: 'cafe-orders#attempt#kafka:orders-3@70' }, ConsistentRead: true }),
    );
    expect(record.Item).toMatchObject({ attempts: 3, lastErrorType: 'InjectedFailure', lastErrorMessage: 'e-7 fails' });
    expect(await ledgerOf(env, 'O-7')).toHaveLength(0);
    // 71 was never run while 70 failed; now it is.
    expect(await handler(mskEvent(kafkaRecord('orders', 3, 71, body.placed('e-8', 'O-8'))), lambdaContext())).toEqual({
      batchItemFailures: [],
    });
  });

  it('restarts the count when the same coordinates hold another record', async () => {
    const { handler } = flakyEnvironment(env, new Set(['e-30', 'e-31']));
    const old = mskEvent(kafkaRecord('orders', 5, 0, body.paid('e-30', 'O-30'), { timestamp: 1_000 }));
    for (let attempt = 1; attempt <= 3; attempt += 1) await handler(old, lambdaContext());
    const fresh = mskEvent(kafkaRecord('orders', 5, 0, body.paid('e-31', 'O-30'), { timestamp: 9_000 }));
    expect(await handler(fresh, lambdaContext())).toEqual({
      batchItemFailures: [{ itemIdentifier: { partition: 'orders-5', offset: 0 } }],
    });
    const record = await env.documentClient.send(
      new GetCommand({ TableName: env.resources.inboxTable, Key: { pk: 'cafe-orders#attempt#kafka:orders-5@0' }, ConsistentRead: true }),
    );
    expect(record.Item?.attempts).toBe(1);
  });
});

describe('Kafka: values that are not events', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await cafeResources('kafka-values');
  });
  afterAll(() => env.dispose());

  it('dead-letters a value holding NUL in base64 on its first delivery, and the partition goes on', async () => {
    const bytes = Buffer.from('\u0000nul body', 'utf8');
    const event = mskEvent(
      { ...kafkaRecord('orders', 6, 0, null, { key: 'O-40' }), value: bytes.toString('base64') },
      kafkaRecord('orders', 6, 1, body.placed('e-41', 'O-41')),
    );
    expect(await executionEnvironment(env).handler(event, lambdaContext())).toEqual({ batchItemFailures: [] });
    const dead = (await deadLetters(env)).find((m) => JSON.stringify(m.MessageAttributes).includes('orders-6@0'));
    expect(deadLetterAttribute(dead, 'failureReason')).toBe('ValidationError');
    expect(deadLetterAttribute(dead, 'bodyEncoding')).toBe('base64');
    expect(Buffer.from(dead?.Body ?? '', 'base64')).toEqual(bytes);
    expect((await orderState(env, 'O-41'))?.status).toBe('Created');
  });

  it('C20: a value too large for the DLQ is set aside on its first attempt, whole, and the next record is applied in the same invocation', async () => {
    const value = Buffer.alloc(800 * 1024, 0xff).toString('base64'); // 800 KiB that are not UTF-8: over 1 MiB in base64
    const event = mskEvent(
      { ...kafkaRecord('orders', 0, 10, null, { key: 'O-BIG' }), value },
      kafkaRecord('orders', 0, 11, body.placed('e-after-big', 'O-AFTER-BIG')),
    );
    const { handler, outcomes } = executionEnvironment(env);
    expect(await handler(event, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(outcomes.map((o) => [o.messageId, o.outcome, o.reason])).toEqual([
      ['orders-0@10', 'dead-lettered', 'ValidationError'],
      ['orders-0@11', 'applied', undefined],
    ]);
    expect((await orderState(env, 'O-AFTER-BIG'))?.status).toBe('Created');
    const dead = (await deadLetters(env)).find((m) => deadLetterAttribute(m, 'originalMessageId') === 'orders-0@10');
    expect(JSON.parse(deadLetterAttribute(dead, 'coordinates') ?? '{}')).toMatchObject({ topic: 'orders', partition: 0, offset: 10 });
    const pointer = JSON.parse(dead?.Body ?? '[]') as [string, { s3BucketName: string; s3Key: string }];
    expect(pointer[0]).toBe('software.amazon.payloadoffloading.PayloadS3Pointer');
    const stored = await env.s3.send(new GetObjectCommand({ Bucket: pointer[1].s3BucketName, Key: pointer[1].s3Key }));
    expect(await stored.Body?.transformToString()).toBe(value);
  });

  it('C18: a deeply nested unknown field does not block its partition', async () => {
    const raw = `{"eventId":"deep-k","type":"OrderPlaced","orderId":"DK","occurredAt":"2026-01-01T00:00:00Z","x":${'['.repeat(3200)}${']'.repeat(3200)}}`;
    const event = mskEvent(
      { ...kafkaRecord('orders', 7, 0, null, { key: 'DK' }), value: base64(raw) },
      kafkaRecord('orders', 7, 1, body.placed('e-after', 'AFTER')),
    );
    expect(await executionEnvironment(env).handler(event, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect((await orderState(env, 'DK'))?.status).toBe('Created');
    expect((await orderState(env, 'AFTER'))?.status).toBe('Created');
  });
});
