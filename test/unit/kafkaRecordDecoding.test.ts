/**
 * The consumer's `kafka` option: checked when the handler is built; a batch's values and keys
 * decoded by their schema formats, and what the records become (the decoded event input, the
 * bytes kept as the dead-letter body, `decodedKey`); the default JSON path unchanged.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { kafkaDeliveries } from '../../packages/idempotent-consumer/src/batch/kafkaDeliveries.js';
import {
  checkKafkaDecodingOptions,
  decodeKafkaRecords,
  MAX_DECODED_KEY_LENGTH,
} from '../../packages/idempotent-consumer/src/batch/kafkaRecordDecoding.js';
import { kafkaAvroFormat, kafkaProtobufFormat } from '../../packages/idempotent-consumer/src/batch/kafkaValueDecoder.js';
import { classify } from '../../packages/idempotent-consumer/src/classifier.js';
import { createIdempotentConsumer } from '../../packages/idempotent-consumer/src/createIdempotentConsumer.js';
import { defineConsumer } from '../../packages/idempotent-consumer/src/engine/ConsumerDefinition.js';
import { parseDelivery } from '../../packages/idempotent-consumer/src/engine/parseDelivery.js';
import { ConsumerDefinitionError, ValidationError } from '../../packages/idempotent-consumer/src/errors.js';
import type { KafkaRecord } from '../../packages/idempotent-consumer/src/batch/kafkaEvent.js';
import type { KafkaDecodingOptions, KafkaSchemaFormat } from '../../packages/idempotent-consumer/src/types.js';
import { MSK_CLUSTER_ARN, kafkaRecord } from '../support/kafkaEvents.js';
import { avroBytes, orderEventAvsc, ProtoOrderEvent, protobufBytes } from '../support/kafkaSchemas.js';

const placed = { eventId: 'e-1', type: 'OrderPlaced', orderId: 'O-1', occurredAt: '2026-01-01T00:00:00Z', points: 0 };
const keyAvsc = JSON.stringify({ type: 'record', name: 'OrderKey', fields: [{ name: 'orderId', type: 'string' }] });

/** A record of topic `orders` whose value (and key) are these bytes. */
function binaryRecord(partition: number, offset: number, value: Buffer | null, key?: Buffer): KafkaRecord {
  return {
    ...kafkaRecord('orders', partition, offset, null, { key: null }),
    value: value === null ? null : value.toString('base64'),
    ...(key !== undefined ? { key: key.toString('base64') } : {}),
  };
}

/** The deliveries of `records` (one partition each, or several) after decoding with `options`. */
async function deliveriesOf(options: KafkaDecodingOptions | undefined, ...records: KafkaRecord[]) {
  const decoded = await decodeKafkaRecords(records, options);
  return kafkaDeliveries({ all: records }, MSK_CLUSTER_ARN, decoded);
}

describe('checkKafkaDecodingOptions', () => {
  it.each([
    ['no option', undefined],
    ['JSON values', { value: { type: 'json' } }],
    ['Avro values and JSON keys', { value: kafkaAvroFormat(orderEventAvsc), key: { type: 'json' } }],
    ['Protobuf values and Avro keys', { value: kafkaProtobufFormat(ProtoOrderEvent), key: kafkaAvroFormat(keyAvsc) }],
  ])('accepts %s', (_, kafka) => {
    expect(() => checkKafkaDecodingOptions(kafka)).not.toThrow();
  });

  it.each([
    [
      "Powertools' plain { type: avro, schema } (no decoder)",
      { value: { type: 'avro', schema: orderEventAvsc } },
      "kafka.value { type: 'avro' } has no decoder: build it with kafkaAvroFormat(schema) from 'idempotent-consumer/kafka'",
    ],
    [
      'a Protobuf key without decoder',
      { key: { type: 'protobuf' } },
      "kafka.key { type: 'protobuf' } has no decoder: build it with kafkaProtobufFormat(messageType)",
    ],
    [
      'an unknown type',
      { value: { type: 'xml' } },
      'kafka.value must be { type: \'json\' }, kafkaAvroFormat(schema) or kafkaProtobufFormat(messageType); got type "xml"',
    ],
    [
      'an unknown field',
      { values: kafkaAvroFormat(orderEventAvsc) },
      'the kafka option has unknown field(s) "values": it takes value and key',
    ],
    ['not an object', 'avro', 'the kafka option must be an object { value?, key? } of record formats'],
  ])('refuses %s with a ConsumerDefinitionError that says what to do', (_, kafka, message) => {
    expect(() => checkKafkaDecodingOptions(kafka)).toThrow(ConsumerDefinitionError);
    expect(() => checkKafkaDecodingOptions(kafka)).toThrow(message);
  });

  it('is checked when the handler is built, before any event arrives', () => {
    const options = { schema: z.object({ eventId: z.string() }), idempotencyKey: 'eventId', decide: () => undefined };
    expect(() => createIdempotentConsumer({ ...options, kafka: { value: { type: 'avro', schema: orderEventAvsc } as never } })).toThrow(
      /has no decoder/,
    );
    expect(() => createIdempotentConsumer({ ...options, kafka: { value: kafkaAvroFormat(orderEventAvsc) } })).not.toThrow();
  });
});

