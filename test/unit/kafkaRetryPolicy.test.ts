/**
 * `settleKafkaDeliveries` (the Kafka retry policy's loop around the engine) with the engine's
 * `processDeliveries` replaced by a script, on a virtual clock: when a partition is tried again,
 * when the invocation's time makes it report instead, and what an execution environment remembers
 * across invocations. The policy against the real engine: test/engine/kafkaRetryPolicy.test.ts.
 */
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { RuntimeConfig } from '../../packages/idempotent-consumer/src/config/runtimeConfig.js';
import type { Delivery, DeliveryResult } from '../../packages/idempotent-consumer/src/engine/Delivery.js';
import type { ProcessDeliveriesDeps } from '../../packages/idempotent-consumer/src/engine/processDeliveries.js';

const engine = vi.hoisted(() => ({
  calls: [] as { messageIds: string[]; at: number; maxAttempts: number }[],
  /** Whether a delivery fails (retryably) when run at `at`. */
  fails: ((_delivery, _at) => false) as (delivery: { messageId: string }, at: number) => boolean,
  now: 0,
}));

vi.mock('../../packages/idempotent-consumer/src/engine/processDeliveries.js', () => ({
  processDeliveries: async (deliveries: readonly Delivery[], deps: { config: { maxAttempts: number } }): Promise<DeliveryResult[]> => {
    engine.calls.push({ messageIds: deliveries.map((d) => d.messageId), at: engine.now, maxAttempts: deps.config.maxAttempts });
    const stopped = new Set<string>();
    return deliveries.map((delivery) => {
      const scope = delivery.scope ?? delivery.messageId;
      const failed = stopped.has(scope) || engine.fails(delivery, engine.now);
      if (failed) stopped.add(scope);
      return {
        // A copy, as the engine's may be (with a trace header).
        delivery: { ...delivery },
        verdict: failed
          ? {
              kind: 'retry',
              attempt: undefined,
              failure: { retryable: true, reason: 'Unavailable', errorType: 'Unavailable', errorMessage: 'down', countsAsAttempt: true },
            }
          : { kind: 'applied' },
        reported: failed,
        idempotencyKey: undefined,
        orderingKey: undefined,
        fields: {},
        durationMs: 0,
      } as DeliveryResult;
    });
  },
}));

const { settleKafkaDeliveries, kafkaRetryRun } = await import('../../packages/idempotent-consumer/src/batch/kafkaRetryPolicy.js');

function delivery(partition: number, offset: number): Delivery {
  const messageId = `orders-${partition}@${offset}`;
  return {
    messageId,
    body: '{}',
    scope: `partition:orders-${partition}`,
    attempts: { kind: 'log', sourceId: `kafka:${messageId}`, recordIdentity: `1:${messageId}`, source: 'test' },
    deadLetter: { source: 'test' },
  };
}

/** One execution environment's deps (the policy remembers per deps). */
function environment(config: Partial<RuntimeConfig> = {}) {
  const deps = {
    config: { maxAttempts: 5, sideEffectMinRemainingMs: 5_000, ...config },
    now: () => new Date(engine.now),
  } as unknown as ProcessDeliveriesDeps<unknown>;
  return { deps, policy: kafkaRetryRun(deps.config) };
}

/** An invocation of `timeoutMs` starting now, on the virtual clock. */
function invocation(timeoutMs: number) {
  const deadline = engine.now + timeoutMs;
  const sleeps: number[] = [];
  return {
    clock: { remainingTimeMs: () => Math.max(0, deadline - engine.now) },
    sleeps,
    sleep: async (ms: number) => {
      sleeps.push(ms);
      engine.now += ms;
    },
  };
}

const reportedIds = (settlement: { results: readonly DeliveryResult[]; held: readonly Delivery[] }) => [
  ...settlement.results.filter((r) => r.reported).map((r) => r.delivery.messageId),
  ...settlement.held.map((d) => d.messageId),
];

beforeEach(() => {
  engine.calls = [];
  engine.now = 1_000_000;
  engine.fails = () => false;
});

