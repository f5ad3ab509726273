import { NumberValue } from '@aws-sdk/lib-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { attributeValueBytes, itemBytes, MAX_ITEM_BYTES } from '../../../packages/idempotent-consumer/src/engine/itemSize.js';
import { itemIdOf, keyNames, resolveKey } from '../../../packages/idempotent-consumer/src/engine/itemKeys.js';
import {
  canonicalNumber,
  cloneValue,
  isNumberValue,
  MARSHALL_OPTIONS,
  preciseNumber,
  printValue,
  UNMARSHALL_OPTIONS,
} from '../../../packages/idempotent-consumer/src/engine/values.js';
import { ConsumerDefinitionError, ValidationError } from '../../../packages/idempotent-consumer/src/errors.js';

describe('values: item values handled exactly', () => {
  it.each([
    ['1', '1e0'],
    ['1.0', '1e0'],
    ['10e-1', '1e0'],
    ['-0.00150', '-15e-4'],
    ['1200', '12e2'],
    ['0.000', '0'],
    ['-0', '0'],
    ['+7', '7e0'],
    ['1e21', '1e21'],
    ['12345678901234567890', '1234567890123456789e1'],
  ])('gives %s the canonical form %s', (text, canonical) => {
    expect(canonicalNumber(text)).toBe(canonical);
  });

  it('refuses text that is not a number', () => {
    for (const text of ['', '.', 'abc', '1.2.3', 'NaN', '1e']) expect(canonicalNumber(text)).toBeUndefined();
  });

  it('reads a number as a number when exact, a BigInt for a larger integer, a NumberValue otherwise', () => {
    expect(preciseNumber('42')).toBe(42);
    expect(preciseNumber('0.1')).toBe(0.1);
    expect(preciseNumber('12345678901234567890')).toBe(12345678901234567890n);
    expect(preciseNumber('1e40')).toBe(10n ** 40n);
    expect(preciseNumber('9007199254740993')).toBe(9007199254740993n);
    expect(preciseNumber('1.5e100')).toBe(15n * 10n ** 99n);
    expect(preciseNumber('-2.5e-7')).toBe(-2.5e-7);
    const decimal = preciseNumber('12345678901234567890.5');
    expect(isNumberValue(decimal) && decimal.value).toBe('12345678901234567890.5');
    const fraction = preciseNumber('1.23456789012345678901');
    expect(isNumberValue(fraction) && fraction.value).toBe('1.23456789012345678901');
  });

  it("round-trips through DynamoDB's form without losing a digit", () => {
    const item = {
      big: 12345678901234567890n,
      exact: 7,
      decimal: new NumberValue('0.123456789012345678901'),
      set: new Set([1, 99999999999999999999n]),
    };
    const back = unmarshall(marshall({ ...item, set: new Set([99999999999999999999n, 1]) }, MARSHALL_OPTIONS), UNMARSHALL_OPTIONS);
    expect(printValue(back)).toBe(printValue(item));
    expect(back.big).toBe(12345678901234567890n);
    // {1, 99999999999999999999n} in this order is a set the SDK cannot write: the copy a decision gets, it can write back.
    const mixed = { set: new Set([1, 99999999999999999999n]) };
    expect(() => marshall(mixed, MARSHALL_OPTIONS)).toThrow(/greater than Number.MAX_SAFE_INTEGER/);
    expect(printValue(unmarshall(marshall(cloneValue(mixed), MARSHALL_OPTIONS), UNMARSHALL_OPTIONS))).toBe(printValue(mixed));
  });

  it('copies deeply, keeping Buffers, Uint8Arrays, sets and NumberValues what they are', () => {
    const number = new NumberValue('1.5');
    const original = { b: Buffer.from([1, 2]), u: new Uint8Array([3]), s: new Set(['x']), n: number, l: [{ m: 1n }], nil: null };
    const copy = cloneValue(original);
    expect(copy).toEqual(original);
    expect(Buffer.isBuffer(copy.b)).toBe(true);
    expect(copy.b).not.toBe(original.b);
    expect(copy.u).toBeInstanceOf(Uint8Array);
    expect(copy.n).toBe(number);
    expect(copy.s).not.toBe(original.s);
    expect(copy.l[0]).not.toBe(original.l[0]);
    const date = new Date(0);
    expect(cloneValue({ date }).date).toBe(date);
    expect(cloneValue(Object.assign(Object.create(null) as object, { a: 1 }))).toEqual({ a: 1 });
  });

  it('prints every form of one stored value alike', () => {
    expect(printValue({ a: 1, b: 'x' })).toBe(printValue({ b: 'x', a: 1n }));
    expect(printValue(new NumberValue('1.0'))).toBe(printValue(1));
    expect(printValue(Buffer.from('hi'))).toBe(printValue(new Uint8Array(Buffer.from('hi'))));
    expect(printValue(new Set([2, 1]))).toBe(printValue(new Set([1, 2])));
    expect(printValue([1, 2])).not.toBe(printValue([2, 1]));
    expect(printValue({ a: undefined })).toBe(printValue({}));
    expect(printValue(true)).toBe('true');
    expect(printValue(undefined)).toBe('u');
    expect(printValue(null)).toBe('null');
    expect(printValue(() => 1)).toBe('?function');
  });

  it('prints false apart from true, and a number DynamoDB could not store by its text', () => {
    expect(printValue(false)).toBe('false');
    expect(printValue(false)).not.toBe(printValue(true));
    expect(printValue(Number.NaN)).toBe('NNaN');
    expect(printValue(new NumberValue('not a number'))).toBe('Nnot a number');
    expect(printValue(new NumberValue('not a number'))).not.toBe(printValue(0));
  });

  it('tells a NumberValue from a map, one without a prototype included', () => {
    expect(isNumberValue(Object.assign(Object.create(null) as object, { value: '1' }))).toBe(false);
    expect(isNumberValue({ value: '1' })).toBe(false);
    expect(isNumberValue(new NumberValue('1'))).toBe(true);
  });
});

