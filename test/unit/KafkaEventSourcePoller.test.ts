import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { DeserializeHandlerOutput, DeserializeMiddleware } from '@smithy/types';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { KafkaEvent, KafkaRecord } from '../../packages/idempotent-consumer/src/batch/kafkaEvent.js';
import { InvocationStoppedError } from '../../packages/local/src/aws/invocationGuard.js';
import { PollerIdleTimeoutError } from '../../packages/local/src/errors.js';
import {
  buildKafkaEvent,
  KafkaEventSourcePoller,
  type KafkaEventSourcePollerOptions,
  type KafkaOnFailureRecord,
  type LocalKafkaHandler,
} from '../../packages/local/src/kafka/KafkaEventSourcePoller.js';
import { PartitionedLog } from '../../packages/local/src/kafka/PartitionedLog.js';

const ARN = 'arn:aws:kafka:us-east-1:000000000000:cluster/local/abc-1';

/** A log of one topic `orders` with `values` appended to partition 0 (and `more` to partition 1). */
function logWith(values: readonly string[], more: readonly string[] = [], partitions = 2): PartitionedLog {
  const log = new PartitionedLog({ topic: 'orders', partitions, now: () => 1_767_268_800_000 });
  for (const value of values) log.append({ key: 'O-1', value, partition: 0 });
  for (const value of more) log.append({ key: 'O-2', value, partition: 1 });
  return log;
}

/** Every record of an event as `<partition>@<offset>`, in event order. */
const idsOf = (event: KafkaEvent) => Object.values(event.records).flatMap((records) => records.map((r) => `${r.partition}@${r.offset}`));

/** A poller whose handler answers with `respond(event, invocation)`; it records every event. */
function pollerWith(
  log: PartitionedLog,
  respond: (event: KafkaEvent, invocation: number) => unknown,
  options: Partial<KafkaEventSourcePollerOptions> = {},
) {
  const events: KafkaEvent[] = [];
  const onFailure: KafkaOnFailureRecord[] = [];
  const handler: LocalKafkaHandler = async (event) => {
    events.push(event);
    return respond(event, events.length);
  };
  const poller = new KafkaEventSourcePoller({
    log,
    createHandler: () => handler,
    batchSize: 100,
    retryAttempts: 2,
    eventSourceArn: ARN,
    onFailure: (record) => void onFailure.push(record),
    ...options,
  });
  return { poller, events, onFailure };
}

const failAt = (partition: string, offset: unknown) => ({ batchItemFailures: [{ itemIdentifier: { partition, offset } }] });

describe('KafkaEventSourcePoller: the event', () => {
  it('builds an MSK event exactly as Lambda does: records by "<topic>-<partition>", base64 key and value, byte-array headers', async () => {
    const log = new PartitionedLog({ topic: 'orders', partitions: 1, now: () => 1_767_268_800_000 });
    log.append({ key: 'O-10', value: '{"eventId":"e-10"}', headers: [{ name: 'source', value: 'till' }] });
    log.append({ value: null });
    const { poller, events } = pollerWith(log, () => null);

    await poller.pollOnce();

    expect(events[0]).toEqual({
      eventSource: 'aws:kafka',
      eventSourceArn: ARN,
      bootstrapServers: '127.0.0.1:9092',
      records: {
        'orders-0': [
          {
            topic: 'orders',
            partition: 0,
            offset: 0,
            timestamp: 1_767_268_800_000,
            timestampType: 'CREATE_TIME',
            key: Buffer.from('O-10').toString('base64'),
            value: Buffer.from('{"eventId":"e-10"}').toString('base64'),
            headers: [{ source: [116, 105, 108, 108] }],
          },
          {
            topic: 'orders',
            partition: 0,
            offset: 1,
            timestamp: 1_767_268_800_000,
            timestampType: 'CREATE_TIME',
            value: null,
            headers: [],
          },
        ] satisfies KafkaRecord[],
      },
    });
  });

  it('builds a self-managed Kafka event without an ARN', () => {
    const log = logWith(['a']);
    const event = buildKafkaEvent(log.read(0, 0, 1), { eventSource: 'SelfManagedKafka', eventSourceArn: ARN, bootstrapServers: 'k:9092' });
    expect(event.eventSource).toBe('SelfManagedKafka');
    expect(event).not.toHaveProperty('eventSourceArn');
  });

  it('takes at most batchSize records across partitions, each partition in offset order', async () => {
    const { poller, events } = pollerWith(logWith(['a', 'b', 'c'], ['x', 'y']), () => null, { batchSize: 4 });

    await poller.pollOnce();

    expect(idsOf(events[0]!)).toEqual(['0@0', '0@1', '0@2', '1@0']);
    expect(poller.lag()).toBe(1);
  });
});

