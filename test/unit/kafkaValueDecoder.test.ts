/**
 * The Avro and Protobuf Kafka formats: values built with the real libraries (`avro-js`,
 * `protobufjs`), decoded through Powertools' deserializers, made JSON-compatible; the
 * schema-registry framings Powertools removes; what a value that cannot be decoded says.
 */
import { describe, expect, it } from 'vitest';
import {
  deserializationCause,
  kafkaAvroFormat,
  kafkaProtobufFormat,
  toJsonCompatible,
} from '../../packages/idempotent-consumer/src/batch/kafkaValueDecoder.js';
import type { KafkaDecodedValue, KafkaEncodedValue } from '../../packages/idempotent-consumer/src/types.js';
import { avroBytes, orderEventAvsc, ProtoOrderEvent, ProtoWide, protobufBytes } from '../support/kafkaSchemas.js';

const placed = { eventId: 'e-1', type: 'OrderPlaced', orderId: 'O-1', occurredAt: '2026-01-01T00:00:00Z', points: 0 };
const input = (bytes: Buffer, schemaMetadata?: KafkaEncodedValue['schemaMetadata']): KafkaEncodedValue => ({
  base64: bytes.toString('base64'),
  ...(schemaMetadata !== undefined ? { schemaMetadata } : {}),
});
/** The reason of a failed decoding (fails the test when it succeeded). */
const reasonOf = (result: KafkaDecodedValue | undefined): string => {
  if (result === undefined || result.ok) throw new Error(`expected a failure, got ${JSON.stringify(result)}`);
  return result.reason;
};

/** An Avro schema with the types JSON lacks or encodes differently. */
const wideAvsc = JSON.stringify({
  type: 'record',
  name: 'Wide',
  fields: [
    { name: 'id', type: 'string' },
    { name: 'big', type: 'long' },
    { name: 'blob', type: 'bytes' },
    { name: 'hash', type: { type: 'fixed', name: 'Hash', size: 4 } },
    { name: 'size', type: { type: 'enum', name: 'Size', symbols: ['SMALL', 'LARGE'] } },
    { name: 'note', type: ['null', 'string'] },
    { name: 'tags', type: { type: 'map', values: 'int' } },
    { name: 'list', type: { type: 'array', items: 'double' } },
  ],
});
const wide = {
  id: 'w-1',
  big: 2 ** 50 + 1,
  blob: Buffer.from('hi'),
  hash: Buffer.from([1, 2, 3, 4]),
  size: 'LARGE',
  note: { string: 'n' },
  tags: { a: 1 },
  list: [0.5, -2],
};

describe('kafkaAvroFormat', () => {
  it('decodes Avro values with Powertools, in order, into plain JSON objects', async () => {
    const second = { ...placed, eventId: 'e-2', type: 'OrderPaid', points: 7 };
    const results = await kafkaAvroFormat(orderEventAvsc).decode([
      input(avroBytes(orderEventAvsc, placed)),
      input(avroBytes(orderEventAvsc, second)),
    ]);

    expect(results).toEqual([
      { ok: true, value: placed },
      { ok: true, value: second },
    ]);
    const value = (results[0] as { value: object }).value;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(JSON.parse(JSON.stringify(value))).toEqual(value);
  });

  it('writes bytes and fixed in base64, a long as a number, an enum as its symbol, a union as Avro JSON', async () => {
    const [result] = await kafkaAvroFormat(wideAvsc).decode([input(avroBytes(wideAvsc, wide))]);

    expect(result).toEqual({
      ok: true,
      value: {
        id: 'w-1',
        big: 2 ** 50 + 1,
        blob: 'aGk=',
        hash: 'AQIDBA==',
        size: 'LARGE',
        note: { string: 'n' },
        tags: { a: 1 },
        list: [0.5, -2],
      },
    });
    const [nullNote] = await kafkaAvroFormat(wideAvsc).decode([input(avroBytes(wideAvsc, { ...wide, note: null }))]);
    expect((nullNote as { value: { note: unknown } }).value.note).toBeNull();
  });

  it('decodes a value from a schema registry in SOURCE format (the mapping removed the schema id) as plain Avro', async () => {
    const [result] = await kafkaAvroFormat(orderEventAvsc).decode([
      input(avroBytes(orderEventAvsc, placed), { dataFormat: 'AVRO', schemaId: '42' }),
    ]);
    expect(result).toEqual({ ok: true, value: placed });
  });

  it('fails a value that is not a datum of the schema, saying why without quoting the bytes or the schema', async () => {
    const bytes = avroBytes(orderEventAvsc, placed);
    const [truncated, garbage] = await kafkaAvroFormat(orderEventAvsc).decode([
      input(bytes.subarray(0, 5)),
      input(Buffer.from('SSN 078-05-1120, alice@example.com')),
    ]);

    for (const reason of [reasonOf(truncated), reasonOf(garbage)]) {
      expect(reason).toMatch(/^the bytes are not a datum of the Avro schema \(/);
      expect(reason).not.toContain(bytes.subarray(0, 5).toString('base64'));
      expect(reason).not.toContain('OrderEvent');
      expect(reason).not.toMatch(/alice|078-05|U1NO/);
    }
  });

  it('fails a long beyond ±2^53 (avro-js refuses to lose precision) and a NaN double (JSON has none)', async () => {
    const longSchema = JSON.stringify({ type: 'record', name: 'L', fields: [{ name: 'n', type: 'long' }] });
    const beyond = Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40]); // zig-zag varint of 2^62
    const doubleSchema = JSON.stringify({ type: 'record', name: 'D', fields: [{ name: 'ratio', type: 'double' }] });

    const [long] = await kafkaAvroFormat(longSchema).decode([input(beyond)]);
    const [nan] = await kafkaAvroFormat(doubleSchema).decode([input(avroBytes(doubleSchema, { ratio: Number.NaN }))]);

    expect(reasonOf(long)).toContain('precision');
    expect(reasonOf(nan)).toBe('its decoded value is not JSON-compatible: NaN at $.ratio');
  });

  it('fails every value of a schema that is JSON but not Avro, and refuses a schema that is not JSON at once', async () => {
    const results = await kafkaAvroFormat('{"type":"record","name":"R"}').decode([input(Buffer.from([0]))]);
    expect(reasonOf(results[0])).toMatch(/^the bytes are not a datum of the Avro schema/);

    expect(() => kafkaAvroFormat('order.avsc')).toThrow(/the schema is not JSON \(give the content of the \.avsc file, not its path\)/);
    expect(() => kafkaAvroFormat('')).toThrow(TypeError);
  });
});

