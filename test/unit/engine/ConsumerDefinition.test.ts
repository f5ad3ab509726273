import type { StandardSchemaV1 } from '@standard-schema/spec';
import { describe, expect, it } from 'vitest';
import { checkKey, defineConsumer, MAX_KEY_BYTES } from '../../../packages/idempotent-consumer/src/engine/ConsumerDefinition.js';
import {
  BusinessRuleViolation,
  ConsumerDefinitionError,
  MissingIdempotencyKey,
  PredecessorNotApplied,
  ValidationError,
} from '../../../packages/idempotent-consumer/src/errors.js';
import type { IdempotentConsumerOptions } from '../../../packages/idempotent-consumer/src/types.js';

interface Event {
  readonly id: string;
  readonly group: string;
}

const decide = (): undefined => undefined;

/** A Standard Schema whose `validate` is the test's. */
function schemaOf(validate: (value: unknown) => unknown): StandardSchemaV1<unknown, Event> {
  return { '~standard': { version: 1, vendor: 'test', validate } } as unknown as StandardSchemaV1<unknown, Event>;
}

const errorOf = (run: () => unknown): unknown => {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected it to throw');
};

describe('defineConsumer: the options checked', () => {
  it('names every problem at once', () => {
    const options = {
      parse: (json: unknown) => json,
      idempotencyKey: 7,
      decide: 'no',
      tables: { ok: { partitionKey: 'id' }, 'bad-name': { partitionKey: 'id' } },
      versionAttribute: 'has space',
      sideEffects: { notify: 'not a function', 'grant#daily': async () => undefined },
    } as unknown as IdempotentConsumerOptions<Event>;
    const error = errorOf(() => defineConsumer(options));
    expect(error).toBeInstanceOf(ConsumerDefinitionError);
    const message = (error as Error).message;
    expect(message).toMatch(/^invalid consumer options: /);
    expect(message).toContain('`decide` must be a function');
    expect(message).toContain('table name "bad-name"');
    expect(message).toContain('versionAttribute "has space" is not a plain attribute name');
    expect(message).toContain('side effect notify must be a function');
    // The effect key is `<idempotency key>#<name>#<position>`: a `#` in a name could make two keys' effect keys collide.
    expect(message).toContain(`side effect name "grant#daily" must be non-empty and hold no '#'`);
    expect(message).toContain('`idempotencyKey` must be a field name or a function');
    expect(message).not.toContain('table ok');
  });

  it.each([
    ['neither a schema nor a parse function', {}, /give exactly one of `schema` and `parse`/],
    ['both', { schema: schemaOf(() => ({ value: {} })), parse: (json: unknown) => json }, /give exactly one of `schema` and `parse`/],
    ['a schema without a validate function', { schema: { '~standard': {} } }, /`schema` is not a Standard Schema/],
  ])('refuses %s', (_what, parsing, message) => {
    expect(() => defineConsumer({ idempotencyKey: 'id', decide, ...parsing } as unknown as IdempotentConsumerOptions<Event>)).toThrow(
      message,
    );
  });

  it('refuses a table given as null (no partition key)', () => {
    expect(() => defineConsumer({ parse: (json) => json as Event, idempotencyKey: 'id', tables: { t: null as never }, decide })).toThrow(
      /table t needs a partitionKey/,
    );
  });

  it('defaults: no tables, no reads, no side effects, `_version`, ordering by the idempotency key', () => {
    const definition = defineConsumer<Event>({ parse: (json) => json as Event, idempotencyKey: 'id', decide });
    expect(definition.tables).toEqual({});
    expect(definition.read({ id: 'a', group: 'g' })).toEqual([]);
    expect(definition.sideEffects).toEqual({});
    expect(definition.versionAttribute).toBe('_version');
    expect(definition.idempotencyKeyField).toBe('id');
    expect(definition.classifyError).toBeUndefined();
    expect(definition.orderingKeyOf({ id: 'a', group: 'g' })).toBe('a');
    expect(definition.logFieldsOf({ id: 'a', group: 'g' })).toEqual({});
  });

  it('takes keys as functions, and an ordering key by field name', () => {
    const byFunction = defineConsumer<Event>({
      parse: (json) => json as Event,
      idempotencyKey: (e) => `k-${e.id}`,
      orderingKey: (e) => `o-${e.group}`,
      decide,
      versionAttribute: 'rev',
    });
    expect(byFunction.idempotencyKeyField).toBeUndefined();
    expect(byFunction.idempotencyKeyOf({ id: 'a', group: 'g' })).toBe('k-a');
    expect(byFunction.orderingKeyOf({ id: 'a', group: 'g' })).toBe('o-g');
    expect(byFunction.versionAttribute).toBe('rev');
    const byField = defineConsumer<Event>({ parse: (json) => json as Event, idempotencyKey: 'id', orderingKey: 'group', decide });
    expect(byField.orderingKeyOf({ id: 'a', group: 'g' })).toBe('g');
  });
});