describe('settleKafkaDeliveries', () => {
  it('without a delay runs the batch once and reports what failed, for the mapping to retry at once', async () => {
    const { deps, policy } = environment();
    engine.fails = (d) => d.messageId === 'orders-0@1';
    const run = invocation(60_000);
    const settlement = await settleKafkaDeliveries([delivery(0, 0), delivery(0, 1), delivery(0, 2)], deps, run.clock, policy, run.sleep);
    expect(engine.calls).toHaveLength(1);
    expect(run.sleeps).toEqual([]);
    expect(reportedIds(settlement)).toEqual(['orders-0@1', 'orders-0@2']);
  });

  it('with a delay tries the failing partition again from its failed record, and the others only once', async () => {
    const { deps, policy } = environment({ kafkaRetryDelaySeconds: 30 });
    const outageEnds = engine.now + 45_000;
    engine.fails = (d, at) => d.messageId === 'orders-0@1' && at < outageEnds;
    const run = invocation(120_000);
    const settlement = await settleKafkaDeliveries(
      [delivery(0, 0), delivery(0, 1), delivery(0, 2), delivery(1, 0)],
      deps,
      run.clock,
      policy,
      run.sleep,
    );
    expect(engine.calls.map((c) => c.messageIds)).toEqual([
      ['orders-0@0', 'orders-0@1', 'orders-0@2', 'orders-1@0'],
      ['orders-0@1', 'orders-0@2'],
      ['orders-0@1', 'orders-0@2'],
    ]);
    expect(run.sleeps).toEqual([30_000, 30_000]);
    expect(reportedIds(settlement)).toEqual([]);
    // One result per delivery, the input's own objects, in order.
    expect(settlement.results.map((r) => r.delivery.messageId)).toEqual(['orders-0@0', 'orders-0@1', 'orders-0@2', 'orders-1@0']);
  });

  it('reports the failure when the next wait does not fit, without another attempt; the retry waits the rest of the delay', async () => {
    const { deps, policy } = environment({ kafkaRetryDelaySeconds: 30 });
    engine.fails = (d) => d.messageId === 'orders-0@0';
    const started = engine.now;
    const first = invocation(40_000);
    const settlement = await settleKafkaDeliveries([delivery(0, 0), delivery(1, 0)], deps, first.clock, policy, first.sleep);
    // Attempts at 0 and 30 s; at 30 s, 10 s are left: a 30 s wait does not fit. Two attempts, two runs.
    expect(engine.calls.map((c) => [c.messageIds, c.at - started])).toEqual([
      [['orders-0@0', 'orders-1@0'], 0],
      [['orders-0@0'], 30_000],
    ]);
    expect(reportedIds(settlement)).toEqual(['orders-0@0']);

    // The mapping retries at once, in this environment: too little time for the rest of the delay (30 s).
    engine.calls = [];
    const second = invocation(20_000);
    const held = await settleKafkaDeliveries([delivery(0, 0), delivery(1, 1)], deps, second.clock, policy, second.sleep);
    expect(engine.calls.map((c) => c.messageIds)).toEqual([['orders-1@1']]);
    expect(held.held.map((d) => d.messageId)).toEqual(['orders-0@0']);
    expect(reportedIds(held)).toEqual(['orders-0@0']);
    expect(second.sleeps).toEqual([]);

    // With time enough, the retry waits the rest of the delay, then tries the record: 30 s after the last attempt.
    engine.calls = [];
    engine.fails = () => false;
    const third = invocation(60_000);
    const done = await settleKafkaDeliveries([delivery(0, 0)], deps, third.clock, policy, third.sleep);
    expect(third.sleeps).toEqual([30_000]);
    expect(engine.calls.map((c) => [c.messageIds, c.at - started])).toEqual([[['orders-0@0'], 60_000]]);
    expect(reportedIds(done)).toEqual([]);

    // Another execution environment does not know the record: it tries at once.
    engine.calls = [];
    const other = environment({ kafkaRetryDelaySeconds: 30 });
    const fourth = invocation(60_000);
    engine.fails = (d) => d.messageId === 'orders-2@0';
    await settleKafkaDeliveries([delivery(2, 0)], deps, fourth.clock, policy, fourth.sleep);
    engine.calls = [];
    const fifth = invocation(60_000);
    engine.fails = () => false;
    await settleKafkaDeliveries([delivery(2, 0)], other.deps, fifth.clock, other.policy, fifth.sleep);
    expect(fifth.sleeps).toEqual([]);
  });

  it('until success lifts the attempt cap for the engine, only on this path', async () => {
    const { deps, policy } = environment({ kafkaRetryDelaySeconds: 1, kafkaRetryUntilSuccess: true });
    const run = invocation(60_000);
    await settleKafkaDeliveries([delivery(0, 0)], deps, run.clock, policy, run.sleep);
    expect(engine.calls.map((c) => c.maxAttempts)).toEqual([Number.POSITIVE_INFINITY]);
    expect(deps.config.maxAttempts).toBe(5);
  });

  it('stops waiting at the deadline it saw at the start, also when the context does not count down', async () => {
    const { deps, policy } = environment({ kafkaRetryDelaySeconds: 30 });
    engine.fails = () => true;
    const sleeps: number[] = [];
    const settlement = await settleKafkaDeliveries([delivery(0, 0)], deps, { remainingTimeMs: () => 100_000 }, policy, async (ms) => {
      sleeps.push(ms);
      engine.now += ms;
    });
    expect(sleeps).toEqual([30_000, 30_000, 30_000]);
    expect(reportedIds(settlement)).toEqual(['orders-0@0']);
  });
});
