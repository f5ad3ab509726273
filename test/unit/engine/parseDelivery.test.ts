import { describe, expect, it } from 'vitest';
import { payloadHash } from '../../../packages/idempotent-consumer/src/engine/canonicalJson.js';
import { MAX_READS_PER_EVENT } from '../../../packages/idempotent-consumer/src/engine/ConsumerDefinition.js';
import type { Delivery } from '../../../packages/idempotent-consumer/src/engine/Delivery.js';
import { parseDelivery, type UnparsedDelivery } from '../../../packages/idempotent-consumer/src/engine/parseDelivery.js';
import {
  ConsumerDefinitionError,
  MissingIdempotencyKey,
  PredecessorNotApplied,
  ValidationError,
} from '../../../packages/idempotent-consumer/src/errors.js';
import { definitionOf, delivery, tableNames, type TestEvent } from './fixtures.js';

const definition = definitionOf(() => undefined);
const withBody = (body: string, extra: Partial<Delivery> = {}): Delivery => ({ ...delivery('m-1'), body, ...extra });
const failed = (result: ReturnType<typeof parseDelivery>): UnparsedDelivery => {
  if (result.ok) throw new Error('expected a failure');
  return result;
};

describe('parseDelivery', () => {
  it('parses a body, resolving each read once', () => {
    const twice = definitionOf(() => undefined, {
      read: (event: TestEvent) => [
        { table: 'accounts', key: { id: event.account } },
        { table: 'lines', key: { id: event.account, n: 1 } },
        { table: 'accounts', key: { id: event.account } },
      ],
      logFields: (event: TestEvent) => ({ account: event.account }),
    });
    const result = parseDelivery(withBody('{"key":"k","account":"A"}'), twice, tableNames);
    if (!result.ok) throw result.error;
    expect(result.idempotencyKey).toBe('k');
    expect(result.orderingKey).toBe('A');
    expect(result.payloadHash).toBe(payloadHash({ account: 'A', key: 'k' }));
    expect(result.reads.map((r) => [r.tableName, r.key])).toEqual([
      ['phys-accounts', { id: 'A' }],
      ['phys-lines', { id: 'A', n: 1 }],
    ]);
    expect(result.fields).toEqual({ account: 'A' });
  });

  it('takes a body a Kafka schema format decoded instead of parsing the text', () => {
    const result = parseDelivery(withBody('AAEC', { parsedBody: { value: { key: 'k', account: 'B' } } }), definition, tableNames);
    if (!result.ok) throw result.error;
    expect(result.event).toEqual({ key: 'k', account: 'B' });
    expect(result.payloadHash).toBe(payloadHash({ key: 'k', account: 'B' }));
  });

  it('fails a delivery rejected before parsing with that rejection, not reading its body', () => {
    const rejection = new ValidationError('the value is not UTF-8');
    const result = failed(parseDelivery(withBody('{"key":"k","account":"A"}', { rejection }), definition, tableNames));
    expect(result.error).toBe(rejection);
    expect(result.idempotencyKey).toBeUndefined();
    expect(result.payloadHash).toBeUndefined();
  });

  it('gives the position of a JSON error when the parser names one, never the body', () => {
    const at = failed(parseDelivery(withBody('{x'), definition, tableNames));
    expect((at.error as Error).message).toBe('the body is not valid JSON (at position 1); 2 characters');
    const end = failed(parseDelivery(withBody('{"a":'), definition, tableNames));
    expect((end.error as Error).message).toBe('the body is not valid JSON; 5 characters');
    expect(end.error).toBeInstanceOf(ValidationError);
  });

  it.each([
    ['an array', '[]'],
    ['null', 'null'],
    ['number', '3'],
  ])('refuses a body that is %s when the key is a field', (what, body) => {
    const result = failed(parseDelivery(withBody(body), definition, tableNames));
    expect((result.error as Error).message).toBe(`the body must be a JSON object, got ${what}`);
  });

  it('refuses a key field that is blank as MissingIdempotencyKey', () => {
    expect(failed(parseDelivery(withBody('{"key":" ","account":"A"}'), definition, tableNames)).error).toBeInstanceOf(
      MissingIdempotencyKey,
    );
  });

  it('keeps the payload hash, and the idempotency key once checked, of a delivery that fails later', () => {
    const result = failed(parseDelivery(withBody('{"key":"k","account":""}'), definition, tableNames));
    expect(result.error).toBeInstanceOf(ValidationError);
    expect((result.error as Error).message).toMatch(/ordering key/);
    expect(result.idempotencyKey).toBe('k');
    expect(result.payloadHash).toBe(payloadHash({ key: 'k', account: '' }));
  });

  it('skips the field check when the key is given by a function', () => {
    const byFunction = definitionOf(() => undefined, { idempotencyKey: (event: TestEvent) => `${event.account}-1` });
    const result = parseDelivery(withBody('{"account":"A"}'), byFunction, tableNames);
    expect(result.ok && result.idempotencyKey).toBe('A-1');
    expect((failed(parseDelivery(withBody('null'), byFunction, tableNames)).error as Error).message).toBe(
      'the body could not be validated (TypeError)',
    );
  });

  it('fails a read() that returns no array, or too many items, as a definition error', () => {
    const notArray = definitionOf(() => undefined, { read: () => ({ table: 'accounts' }) as never });
    expect(failed(parseDelivery(withBody('{"key":"k","account":"A"}'), notArray, tableNames)).error).toEqual(
      new ConsumerDefinitionError('read() must return an array of { table, key }'),
    );
    const tooMany = definitionOf(() => undefined, {
      read: () => Array.from({ length: MAX_READS_PER_EVENT + 1 }, (_, i) => ({ table: 'accounts', key: { id: `a${i}` } })),
    });
    const error = failed(parseDelivery(withBody('{"key":"k","account":"A"}'), tooMany, tableNames)).error;
    expect(error).toBeInstanceOf(ConsumerDefinitionError);
    expect((error as Error).message).toBe(`read() named ${MAX_READS_PER_EVENT + 1} items; at most ${MAX_READS_PER_EVENT} per event`);
  });

  it("passes a retryable error of the user's own code through (it may succeed later)", () => {
    const later = definitionOf(() => undefined, {
      read: () => {
        throw new PredecessorNotApplied('not yet');
      },
    });
    const error = failed(parseDelivery(withBody('{"key":"k","account":"A"}'), later, tableNames)).error;
    expect(error).toBeInstanceOf(PredecessorNotApplied);
  });

  it('makes any other error thrown while reading the event the body’s fault, naming only its type', () => {
    const odd = definitionOf(() => undefined, {
      orderingKey: () => {
        throw 'a string';
      },
    });
    const error = failed(parseDelivery(withBody('{"key":"k","account":"A"}'), odd, tableNames)).error;
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).reason).toBe('ValidationError');
    expect((error as Error).message).toBe('the body could not be validated (string)');
  });
});