describe('defineConsumer: parsing with a Standard Schema', () => {
  const define = (validate: (value: unknown) => unknown) =>
    defineConsumer<Event>({ schema: schemaOf(validate), idempotencyKey: 'id', decide });

  it('returns the schema’s value', () => {
    expect(define(() => ({ value: { id: 'x', group: 'y' } })).parseEvent({})).toEqual({ id: 'x', group: 'y' });
  });

  it('makes a schema that throws the body’s fault, naming only the error’s type', () => {
    const thrown = errorOf(() =>
      define(() => {
        throw new TypeError('secret body text');
      }).parseEvent({}),
    );
    expect(thrown).toBeInstanceOf(ValidationError);
    expect((thrown as Error).message).toBe('the schema could not validate the body (TypeError)');
    const notAnError = errorOf(() =>
      define(() => {
        throw 'text';
      }).parseEvent({}),
    );
    expect((notAnError as Error).message).toBe('the schema could not validate the body (string)');
  });

  it('refuses an asynchronous schema as a definition error', () => {
    const thrown = errorOf(() => define(() => Promise.resolve({ value: {} })).parseEvent({}));
    expect(thrown).toBeInstanceOf(ConsumerDefinitionError);
    expect((thrown as Error).message).toMatch(/validates asynchronously/);
  });

  it('lists the issues by path, at most ten, with keys of path segments and “(body)” for the root', () => {
    const issues = [
      { message: 'bad root' },
      { message: 'bad item', path: ['items', { key: 0 }, 'sku'] },
      { message: 'x'.repeat(300), path: [] },
      ...Array.from({ length: 9 }, (_, i) => ({ message: `m${i}`, path: [`f${i}`] })),
    ];
    const thrown = errorOf(() => define(() => ({ issues })).parseEvent({})) as ValidationError;
    expect(thrown).toBeInstanceOf(ValidationError);
    expect(thrown.issues).toHaveLength(10);
    expect(thrown.issues[0]).toBe('(body): bad root');
    expect(thrown.issues[1]).toBe('items.0.sku: bad item');
    expect(thrown.issues[2]).toBe(`(body): ${'x'.repeat(200)}`);
    expect(thrown.message).toMatch(/^the body fails the schema: \(body\): bad root; items\.0\.sku: bad item; /);
    expect(thrown.message).toMatch(/ \(and 2 more\)$/);
  });

  it('does not say “more” when ten issues or fewer', () => {
    const thrown = errorOf(() => define(() => ({ issues: [{ message: 'one', path: ['a'] }] })).parseEvent({})) as ValidationError;
    expect(thrown.message).toBe('the body fails the schema: a: one');
  });
});

describe('defineConsumer: parsing with a parse function', () => {
  const define = (parse: (json: unknown) => Event) => defineConsumer<Event>({ parse, idempotencyKey: 'id', decide });

  it('lets a non-retryable error of the user’s through, with its own reason', () => {
    const thrown = errorOf(() =>
      define(() => {
        throw new BusinessRuleViolation('no');
      }).parseEvent({}),
    );
    expect(thrown).toBeInstanceOf(BusinessRuleViolation);
  });

  it('makes any other error the body’s fault (a retryable one too: parsing a body cannot succeed later)', () => {
    const retryable = errorOf(() =>
      define(() => {
        throw new PredecessorNotApplied('later');
      }).parseEvent({}),
    );
    expect(retryable).toBeInstanceOf(ValidationError);
    expect((retryable as Error).message).toBe('the body could not be parsed: later');
    expect((retryable as Error).cause).toBeInstanceOf(PredecessorNotApplied);
    const plain = errorOf(() =>
      define(() => {
        throw new Error('y'.repeat(300));
      }).parseEvent({}),
    );
    expect((plain as Error).message).toBe(`the body could not be parsed: ${'y'.repeat(200)}`);
    const notAnError = errorOf(() =>
      define(() => {
        throw 42;
      }).parseEvent({}),
    );
    expect((notAnError as Error).message).toBe('the body could not be parsed: number');
  });
});

describe('defineConsumer: log fields', () => {
  const define = (logFields: IdempotentConsumerOptions<Event>['logFields']) =>
    defineConsumer<Event>({ parse: (json) => json as Event, idempotencyKey: 'id', decide, logFields });
  const event = { id: 'a', group: 'g' };

  it('keeps safe fields, leaves out undefined ones, cuts long names and values', () => {
    const fields = define(() => ({
      kept: 'v',
      n: 3,
      ok: true,
      gone: undefined,
      ['n'.repeat(100)]: 'x',
      long: 'z'.repeat(300),
    })).logFieldsOf(event);
    expect(fields).toEqual({ kept: 'v', n: 3, ok: true, ['n'.repeat(64)]: 'x', long: `${'z'.repeat(255)}…` });
    expect(fields.long).toHaveLength(256);
  });

  it('keeps at most 20 fields', () => {
    const many = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`f${i}`, i]));
    expect(Object.keys(define(() => many).logFieldsOf(event))).toHaveLength(20);
  });

  it('gives no fields when logFields throws (a log never fails a message)', () => {
    expect(
      define(() => {
        throw new Error('boom');
      }).logFieldsOf(event),
    ).toEqual({});
  });
});

describe('checkKey', () => {
  it('returns a well-formed key', () => {
    expect(checkKey('order-1', 'idempotency key')).toBe('order-1');
    expect(checkKey('é'.repeat(MAX_KEY_BYTES / 2), 'ordering key')).toHaveLength(MAX_KEY_BYTES / 2);
  });

  it.each([undefined, 7, '', '   '])('refuses a missing idempotency key (%s) as MissingIdempotencyKey', (value) => {
    expect(() => checkKey(value, 'idempotency key')).toThrow(MissingIdempotencyKey);
  });

  it('refuses a missing ordering key as a ValidationError', () => {
    const thrown = errorOf(() => checkKey(null, 'ordering key'));
    expect(thrown).toBeInstanceOf(ValidationError);
    expect((thrown as Error).message).toMatch(/no ordering key/);
  });

  it('refuses a lone surrogate and a key over 1,024 bytes', () => {
    expect(() => checkKey('a\ud800', 'ordering key')).toThrow(/ordering key is not well-formed Unicode/);
    expect(() => checkKey('é'.repeat(MAX_KEY_BYTES / 2 + 1), 'idempotency key')).toThrow(/idempotency key is longer than 1024 bytes/);
  });
});