describe('KafkaEventSourcePoller: reading the response', () => {
  it('commits every partition of a successful batch', async () => {
    const { poller } = pollerWith(logWith(['a', 'b'], ['x']), () => ({ batchItemFailures: [] }));

    const report = await poller.pollOnce();

    expect(report?.verdict).toEqual({ kind: 'success' });
    expect([poller.committedOffset(0), poller.committedOffset(1)]).toEqual([2, 1]);
    expect(await poller.pollOnce()).toBeUndefined();
  });

  it('resumes a reported partition from its lowest reported offset and commits the other partitions', async () => {
    const { poller, events } = pollerWith(logWith(['a', 'b', 'c', 'd'], ['x', 'y']), (_, invocation) =>
      invocation === 1
        ? {
            batchItemFailures: [
              { itemIdentifier: { partition: 'orders-0', offset: 3 } },
              { itemIdentifier: { partition: 'orders-0', offset: 2 } },
            ],
          }
        : null,
    );

    await poller.pollOnce();
    expect([poller.committedOffset(0), poller.committedOffset(1)]).toEqual([2, 2]);

    await poller.pollOnce();
    expect(idsOf(events[1]!)).toEqual(['0@2', '0@3']);
    expect(poller.lag()).toBe(0);
  });

  it.each([
    ['an unknown partition', failAt('orders-9', 1)],
    ['an unknown offset', failAt('orders-0', 42)],
    ['an offset as a string', failAt('orders-0', '1')],
    ['an SQS-style identifier', { batchItemFailures: [{ itemIdentifier: 'orders-0@1' }] }],
    ['a response that is not an object', 'done'],
  ])('retries the whole batch for %s (successes replayed)', async (_, response) => {
    const { poller, events } = pollerWith(logWith(['a', 'b'], ['x']), (__, invocation) => (invocation === 1 ? response : null));

    const report = await poller.pollOnce();
    expect(report?.verdict.kind).toBe('failure');
    expect([poller.committedOffset(0), poller.committedOffset(1)]).toEqual([0, 0]);

    await poller.pollOnce();
    expect(idsOf(events[1]!)).toEqual(idsOf(events[0]!));
  });

  it('treats a wrongly cased key as success: the failures it lists are lost, as AWS does', async () => {
    const { poller } = pollerWith(logWith(['a', 'b']), () => ({
      BatchItemFailures: [{ itemIdentifier: { partition: 'orders-0', offset: 1 } }],
    }));
    await poller.pollOnce();
    expect(poller.committedOffset(0)).toBe(2);
  });

  it('retries the whole batch when the handler throws, and after a timeout with a new execution environment', async () => {
    let created = 0;
    let invocation = 0;
    const log = logWith(['a']);
    const poller = new KafkaEventSourcePoller({
      log,
      retryAttempts: 5,
      functionTimeoutSeconds: 0.05,
      createHandler: () => {
        created += 1;
        return async () => {
          invocation += 1;
          if (invocation === 1) throw new Error('crash');
          if (invocation === 2) await new Promise((resolve) => setTimeout(resolve, 200));
          return null;
        };
      },
    });

    expect((await poller.pollOnce())?.outcome).toBe('threw');
    expect((await poller.pollOnce())?.outcome).toBe('timed-out');
    expect(created).toBe(2);
    expect(poller.committedOffset(0)).toBe(0);
    expect((await poller.pollOnce())?.outcome).toBe('returned');
    expect(poller.committedOffset(0)).toBe(1);
  });
});

