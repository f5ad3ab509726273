import { describe, expect, it } from 'vitest';
import type { DeadLetterRecord } from '../../packages/idempotent-consumer/src/dlq/deadLetterRecord.js';
import { kafkaDeliveries } from '../../packages/idempotent-consumer/src/batch/kafkaDeliveries.js';
import { judgeKafkaRedrive } from '../../packages/cli/src/dlq/kafkaRedrive.js';
import { kafkaCoordinatesOf, kafkaRedriveEvent } from '../../packages/cli/src/dlq/kafkaRedriveEvent.js';
import { NotRedrivableError } from '../../packages/cli/src/dlq/redriveMessage.js';
import { functionNameOf } from '../../packages/local/src/kafka/localFunctionEndpoint.js';

const clusterArn = 'arn:aws:kafka:eu-west-1:123456789012:cluster/orders/abcd1234-abcd-cafe-abab-9876543210ab-4';

/** A Kafka dead letter as the DLQ tool reads it back. */
function kafkaDeadLetter(overrides: Partial<DeadLetterRecord> = {}): DeadLetterRecord {
  return {
    messageId: 'dlq-message-1',
    receiptHandle: 'handle',
    body: '{"eventId":"e-1","type":"OrderPaid"}',
    md5OfBody: undefined,
    messageAttributes: {},
    systemAttributes: {},
    deadLettered: true,
    failureReason: 'BusinessRuleViolation',
    errorType: 'BusinessRuleViolation',
    errorMessage: 'no such order',
    failedAt: new Date('2026-03-01T10:00:00.000Z'),
    attempts: 1,
    source: clusterArn,
    originalMessageId: 'orders-2@41',
    coordinates: { topic: 'orders', partition: 2, offset: 41, timestamp: 1767268800012, timestampType: 'CREATE_TIME', key: 'order-7' },
    bodyEncoding: undefined,
    offloaded: undefined,
    producerAttributes: {
      traceparent: { DataType: 'String', StringValue: '00-abc-01' },
      blob: { DataType: 'Binary', BinaryValue: Uint8Array.from([0, 255, 7]) },
    },
    messageGroupId: 'order-7',
    sentAt: new Date('2026-03-01T10:00:01.000Z'),
    problem: undefined,
    ...overrides,
  };
}

