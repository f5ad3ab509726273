/**
 * The consumer's Kafka retry policy (`kafka.retry` in the settings): a delay between the attempts
 * of a record that failed retryably, waited within the invocation with its partition held, and
 * "retry until it succeeds". The engine settles each pass; this module decides when a partition
 * is tried again and when it is left to the event source mapping.
 *
 * @module
 */
import type { RuntimeConfig } from '../config/runtimeConfig.js';
import type { Delivery, DeliveryResult } from '../engine/Delivery.js';
import { processDeliveries, type ProcessDeliveriesDeps } from '../engine/processDeliveries.js';
import type { InvocationClock } from '../engine/Unit.js';

/** The retry policy a Kafka invocation runs with, read from the runtime configuration. */
export interface KafkaRetryRun {
  /** Wait between two attempts of a record that failed retryably, in milliseconds; 0: report it at once. */
  readonly delayMs: number;
  /** No attempt cap for retryable failures (never `RetriesExhausted`). */
  readonly untilSuccess: boolean;
  /**
   * Time an attempt needs after a wait, in milliseconds: a wait that would leave less of the
   * invocation is not started, and the failure is reported instead (`sideEffectMinRemainingMs`:
   * an inline side effect does not start with less).
   */
  readonly marginMs: number;
}

/** The policy of a consumer's configuration (`KAFKA_RETRY_DELAY_SECONDS`, `KAFKA_RETRY_UNTIL_SUCCESS`). */
export function kafkaRetryRun(config: RuntimeConfig): KafkaRetryRun {
  return {
    delayMs: Math.max(0, config.kafkaRetryDelaySeconds ?? 0) * 1000,
    untilSuccess: config.kafkaRetryUntilSuccess === true,
    marginMs: config.sideEffectMinRemainingMs,
  };
}

/** What {@link settleKafkaDeliveries} leaves to report. */
export interface KafkaSettlement {
  /** The last result of every delivery that ran in this invocation (a retried one: its last attempt's). */
  readonly results: readonly DeliveryResult[];
  /**
   * Deliveries of partitions that did not run at all in this invocation: their record failed in an
   * earlier invocation of this execution environment less than the delay ago, and the rest of the
   * delay did not fit in this one. They are reported, unrun and not counted.
   */
  readonly held: readonly Delivery[];
}

/** Most records an execution environment remembers the next attempt time of. */
const MAX_REMEMBERED = 10_000;

/**
 * Per execution environment (its deps), when a record that failed retryably may be tried again,
 * in epoch milliseconds: so that the mapping's retry, which comes at once after an invocation that
 * ran out of time, waits the rest of the delay instead of trying at once. Another environment does
 * not know it and tries at once (an early attempt, counted as any other).
 */
const nextAttempts = new WeakMap<object, Map<string, number>>();

function rememberedOf(deps: object): Map<string, number> {
  let remembered = nextAttempts.get(deps);
  if (remembered === undefined) {
    remembered = new Map();
    nextAttempts.set(deps, remembered);
  }
  return remembered;
}

function recordKey(delivery: Delivery): string {
  const attempts = delivery.attempts;
  return attempts.kind === 'log' ? `${attempts.sourceId}|${attempts.recordIdentity}` : attempts.sourceId;
}

/**
 * Settles a Kafka batch's deliveries with the engine, under the retry policy:
 *
 * - **no delay** (`delayMs` 0): one pass; what must come back is reported, and the mapping retries
 *   it at once;
 * - **a delay**: a partition whose first reported record failed retryably is tried again, from that
 *   record on, after `delayMs`, within this invocation, as long as the invocation's remaining time
 *   after the wait is at least `marginMs`; the other partitions' results stand. When the next wait
 *   does not fit, the partitions still failing are reported and the mapping retries them; this
 *   execution environment remembers when their record may be tried again, so that a retry it
 *   receives first waits the rest of the delay (the other partitions of that batch run at once).
 *   Each real attempt is counted once in the attempt log (by the engine); a report without a new
 *   attempt counts nothing;
 * - **until success**: retryable failures have no `maxAttempts` cap (never `RetriesExhausted`);
 *   non-retryable ones are dead-lettered at once, as always.
 *
 * @param deliveries - the batch's deliveries, partition by partition in offset order (`kafkaDeliveries`)
 * @param sleep - waits the given milliseconds (a test's virtual clock advances here)
 * @returns the last result of each delivery that ran, and the deliveries held unrun; never rejects
 */