describe('KafkaEventSourcePoller: the deadline', () => {
  it('refuses the calls a timed-out invocation makes afterwards on the guarded clients', async () => {
    // A client whose requests never leave the process: the innermost middleware counts them.
    const client = new DynamoDBClient({
      region: 'us-east-1',
      endpoint: 'http://127.0.0.1:9',
      credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
      maxAttempts: 1,
    });
    let sent = 0;
    const server: DeserializeMiddleware<object, object> = () => async () => {
      sent += 1;
      const body = new TextEncoder().encode('{}');
      return {
        response: { statusCode: 200, headers: { 'content-type': 'application/x-amz-json-1.0' }, body },
        output: undefined,
      } as unknown as DeserializeHandlerOutput<object>;
    };
    (client.middlewareStack as unknown as { add(middleware: unknown, options: object): void }).add(server, {
      step: 'deserialize',
      priority: 'low',
      name: 'fakeServer',
    });
    let allowLateWrite!: () => void;
    const lateWriteAllowed = new Promise<void>((resolve) => (allowLateWrite = resolve));
    let startLateWrite!: (started: { write: Promise<unknown> }) => void;
    const lateWrite = new Promise<{ write: Promise<unknown> }>((resolve) => (startLateWrite = resolve));
    let invocation = 0;
    const poller = new KafkaEventSourcePoller({
      log: logWith(['a']),
      functionTimeoutSeconds: 0.05,
      retryAttempts: 3,
      guardedClients: [client],
      onInvocation: (report) => {
        if (report.outcome === 'timed-out') allowLateWrite();
      },
      createHandler: () => async () => {
        invocation += 1;
        if (invocation > 1) return null;
        await lateWriteAllowed; // runs on past the timeout, then writes
        startLateWrite({ write: client.send(new PutItemCommand({ TableName: 't', Item: { pk: { S: 'too late' } } })) });
        return null;
      },
    });

    const report = await poller.pollOnce();

    expect(report?.outcome).toBe('timed-out');
    await expect((await lateWrite).write).rejects.toThrow(InvocationStoppedError);
    expect(sent).toBe(0);
    expect((await poller.pollOnce())?.outcome).toBe('returned');
  });
});