describe('kafkaRedriveEvent', () => {
  it('rebuilds the MSK event of the one record, at its coordinates, with its bytes, headers and the redrive mark', () => {
    const event = kafkaRedriveEvent(kafkaDeadLetter());

    expect(event).toMatchObject({ eventSource: 'aws:kafka', eventSourceArn: clusterArn });
    const records = event.records['orders-2'];
    expect(records).toHaveLength(1);
    const record = records![0]!;
    expect(record).toMatchObject({ topic: 'orders', partition: 2, offset: 41, timestamp: 1767268800012, timestampType: 'CREATE_TIME' });
    expect(Buffer.from(record.value!, 'base64').toString('utf8')).toBe('{"eventId":"e-1","type":"OrderPaid"}');
    expect(Buffer.from(record.key!, 'base64').toString('utf8')).toBe('order-7');
    expect(record.headers).toEqual([
      { traceparent: [...Buffer.from('00-abc-01')] },
      { blob: [0, 255, 7] },
      { 'ic.redrive': [...Buffer.from('orders-2@41')] },
    ]);
  });

  it('is read by the consumer as a redrive of the dead letter, with the original message id and coordinates', () => {
    const event = kafkaRedriveEvent(kafkaDeadLetter());

    const [delivery] = kafkaDeliveries(event.records, clusterArn);

    expect(delivery).toMatchObject({
      messageId: 'orders-2@41',
      redriveOf: 'orders-2@41',
      body: '{"eventId":"e-1","type":"OrderPaid"}',
      deadLetter: { coordinates: { topic: 'orders', partition: 2, offset: 41, key: 'order-7' } },
    });
    // The mark is not one of the producer's headers: a new dead letter would not carry it.
    expect(Object.keys(delivery?.deadLetter.originalAttributes ?? {})).toEqual(['traceparent', 'blob']);
  });

  it('keeps a value held in base64 as its bytes, a base64 key as it is, and a self-managed source', () => {
    const bytes = Buffer.from([0xff, 0xfe, 0x00, 0x41]).toString('base64');
    const event = kafkaRedriveEvent(
      kafkaDeadLetter({
        body: bytes,
        bodyEncoding: 'base64',
        source: 'SelfManagedKafka:b-1.example.com:9092,b-2.example.com:9092',
        coordinates: {
          topic: 'orders',
          partition: 0,
          offset: 3,
          timestamp: 5,
          timestampType: 'LOG_APPEND_TIME',
          key: 'AAE=',
          keyEncoding: 'base64',
        },
      }),
    );

    expect(event).toEqual(
      expect.objectContaining({ eventSource: 'SelfManagedKafka', bootstrapServers: 'b-1.example.com:9092,b-2.example.com:9092' }),
    );
    expect(event.eventSourceArn).toBeUndefined();
    expect(event.records['orders-0']?.[0]).toMatchObject({ value: bytes, key: 'AAE=', timestampType: 'LOG_APPEND_TIME' });
  });

  it('uses the body read back from S3 for an offloaded one, and refuses without it', () => {
    const offloaded = { bucket: 'payloads', key: 'dead-letters/abc', bytes: 5, sha256: 'x' };
    const record = kafkaDeadLetter({ body: '["software.amazon.payloadoffloading.PayloadS3Pointer",{}]', offloaded });

    expect(() => kafkaRedriveEvent(record)).toThrow(NotRedrivableError);
    const event = kafkaRedriveEvent(record, { body: 'hello' });
    expect(Buffer.from(event.records['orders-2']![0]!.value!, 'base64').toString('utf8')).toBe('hello');
  });

  it('refuses what is not a Kafka dead letter of the consumer, or had no value', () => {
    expect(() => kafkaRedriveEvent(kafkaDeadLetter({ coordinates: { messageGroupId: 'g' } }))).toThrow(/not a Kafka dead letter/);
    expect(() => kafkaRedriveEvent(kafkaDeadLetter({ deadLettered: false }))).toThrow(/not a Kafka dead letter/);
    expect(() => kafkaRedriveEvent(kafkaDeadLetter({ bodyEncoding: 'empty' }))).toThrow(/no value/);
    expect(kafkaCoordinatesOf(kafkaDeadLetter({ coordinates: { topic: 'orders', partition: 1.5, offset: 3 } }))).toBeUndefined();
  });
});

describe('judgeKafkaRedrive', () => {
  const event = kafkaRedriveEvent(kafkaDeadLetter());

  it('acknowledges a response that reports no failure', () => {
    expect(judgeKafkaRedrive({ statusCode: 200, functionError: undefined, payload: { batchItemFailures: [] } }, event)).toEqual({
      acknowledged: true,
    });
  });

  it('keeps the dead letter when the record is reported, the function threw, or the response is malformed', () => {
    const reported = { batchItemFailures: [{ itemIdentifier: { partition: 'orders-2', offset: 41 } }] };
    expect(judgeKafkaRedrive({ statusCode: 200, functionError: undefined, payload: reported }, event)).toMatchObject({
      acknowledged: false,
      detail: expect.stringContaining('retry'),
    });
    expect(
      judgeKafkaRedrive({ statusCode: 200, functionError: 'Unhandled', payload: { errorType: 'Error', errorMessage: 'boom' } }, event),
    ).toEqual({ acknowledged: false, detail: 'the function failed (Unhandled): Error: boom' });
    expect(judgeKafkaRedrive({ statusCode: 200, functionError: undefined, payload: 'not a response' }, event)).toMatchObject({
      acknowledged: false,
    });
  });
});

describe('functionNameOf (local Invoke endpoint)', () => {
  it('reads a name, a qualified name, and full or partial ARNs', () => {
    expect(functionNameOf('orders')).toBe('orders');
    expect(functionNameOf('orders:live')).toBe('orders');
    expect(functionNameOf('arn:aws:lambda:us-east-1:000000000000:function:orders')).toBe('orders');
    expect(functionNameOf('000000000000:function:orders:$LATEST')).toBe('orders');
  });
});
