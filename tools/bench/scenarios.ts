/**
 * The benchmark's scenarios: the messages each one delivers, the messages a setup delivers
 * first (through another execution environment, not counted), and the outcomes it must end in.
 *
 * Every id is prefixed with the run's own prefix, so that repetitions, batch sizes and the two
 * sides never touch each other's orders or idempotency keys.
 *
 * @module
 */
import type { QueuedMessage } from './SimulatedQueue.js';

/** The scenarios, in the order they run within a repetition (`duplicates` redelivers `fresh`). */
export const ScenarioName = {
  /** OrderPlaced of new orders: no read needed, no side effect. */
  Fresh: 'fresh',
  /** OrderPaid of orders placed by another execution environment: order + ledger, a guarded notification (and, in the engine, an outbox item). */
  FreshSideEffect: 'fresh-side-effect',
  /** The `fresh` messages delivered a second time (same message ids, receive count 2). */
  Duplicates: 'duplicates',
  /** The café's sample stream (`examples/cafe/samples/orders.jsonl`): duplicates, out-of-order events, poison; what fails comes back. */
  Mixed: 'mixed',
  /** OrderPlaced of new orders, 1 in 10 invalid (not JSON, no idempotency key, an unknown type, a schema violation). */
  Poison: 'poison',
  /**
   * 1, 4 and 16 execution environments at once on Zipf-distributed orders (`contention.ts`): run
   * once, after the others, at batch 10, whatever the repetitions and batch sizes.
   */
  Contention: 'contention',
} as const;
export type ScenarioName = (typeof ScenarioName)[keyof typeof ScenarioName];

export const ALL_SCENARIOS: readonly ScenarioName[] = [
  ScenarioName.Fresh,
  ScenarioName.Duplicates,
  ScenarioName.FreshSideEffect,
  ScenarioName.Mixed,
  ScenarioName.Poison,
  ScenarioName.Contention,
];

/** What a scenario's messages must end as, per message (each ends in exactly one). */
export interface ExpectedOutcomes {
  readonly applied?: number;
  readonly duplicate?: number;
  /** Dead-lettered by the consumer (the engine, with a reason) or moved by the queue's redrive policy (the baseline). */
  readonly dead?: number;
}

/** One scenario of one run. */
export interface ScenarioMessages {
  readonly name: ScenarioName;
  /** Delivered first through a setup environment; not measured. */
  readonly setup: readonly QueuedMessage[];
  readonly messages: readonly QueuedMessage[];
  /** `undefined` where only the totals can be checked (the sample stream). */
  readonly expected: ExpectedOutcomes | undefined;
}

const at = (minute: number) => new Date(Date.UTC(2026, 0, 1, 12, minute)).toISOString();

const placed = (prefix: string, i: number): QueuedMessage => ({
  messageId: `${prefix}-placed-${i}`,
  body: JSON.stringify({ eventId: `${prefix}-placed-${i}`, type: 'OrderPlaced', orderId: `${prefix}-order-${i}`, occurredAt: at(0) }),
});

/** The 1-in-10 invalid messages of `poison`, in turn: each is dead-lettered at once by the engine. */
const invalid = (prefix: string, i: number): string =>
  [
    'not-json',
    JSON.stringify({ type: 'OrderPlaced', orderId: `${prefix}-order-${i}`, occurredAt: at(0) }),
    JSON.stringify({ eventId: `${prefix}-refund-${i}`, type: 'OrderRefunded', orderId: `${prefix}-order-${i}`, occurredAt: at(0) }),
    JSON.stringify({ eventId: `${prefix}-bad-${i}`, type: 'OrderPlaced', orderId: `${prefix}-order-${i}`, occurredAt: 'yesterday' }),
  ][Math.floor(i / 10) % 4]!;

/**
 * The messages of one scenario.
 *
 * @param prefix - unique per run; `duplicates` must be given the prefix its `fresh` run had
 * @param count - messages of the scenario (ignored by `mixed`, which is the whole sample)
 * @param sample - the sample stream's bodies, for `mixed`
 */
export function scenarioMessages(name: ScenarioName, prefix: string, count: number, sample: readonly string[]): ScenarioMessages {
  const range = Array.from({ length: count }, (_, i) => i);
  switch (name) {
    case ScenarioName.Fresh:
      return { name, setup: [], messages: range.map((i) => placed(prefix, i)), expected: { applied: count } };
    case ScenarioName.Duplicates:
      return {
        name,
        setup: [],
        messages: range.map((i) => ({ ...placed(prefix, i), previousReceives: 1 })),
        expected: { duplicate: count },
      };
    case ScenarioName.FreshSideEffect:
      return {
        name,
        setup: range.map((i) => placed(prefix, i)),
        messages: range.map((i) => ({
          messageId: `${prefix}-paid-${i}`,
          body: JSON.stringify({
            eventId: `${prefix}-paid-${i}`,
            type: 'OrderPaid',
            orderId: `${prefix}-order-${i}`,
            occurredAt: at(1),
            points: 10 + (i % 50),
          }),
        })),
        expected: { applied: count },
      };
    case ScenarioName.Poison: {
      const poison = range.filter((i) => i % 10 === 9).length;
      return {
        name,
        setup: [],
        messages: range.map((i) => (i % 10 === 9 ? { messageId: `${prefix}-poison-${i}`, body: invalid(prefix, i) } : placed(prefix, i))),
        expected: { applied: count - poison, dead: poison },
      };
    }
    case ScenarioName.Contention:
      throw new Error('the contention scenario has messages of its own: contentionMessages in tools/bench/contention.ts');
    case ScenarioName.Mixed:
      return {
        name,
        setup: [],
        messages: sample.map((body, i) => ({ messageId: `${prefix}-sample-${i}`, body: withPrefix(body, prefix) })),
        expected: undefined,
      };
  }
}

/** A sample body with its `eventId` and `orderId` prefixed (bodies that are not JSON objects as they are). */
function withPrefix(body: string, prefix: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return body;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return body;
  const event = { ...(parsed as Record<string, unknown>) };
  for (const field of ['eventId', 'orderId']) {
    if (typeof event[field] === 'string') event[field] = `${prefix}-${event[field] as string}`;
  }
  return JSON.stringify(event);
}
