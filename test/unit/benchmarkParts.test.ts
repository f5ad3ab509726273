/**
 * The benchmark's own parts that its figures rest on: AWS's item-size and capacity-unit rules,
 * the simulated queue's redelivery and redrive, and the flags.
 */
import { describe, expect, it } from 'vitest';
import { attributeValueSize, itemSizeBytes, readUnits, usdPerMillionMessages, writeUnits } from '../../tools/bench/capacity.js';
import { FlagError, parseFlags } from '../../tools/bench/flags.js';
import { SimulatedQueue } from '../../tools/bench/SimulatedQueue.js';

describe('item sizes (AWS: the sum of attribute name lengths and value sizes)', () => {
  it('counts strings in UTF-8 bytes, numbers by significant digits, lists and maps with 3 bytes of overhead', () => {
    expect(itemSizeBytes({ id: { S: 'abc' } })).toBe(2 + 3);
    expect(itemSizeBytes({ é: { S: 'é' } })).toBe(2 + 2);
    expect(attributeValueSize({ N: '12345' })).toBe(3 + 1); // 5 digits: 3 bytes, plus 1
    expect(attributeValueSize({ N: '-0.00120' })).toBe(1 + 1); // leading and trailing zeros trimmed: "12"
    expect(attributeValueSize({ BOOL: true })).toBe(1);
    expect(attributeValueSize({ NULL: true })).toBe(1);
    expect(attributeValueSize({ B: new Uint8Array(10) })).toBe(10);
    expect(attributeValueSize({ L: [] })).toBe(3);
    expect(attributeValueSize({ L: [{ S: 'ab' }, { N: '7' }] })).toBe(3 + 2 + 2);
    expect(attributeValueSize({ M: { k: { S: 'v' } } })).toBe(3 + 1 + 1);
    expect(attributeValueSize({ SS: ['a', 'bc'] })).toBe(3);
  });
});

describe('capacity units (AWS billing rules)', () => {
  it('reads: 4 KB units; a missing item costs the minimum; eventually consistent 0.5, strongly 1, transactional 2', () => {
    expect(readUnits(0, 'eventual')).toBe(0.5);
    expect(readUnits(0, 'strong')).toBe(1);
    expect(readUnits(4096, 'strong')).toBe(1);
    expect(readUnits(4097, 'strong')).toBe(2);
    expect(readUnits(3500, 'transactional')).toBe(2);
    expect(readUnits(8193, 'eventual')).toBe(1.5);
  });

  it('writes: 1 KB units, at least 1; 2 per unit in a transaction', () => {
    expect(writeUnits(0, false)).toBe(1);
    expect(writeUnits(1024, false)).toBe(1);
    expect(writeUnits(1025, false)).toBe(2);
    expect(writeUnits(500, true)).toBe(2);
    expect(writeUnits(2500, true)).toBe(6);
  });

  it('prices units at on-demand rates (us-east-1): $0.625 per million writes, $0.125 per million reads', () => {
    expect(usdPerMillionMessages(0, 1)).toBeCloseTo(0.625);
    expect(usdPerMillionMessages(1, 3)).toBeCloseTo(2);
  });
});

describe('the simulated queue', () => {
  const message = (id: string) => ({ messageId: id, body: `{"n":"${id}"}` });

  it('delivers in order with receive counts, brings failures back after what is queued, and redrives after maxReceiveCount', () => {
    const queue = new SimulatedQueue([message('a'), message('b'), message('c')], {
      queueArn: 'arn:aws:sqs:us-east-1:000000000000:q',
      maxReceiveCount: 2,
    });
    const first = queue.receive(2);
    expect(first.map((r) => [r.messageId, r.attributes.ApproximateReceiveCount])).toEqual([
      ['a', '1'],
      ['b', '1'],
    ]);
    expect(queue.settle(new Set(['a']))).toEqual([]);
    expect(queue.receive(10).map((r) => [r.messageId, r.attributes.ApproximateReceiveCount])).toEqual([
      ['c', '1'],
      ['a', '2'],
    ]);
    expect(queue.settle(new Set(['a']))).toEqual(['a']);
    expect(queue.isEmpty).toBe(true);
    expect(queue.totals).toEqual({ deleted: 2, redriven: 1, deliveries: 4 });
  });

  it('redelivers a message received before with the next receive count, and refuses a second batch in flight', () => {
    const queue = new SimulatedQueue([{ ...message('a'), previousReceives: 1 }], { queueArn: 'arn', maxReceiveCount: 5 });
    expect(queue.receive(1)[0]?.attributes.ApproximateReceiveCount).toBe('2');
    expect(() => queue.receive(1)).toThrow(/in flight/);
    expect(() => new SimulatedQueue([message('a'), message('a')], { queueArn: 'arn', maxReceiveCount: 5 })).toThrow(/twice/);
  });
});

describe('the benchmark flags', () => {
  it('has defaults that measure everything: 3 repetitions, batch sizes 1, 10 and 100, every scenario, heap and cold start', () => {
    const flags = parseFlags([]);
    expect(flags).toMatchObject({
      repetitions: 3,
      batchSizes: [1, 10, 100],
      scenarios: ['fresh', 'duplicates', 'fresh-side-effect', 'mixed', 'poison'],
      heap: { from: 1000, to: 10000 },
      coldStartRuns: 10,
      json: false,
    });
  });

  it('runs the scenarios in their order (fresh before duplicates) and reads the endpoints', () => {
    const flags = parseFlags([
      '--scenarios',
      'duplicates,fresh',
      '--dynamodb-endpoint',
      'http://127.0.0.1:1',
      '--sqs-endpoint',
      'http://127.0.0.1:2',
      '--heap-messages',
      '0',
    ]);
    expect(flags).toMatchObject({
      scenarios: ['fresh', 'duplicates'],
      endpoints: { dynamoDb: 'http://127.0.0.1:1', sqs: 'http://127.0.0.1:2' },
      heap: undefined,
    });
  });

  it.each([
    [['--messages', 'ten'], /--messages must be an integer/],
    [['--batch-sizes', '101'], /--batch-sizes must be an integer from 1 to 100/],
    [['--scenarios', 'fresh,typo'], /unknown scenario "typo"/],
    [['--scenarios', 'duplicates'], /needs fresh too/],
    [['--heap-messages', '500,100'], /A < B/],
    [['--dynamodb-endpoint', 'http://127.0.0.1:1'], /both/],
    [['--nope'], /Unknown option/],
  ])('refuses %j with a clear message', (argv, message) => {
    expect(() => parseFlags(argv)).toThrow(FlagError);
    expect(() => parseFlags(argv)).toThrow(message);
  });
});
