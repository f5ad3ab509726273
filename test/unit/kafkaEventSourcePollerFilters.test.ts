import { describe, expect, it } from 'vitest';
import type { KafkaEvent } from '../../packages/idempotent-consumer/src/batch/kafkaEvent.js';
import { withOverrides } from '../../packages/idempotent-consumer/src/settings/settings.js';
import {
  KafkaEventSourcePoller,
  kafkaPollerOptionsFromSettings,
  type LocalKafkaHandler,
} from '../../packages/local/src/kafka/KafkaEventSourcePoller.js';
import { PartitionedLog } from '../../packages/local/src/kafka/PartitionedLog.js';
import { UnsupportedFilterRuleError } from '../../packages/local/src/matchesFilterPattern.js';

const valuesOf = (event: KafkaEvent) =>
  Object.values(event.records).flatMap((records) => records.map((r) => Buffer.from(r.value ?? '', 'base64').toString('utf8')));

function logOf(partitions: readonly (readonly string[])[]): PartitionedLog {
  const log = new PartitionedLog({ topic: 'orders', partitions: partitions.length, now: () => 1_767_268_800_000 });
  partitions.forEach((values, partition) => {
    for (const value of values) log.append({ key: `k-${partition}`, value, partition });
  });
  return log;
}

describe('KafkaEventSourcePoller with filter criteria (kafka.filters)', () => {
  const paid = (id: number) => JSON.stringify({ type: 'OrderPaid', id });
  const placed = (id: number) => JSON.stringify({ type: 'OrderPlaced', id });
  const settings = withOverrides({ kafka: { filters: [{ value: { type: ['OrderPaid'] } }] } });

  it('invokes with the matching records only, commits the filtered-out ones, and skips a batch with none', async () => {
    const log = logOf([
      [placed(1), paid(2), placed(3)],
      [placed(4), placed(5)],
    ]);
    const events: KafkaEvent[] = [];
    const filteredOut: string[] = [];
    const handler: LocalKafkaHandler = (event) => {
      events.push(event);
      return { batchItemFailures: [] };
    };
    const poller = new KafkaEventSourcePoller({
      log,
      createHandler: () => handler,
      ...kafkaPollerOptionsFromSettings(settings),
      batchSize: 10,
      onFilteredOut: (records) => filteredOut.push(...records),
    });

    const invocations = await poller.runUntilIdle({ timeoutMs: 30_000 });

    expect(events.flatMap(valuesOf)).toEqual([paid(2)]);
    expect(poller.invocations).toBe(1);
    expect(invocations).toBeGreaterThanOrEqual(1);
    expect(poller.committedOffset(0)).toBe(3);
    expect(poller.committedOffset(1)).toBe(2);
    expect(poller.lag()).toBe(0);
    expect(filteredOut.sort()).toEqual(['orders-0@0', 'orders-0@2', 'orders-1@0', 'orders-1@1']);
  });

  it('brings filtered-out records back with a failed record before them, and filters them again', async () => {
    const log = logOf([[paid(1), placed(2), paid(3)]]);
    const seen: string[][] = [];
    let calls = 0;
    const handler: LocalKafkaHandler = (event) => {
      seen.push(valuesOf(event));
      calls += 1;
      // The first invocation fails the first record (and reports what follows, as the consumer does).
      if (calls === 1) {
        const records = event.records['orders-0'] ?? [];
        return { batchItemFailures: records.map((r) => ({ itemIdentifier: { partition: 'orders-0', offset: r.offset } })) };
      }
      return { batchItemFailures: [] };
    };
    const poller = new KafkaEventSourcePoller({ log, createHandler: () => handler, ...kafkaPollerOptionsFromSettings(settings) });

    await poller.runUntilIdle({ timeoutMs: 30_000 });

    expect(seen).toEqual([
      [paid(1), paid(3)],
      [paid(1), paid(3)],
    ]);
    expect(poller.committedOffset(0)).toBe(3);
  });

  it('refuses, at construction, a filter Lambda would refuse', () => {
    const log = logOf([[paid(1)]]);
    expect(
      () =>
        new KafkaEventSourcePoller({
          log,
          createHandler: () => () => ({ batchItemFailures: [] }),
          filters: [{ value: { type: [{ wildcard: 'Order*' }] } } as never],
        }),
    ).toThrow(UnsupportedFilterRuleError);
  });
});
