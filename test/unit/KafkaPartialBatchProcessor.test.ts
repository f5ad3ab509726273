import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KafkaPartialBatchProcessor } from '../../lambda/batch/KafkaPartialBatchProcessor.js';
import type { KafkaCoordinates } from '../../lambda/batch/kafkaBatchResponse.js';

const record = (partition: number, offset: number): KafkaCoordinates => ({ topic: 'orders', partition, offset });
const id = (r: KafkaCoordinates) => `${r.partition}@${r.offset}`;

/** Records grouped as in an event: by "<topic>-<partition>". */
function grouped(...records: KafkaCoordinates[]): Record<string, KafkaCoordinates[]> {
  const groups: Record<string, KafkaCoordinates[]> = {};
  for (const r of records) (groups[`${r.topic}-${r.partition}`] ??= []).push(r);
  return groups;
}

/** A handler that records its calls and rejects for the ids in `failing`. */
function recordingHandler(failing: ReadonlySet<string> = new Set()) {
  const calls: string[] = [];
  const handler = async (r: KafkaCoordinates) => {
    calls.push(id(r));
    await Promise.resolve();
    if (failing.has(id(r))) throw new Error(`record ${id(r)} failed`);
  };
  return { calls, handler };
}

describe('KafkaPartialBatchProcessor', () => {
  it('runs the records of a partition one after another, in offset order', async () => {
    const { calls, handler } = recordingHandler();
    let running = 0;
    let overlapped = false;
    const serialCheck = async (r: KafkaCoordinates) => {
      running += 1;
      if (running > 1) overlapped = true;
      await new Promise((resolve) => setTimeout(resolve, 2));
      await handler(r);
      running -= 1;
    };

    const response = await new KafkaPartialBatchProcessor().process(grouped(record(0, 12), record(0, 10), record(0, 13), record(0, 11)), serialCheck);

    expect(response).toEqual({ batchItemFailures: [] });
    expect(calls).toEqual(['0@10', '0@11', '0@12', '0@13']);
    expect(overlapped).toBe(false);
  });

  it('case C8 shape: stops a partition at its first failure and reports only that record', async () => {
    const { calls, handler } = recordingHandler(new Set(['0@12']));

    const response = await new KafkaPartialBatchProcessor().process(grouped(record(0, 10), record(0, 11), record(0, 12), record(0, 13)), handler);

    expect(JSON.stringify(response)).toBe('{"batchItemFailures":[{"itemIdentifier":{"partition":"orders-0","offset":12}}]}');
    expect(calls).toEqual(['0@10', '0@11', '0@12']);
  });

  it('lets the other partitions of a mixed batch go on', async () => {
    const { calls, handler } = recordingHandler(new Set(['0@10']));

    const response = await new KafkaPartialBatchProcessor().process(
      grouped(record(0, 10), record(1, 5), record(0, 11), record(1, 6), record(2, 0)),
      handler,
    );

    expect(response.batchItemFailures).toEqual([{ itemIdentifier: { partition: 'orders-0', offset: 10 } }]);
    expect(calls.filter((c) => c.startsWith('1@'))).toEqual(['1@5', '1@6']);
    expect(calls).toContain('2@0');
    expect(calls).not.toContain('0@11');
  });

  it('runs partitions concurrently', async () => {
    let releaseFirst: () => void = () => undefined;
    const secondStarted = new Promise<void>((resolve) => (releaseFirst = resolve));
    const handler = async (r: KafkaCoordinates) => {
      if (r.partition === 0) await secondStarted; // would wait forever if partitions ran one after another
      else releaseFirst();
    };

    const response = await new KafkaPartialBatchProcessor().process(grouped(record(0, 1), record(1, 1)), handler);

    expect(response).toEqual({ batchItemFailures: [] });
  });

  it('reports a full failure as one item per partition instead of throwing', async () => {
    const handler = async () => {
      throw new Error('DynamoDB is down');
    };

    const response = await new KafkaPartialBatchProcessor().process(grouped(record(0, 10), record(0, 11), record(3, 7)), handler);

    expect(response).toEqual({
      batchItemFailures: [
        { itemIdentifier: { partition: 'orders-0', offset: 10 } },
        { itemIdentifier: { partition: 'orders-3', offset: 7 } },
      ],
    });
  });

  it('catches a handler that throws synchronously, and tells onRecordFailure', async () => {
    const failures: string[] = [];
    const processor = new KafkaPartialBatchProcessor({ onRecordFailure: (r, error) => failures.push(`${id(r)}: ${(error as Error).message}`) });
    const handler = (() => {
      throw new Error('boom');
    }) as unknown as (r: KafkaCoordinates) => Promise<void>;

    const response = await processor.process(grouped(record(0, 1)), handler);

    expect(response.batchItemFailures).toHaveLength(1);
    expect(failures).toEqual(['0@1: boom']);
  });

  it('returns an empty response for an event without records', async () => {
    const { handler } = recordingHandler();
    expect(await new KafkaPartialBatchProcessor().process(undefined, handler)).toEqual({ batchItemFailures: [] });
    expect(await new KafkaPartialBatchProcessor().process({}, handler)).toEqual({ batchItemFailures: [] });
  });

  it('reports the lowest failing offset of each partition and runs nothing after it, in offset order (property)', async () => {
    const batches = fc.uniqueArray(fc.record({ partition: fc.integer({ min: 0, max: 4 }), offset: fc.integer({ min: 0, max: 40 }) }), {
      selector: (r) => `${r.partition}@${r.offset}`,
      minLength: 1,
      maxLength: 40,
    });
    await fc.assert(
      fc.asyncProperty(batches, fc.func(fc.boolean()), async (raw, fails) => {
        const records = raw.map((r) => record(r.partition, r.offset));
        const failing = new Set(records.filter((r) => fails(id(r))).map(id));
        const { calls, handler } = recordingHandler(failing);

        const response = await new KafkaPartialBatchProcessor().process(grouped(...records), handler);

        for (const partition of new Set(records.map((r) => r.partition))) {
          const offsets = records.filter((r) => r.partition === partition).map((r) => r.offset).sort((a, b) => a - b);
          const firstFailure = offsets.find((offset) => failing.has(`${partition}@${offset}`));
          const expectedCalls = offsets.filter((offset) => firstFailure === undefined || offset <= firstFailure).map((o) => `${partition}@${o}`);
          expect(calls.filter((c) => c.startsWith(`${partition}@`))).toEqual(expectedCalls);
          const reported = response.batchItemFailures.filter((f) => f.itemIdentifier.partition === `orders-${partition}`);
          expect(reported).toEqual(firstFailure === undefined ? [] : [{ itemIdentifier: { partition: `orders-${partition}`, offset: firstFailure } }]);
        }
      }),
    );
  });
});
