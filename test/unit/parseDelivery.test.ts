import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConsumerDefinitionError, NonRetryableError } from '../../packages/idempotent-consumer/src/errors.js';
import { defineConsumer } from '../../packages/idempotent-consumer/src/engine/ConsumerDefinition.js';
import type { Delivery } from '../../packages/idempotent-consumer/src/engine/Delivery.js';
import { parseDelivery } from '../../packages/idempotent-consumer/src/engine/parseDelivery.js';

const schema = z.object({ id: z.string(), sku: z.string(), quantity: z.number().int().positive() });
const definition = defineConsumer({
  schema,
  idempotencyKey: 'id',
  orderingKey: 'sku',
  tables: { stock: { partitionKey: 'sku' } },
  read: (event) => [{ table: 'stock', key: { sku: event.sku } }],
  decide: () => undefined,
});
const tableNames = { stock: 'Stock-1234' };

const delivery = (body: string, extra: Partial<Delivery> = {}): Delivery => ({
  messageId: 'm-1',
  body,
  attempts: { kind: 'receive-count', receiveCount: 1, sourceId: 'sqs:m-1' },
  deadLetter: { source: 'arn:aws:sqs:us-east-1:000000000000:q' },
  ...extra,
});

const failureOf = (body: string) => {
  const result = parseDelivery(delivery(body), definition, tableNames);
  if (result.ok) throw new Error('expected a failure');
  return result.error as NonRetryableError;
};

describe('parseDelivery', () => {
  it('parses a body into an event with its keys, payload hash and resolved reads', () => {
    const result = parseDelivery(delivery('{"sku":"A","id":"r-1","quantity":2}'), definition, tableNames);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result).toMatchObject({ idempotencyKey: 'r-1', orderingKey: 'A', event: { id: 'r-1', sku: 'A', quantity: 2 } });
    expect(result.payloadHash).toMatch(/^[0-9a-f]{64}$/);
    expect(result.reads).toEqual([{ table: 'stock', tableName: 'Stock-1234', key: { sku: 'A' }, id: expect.any(String) }]);
  });

  it.each([
    ['an empty body', '', 'ValidationError', /empty/],
    ['a body that is not JSON', 'SSN 078-05-1120', 'ValidationError', /not valid JSON/],
    ['a JSON array', '[1,2]', 'ValidationError', /array/],
    ['a JSON string', '"hello"', 'ValidationError', /object/],
    ['null', 'null', 'ValidationError', /null/],
    ['no idempotency key', '{"sku":"A","quantity":1}', 'MissingIdempotencyKey', /"id"/],
    ['an empty idempotency key', '{"id":"  ","sku":"A","quantity":1}', 'MissingIdempotencyKey', /"id"/],
    ['a number as idempotency key', '{"id":7,"sku":"A","quantity":1}', 'MissingIdempotencyKey', /"id"/],
    ['a schema violation', '{"id":"r","sku":"A","quantity":"two"}', 'ValidationError', /quantity/],
    ['a lone surrogate in the ordering key (case C19)', '{"id":"r","sku":"S-\\ud800","quantity":1}', 'ValidationError', /well-formed/],
    ['a lone surrogate in the idempotency key', '{"id":"r-\\udfff","sku":"A","quantity":1}', 'ValidationError', /well-formed/],
    [
      'an idempotency key over 1,024 bytes',
      JSON.stringify({ id: 'é'.repeat(600), sku: 'A', quantity: 1 }),
      'ValidationError',
      /1024 bytes/,
    ],
    ['an empty key attribute for a read', '{"id":"r","sku":"","quantity":1}', 'ValidationError', /empty|ordering key/],
  ])('refuses %s with %s', (_what, body, reason, message) => {
    const error = failureOf(body);
    expect(error).toBeInstanceOf(NonRetryableError);
    expect(error.reason).toBe(reason);
    expect(error.message).toMatch(message);
  });

  it('never quotes the body in its error messages', () => {
    for (const body of ['SSN 078-05-1120', 'alice@example.com!!', '{"id":"r","sku":"A","quantity":"alice@example.com"}']) {
      const error = failureOf(body);
      expect(error.message).not.toContain('078-05-1120');
      expect(error.message).not.toContain('alice@example.com');
    }
  });

  it('dead-letters a failure known before parsing (a Kafka value that is not UTF-8) with that failure', () => {
    const result = parseDelivery(
      delivery('AAEC', { rejection: Object.assign(new Error('not UTF-8'), { name: 'X' }) }),
      definition,
      tableNames,
    );
    expect(result.ok).toBe(false);
  });

  it("reports a definition error (a read of a table that is not the consumer's) as such, not as the body's fault", () => {
    const broken = defineConsumer({
      schema,
      idempotencyKey: 'id',
      read: () => [{ table: 'nope', key: { sku: 'A' } }],
      decide: (): undefined => undefined,
    });
    const result = parseDelivery(delivery('{"id":"r","sku":"A","quantity":1}'), broken, {});
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toBeInstanceOf(ConsumerDefinitionError);
  });
});

describe('defineConsumer', () => {
  it.each([
    ['neither schema nor parse', { idempotencyKey: 'id', decide: (): undefined => undefined }, /exactly one of `schema` and `parse`/],
    [
      'both schema and parse',
      { schema, parse: (json: unknown) => json, idempotencyKey: 'id', decide: (): undefined => undefined },
      /exactly one/,
    ],
    [
      'a schema that is not a Standard Schema',
      { schema: { parse: () => 1 }, idempotencyKey: 'id', decide: (): undefined => undefined },
      /Standard Schema/,
    ],
    [
      'a bad table name',
      { schema, idempotencyKey: 'id', tables: { 'my-table': { partitionKey: 'pk' } }, decide: (): undefined => undefined },
      /my-table/,
    ],
    [
      'a table without a partition key',
      { schema, idempotencyKey: 'id', tables: { t: {} }, decide: (): undefined => undefined },
      /partitionKey/,
    ],
  ])('refuses %s with a clear error', (_what, options, message) => {
    expect(() => defineConsumer(options as never)).toThrow(message);
  });
});
