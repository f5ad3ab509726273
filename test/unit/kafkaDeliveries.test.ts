import { describe, expect, it } from 'vitest';
import {
  kafkaDeliveries,
  kafkaHeadersAsAttributes,
  kafkaMessageId,
  kafkaRecordIdentity,
} from '../../packages/idempotent-consumer/src/batch/kafkaDeliveries.js';
import { kafkaEventSource } from '../../packages/idempotent-consumer/src/batch/kafkaEvent.js';
import { isSqsSafeText } from '../../packages/idempotent-consumer/src/dlq/deadLetterMessage.js';
import { REDRIVE_ATTRIBUTE } from '../../packages/idempotent-consumer/src/batch/sqsDeliveries.js';
import { ValidationError } from '../../packages/idempotent-consumer/src/errors.js';
import type { KafkaRecord } from '../../packages/idempotent-consumer/src/batch/kafkaEvent.js';
import { MSK_CLUSTER_ARN, base64, kafkaRecord } from '../support/kafkaEvents.js';
import { body } from '../support/sqsEvents.js';

/** The delivery of one record. */
const deliveryOf = (record: KafkaRecord) => kafkaDeliveries({ [`${record.topic}-${record.partition}`]: [record] }, MSK_CLUSTER_ARN)[0]!;

describe('kafkaDeliveries', () => {
  it('decodes the value as the body, names the record <topic>-<partition>@<offset>, scopes it to its partition and counts its attempts by coordinates', () => {
    const paid = body.paid('e-10', 'O-10');
    const record = kafkaRecord('orders', 0, 10, paid);
    const delivery = deliveryOf(record);
    expect(delivery).toMatchObject({ messageId: 'orders-0@10', body: JSON.stringify(paid), scope: 'partition:orders-0' });
    expect(delivery.attempts).toEqual({
      kind: 'log',
      sourceId: 'kafka:orders-0@10',
      recordIdentity: kafkaRecordIdentity(record),
      source: MSK_CLUSTER_ARN,
    });
    expect(delivery.rejection).toBeUndefined();
    expect(kafkaMessageId({ topic: 'my-events', partition: 2, offset: 7 })).toBe('my-events-2@7');
  });

  it('counts the attempts of a redrive (the record at its own coordinates, with the redrive mark) apart from the mapping deliveries', () => {
    const mark = { [REDRIVE_ATTRIBUTE]: [...Buffer.from('orders-0@10')] };
    const redrive = deliveryOf(kafkaRecord('orders', 0, 10, body.paid('e-10', 'O-10'), { headers: [mark] }));
    expect(redrive).toMatchObject({ messageId: 'orders-0@10', redriveOf: 'orders-0@10' });
    expect(redrive.attempts).toMatchObject({ kind: 'log', sourceId: 'kafka:orders-0@10#redrive' });
  });

  it('regroups records by their own partition, each in offset order, whatever the event grouping', () => {
    const records = [
      kafkaRecord('orders', 1, 5, 'a'),
      kafkaRecord('orders', 0, 9, 'b'),
      kafkaRecord('orders', 0, 3, 'c'),
      kafkaRecord('orders', 1, 2, 'd'),
    ];
    expect(kafkaDeliveries({ mixed: records }, MSK_CLUSTER_ARN).map((d) => d.messageId)).toEqual([
      'orders-1@2',
      'orders-1@5',
      'orders-0@3',
      'orders-0@9',
    ]);
    expect(kafkaDeliveries(undefined, MSK_CLUSTER_ARN)).toEqual([]);
  });

  it('gives the dead-letter queue the source and the original coordinates: topic, partition, offset, timestamp, key', () => {
    const delivery = deliveryOf(kafkaRecord('orders', 0, 11, 'not-json', { key: 'O-11', timestamp: 1_767_268_800_011 }));
    expect(delivery.deadLetter).toMatchObject({
      source: MSK_CLUSTER_ARN,
      coordinates: { topic: 'orders', partition: 0, offset: 11, timestamp: 1_767_268_800_011, timestampType: 'CREATE_TIME', key: 'O-11' },
      messageGroupId: 'O-11',
    });
  });

  it('keeps the bytes of a UTF-8 value exactly, a byte order mark included', () => {
    const text = '\uFEFF{"eventId":"é-1"}';
    expect(deliveryOf({ ...kafkaRecord('orders', 0, 1, null), value: base64(text) }).body).toBe(text);
  });

  it('does not process a value that is not UTF-8: ValidationError, the value in base64 as the body, bodyEncoding base64', () => {
    const bytes = Buffer.from([0x7b, 0xff, 0xfe, 0x7d]).toString('base64');
    const delivery = deliveryOf({ ...kafkaRecord('orders', 0, 5, null, { key: 'O-5' }), value: bytes });
    expect(delivery.rejection).toBeInstanceOf(ValidationError);
    expect(delivery.rejection?.message).toMatch(/not valid UTF-8/);
    expect(delivery.body).toBe(bytes);
    expect(delivery.deadLetter.bodyEncoding).toBe('base64');
  });

  it.each([
    ['NUL', Buffer.from('\u0000nul body', 'utf8')],
    ['a lone surrogate (UTF-8 bytes ED A0 80)', Buffer.from([0x7b, 0xed, 0xa0, 0x80, 0x7d])],
    ['U+FFFE', Buffer.from('{"note":"\uFFFE"}', 'utf8')],
    ['U+FFFF', Buffer.from('\uFFFF', 'utf8')],
    ['a C0 control (U+0001)', Buffer.from('a\u0001b', 'utf8')],
  ])('dead-letters a value SQS would refuse as text (%s) in base64, bodyEncoding base64', (_, bytes) => {
    const value = bytes.toString('base64');
    const delivery = deliveryOf({ ...kafkaRecord('orders', 0, 6, null, { key: 'O-6' }), value });
    expect(delivery.rejection).toBeInstanceOf(ValidationError);
    expect(delivery.body).toBe(value);
    expect(isSqsSafeText(delivery.body)).toBe(true);
    expect(delivery.deadLetter.bodyEncoding).toBe('base64');
    expect(Buffer.from(delivery.body, 'base64')).toEqual(bytes);
  });

  it('keeps a value with characters outside the BMP (an emoji), tabs and newlines as it is', () => {
    const text = '{"eventId":"e-1","note":"🎉 café\t\r\n\uE000\uFFFD"}';
    const delivery = deliveryOf({ ...kafkaRecord('orders', 0, 7, null), value: base64(text) });
    expect(delivery.rejection).toBeUndefined();
    expect(delivery.body).toBe(text);
    expect(delivery.deadLetter.bodyEncoding).toBeUndefined();
  });

  it.each([
    ['null (a tombstone)', null, /tombstone/],
    ['empty', '', /empty/],
  ])('does not process a value that is %s: ValidationError', (_, value, why) => {
    const delivery = deliveryOf({ ...kafkaRecord('orders', 0, 5, null), value });
    expect(delivery.rejection).toBeInstanceOf(ValidationError);
    expect(delivery.rejection?.message).toMatch(why);
    expect(delivery.body).toBe('');
  });

  it('writes a key that is not UTF-8 (or that SQS refuses) in base64, and no key as null; the group falls back to the partition', () => {
    const binaryKey = Buffer.from([0xc3, 0x28]).toString('base64');
    const withBinary = deliveryOf({ ...kafkaRecord('orders', 3, 1, body.paid('e-1', 'O-1')), key: binaryKey });
    expect(withBinary.deadLetter.coordinates).toMatchObject({ key: binaryKey, keyEncoding: 'base64' });
    expect(withBinary.deadLetter.messageGroupId).toBe('orders-3');
    const withoutKey = deliveryOf(kafkaRecord('orders', 3, 2, 'not-json', { key: null }));
    expect(withoutKey.deadLetter.coordinates).toMatchObject({ key: null });
    expect(withoutKey.deadLetter.messageGroupId).toBe('orders-3');
  });
});

