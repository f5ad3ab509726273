import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  checkEffectKeys,
  effectKeyOf,
  effectLabelOf,
  MAX_CHOSEN_KEY_BYTES,
} from '../../../packages/idempotent-consumer/src/engine/effectKeys.js';
import { ConsumerDefinitionError, ValidationError } from '../../../packages/idempotent-consumer/src/errors.js';

const thrown = (fn: () => void): unknown => {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
};

describe('effect keys', () => {
  it('is `<idempotency key>#<name>#<position>` by default, `<name>#<key>` with a chosen key', () => {
    expect(effectKeyOf('O-1#paid', { name: 'notify' }, 2)).toBe('O-1#paid#notify#2');
    expect(effectKeyOf('O-1#paid', { name: 'grant', key: 'u-1:2026-03-01' }, 2)).toBe('grant#u-1:2026-03-01');
    // The same for every message and position that asks for it: the point of choosing a key.
    expect(effectKeyOf('O-2', { name: 'grant', key: 'u-1:2026-03-01' }, 0)).toBe('grant#u-1:2026-03-01');
    expect(effectLabelOf({ name: 'notify' }, 1)).toBe('notify#1');
    expect(effectLabelOf({ name: 'grant', key: 'u-1' }, 1)).toBe('grant#u-1');
  });

  it('never gives a chosen key the effect key of a default one, whatever the idempotency keys (names and chosen keys hold no #)', () => {
    const name = fc.string({ minLength: 1, maxLength: 6 }).filter((s) => !s.includes('#'));
    const chosen = fc.string({ minLength: 1, maxLength: 12 }).filter((s) => !s.includes('#') && s.trim() !== '');
    // Idempotency keys may hold anything, '#' included, and look like names or keys.
    const idempotencyKey = fc.oneof(fc.string({ minLength: 1, maxLength: 12 }), fc.constantFrom('a', 'a#b', '#', 'grant', 'grant#u'));
    fc.assert(
      fc.property(idempotencyKey, name, fc.nat(20), idempotencyKey, name, chosen, fc.nat(20), (k1, n1, p1, k2, n2, key, p2) => {
        expect(effectKeyOf(k1, { name: n1 }, p1)).not.toBe(effectKeyOf(k2, { name: n2, key }, p2));
      }),
      { numRuns: 2000 },
    );
    // The collision a looser rule would allow: `n2` + key `n#0` against idempotency key `n2`, effect `n`, position 0.
    expect(effectKeyOf('n2', { name: 'n' }, 0)).toBe('n2#n#0');
    expect(thrown(() => checkEffectKeys('k', [{ name: 'n2', key: 'n#0' }]))).toBeInstanceOf(ValidationError);
  });

  it.each([
    ['empty', '', /side effect 0 \(grant\): its key is empty/],
    ['blank', '   ', /its key is empty/],
    ['holding #', 'u-1#2026', /its key holds '#'/],
    ['a lone surrogate', 'u-\uD800', /not well-formed Unicode/],
    ['too long', 'é'.repeat(MAX_CHOSEN_KEY_BYTES / 2 + 1), /longer than 512 bytes/],
  ])('refuses a chosen key that is %s as a ValidationError (it comes from the message)', (_what, key, message) => {
    const error = thrown(() => checkEffectKeys('k', [{ name: 'grant', key }]));
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatch(message);
  });

  it('takes a key of exactly 512 bytes, and keys of any other character', () => {
    expect(() => checkEffectKeys('k', [{ name: 'grant', key: 'é'.repeat(MAX_CHOSEN_KEY_BYTES / 2) }])).not.toThrow();
    expect(() => checkEffectKeys('k', [{ name: 'grant', key: 'user:42|2026-03-01 ✓' }])).not.toThrow();
  });

  it('refuses a key that is not a string, and one effect key asked twice by one decision, as a ConsumerDefinitionError', () => {
    const notString = thrown(() => checkEffectKeys('k', [{ name: 'grant', key: 42 as never }]));
    expect(notString).toBeInstanceOf(ConsumerDefinitionError);
    expect((notString as Error).message).toMatch(/key that is a number, not a string/);
    const twice = thrown(() => checkEffectKeys('k', [{ name: 'grant', key: 'u-1' }, { name: 'notify' }, { name: 'grant', key: 'u-1' }]));
    expect(twice).toBeInstanceOf(ConsumerDefinitionError);
    expect((twice as Error).message).toMatch(/asked twice for side effect grant with one key/);
  });

  it('takes one effect with several keys, one key for several effects, and a default request beside a keyed one', () => {
    expect(() =>
      checkEffectKeys('k', [
        { name: 'grant', key: 'u-1' },
        { name: 'grant', key: 'u-2' },
        { name: 'notify', key: 'u-1' },
        { name: 'notify' },
        { name: 'notify' },
        { name: 'grant', key: undefined },
      ]),
    ).not.toThrow();
  });
});
