import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { murmur2, PartitionedLog } from '../../packages/local/src/kafka/PartitionedLog.js';

describe('murmur2', () => {
  it.each([
    ['21', -973932308],
    ['foobar', -790332482],
    ['a-little-bit-long-string', -985981536],
    ['a-little-bit-longer-string', -1486304829],
    ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
    ['abc', 479470107],
  ])('matches the Java client for %j (Kafka UtilsTest.testMurmur2)', (key, expected) => {
    expect(murmur2(Buffer.from(key))).toBe(expected);
  });
});

describe('PartitionedLog', () => {
  it("puts a keyed record where Kafka's default partitioner would: (murmur2(key) & 0x7fffffff) % partitions", () => {
    const log = new PartitionedLog({ topic: 'orders', partitions: 3 });
    expect(log.partitionFor('21')).toBe((-973932308 & 0x7fffffff) % 3);
    expect(log.partitionFor('foobar')).toBe((-790332482 & 0x7fffffff) % 3);
    expect(log.partitionFor(Buffer.from('abc'))).toBe((479470107 & 0x7fffffff) % 3);
  });

  it('numbers each partition from offset 0 without gaps and reads from an offset', () => {
    const log = new PartitionedLog({ topic: 'orders', partitions: 2, now: () => 1_000 });
    const written = ['a', 'b', 'c', 'd'].map((value) => log.append({ value, partition: 1 }));

    expect(written.map((w) => w.offset)).toEqual([0, 1, 2, 3]);
    expect(log.endOffset(1)).toBe(4);
    expect(log.endOffset(0)).toBe(0);
    const read = log.read(1, 1, 2);
    expect(read.map((r) => [r.offset, Buffer.from(r.value!).toString()])).toEqual([
      [1, 'b'],
      [2, 'c'],
    ]);
    expect(read[0]).toMatchObject({ topic: 'orders', partition: 1, timestamp: 1_000, key: null, headers: [] });
    expect(log.read(1, 4, 10)).toEqual([]);
  });

  it('spreads records without a key over the partitions in turn', () => {
    const log = new PartitionedLog({ topic: 'orders', partitions: 3 });
    expect([1, 2, 3, 4].map(() => log.append({ value: 'x' }).partition)).toEqual([0, 1, 2, 0]);
  });

  it('keeps tombstones, keys and repeated headers as bytes', () => {
    const log = new PartitionedLog({ topic: 'orders', partitions: 1 });
    log.append({
      key: 'O-1',
      value: null,
      headers: [
        { name: 'h', value: 'one' },
        { name: 'h', value: new Uint8Array([0xff]) },
      ],
      timestamp: 7,
    });
    const [record] = log.read(0, 0, 1);
    expect(record?.value).toBeNull();
    expect(Buffer.from(record!.key!).toString()).toBe('O-1');
    expect(record?.headers.map((h) => [h.name, [...h.value]])).toEqual([
      ['h', [111, 110, 101]],
      ['h', [255]],
    ]);
    expect(record?.timestamp).toBe(7);
  });

  it('refuses a topic without partitions and a partition out of range', () => {
    expect(() => new PartitionedLog({ topic: 'orders', partitions: 0 })).toThrow(RangeError);
    const log = new PartitionedLog({ topic: 'orders', partitions: 2 });
    expect(() => log.append({ value: 'x', partition: 2 })).toThrow(RangeError);
    expect(() => log.read(5, 0, 1)).toThrow(RangeError);
  });

  it('keeps every key in one partition, in the order it was appended (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.array(fc.constantFrom('O-1', 'O-2', 'O-3', 'O-4', 'O-5'), { maxLength: 60 }),
        (partitions, keys) => {
          const log = new PartitionedLog({ topic: 'orders', partitions });
          keys.forEach((key, index) => log.append({ key, value: `${key}#${index}` }));

          for (const key of new Set(keys)) {
            const partition = log.partitionFor(key);
            const values = log.read(partition, 0, keys.length).map((r) => Buffer.from(r.value!).toString());
            const ofKey = values.filter((v) => v.startsWith(`${key}#`));
            expect(ofKey).toEqual(keys.flatMap((k, index) => (k === key ? [`${key}#${index}`] : [])));
          }
          const total = Array.from({ length: partitions }, (_, p) => log.endOffset(p)).reduce((a, b) => a + b, 0);
          expect(total).toBe(keys.length);
        },
      ),
    );
  });
});