describe('kafkaRecordIdentity', () => {
  it('is the timestamp and a hash of key and value: the same for a redelivery, different for another record', () => {
    const record = kafkaRecord('orders', 0, 0, body.paid('e-1', 'O-1'), { key: 'O-1', timestamp: 1_000 });
    expect(kafkaRecordIdentity(record)).toMatch(/^1000:[0-9a-f]{64}$/);
    expect(kafkaRecordIdentity({ ...record })).toBe(kafkaRecordIdentity(record));
    expect(kafkaRecordIdentity({ ...record, timestamp: 1_001 })).not.toBe(kafkaRecordIdentity(record));
    expect(kafkaRecordIdentity({ ...record, value: base64('other') })).not.toBe(kafkaRecordIdentity(record));
    expect(kafkaRecordIdentity({ ...record, key: null })).not.toBe(kafkaRecordIdentity(record));
  });
});

describe('isSqsSafeText', () => {
  it.each([
    ['NUL', '\u0000nul body', false],
    ['a C0 control', 'a\u001Fb', false],
    ['a lone high surrogate', 'a\uD800b', false],
    ['a lone low surrogate', '\uDC00', false],
    ['U+FFFE', '\uFFFE', false],
    ['U+FFFF', '\uFFFF', false],
    ['an emoji (a surrogate pair)', 'paid 🎉', true],
    ['tab, LF, CR', '\t\n\r', true],
    ['the edges of the ranges', '\u0020\uD7FF\uE000\uFFFD\u{10000}\u{10FFFF}', true],
    ['empty', '', true],
  ])('%s: %s', (_, text, safe) => {
    expect(isSqsSafeText(text)).toBe(safe);
  });
});

