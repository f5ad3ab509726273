import { describe, expect, it } from 'vitest';
import { backoffSeconds } from '../../packages/idempotent-consumer/src/batch/retryBackoff.js';

describe('backoffSeconds', () => {
  it('doubles from the base by attempt, up to the maximum', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((attempt) => backoffSeconds(attempt, 2, 60))).toEqual([2, 4, 8, 16, 32, 60, 60]);
  });

  it('is 0 when the base is 0, and never above what SQS allows from the receipt', () => {
    expect(backoffSeconds(3, 0, 60)).toBe(0);
    expect(backoffSeconds(40, 1000, 100_000)).toBeLessThanOrEqual(43_200);
  });
});