export async function settleKafkaDeliveries<Event>(
  deliveries: readonly Delivery[],
  deps: ProcessDeliveriesDeps<Event>,
  clock: InvocationClock,
  policy: KafkaRetryRun,
  sleep: (ms: number) => Promise<void>,
): Promise<KafkaSettlement> {
  const runDeps: ProcessDeliveriesDeps<Event> = policy.untilSuccess
    ? { ...deps, config: { ...deps.config, maxAttempts: Number.POSITIVE_INFINITY } }
    : deps;
  if (policy.delayMs <= 0) return { results: await processDeliveries(deliveries, runDeps, clock), held: [] };

  const remembered = rememberedOf(deps);
  const nowMs = () => deps.now().getTime();
  // Each partition's deliveries still to settle, and when they may run.
  const pending = new Map<string, Delivery[]>();
  for (const delivery of deliveries) {
    const scope = delivery.scope ?? delivery.messageId;
    pending.set(scope, [...(pending.get(scope) ?? []), delivery]);
  }
  const dueAt = new Map<string, number>();
  for (const [scope, scoped] of pending) {
    const due = remembered.get(recordKey(scoped[0]!));
    if (due !== undefined) dueAt.set(scope, due);
  }
  const last = new Map<Delivery, DeliveryResult>();
  // The invocation's deadline on `deps.now`'s clock too, so that a clock whose remaining time does
  // not run down (a test's context) cannot keep an invocation waiting for ever.
  const deadline = nowMs() + clock.remainingTimeMs();

  for (;;) {
    const now = nowMs();
    const ready = [...pending.keys()].filter((scope) => (dueAt.get(scope) ?? 0) <= now);
    if (ready.length > 0) {
      const run = ready.flatMap((scope) => pending.get(scope) ?? []);
      // One result per delivery, in order (the result's delivery may be a copy: with a trace header).
      const results = await processDeliveries(run, runDeps, clock);
      const failedAt = nowMs();
      for (const scope of ready) {
        pending.delete(scope);
        dueAt.delete(scope);
      }
      run.forEach((delivery, index) => {
        const result = results[index]!;
        last.set(delivery, result);
        const scope = delivery.scope ?? delivery.messageId;
        if (!result.reported) {
          remembered.delete(recordKey(delivery));
          return;
        }
        // The reported records of a partition are its first failed one and every later one.
        if (!pending.has(scope)) {
          dueAt.set(scope, failedAt + policy.delayMs);
          remember(remembered, recordKey(delivery), failedAt + policy.delayMs);
        }
        pending.set(scope, [...(pending.get(scope) ?? []), delivery]);
      });
    }
    if (pending.size === 0) break;
    const next = Math.min(...[...pending.keys()].map((scope) => dueAt.get(scope) ?? 0));
    const wait = Math.max(0, next - nowMs());
    const remainingMs = Math.min(clock.remainingTimeMs(), deadline - nowMs());
    if (wait > remainingMs - policy.marginMs) break;
    deps.logger?.debug('waiting before trying failed Kafka records again', {
      waitMs: wait,
      partitions: [...pending.keys()].filter((scope) => (dueAt.get(scope) ?? 0) <= next),
    });
    if (wait > 0) await sleep(wait);
  }

  const held = [...pending.values()].flat().filter((delivery) => !last.has(delivery));
  return { results: deliveries.flatMap((delivery) => last.get(delivery) ?? []), held };
}

function remember(remembered: Map<string, number>, key: string, due: number): void {
  remembered.delete(key);
  remembered.set(key, due);
  while (remembered.size > MAX_REMEMBERED) {
    const oldest = remembered.keys().next().value;
    if (oldest === undefined) break;
    remembered.delete(oldest);
  }
}