describe('KafkaEventSourcePoller: finite retries and the on-failure destination', () => {
  it('gives up after retryAttempts retries, sends metadata only, and moves the partition on', async () => {
    const { poller, events, onFailure } = pollerWith(logWith(['a', 'b', 'c', 'd']), (event) =>
      idsOf(event).includes('0@1') ? failAt('orders-0', 1) : null,
    );

    const invocations = await poller.runUntilIdle();

    // First attempt + 2 retries at offset 1, then given up (offsets 1..3 of that batch).
    expect(invocations).toBe(3);
    expect(events.map(idsOf)).toEqual([
      ['0@0', '0@1', '0@2', '0@3'],
      ['0@1', '0@2', '0@3'],
      ['0@1', '0@2', '0@3'],
    ]);
    expect(onFailure).toHaveLength(1);
    const [record] = onFailure;
    expect(record).toMatchObject({
      requestContext: { condition: 'RetryAttemptsExhausted', approximateInvokeCount: 3 },
      responseContext: { statusCode: 200, executedVersion: '$LATEST' },
      version: '1.0',
      KafkaBatchInfo: {
        batchSize: 3,
        eventSourceArn: ARN,
        bootstrapServers: '127.0.0.1:9092',
        recordsInfo: {
          'orders-0': {
            firstRecordOffset: '1',
            lastRecordOffset: '3',
            firstRecordTimestamp: '2026-01-01T12:00:00.000Z',
            lastRecordTimestamp: '2026-01-01T12:00:00.000Z',
          },
        },
      },
    });
    expect(JSON.stringify(record)).not.toMatch(/"payload"|"value"/);
    expect(poller.committedOffset(0)).toBe(4);
  });

  it('gives up on a partition without touching the others', async () => {
    const { poller, onFailure } = pollerWith(
      logWith(['a'], ['x', 'y']),
      (event) => (idsOf(event).includes('0@0') ? failAt('orders-0', 0) : null),
      {
        retryAttempts: 0,
      },
    );

    await poller.runUntilIdle();

    expect(onFailure.map((r) => Object.keys(r.KafkaBatchInfo.recordsInfo))).toEqual([['orders-0']]);
    expect([poller.committedOffset(0), poller.committedOffset(1)]).toEqual([1, 2]);
  });

  it('counts the retries afresh when a partition fails at a later offset', async () => {
    const { poller, onFailure } = pollerWith(logWith(['a', 'b', 'c']), (_, invocation) =>
      // fails at 0 twice, then at 1 twice, then succeeds: never more than 2 in a row at one offset
      invocation <= 2 ? failAt('orders-0', 0) : invocation <= 4 ? failAt('orders-0', 1) : null,
    );

    await poller.runUntilIdle();

    expect(onFailure).toEqual([]);
    expect(poller.invocations).toBe(5);
  });

  it('refuses infinite retries', () => {
    expect(() => new KafkaEventSourcePoller({ log: logWith([]), createHandler: () => () => null, retryAttempts: -1 })).toThrow(/finite/);
  });

  it('runUntilIdle gives up with PollerIdleTimeoutError when records remain', async () => {
    const { poller } = pollerWith(logWith(['a']), () => failAt('orders-0', 0), { retryAttempts: 10 });
    await expect(poller.runUntilIdle({ maxInvocations: 3 })).rejects.toThrow(PollerIdleTimeoutError);
  });
});

describe('KafkaEventSourcePoller: order within a partition (property)', () => {
  it('processes every record once successfully, each partition in offset order, whatever fails on a first delivery', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.constantFrom('O-1', 'O-2', 'O-3', 'O-4'), fc.boolean()), { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 7 }),
        async (appends, partitions, batchSize) => {
          const log = new PartitionedLog({ topic: 'orders', partitions });
          const failsOnce = new Set<string>();
          appends.forEach(([key, fails], index) => {
            log.append({ key, value: `${key}#${index}` });
            if (fails) failsOnce.add(`${key}#${index}`);
          });
          const succeeded: string[] = [];
          const handler: LocalKafkaHandler = async (event) => {
            const failures = [];
            for (const records of Object.values(event.records)) {
              for (const record of records) {
                const value = Buffer.from(record.value!, 'base64').toString();
                if (failsOnce.delete(value)) {
                  failures.push({ itemIdentifier: { partition: `${record.topic}-${record.partition}`, offset: record.offset } });
                  break; // stop the partition at its first failure, as the real processor does
                }
                succeeded.push(value);
              }
            }
            return { batchItemFailures: failures };
          };
          const poller = new KafkaEventSourcePoller({ log, createHandler: () => handler, batchSize, retryAttempts: 1 });

          await poller.runUntilIdle({ maxInvocations: 1_000 });

          expect([...succeeded].sort()).toEqual(appends.map(([key], index) => `${key}#${index}`).sort());
          for (const key of new Set(appends.map(([k]) => k))) {
            const ofKey = succeeded.filter((v) => v.startsWith(`${key}#`)).map((v) => Number(v.split('#')[1]));
            expect(ofKey).toEqual([...ofKey].sort((a, b) => a - b));
          }
        },
      ),
    );
  });
});

