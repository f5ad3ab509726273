import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, payloadHash } from '../../packages/idempotent-consumer/src/engine/canonicalJson.js';

/** A reference canonical form, recursive (fine for shallow values). */
function reference(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(reference).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${keys.map((key) => `${JSON.stringify(key)}:${reference((value as Record<string, unknown>)[key])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

describe('canonicalJson', () => {
  it('equals the recursive definition for any JSON value (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const parsed = JSON.parse(JSON.stringify(value)) as unknown;
        expect(canonicalJson(parsed)).toBe(reference(parsed));
      }),
      { numRuns: 300 },
    );
  });

  it('does not depend on key order or white space (property)', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (object) => {
        const reversed = Object.fromEntries(Object.entries(object).reverse());
        expect(payloadHash(JSON.parse(JSON.stringify(object, null, 2)))).toBe(payloadHash(JSON.parse(JSON.stringify(reversed))));
      }),
      { numRuns: 200 },
    );
  });

  it('hashes 10,000 nested objects and 100,000 nested arrays without overflowing the stack (case C18)', () => {
    const objects = JSON.parse(`${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`) as unknown;
    const arrays = JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`) as unknown;
    expect(payloadHash(objects)).toMatch(/^[0-9a-f]{64}$/);
    expect(canonicalJson(arrays)).toHaveLength(200_000);
  });

  it('keeps a lone surrogate apart from another one (case C19: ids that are not well-formed do not collide)', () => {
    expect(payloadHash(JSON.parse('{"id":"S-\\ud800"}'))).not.toBe(payloadHash(JSON.parse('{"id":"S-\\ud801"}')));
  });
});