describe("itemSize: DynamoDB's item size rules", () => {
  it('counts names, strings in UTF-8, numbers by significant digits, binary, lists and maps', () => {
    expect(itemBytes(marshall({ id: 'é' }))).toBe(2 + 2);
    expect(attributeValueBytes({ N: '12345' })).toBe(4);
    expect(attributeValueBytes({ N: `1${'0'.repeat(60)}` })).toBe(2);
    expect(attributeValueBytes({ N: '1'.repeat(50) })).toBe(21);
    expect(attributeValueBytes({ B: new Uint8Array(7) })).toBe(7);
    expect(attributeValueBytes({ BOOL: true })).toBe(1);
    expect(attributeValueBytes({ NULL: true })).toBe(1);
    expect(attributeValueBytes({ L: [{ S: 'ab' }, { N: '1' }] })).toBe(3 + 2 + 2);
    expect(attributeValueBytes({ M: { k: { S: 'v' } } })).toBe(3 + 1 + 1);
    expect(attributeValueBytes({ SS: ['a', 'bc'] })).toBe(3);
    expect(attributeValueBytes({ NS: ['1', '22'] })).toBe(4);
    expect(attributeValueBytes({ BS: [new Uint8Array(2), new Uint8Array(3)] })).toBe(5);
    expect(MAX_ITEM_BYTES).toBe(409_600);
  });
});

describe('itemKeys: one id per item, whatever the form of its key values', () => {
  const tables = { t: { partitionKey: 'pk', sortKey: 'sk' } };
  const names = { t: 'phys' };
  it('gives a number, a BigInt and a NumberValue of one value the same id; a Buffer and a Uint8Array too', () => {
    const ids = [1000, 1000n, new NumberValue('1e3')].map(
      (pk) => resolveKey(tables, names, 't', { pk, sk: Buffer.from('s') }, 'read()').id,
    );
    expect(new Set(ids).size).toBe(1);
    expect(itemIdOf('t', tables.t, { pk: 1000, sk: new Uint8Array(Buffer.from('s')), other: 'x' })).toBe(ids[0]);
    expect(resolveKey(tables, names, 't', { pk: '1000', sk: 's' }, 'read()').id).not.toBe(ids[0]);
    expect(keyNames(tables.t)).toEqual(['pk', 'sk']);
  });

  it('refuses what DynamoDB refuses as a key', () => {
    expect(() => resolveKey(tables, names, 't', { pk: 2 ** 60, sk: 's' }, 'read()')).toThrow(ConsumerDefinitionError);
    expect(() => resolveKey(tables, names, 't', { pk: Number.NaN, sk: 's' }, 'read()')).toThrow(ConsumerDefinitionError);
    expect(() => resolveKey(tables, names, 't', { pk: 'a', sk: new Uint8Array(0) }, 'read()')).toThrow(ValidationError);
    expect(() => resolveKey(tables, names, 't', { pk: new Uint8Array(2049), sk: 's' }, 'read()')).toThrow(ValidationError);
    expect(() => resolveKey(tables, names, 't', { pk: new NumberValue('x'), sk: 's' }, 'read()')).toThrow(ConsumerDefinitionError);
    expect(itemIdOf('t', tables.t, { pk: 'a' })).toBeUndefined();
  });

  it('refuses a string key value that is not well-formed or too long, as the message’s fault', () => {
    expect(() => resolveKey(tables, names, 't', { pk: 'a\ud800', sk: 's' }, 'read()')).toThrow(
      /key attribute pk is not well-formed Unicode/,
    );
    expect(() => resolveKey(tables, names, 't', { pk: 'a', sk: 'é'.repeat(513) }, 'read()')).toThrow(
      /key attribute sk is longer than 1024 bytes/,
    );
    expect(() => resolveKey(tables, names, 't', { pk: 'a'.repeat(2049), sk: 's' }, 'read()')).toThrow(ValidationError);
    expect(resolveKey(tables, names, 't', { pk: 'a'.repeat(2048), sk: 's'.repeat(1024) }, 'read()').key).toEqual({
      pk: 'a'.repeat(2048),
      sk: 's'.repeat(1024),
    });
  });

  it('refuses a read() key with attributes beside the key, but takes a whole item elsewhere', () => {
    expect(() => resolveKey(tables, names, 't', { pk: 'a', sk: 's', extra: 1 }, 'read()')).toThrow(
      /read\(\) gave table t a key with attributes pk, sk, extra; its key is pk, sk/,
    );
    expect(resolveKey(tables, names, 't', { pk: 'a', sk: 's', extra: 1 }, 'a Put').key).toEqual({ pk: 'a', sk: 's' });
    expect(() => resolveKey({}, {}, 't', { pk: 'a' }, 'read()')).toThrow(
      /names table "t", which is not one of the consumer's tables \(none\)/,
    );
  });
});
