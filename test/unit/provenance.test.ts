import { NumberValue } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { readRuntimeConfig } from '../../packages/idempotent-consumer/src/config/runtimeConfig.js';
import type { ResolvedKey } from '../../packages/idempotent-consumer/src/engine/itemKeys.js';
import { inboxAction } from '../../packages/idempotent-consumer/src/engine/transactionActions.js';
import type { Unit } from '../../packages/idempotent-consumer/src/engine/Unit.js';
import { provenanceAttributes, provenanceKey } from '../../packages/idempotent-consumer/src/inbox/provenance.js';
import {
  lambdaEnvironment,
  PROVENANCE_BUDGET_BYTES,
  settingsProblems,
  withOverrides,
} from '../../packages/idempotent-consumer/src/settings/index.js';

const unit = { idempotencyKey: 'e-1', payloadHash: 'h', delivery: { messageId: 'm-1' } } as unknown as Unit;
const config = { inboxTable: 'inbox', consumerName: 'c', inboxTtlSeconds: 60 };
const at = new Date('2025-01-01T00:00:00.000Z');
const keyOf = (table: string, key: Record<string, unknown>): ResolvedKey => ({
  table,
  tableName: `phys-${table}`,
  key,
  id: `${table}${JSON.stringify(key)}`,
});

describe('provenance: the applied inbox row', () => {
  it('is as it always was when provenance is off, whatever the unit wrote', () => {
    const off = inboxAction(unit, config, at, [keyOf('orders', { orderId: 'O-1' })]).Put!.Item!;
    const unset = inboxAction(unit, { ...config, provenance: false }, at).Put!.Item!;
    const expected = {
      pk: 'c#key#e-1',
      kind: 'inbox',
      status: 'applied',
      consumer: 'c',
      idempotencyKey: 'e-1',
      payloadHash: 'h',
      messageId: 'm-1',
      processedAt: '2025-01-01T00:00:00.000Z',
      expiresAt: Math.floor(at.getTime() / 1000) + 60,
    };
    expect(off).toStrictEqual(expected);
    expect(unset).toStrictEqual(expected);
  });

  it('records the keys the unit wrote when provenance is on', () => {
    const item = inboxAction(unit, { ...config, provenance: true }, at, [
      keyOf('orders', { orderId: 'O-1' }),
      keyOf('ledger', { sk: 'points', orderId: 'O-1' }),
    ]).Put!.Item!;
    expect(item.wrote).toEqual(['orders:{"orderId":"O-1"}', 'ledger:{"orderId":"O-1","sk":"points"}']);
    expect(item).not.toHaveProperty('wroteTruncated');
  });

  it('records an empty list for a unit that wrote no item (provenance on, nothing written)', () => {
    expect(inboxAction(unit, { ...config, provenance: true }, at, []).Put!.Item!.wrote).toEqual([]);
  });
});

describe('provenance: key spelling and budget', () => {
  it('spells a key one way whatever the form of its values', () => {
    expect(provenanceKey('t', { b: 1, a: 'x' })).toBe('t:{"a":"x","b":1e0}');
    expect(provenanceKey('t', { n: 1n })).toBe(provenanceKey('t', { n: new NumberValue('1.0') }));
    expect(provenanceKey('t', { n: Uint8Array.from([1, 2]) })).toBe('t:{"n":{"B":"AQI="}}');
  });

  it('keeps the first keys within the budget, each once, and says when it cut', () => {
    const keys = Array.from({ length: 100 }, (_, i) => ({ table: 'orders', key: { orderId: `order-${String(i).padStart(4, '0')}` } }));
    const { wrote, wroteTruncated } = provenanceAttributes([keys[0]!, ...keys]);
    const size = Buffer.byteLength(wrote[0]!, 'utf8');
    expect(wrote).toHaveLength(Math.floor(PROVENANCE_BUDGET_BYTES / size));
    expect(wrote[0]).toBe('orders:{"orderId":"order-0000"}');
    expect(new Set(wrote).size).toBe(wrote.length);
    expect(wrote.reduce((sum, k) => sum + Buffer.byteLength(k, 'utf8'), 0)).toBeLessThanOrEqual(PROVENANCE_BUDGET_BYTES);
    expect(wroteTruncated).toBe(true);
    expect(provenanceAttributes(keys.slice(0, 3))).toStrictEqual({ wrote: keys.slice(0, 3).map((k) => provenanceKey(k.table, k.key)) });
  });
});

describe('provenance: the setting', () => {
  const resources = { inboxTable: 'i', idempotencyTable: 'p', deadLetterQueueUrl: 'http://localhost:4566/000000000000/dlq' };

  it('adds no environment variable when off, PROVENANCE=true when on, and the runtime reads it', () => {
    const off = lambdaEnvironment(withOverrides(), resources);
    expect(off).not.toHaveProperty('PROVENANCE');
    expect(readRuntimeConfig(off).provenance).toBe(false);
    const on = lambdaEnvironment(withOverrides({ idempotency: { provenance: true } }), resources);
    expect(on.PROVENANCE).toBe('true');
    expect(readRuntimeConfig(on).provenance).toBe(true);
    expect(() => readRuntimeConfig({ ...on, PROVENANCE: 'yes' })).toThrow(/PROVENANCE must be "true" or "false"/);
  });

  it('refuses a value that is not a boolean', () => {
    const problems = settingsProblems(withOverrides({ idempotency: { provenance: 'yes' as unknown as boolean } }));
    expect(problems.join('\n')).toMatch(/provenance must be true or false/);
  });
});
