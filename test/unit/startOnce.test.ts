import { describe, expect, it } from 'vitest';
import { startOnce } from '../../packages/idempotent-consumer/src/startOnce.js';

describe('startOnce', () => {
  it('starts once and gives every caller, at once or later, the same value', async () => {
    let starts = 0;
    const get = startOnce(async () => {
      starts += 1;
      return { n: starts };
    });
    const [a, b] = await Promise.all([get(), get()]);
    const c = await get();
    expect(starts).toBe(1);
    expect(a).toBe(b);
    expect(c).toBe(a);
  });

  it('forgets a failure, thrown or rejected: the next caller starts again', async () => {
    const outcomes: Array<() => unknown> = [
      () => {
        throw new Error('thrown at once');
      },
      () => Promise.reject(new Error('rejected later')),
      () => 'ready',
    ];
    let starts = 0;
    const get = startOnce(() => outcomes[starts++]!());
    await expect(get()).rejects.toThrow('thrown at once');
    await expect(get()).rejects.toThrow('rejected later');
    await expect(get()).resolves.toBe('ready');
    await expect(get()).resolves.toBe('ready');
    expect(starts).toBe(3);
  });

  it('shares one failure among the callers of the same start', async () => {
    let starts = 0;
    const get = startOnce(async () => {
      starts += 1;
      throw new Error(`start ${starts} failed`);
    });
    const results = await Promise.allSettled([get(), get()]);
    expect(results.map((r) => (r.status === 'rejected' ? (r.reason as Error).message : 'ok'))).toEqual([
      'start 1 failed',
      'start 1 failed',
    ]);
    expect(starts).toBe(1);
  });
});
