/**
 * The consumer's Kinesis Data Streams and DynamoDB Streams handlers against the real DynamoDB
 * Local and SQS server: a poison record does not block its shard, a failed shard reports its
 * record and every later one by sequence number (and the retry applies each once), attempts are
 * counted in the attempt log until `RetriesExhausted`, and a DynamoDB `REMOVE` is acknowledged.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBStreamEvent, KinesisStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { RetryableError } from 'idempotent-consumer';
import { cafeConsumerOptions } from '../../examples/cafe/consumer.js';
import { cafeResources, deadLetters, executionEnvironment, ledgerOf, notificationsOf, orderState } from '../support/cafeHarness.js';
import { deadLetterAttribute } from '../support/deadLetterAttributes.js';
import { body, lambdaContext } from '../support/sqsEvents.js';
import {
  DYNAMODB_STREAM_ARN,
  dynamoDbRecord,
  dynamoDbSequenceNumber,
  dynamoDbStreamEvent,
  KINESIS_STREAM_ARN,
  kinesisEvent,
  kinesisRecord,
  kinesisSequenceNumber,
} from '../support/streamEvents.js';
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

/** The Kinesis event resumed as Lambda does: each shard from its lowest reported sequence number. */
function resumedKinesis(event: KinesisStreamEvent, response: { batchItemFailures: { itemIdentifier: string }[] }): KinesisStreamEvent {
  const reported = response.batchItemFailures.map((f) => f.itemIdentifier).sort();
  const lowest = reported[0];
  return { Records: lowest === undefined ? [] : event.Records.filter((r) => r.kinesis.sequenceNumber >= lowest) };
}

function resumedDynamoDb(event: DynamoDBStreamEvent, response: { batchItemFailures: { itemIdentifier: string }[] }): DynamoDBStreamEvent {
  const reported = response.batchItemFailures.map((f) => f.itemIdentifier).sort();
  const lowest = reported[0];
  return { Records: lowest === undefined ? [] : event.Records.filter((r) => (r.dynamodb?.SequenceNumber ?? '') >= lowest) };
}

describe('Kinesis Data Streams', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await cafeResources('kinesis', { retry: { maxAttempts: 3 } });
  });
  afterAll(() => env.dispose());

  it('dead-letters a poison record with its coordinates and the shard goes on', async () => {
    const event = kinesisEvent(
      kinesisRecord(0, 1, body.placed('k-1', 'K-1')),
      kinesisRecord(0, 2, 'not-json', { partitionKey: 'K-2' }),
      kinesisRecord(0, 3, body.placed('k-3', 'K-3')),
    );
    const { handler, outcomes } = executionEnvironment(env);
    expect(await handler(event, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(outcomes.map((o) => o.outcome)).toEqual(['applied', 'dead-lettered', 'applied']);
    const poison = (await deadLetters(env)).find((m) => m.Body === 'not-json');
    expect(deadLetterAttribute(poison, 'failureReason')).toBe('ValidationError');
    expect(deadLetterAttribute(poison, 'originalMessageId')).toBe(`shardId-000000000000:${kinesisSequenceNumber(2)}`);
    expect(JSON.parse(deadLetterAttribute(poison, 'coordinates') ?? '{}')).toMatchObject({
      shardId: 'shardId-000000000000',
      sequenceNumber: kinesisSequenceNumber(2),
      partitionKey: 'K-2',
    });
    expect(JSON.stringify(poison?.MessageAttributes)).toContain(KINESIS_STREAM_ARN);
    expect((await orderState(env, 'K-3'))?.status).toBe('Created');
  });

  it('reports the failed record and every later one of its shard by sequence number, not those of another shard; the retry applies each once', async () => {
    const failing = new Set(['k-12']);
    const { handler } = flakyEnvironment(env, failing);
    const event = kinesisEvent(
      kinesisRecord(1, 11, body.placed('k-11', 'K-11')),
      kinesisRecord(1, 12, body.placed('k-12', 'K-12')),
      kinesisRecord(1, 13, body.placed('k-13', 'K-13')),
      kinesisRecord(2, 14, body.placed('k-14', 'K-14')),
    );
    const first = await handler(event, lambdaContext());
    expect(JSON.stringify(first)).toBe(
      `{"batchItemFailures":[{"itemIdentifier":"${kinesisSequenceNumber(12)}"},{"itemIdentifier":"${kinesisSequenceNumber(13)}"}]}`,
    );
    expect(await orderState(env, 'K-13')).toBeUndefined();
    expect((await orderState(env, 'K-14'))?.status).toBe('Created');

    failing.clear();
    const retry = resumedKinesis(event, first as { batchItemFailures: { itemIdentifier: string }[] });
    expect(await handler(retry, lambdaContext())).toEqual({ batchItemFailures: [] });
    for (const orderId of ['K-11', 'K-12', 'K-13', 'K-14']) {
      expect(
        (await orderState(env, orderId))?.history.filter((step) => step.status === 'Created'),
        orderId,
      ).toHaveLength(1);
    }
  });

  it('counts attempts in the attempt log and dead-letters RetriesExhausted on the last one', async () => {
    await executionEnvironment(env).handler(kinesisEvent(kinesisRecord(3, 20, body.placed('k-p', 'K-P'))), lambdaContext());
    const { handler } = flakyEnvironment(env, new Set(['k-paid']));
    const event = kinesisEvent(kinesisRecord(3, 21, body.paid('k-paid', 'K-P')), kinesisRecord(3, 22, body.placed('k-after', 'K-AFTER')));
    const responses = [];
    for (let attempt = 1; attempt <= 3; attempt += 1) responses.push(await handler(event, lambdaContext()));
    expect(responses.map((r) => r.batchItemFailures)).toEqual([
      [{ itemIdentifier: kinesisSequenceNumber(21) }, { itemIdentifier: kinesisSequenceNumber(22) }],
      [{ itemIdentifier: kinesisSequenceNumber(21) }, { itemIdentifier: kinesisSequenceNumber(22) }],
      [{ itemIdentifier: kinesisSequenceNumber(22) }],
    ]);
    const exhausted = (await deadLetters(env)).find((m) => deadLetterAttribute(m, 'failureReason') === 'RetriesExhausted');
    expect(exhausted?.Body).toBe(JSON.stringify(body.paid('k-paid', 'K-P')));
    expect(deadLetterAttribute(exhausted, 'attempts')).toBe('3');
    const record = await env.documentClient.send(
      new GetCommand({
        TableName: env.resources.inboxTable,
        Key: { pk: `cafe-orders#attempt#kinesis:orders/shardId-000000000003:${kinesisSequenceNumber(21)}` },
        ConsistentRead: true,
      }),
    );
    expect(record.Item).toMatchObject({ attempts: 3, lastErrorType: 'InjectedFailure' });
    expect(await ledgerOf(env, 'K-P')).toHaveLength(0);
    // 22 was never run while 21 failed; Lambda resumes the shard from it, and now it is.
    expect(await orderState(env, 'K-AFTER')).toBeUndefined();
    expect(await handler(kinesisEvent(kinesisRecord(3, 22, body.placed('k-after', 'K-AFTER'))), lambdaContext())).toEqual({
      batchItemFailures: [],
    });
    expect((await orderState(env, 'K-AFTER'))?.status).toBe('Created');
  });
});

