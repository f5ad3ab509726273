import { describe, expect, it } from 'vitest';
import { ItemCache } from '../../../packages/idempotent-consumer/src/engine/ItemCache.js';

describe('ItemCache', () => {
  it('remembers an item, and an item known to be absent', () => {
    const cache = new ItemCache();
    cache.set('a', { id: 'a', n: 1 });
    cache.set('b', undefined);
    expect(cache.get('a')).toEqual({ exists: true, item: { id: 'a', n: 1 } });
    expect(cache.get('b')).toEqual({ exists: false, item: undefined });
    expect(cache.get('c')).toBeUndefined();
    expect(cache.size).toBe(2);
  });

  it('keeps the last value set for an id', () => {
    const cache = new ItemCache();
    cache.set('a', { id: 'a', n: 1 });
    cache.set('a', undefined);
    expect(cache.get('a')).toEqual({ exists: false, item: undefined });
    expect(cache.size).toBe(1);
  });

  it('forgets an item on delete (its value no longer known)', () => {
    const cache = new ItemCache();
    cache.set('a', { id: 'a' });
    cache.delete('a');
    cache.delete('never-there');
    expect(cache.get('a')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('drops the least recently used entry beyond its size, a read counting as a use', () => {
    const cache = new ItemCache(2);
    cache.set('a', { id: 'a' });
    cache.set('b', { id: 'b' });
    expect(cache.get('a')?.exists).toBe(true); // `a` is now the most recent
    cache.set('c', { id: 'c' });
    expect(cache.size).toBe(2);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toEqual({ exists: true, item: { id: 'a' } });
    expect(cache.get('c')).toEqual({ exists: true, item: { id: 'c' } });
  });

  it('drops the oldest entry when setting again past its size', () => {
    const cache = new ItemCache(1);
    cache.set('a', { id: 'a' });
    cache.set('b', undefined);
    expect(cache.get('a')).toBeUndefined();
    expect(cache.get('b')).toEqual({ exists: false, item: undefined });
  });

  it('keeps nothing when its size is zero', () => {
    const cache = new ItemCache(0);
    cache.set('a', { id: 'a' });
    expect(cache.size).toBe(0);
    expect(cache.get('a')).toBeUndefined();
  });
});
