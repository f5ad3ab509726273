import { describe, expect, it } from 'vitest';
import { describeError } from '../../../packages/idempotent-consumer/src/engine/describeError.js';

describe('describeError', () => {
  it('gives an error’s name and message, the message cut to 500 characters', () => {
    const error = new RangeError('x'.repeat(600));
    expect(describeError(error)).toEqual({ name: 'RangeError', message: 'x'.repeat(500) });
  });

  it('describes a thrown value that is not an error by its type and text', () => {
    expect(describeError('plain text')).toEqual({ name: 'string', message: 'plain text' });
    expect(describeError(undefined)).toEqual({ name: 'undefined', message: 'undefined' });
    expect(describeError({ code: 1 })).toEqual({ name: 'object', message: '[object Object]' });
  });
});