describe('DynamoDB Streams', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await cafeResources('dynamodb-streams');
  });
  afterAll(() => env.dispose());

  it('applies each NewImage as an event, acknowledges a REMOVE, and a redelivery is a duplicate', async () => {
    const event = dynamoDbStreamEvent(
      dynamoDbRecord(1, body.placed('d-1', 'D-1')),
      dynamoDbRecord(2, body.paid('d-2', 'D-1', 7)),
      dynamoDbRecord(3, null, { keys: { orderId: 'D-0', eventId: 'd-0' } }),
    );
    const { handler, outcomes } = executionEnvironment(env);
    expect(await handler(event, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(await handler(event, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(outcomes.map((o) => o.outcome)).toEqual(['applied', 'applied', 'duplicate', 'duplicate']);
    expect(outcomes[0]?.messageId).toBe(event.Records[0]?.eventID);
    expect((await orderState(env, 'D-1'))?.status).toBe('Paid');
    expect(await ledgerOf(env, 'D-1')).toHaveLength(1);
    expect(await notificationsOf(env, 'D-1')).toHaveLength(1);
  });

  it('reports the failed record and every later one by SequenceNumber; a poison image is dead-lettered with its DynamoDB JSON, event name and keys', async () => {
    const failing = new Set(['d-12']);
    const { handler } = flakyEnvironment(env, failing);
    const poison = dynamoDbRecord(
      11,
      { eventId: 'd-11', type: 'OrderPlaced' },
      { eventName: 'MODIFY', keys: { orderId: 'D-11', eventId: 'd-11' } },
    );
    const event = dynamoDbStreamEvent(
      dynamoDbRecord(10, body.placed('d-10', 'D-10')),
      poison,
      dynamoDbRecord(12, body.placed('d-12', 'D-12')),
      dynamoDbRecord(13, body.placed('d-13', 'D-13')),
    );
    const first = await handler(event, lambdaContext());
    expect(first).toEqual({
      batchItemFailures: [{ itemIdentifier: dynamoDbSequenceNumber(12) }, { itemIdentifier: dynamoDbSequenceNumber(13) }],
    });
    const dead = (await deadLetters(env)).find((m) => deadLetterAttribute(m, 'originalMessageId') === poison.eventID);
    expect(deadLetterAttribute(dead, 'failureReason')).toBe('ValidationError');
    expect(JSON.parse(dead?.Body ?? '{}')).toEqual(poison.dynamodb?.NewImage);
    expect(JSON.parse(deadLetterAttribute(dead, 'coordinates') ?? '{}')).toMatchObject({
      eventName: 'MODIFY',
      sequenceNumber: dynamoDbSequenceNumber(11),
      keys: JSON.stringify(poison.dynamodb?.Keys),
    });
    expect(JSON.stringify(dead?.MessageAttributes)).toContain(DYNAMODB_STREAM_ARN);

    failing.clear();
    expect(await handler(resumedDynamoDb(event, first as { batchItemFailures: { itemIdentifier: string }[] }), lambdaContext())).toEqual({
      batchItemFailures: [],
    });
    for (const orderId of ['D-10', 'D-12', 'D-13']) expect((await orderState(env, orderId))?.status, orderId).toBe('Created');
  });
});
