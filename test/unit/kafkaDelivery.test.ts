import { describe, expect, it } from 'vitest';
import { kafkaDelivery, kafkaHeadersAsAttributes, kafkaMessageId, kafkaRecordIdentity } from '../../lambda/batch/kafkaDelivery.js';
import { buildDeadLetterMessage, EMPTY_BODY_PLACEHOLDER, isSqsSafeText, toSqsSafeText } from '../../lambda/dlq/deadLetterMessage.js';
import { kafkaEventSource } from '../../lambda/batch/kafkaEvent.js';
import { ValidationError } from '../../lambda/errors.js';
import { MSK_CLUSTER_ARN, base64, kafkaRecord } from '../support/kafkaEvents.js';
import { body } from '../support/sqsEvents.js';

const options = { source: MSK_CLUSTER_ARN, maxAttempts: 5 };

/** The dead-letter message the consumer would send for a delivery that failed validation. */
function deadLetterOf(delivery: ReturnType<typeof kafkaDelivery>) {
  return buildDeadLetterMessage(
    'https://sqs.us-east-1.amazonaws.com/000000000000/dlq',
    {
      ...delivery.deadLetter,
      body: delivery.message.body,
      originalMessageId: delivery.message.messageId,
      failure: { disposition: 'dead-letter', reason: 'ValidationError', errorType: 'ValidationError', errorMessage: 'x' },
      failedAt: new Date(0),
    },
    { fifo: false, maxMessageSizeBytes: 1_048_576 },
  );
}