describe('kafkaHeadersAsAttributes', () => {
  it('keeps UTF-8 headers as String and others as Binary, first of a repeated name, names SQS accepts', () => {
    const attributes = kafkaHeadersAsAttributes([
      { traceparent: [...Buffer.from('00-abc-01')] },
      { traceparent: [...Buffer.from('second')] },
      { blob: [0xff, 0x00] },
      { 'AWS.reserved': [...Buffer.from('x')] },
      { 'has space': [...Buffer.from('x')] },
      { empty: [] },
      { nul: [0x61, 0x00] },
    ]);
    expect(attributes).toEqual({
      traceparent: { DataType: 'String', StringValue: '00-abc-01' },
      blob: { DataType: 'Binary', BinaryValue: Buffer.from([0xff, 0x00]) },
      nul: { DataType: 'Binary', BinaryValue: Buffer.from([0x61, 0x00]) }, // UTF-8, but SQS refuses NUL as text
    });
  });

  it('keeps at most 10 headers (the SQS limit) and accepts null headers', () => {
    const many = Array.from({ length: 12 }, (_, i) => ({ [`h${i}`]: [65] }));
    expect(Object.keys(kafkaHeadersAsAttributes(many))).toHaveLength(10);
    expect(kafkaHeadersAsAttributes(null)).toEqual({});
  });
});

describe('kafkaEventSource', () => {
  it('is the MSK cluster ARN, or names the brokers of self-managed Kafka', () => {
    expect(kafkaEventSource({ eventSource: 'aws:kafka', eventSourceArn: MSK_CLUSTER_ARN, bootstrapServers: 'b:9098' })).toBe(
      MSK_CLUSTER_ARN,
    );
    expect(kafkaEventSource({ eventSource: 'SelfManagedKafka', bootstrapServers: 'k1:9092,k2:9092' })).toBe(
      'SelfManagedKafka:k1:9092,k2:9092',
    );
  });
});