describe('kafkaProtobufFormat', () => {
  it("decodes Protobuf values with Powertools into protobufjs's JSON: 64-bit integers and enums as strings, bytes in base64, defaults left out", async () => {
    const bytes = protobufBytes(ProtoWide, { id: 'w-1', big: '9007199254740993', blob: Buffer.from('z'), size: 1, list: [1, 2], ratio: 0 });
    const [result] = await kafkaProtobufFormat(ProtoWide).decode([input(bytes)]);

    expect(result).toEqual({ ok: true, value: { id: 'w-1', big: '9007199254740993', blob: 'eg==', size: 'LARGE', list: [1, 2] } });
  });

  it.each([
    ['without a schema registry', Buffer.alloc(0), undefined],
    [
      'from a Confluent schema registry (numeric schema id): the message index 0 removed',
      Buffer.from([0x00]),
      { dataFormat: 'PROTOBUF', schemaId: '7' },
    ],
    [
      'from an AWS Glue schema registry (schema version UUID): the header byte removed',
      Buffer.from([0x01]),
      { dataFormat: 'PROTOBUF', schemaId: '12345678-1234-1234-1234-123456789012' },
    ],
  ])('decodes a value %s', async (_, prefix, metadata) => {
    const bytes = Buffer.concat([prefix, protobufBytes(ProtoOrderEvent, { ...placed, type: 'OrderPaid', points: 5 })]);
    const [result] = await kafkaProtobufFormat(ProtoOrderEvent).decode([input(bytes, metadata)]);
    expect(result).toEqual({ ok: true, value: { ...placed, type: 'OrderPaid', points: 5 } });
  });

  it("does not unframe a value without the registry's schema id (no metadata): the framing is not the message", async () => {
    const framed = Buffer.concat([Buffer.from([0x00]), protobufBytes(ProtoOrderEvent, placed)]);
    const [result] = await kafkaProtobufFormat(ProtoOrderEvent).decode([input(framed)]);
    expect(reasonOf(result)).toMatch(/^the bytes are not a message of the Protobuf message type \(/);
  });

  it('fails bytes that are not a message, without quoting them, and refuses a type without decode at once', async () => {
    const [result] = await kafkaProtobufFormat(ProtoOrderEvent).decode([input(Buffer.from([0x0a, 0xff, 0x01, 0x41]))]);
    const reason = reasonOf(result);
    expect(reason).toMatch(/^the bytes are not a message of the Protobuf message type \(.+\)$/);
    expect(reason).not.toContain('Cv8BQQ==');

    expect(() => kafkaProtobufFormat({} as never)).toThrow(/give a protobufjs message type/);
  });
});

describe('toJsonCompatible', () => {
  it('keeps JSON values, writes bytes in base64, bigints as numbers or strings, and calls toJSON', () => {
    const date = new Date('2026-01-01T00:00:00.000Z');
    expect(
      toJsonCompatible({
        a: [1, 'x', null, true, undefined],
        b: new Uint8Array([255, 0]),
        c: 5n,
        d: 2n ** 64n,
        e: date,
        f: undefined,
        g: () => 1,
      }),
    ).toEqual({ a: [1, 'x', null, true, null], b: '/wA=', c: 5, d: '18446744073709551616', e: '2026-01-01T00:00:00.000Z' });
    expect(toJsonCompatible(Buffer.from('hi').subarray(1))).toBe('aQ==');
  });

  it.each([
    [{ x: { y: [1, Number.POSITIVE_INFINITY] } }, 'is not JSON-compatible: Infinity at $.x.y[1]'],
    [{ 'alice@example.com': Number.NaN }, 'is not JSON-compatible: NaN at $.…'],
    [{ s: Symbol('s') }, 'is not JSON-compatible: a symbol at $.s'],
    [undefined, 'is not JSON-compatible: no value at $'],
  ])('refuses %o, naming where but never the value', (value, message) => {
    expect(() => toJsonCompatible(value)).toThrow(message);
  });

  it('refuses nesting too deep for the stack with a clear error', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 200_000; i += 1) deep = { d: deep };
    expect(() => toJsonCompatible(deep)).toThrow('is not JSON-compatible: it is nested too deeply');
  });
});

describe('deserializationCause', () => {
  it("keeps the cause of Powertools' error and drops the value and the schema it quotes", () => {
    const error = new Error(
      'Failed to deserialize Avro message: RangeError: Index out of range, message: U1NOIDA3OC0wNS0xMTIw, schema: {"type":"record"}',
    );
    expect(deserializationCause(error)).toBe('RangeError: Index out of range');
    expect(deserializationCause(new TypeError('something else, message: abc'))).toBe('TypeError');
    expect(deserializationCause('x')).toBe('string');
  });
});
