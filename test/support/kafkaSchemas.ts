/**
 * Avro and Protobuf for the Kafka format tests: a schema of the test events in each format, and
 * encoders built with the real libraries (`avro-js`, `protobufjs`), so the bytes are what a
 * producer writes.
 *
 * @module
 */
import { createRequire } from 'node:module';
import protobuf from 'protobufjs';

/** The part of `avro-js` the tests use (the package ships no types). */
interface AvroType {
  toBuffer(value: unknown): Buffer;
}
const avro = createRequire(import.meta.url)('avro-js') as { parse(schema: string): AvroType };

/**
 * An Avro schema of the café's order events: every field the events have, `points` an `int`
 * defaulting to 0 (so an `OrderPlaced` carries `points: 0`, which the café's schema ignores).
 */
export const orderEventAvsc = JSON.stringify({
  type: 'record',
  name: 'OrderEvent',
  namespace: 'test.kafka',
  fields: [
    { name: 'eventId', type: 'string' },
    { name: 'type', type: 'string' },
    { name: 'orderId', type: 'string' },
    { name: 'occurredAt', type: 'string' },
    { name: 'points', type: 'int', default: 0 },
  ],
});

/** The Avro binary encoding of `value` with `schema` (JSON text). */
export function avroBytes(schema: string, value: unknown): Buffer {
  return avro.parse(schema).toBuffer(value);
}

/** A `.proto` of the test messages: an order event, and a message with the types JSON lacks. */
export const testProto = `
syntax = "proto3";
package test.kafka;
message OrderEvent {
  string eventId = 1;
  string type = 2;
  string orderId = 3;
  string occurredAt = 4;
  int32 points = 5;
}
message Wide {
  enum Size { SMALL = 0; LARGE = 1; }
  string id = 1;
  int64 big = 2;
  bytes blob = 3;
  Size size = 4;
  repeated int32 list = 5;
  double ratio = 6;
}
`;

const root = protobuf.parse(testProto).root;
/** The `test.kafka.OrderEvent` message type. */
export const ProtoOrderEvent = root.lookupType('test.kafka.OrderEvent');
/** The `test.kafka.Wide` message type. */
export const ProtoWide = root.lookupType('test.kafka.Wide');

/** The Protobuf binary encoding of `value` as a message of `type`. */
export function protobufBytes(type: protobuf.Type, value: Record<string, unknown>): Buffer {
  const unknown = Object.keys(value).filter((name) => type.fields[name] === undefined);
  if (unknown.length > 0) throw new Error(`${type.name} has no field ${unknown.join(', ')}`);
  return Buffer.from(type.encode(type.fromObject(value)).finish());
}
