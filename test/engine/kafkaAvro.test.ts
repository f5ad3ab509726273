/**
 * An Avro topic end to end: the café consumer with `kafka: { value: kafkaAvroFormat(schema) }`
 * against the real DynamoDB Local and SQS server. Values built with `avro-js` are decoded by
 * Powertools, applied once and acknowledged as duplicates on redelivery; a value that is not Avro
 * of the schema, and an Avro value that is not a café event, are dead-lettered with their bytes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KafkaRecord, kafkaAvroFormat } from 'idempotent-consumer/kafka';
import {
  cafeResources,
  deadLetters,
  executionEnvironment,
  inboxItems,
  ledgerOf,
  notificationsOf,
  orderState,
} from '../support/cafeHarness.js';
import { deadLetterAttribute } from '../support/deadLetterAttributes.js';
import { kafkaRecord, mskEvent } from '../support/kafkaEvents.js';
import { avroBytes, orderEventAvsc } from '../support/kafkaSchemas.js';
import { lambdaContext } from '../support/sqsEvents.js';
import type { TestResources } from '../support/testResources.js';

const at = '2026-01-01T00:00:00Z';

/** A record of topic `orders` whose value is these bytes, keyed by the order id. */
function avroRecord(partition: number, offset: number, bytes: Buffer, orderId: string): KafkaRecord {
  return { ...kafkaRecord('orders', partition, offset, null, { key: orderId }), value: bytes.toString('base64') };
}
const event = (eventId: string, type: string, orderId: string, points = 0) =>
  avroBytes(orderEventAvsc, { eventId, type, orderId, occurredAt: at, points });

describe('an Avro topic, decoded by Powertools (kafka.value = kafkaAvroFormat)', () => {
  let env: TestResources;
  const avroConsumer = () => executionEnvironment(env, { consumer: { kafka: { value: kafkaAvroFormat(orderEventAvsc) } } });

  beforeAll(async () => {
    env = await cafeResources('kafka-avro');
  });
  afterAll(() => env.dispose());

  it('applies each Avro event once, and acknowledges the redelivered batch as duplicates without writing', async () => {
    const batch = mskEvent(
      avroRecord(0, 10, event('av-placed', 'OrderPlaced', 'AV-1'), 'AV-1'),
      avroRecord(0, 11, event('av-paid', 'OrderPaid', 'AV-1', 40), 'AV-1'),
      avroRecord(1, 5, event('av-other', 'OrderPlaced', 'AV-2'), 'AV-2'),
    );
    const first = avroConsumer();
    expect(await first.handler(batch, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(first.outcomes.map((o) => [o.messageId, o.outcome])).toEqual([
      ['orders-0@10', 'applied'],
      ['orders-0@11', 'applied'],
      ['orders-1@5', 'applied'],
    ]);
    expect(await orderState(env, 'AV-1')).toMatchObject({ status: 'Paid', pointsAwarded: 40 });
    expect((await orderState(env, 'AV-2'))?.status).toBe('Created');

    const again = avroConsumer(); // a new execution environment, as after a redelivery to another instance
    expect(await again.handler(batch, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(again.outcomes.map((o) => o.outcome)).toEqual(['duplicate', 'duplicate', 'duplicate']);
    expect(await ledgerOf(env, 'AV-1')).toHaveLength(1);
    expect(await notificationsOf(env, 'AV-1')).toHaveLength(1);
    expect((await orderState(env, 'AV-1'))?.history).toHaveLength(2);
    // Each event's inbox mark is on its order (the café's inboxHome): 2 on AV-1, 1 on AV-2; no inbox row.
    expect(Object.keys((await orderState(env, 'AV-1'))?._inbox ?? {})).toHaveLength(2);
    expect(Object.keys((await orderState(env, 'AV-2'))?._inbox ?? {})).toHaveLength(1);
    expect((await inboxItems(env, 'inbox')).filter((item) => String(item.pk).includes('av-'))).toEqual([]);
  });

  it('dead-letters a value that is not Avro of the schema on its first attempt, with its bytes, and applies the next record of the partition', async () => {
    const garbage = Buffer.from([0xff, 0x00, 0xfe, 0x01, 0x80]);
    const batch = mskEvent(avroRecord(2, 20, garbage, 'AV-BAD'), avroRecord(2, 21, event('av-after-bad', 'OrderPlaced', 'AV-3'), 'AV-3'));
    const { handler, outcomes } = avroConsumer();

    expect(await handler(batch, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(outcomes.map((o) => [o.messageId, o.outcome, o.reason])).toEqual([
      ['orders-2@20', 'dead-lettered', 'ValidationError'],
      ['orders-2@21', 'applied', undefined],
    ]);
    const dead = (await deadLetters(env)).find((m) => deadLetterAttribute(m, 'originalMessageId') === 'orders-2@20');
    expect(deadLetterAttribute(dead, 'failureReason')).toBe('ValidationError');
    expect(deadLetterAttribute(dead, 'errorMessage')).toMatch(
      /^the record value could not be decoded as Avro: the bytes are not a datum of the Avro schema/,
    );
    expect(deadLetterAttribute(dead, 'bodyEncoding')).toBe('base64');
    expect(Buffer.from(dead?.Body ?? '', 'base64')).toEqual(garbage);
    expect(JSON.parse(deadLetterAttribute(dead, 'coordinates') ?? '{}')).toMatchObject({
      topic: 'orders',
      partition: 2,
      offset: 20,
      key: 'AV-BAD',
    });
    expect((await orderState(env, 'AV-3'))?.status).toBe('Created');
  });

  it('dead-letters an Avro value that decodes but is not a café event with its reason, its dead-letter body still its bytes', async () => {
    const unknownType = event('av-unknown', 'OrderExploded', 'AV-4');
    const { handler, outcomes } = avroConsumer();

    expect(await handler(mskEvent(avroRecord(3, 30, unknownType, 'AV-4')), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(outcomes.map((o) => [o.outcome, o.reason])).toEqual([['dead-lettered', 'UnknownMessageType']]);
    const dead = (await deadLetters(env)).find((m) => deadLetterAttribute(m, 'originalMessageId') === 'orders-3@30');
    expect(Buffer.from(dead?.Body ?? '', 'base64')).toEqual(unknownType);
    expect(await orderState(env, 'AV-4')).toBeUndefined();
  });
});