describe('decodeKafkaRecords and the deliveries of decoded records', () => {
  it('decodes nothing, and leaves the deliveries exactly as before, without a schema format', async () => {
    const records = [kafkaRecord('orders', 0, 1, placed), kafkaRecord('orders', 0, 2, 'not-json')];
    for (const options of [undefined, {}, { value: { type: 'json' as const }, key: { type: 'json' as const } }]) {
      expect(await decodeKafkaRecords(records, options)).toEqual(new Map());
      expect(await deliveriesOf(options, ...records)).toEqual(kafkaDeliveries({ all: records }, MSK_CLUSTER_ARN));
    }
  });

  it('makes an Avro value the event input and keeps its bytes, in base64, as the body', async () => {
    const bytes = avroBytes(orderEventAvsc, placed);
    const [delivery] = await deliveriesOf({ value: kafkaAvroFormat(orderEventAvsc) }, binaryRecord(0, 10, bytes));

    expect(delivery).toMatchObject({
      messageId: 'orders-0@10',
      body: bytes.toString('base64'),
      parsedBody: { value: placed },
      scope: 'partition:orders-0',
    });
    expect(delivery?.rejection).toBeUndefined();
    expect(delivery?.deadLetter.bodyEncoding).toBe('base64');
  });

  it('hands the decoded value to the schema (JSON is not parsed), and hashes it as the payload', () => {
    const definition = defineConsumer({
      schema: z.object({ eventId: z.string(), points: z.number() }),
      idempotencyKey: 'eventId',
      decide: () => undefined,
    });
    const base = {
      messageId: 'orders-0@1',
      attempts: { kind: 'log', sourceId: 'kafka:orders-0@1', recordIdentity: 'x', source: 's' },
      deadLetter: { source: 's', bodyEncoding: 'base64' },
    } as const;
    const a = parseDelivery({ ...base, body: 'AAAA', parsedBody: { value: { eventId: 'e-9', points: 3 } } }, definition, {});
    const b = parseDelivery({ ...base, body: 'BBBB', parsedBody: { value: { points: 3, eventId: 'e-9' } } }, definition, {});

    expect(a).toMatchObject({ ok: true, idempotencyKey: 'e-9', event: { eventId: 'e-9', points: 3 } });
    expect(a.ok && b.ok && a.payloadHash === b.payloadHash).toBe(true);
  });

  it('fails a value the format cannot decode with a ValidationError, its bytes in base64 as the body, and the partition goes on', async () => {
    const garbage = Buffer.from([0xff, 0xfe, 0x00, 0x01]);
    const good = avroBytes(orderEventAvsc, placed);
    const [bad, next] = await deliveriesOf(
      { value: kafkaAvroFormat(orderEventAvsc) },
      binaryRecord(0, 10, garbage),
      binaryRecord(0, 11, good),
    );

    expect(bad?.rejection).toBeInstanceOf(ValidationError);
    expect(bad?.rejection?.message).toMatch(
      /^the record value could not be decoded as Avro: the bytes are not a datum of the Avro schema \(.+\); the dead-letter body holds it in base64$/,
    );
    expect(classify(bad?.rejection)).toMatchObject({ retryable: false, reason: 'ValidationError' });
    expect(Buffer.from(bad?.body ?? '', 'base64')).toEqual(garbage);
    expect(bad?.deadLetter.bodyEncoding).toBe('base64');
    expect(bad?.parsedBody).toBeUndefined();
    expect(next?.parsedBody).toEqual({ value: placed });
  });

  it('rejects a tombstone as before, without handing it to the decoder', async () => {
    let calls = 0;
    const counting: KafkaSchemaFormat = {
      type: 'avro',
      decode: async (values) => ((calls += values.length), values.map(() => ({ ok: true, value: {} }))),
    };
    const [tombstone] = await deliveriesOf({ value: counting }, binaryRecord(0, 1, null));

    expect(calls).toBe(0);
    expect(tombstone?.rejection?.message).toMatch(/tombstone/);
  });

  it("decodes a batch's values in one call, across partitions, each result to its record", async () => {
    const batches: number[] = [];
    const format = kafkaProtobufFormat(ProtoOrderEvent);
    const spying: KafkaSchemaFormat = { type: 'protobuf', decode: (values) => (batches.push(values.length), format.decode(values)) };
    const records = [0, 1, 2].map((i) => binaryRecord(i % 2, 20 + i, protobufBytes(ProtoOrderEvent, { ...placed, eventId: `e-${i}` })));
    const deliveries = await deliveriesOf({ value: spying }, ...records);

    expect(batches).toEqual([3]);
    expect(deliveries.map((d) => [d.messageId, (d.parsedBody?.value as { eventId: string }).eventId])).toEqual([
      ['orders-0@20', 'e-0'],
      ['orders-0@22', 'e-2'],
      ['orders-1@21', 'e-1'],
    ]);
  });

  it("retries (does not dead-letter) every value when the format's library cannot be loaded", async () => {
    const missing: KafkaSchemaFormat = {
      type: 'avro',
      decode: () => Promise.reject(new Error("Cannot find package 'avro-js' imported from /var/task/index.mjs")),
    };
    const [delivery] = await deliveriesOf({ value: missing }, binaryRecord(0, 1, avroBytes(orderEventAvsc, placed)));

    expect(delivery?.rejection).toBeInstanceOf(ConsumerDefinitionError);
    expect(delivery?.rejection?.message).toContain("the Kafka value format avro could not decode (Error: Cannot find package 'avro-js'");
    expect(classify(delivery?.rejection).retryable).toBe(true);
  });

  it('adds a key decoded by its format to the coordinates as decodedKey; a key it cannot decode leaves the record alone', async () => {
    const options = { key: kafkaAvroFormat(keyAvsc) };
    const keyBytes = avroBytes(keyAvsc, { orderId: 'O-1' });
    const [withKey, badKey] = await deliveriesOf(
      options,
      binaryRecord(0, 1, Buffer.from(JSON.stringify(placed)), keyBytes),
      binaryRecord(0, 2, Buffer.from(JSON.stringify(placed)), Buffer.from([0xff])),
    );

    expect(withKey?.deadLetter.coordinates).toMatchObject({
      key: keyBytes.toString('base64'),
      keyEncoding: 'base64',
      decodedKey: '{"orderId":"O-1"}',
    });
    expect(withKey?.body).toBe(JSON.stringify(placed));
    expect(withKey?.rejection).toBeUndefined();
    expect(badKey?.deadLetter.coordinates?.decodedKey).toBeUndefined();
    expect(badKey?.rejection).toBeUndefined();
  });

  it(`cuts a long decoded key to ${MAX_DECODED_KEY_LENGTH} characters`, async () => {
    const keyBytes = avroBytes(keyAvsc, { orderId: 'K'.repeat(2_000) });
    const [delivery] = await deliveriesOf({ key: kafkaAvroFormat(keyAvsc) }, binaryRecord(0, 1, Buffer.from('{}'), keyBytes));
    const decodedKey = String(delivery?.deadLetter.coordinates?.decodedKey);
    expect(decodedKey).toHaveLength(MAX_DECODED_KEY_LENGTH);
    expect(decodedKey.endsWith('…')).toBe(true);
  });
});