describe('kafkaDelivery', () => {
  it('decodes the value as the body and names the record <topic>-<partition>@<offset>', () => {
    const paid = body.paid('e-10', 'O-10');
    const delivery = kafkaDelivery(kafkaRecord('orders', 0, 10, paid), options);

    expect(delivery.message).toEqual({ body: JSON.stringify(paid), messageId: 'orders-0@10' });
    expect(delivery.attempt).toBeUndefined();
    expect(delivery.rejection).toBeUndefined();
    expect(kafkaMessageId({ topic: 'cafe-orders', partition: 2, offset: 7 })).toBe('cafe-orders-2@7');
  });

  it('gives the dead-letter queue the source and the original coordinates: topic, partition, offset, timestamp, key', () => {
    const delivery = kafkaDelivery(kafkaRecord('orders', 0, 11, 'not-json', { key: 'O-11', timestamp: 1_767_268_800_011 }), options);

    expect(delivery.deadLetter).toMatchObject({
      source: MSK_CLUSTER_ARN,
      attempts: 1,
      coordinates: { topic: 'orders', partition: 0, offset: 11, timestamp: 1_767_268_800_011, timestampType: 'CREATE_TIME', key: 'O-11' },
      messageGroupId: 'O-11',
    });
  });

  it('keeps the bytes of a UTF-8 value exactly, a byte order mark included', () => {
    const text = '\uFEFF{"eventId":"é-1"}';
    const delivery = kafkaDelivery({ ...kafkaRecord('orders', 0, 1, null), value: base64(text) }, options);
    expect(delivery.message.body).toBe(text);
  });

  it('does not process a value that is not UTF-8: ValidationError, the value in base64 as the body, bodyEncoding base64', () => {
    const bytes = Buffer.from([0x7b, 0xff, 0xfe, 0x7d]).toString('base64');
    const delivery = kafkaDelivery({ ...kafkaRecord('orders', 0, 5, null, { key: 'O-5' }), value: bytes }, options);

    expect(delivery.rejection).toBeInstanceOf(ValidationError);
    expect(delivery.rejection?.message).toMatch(/not valid UTF-8/);
    expect(delivery.message.body).toBe(bytes);
    const message = deadLetterOf(delivery);
    expect(message.MessageBody).toBe(bytes);
    expect(message.MessageAttributes?.bodyEncoding?.StringValue).toBe('base64');
  });

  it.each([
    ['NUL', Buffer.from('\u0000nul body', 'utf8')],
    ['a lone surrogate (UTF-8 bytes ED A0 80)', Buffer.from([0x7b, 0xed, 0xa0, 0x80, 0x7d])],
    ['U+FFFE', Buffer.from('{"note":"\uFFFE"}', 'utf8')],
    ['U+FFFF', Buffer.from('\uFFFF', 'utf8')],
    ['a C0 control (U+0001)', Buffer.from('a\u0001b', 'utf8')],
  ])('dead-letters a value SQS would refuse as text (%s): ValidationError, the value in base64, bodyEncoding base64', (_, bytes) => {
    const value = bytes.toString('base64');
    const delivery = kafkaDelivery({ ...kafkaRecord('orders', 0, 6, null, { key: 'O-6' }), value }, options);

    expect(delivery.rejection).toBeInstanceOf(ValidationError);
    expect(delivery.rejection?.message).toMatch(/base64/);
    expect(delivery.message.body).toBe(value);
    const message = deadLetterOf(delivery);
    expect(message.MessageBody).toBe(value);
    expect(isSqsSafeText(message.MessageBody ?? '')).toBe(true);
    expect(message.MessageAttributes?.bodyEncoding?.StringValue).toBe('base64');
    expect(Buffer.from(message.MessageBody ?? '', 'base64')).toEqual(bytes);
  });

  it('keeps a value with characters outside the BMP (an emoji), tabs and newlines as it is', () => {
    const text = '{"eventId":"e-1","note":"🎉 café\t\r\n\uE000\uFFFD"}';
    const delivery = kafkaDelivery({ ...kafkaRecord('orders', 0, 7, null), value: base64(text) }, options);

    expect(delivery.rejection).toBeUndefined();
    expect(delivery.message.body).toBe(text);
    expect(delivery.deadLetter.bodyEncoding).toBeUndefined();
  });

  it('writes a key SQS would refuse as text in base64', () => {
    const key = Buffer.from('O-\u0000', 'utf8').toString('base64');
    const delivery = kafkaDelivery({ ...kafkaRecord('orders', 0, 8, body.paid('e-8', 'O-8')), key }, options);
    expect(delivery.deadLetter.coordinates).toMatchObject({ key, keyEncoding: 'base64' });
    expect(delivery.deadLetter.messageGroupId).toBe('O-8');
  });

  it.each([
    ['null (a tombstone)', null, /tombstone/],
    ['empty', '', /empty/],
  ])('does not process a value that is %s: ValidationError, sent to the DLQ as the marked placeholder', (_, value, why) => {
    const delivery = kafkaDelivery({ ...kafkaRecord('orders', 0, 5, null), value }, options);
    expect(delivery.rejection).toBeInstanceOf(ValidationError);
    expect(delivery.rejection?.message).toMatch(why);
    expect(delivery.message.body).toBe('');
    const message = deadLetterOf(delivery);
    expect(message.MessageBody).toBe(EMPTY_BODY_PLACEHOLDER);
    expect(message.MessageAttributes?.bodyEncoding?.StringValue).toBe('empty');
  });

  it('writes a key that is not UTF-8 in base64, and no key as null', () => {
    const binaryKey = Buffer.from([0xc3, 0x28]).toString('base64');
    const withBinary = kafkaDelivery({ ...kafkaRecord('orders', 3, 1, body.paid('e-1', 'O-1')), key: binaryKey }, options);
    expect(withBinary.deadLetter.coordinates).toMatchObject({ key: binaryKey, keyEncoding: 'base64' });
    expect(withBinary.deadLetter.messageGroupId).toBe('O-1'); // falls back to the body's orderId

    const withoutKey = kafkaDelivery(kafkaRecord('orders', 3, 2, 'not-json', { key: null }), options);
    expect(withoutKey.deadLetter.coordinates).toMatchObject({ key: null });
    expect(withoutKey.deadLetter.messageGroupId).toBe('orders-3');
  });

  it('counts failures in the attempt log only when one is given', async () => {
    const recorded: unknown[] = [];
    const attemptLog = { recordFailure: async (f: unknown) => (recorded.push(f), 3), read: async () => undefined };
    const delivery = kafkaDelivery(kafkaRecord('orders', 1, 9, body.paid('e-9', 'O-9')), { ...options, attemptLog });

    const attempt = await delivery.recordFailedAttempt?.({ disposition: 'retry', reason: undefined, errorType: 'PredecessorNotApplied', errorMessage: 'later' });

    expect(attempt).toEqual({ attempt: 3, maxAttempts: 5 });
    expect(recorded).toEqual([
      {
        topic: 'orders',
        partition: 1,
        offset: 9,
        recordIdentity: kafkaRecordIdentity(kafkaRecord('orders', 1, 9, body.paid('e-9', 'O-9'))),
        source: MSK_CLUSTER_ARN,
        errorType: 'PredecessorNotApplied',
        errorMessage: 'later',
        reason: undefined,
      },
    ]);
    expect(kafkaDelivery(kafkaRecord('orders', 1, 9, 'x'), options).recordFailedAttempt).toBeUndefined();
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

  it('toSqsSafeText replaces only the refused characters, with U+FFFD', () => {
    expect(toSqsSafeText('a\u0000b\uD800c🎉')).toBe('a\uFFFDb\uFFFDc🎉');
    expect(toSqsSafeText('ok')).toBe('ok');
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
    expect(kafkaEventSource({ eventSource: 'aws:kafka', eventSourceArn: MSK_CLUSTER_ARN, bootstrapServers: 'b:9098' })).toBe(MSK_CLUSTER_ARN);
    expect(kafkaEventSource({ eventSource: 'SelfManagedKafka', bootstrapServers: 'k1:9092,k2:9092' })).toBe('SelfManagedKafka:k1:9092,k2:9092');
  });
});