describe('KafkaEventSourcePoller: the two readings of "retry the failed records"', () => {
  const reportOnly = (offset: number) => (_event: KafkaEvent, invocation: number) => (invocation === 1 ? failAt('orders-0', offset) : null);

  it('resume-from-lowest-offset brings back every record from the lowest reported one', async () => {
    const { poller, events } = pollerWith(logWith(['a', 'b', 'c', 'd']), reportOnly(1), { retryReading: 'resume-from-lowest-offset' });

    await poller.runUntilIdle();

    expect(events.map(idsOf)).toEqual([
      ['0@0', '0@1', '0@2', '0@3'],
      ['0@1', '0@2', '0@3'],
    ]);
  });

  it('retry-reported-records brings back only the reported records, alone, and moves the partition past the batch', async () => {
    const { poller, events } = pollerWith(logWith(['a', 'b', 'c', 'd'], ['x']), reportOnly(1), { retryReading: 'retry-reported-records' });

    const first = await poller.pollOnce();
    expect(poller.committedOffset(0)).toBe(4);
    expect(poller.lag()).toBe(1);
    await poller.runUntilIdle();

    expect(first?.verdict.kind).toBe('partial');
    expect(events.map(idsOf)).toEqual([['0@0', '0@1', '0@2', '0@3', '1@0'], ['0@1']]);
    expect(poller.lag()).toBe(0);
  });

  it('retry-reported-records gives up on the reported records only, after the retries', async () => {
    const { poller, events, onFailure } = pollerWith(
      logWith(['a', 'b', 'c']),
      (event) => (idsOf(event).includes('0@1') ? failAt('orders-0', 1) : null),
      {
        retryReading: 'retry-reported-records',
      },
    );

    await poller.runUntilIdle();

    expect(events.map(idsOf)).toEqual([['0@0', '0@1', '0@2'], ['0@1'], ['0@1']]);
    expect(onFailure.map((record) => record.KafkaBatchInfo.recordsInfo['orders-0'])).toEqual([
      expect.objectContaining({ firstRecordOffset: '1', lastRecordOffset: '1' }),
    ]);
    expect(poller.committedOffset(0)).toBe(3);
  });

  it.each(['resume-from-lowest-offset', 'retry-reported-records'] as const)(
    'with %s, a consumer that reports a failure and every later record of its partition processes each record once, in order (property)',
    async (retryReading) => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.tuple(fc.constantFrom('K-1', 'K-2', 'K-3'), fc.integer({ min: 0, max: 2 })), { minLength: 1, maxLength: 30 }),
          fc.integer({ min: 1, max: 3 }),
          fc.integer({ min: 1, max: 6 }),
          async (appends, partitions, batchSize) => {
            const log = new PartitionedLog({ topic: 'orders', partitions });
            const failuresLeft = new Map<string, number>();
            appends.forEach(([key, failures], index) => {
              log.append({ key, value: `${key}#${index}` });
              failuresLeft.set(`${key}#${index}`, failures);
            });
            const applied: string[] = [];
            const handler: LocalKafkaHandler = async (event) => {
              const batchItemFailures = [];
              for (const records of Object.values(event.records)) {
                let failed = false;
                for (const record of records) {
                  const value = Buffer.from(record.value!, 'base64').toString();
                  if (!failed && (failuresLeft.get(value) ?? 0) > 0) {
                    failuresLeft.set(value, (failuresLeft.get(value) ?? 0) - 1);
                    failed = true;
                  }
                  if (failed) {
                    // The design: report the failed record and every later record of its partition (not run).
                    batchItemFailures.push({ itemIdentifier: { partition: `${record.topic}-${record.partition}`, offset: record.offset } });
                  } else {
                    applied.push(value);
                  }
                }
              }
              return { batchItemFailures };
            };
            const poller = new KafkaEventSourcePoller({ log, createHandler: () => handler, batchSize, retryAttempts: 5, retryReading });

            await poller.runUntilIdle({ maxInvocations: 1_000 });

            expect([...applied].sort()).toEqual(appends.map(([key], index) => `${key}#${index}`).sort());
            for (const key of new Set(appends.map(([k]) => k))) {
              const ofKey = applied.filter((value) => value.startsWith(`${key}#`)).map((value) => Number(value.split('#')[1]));
              expect(ofKey).toEqual([...ofKey].sort((a, b) => a - b));
            }
          },
        ),
      );
    },
  );
});
