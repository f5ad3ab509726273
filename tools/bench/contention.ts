/**
 * The contention scenario: 1, 4 and 16 execution environments drain one standard queue at once,
 * on Zipf-distributed ordering keys (a few hot orders), engine and baseline side by side.
 *
 * **The contention model.** The café writes nothing that orders share (an order's state, its
 * ledger entries and its notifications are items of that order alone), so what is hot is the
 * order: each message draws its `orderId` from a Zipf law (rank `k` with weight `1 / k^s`). An
 * order's first four messages are its lifecycle, in the order a producer emits it
 * (`OrderPlaced`, `OrderPaid`, `OrderShipped`, `OrderDelivered`); every later message of the
 * order is a producer's re-send of one of those events (same `eventId`, same body, a new message
 * id), as a producer that retries sends it. Every message is valid: each distinct event must be
 * applied once, every re-send acknowledged as a duplicate, and none dead-lettered. Environments
 * that hold messages of one hot order at the same time contend on that order's items: the same
 * order item (and inbox row) written by two transactions at once, a successor read before its
 * predecessor committed.
 *
 * **AWS's conflicts.** DynamoDB Local serializes overlapping transactions and never answers
 * `TransactionConflict`; each environment's DynamoDB client here sits behind the local runtime's
 * strict DynamoDB layer (`installStrictDynamoDb`), which raises AWS's conflicts between requests
 * in flight at the same moment (a transaction cancelled with reason `TransactionConflict`, a
 * single-item write of an item in a transaction refused with `TransactionConflictException`).
 *
 * **Not modeled.** The queue brings a failed message back after what is queued (not after its
 * visibility timeout or the engine's `ChangeMessageVisibility` backoff), and the environments
 * share one process and one DynamoDB Local, so an invocation's duration includes waiting for the
 * others: summed invocation time grows with the environments on both sides alike.
 *
 * Figures per side and environment count:
 * - **goodput**: messages that ended applied or acknowledged as duplicates, per second of summed
 *   invocation time (what Lambda bills), per invocation, and per second of wall time;
 * - cancelled transactions, refused conditional writes and redeliveries (the queue's deliveries
 *   minus the messages) per message; batch item failures by reason (the engine's failure reason,
 *   the baseline's error name); what parking did (the engine's: parked, settled from the park,
 *   deleted from the queue by receipt handle);
 * - DynamoDB capacity units and US dollars per million messages (`capacity.ts`);
 * - **false dead letters**: dead letters of these valid messages, by reason (the engine's
 *   `RetriesExhausted`, `TransactionConflict`, …; `redrive` for the queue's redrive policy, the
 *   baseline's only way to dead-letter).
 *
 * @module
 */
import type { SQSBatchResponse } from 'aws-lambda';
import { ConflictTracker, createLambdaContext } from '@idempotent-consumer/local/internal';
import { usdPerMillionMessages } from './capacity.js';
import { assumedLatencyMs } from './latencyModel.js';
import { criticalPath } from './roundTrips.js';
import { Tally } from './RequestMeter.js';
import { type DeliveryCounts, emptyCounts, type SeparateEnvironment, type Side, SideName, type Sides } from './sides.js';
import { type QueuedMessage, SimulatedQueue } from './SimulatedQueue.js';
import { seededRandom, zipfSampler } from './zipf.js';

/** The scenario's defaults. */
export const CONTENTION_DEFAULTS = {
  /** Messages per run. */
  messages: 600,
  /** Execution environments draining the queue at once, one run per count. */
  environments: [1, 4, 16],
  /** The event source mapping's batch size. */
  batchSize: 10,
  /** The Zipf law's exponent `s`. */
  exponent: 1.1,
  /** Ordering keys (orders) per message: `messages × keysPerMessage` orders to draw from. */
  keysPerMessage: 0.25,
  /** The workload's seed. */
  seed: 19,
} as const;

/** The lifecycle of a hot order: its first messages, in the producer's order. */
export const LIFECYCLE = ['OrderPlaced', 'OrderPaid', 'OrderShipped', 'OrderDelivered'] as const;

/** The dead-letter reason given to a message moved by the queue's redrive policy. */
export const REDRIVE_REASON = 'redrive';

/** One run's messages and what they must end as. */
export interface ContentionWorkload {
  readonly messages: readonly QueuedMessage[];
  /** Orders (ordering keys) drawn from. */
  readonly keys: number;
  /** Orders that received at least one message. */
  readonly orders: number;
  /** Distinct events (idempotency keys): each must be applied once; the other messages are re-sends. */
  readonly distinctEvents: number;
  /** Share of the messages that the hottest order received. */
  readonly hottestOrderShare: number;
  /** Share of the messages that the hottest 10 % of the orders drawn from received. */
  readonly hottestTenthShare: number;
}

/** Options of {@link contentionMessages}. */
export interface ContentionWorkloadOptions {
  /** Orders to draw from. @default messages × {@link CONTENTION_DEFAULTS.keysPerMessage}, at least 1 */
  readonly keys?: number;
  /** @default {@link CONTENTION_DEFAULTS.exponent} */
  readonly exponent?: number;
  /** @default {@link CONTENTION_DEFAULTS.seed} */
  readonly seed?: number;
}

const at = (minute: number) => new Date(Date.UTC(2026, 0, 1, 12, minute)).toISOString();

/**
 * The messages of one contention run (see the module comment): deterministic for a prefix,
 * count and options.
 *
 * @param prefix - unique per run: every order id, event id and message id starts with it
 * @param count - messages
 * @throws RangeError for a count or key count below 1, or a negative exponent
 */
export function contentionMessages(prefix: string, count: number, options: ContentionWorkloadOptions = {}): ContentionWorkload {
  if (!Number.isSafeInteger(count) || count < 1) throw new RangeError(`count must be a positive integer, not ${count}`);
  const keys = options.keys ?? Math.max(1, Math.round(count * CONTENTION_DEFAULTS.keysPerMessage));
  const draw = zipfSampler(keys, options.exponent ?? CONTENTION_DEFAULTS.exponent, seededRandom(options.seed ?? CONTENTION_DEFAULTS.seed));
  const perOrder = new Map<number, number>();
  const messages: QueuedMessage[] = [];
  for (let i = 0; i < count; i += 1) {
    const rank = draw();
    const sent = perOrder.get(rank) ?? 0;
    perOrder.set(rank, sent + 1);
    const step = sent % LIFECYCLE.length;
    const type = LIFECYCLE[step]!;
    const orderId = `${prefix}-order-${rank}`;
    const eventId = `${orderId}-${type}`;
    messages.push({
      messageId: `${prefix}-message-${i}`,
      body: JSON.stringify({ eventId, type, orderId, occurredAt: at(step), ...(type === 'OrderPaid' ? { points: 10 + (rank % 50) } : {}) }),
    });
  }
  const counts = [...perOrder.values()].sort((a, b) => b - a);
  const tenth = Math.max(1, Math.round(keys / 10));
  return {
    messages,
    keys,
    orders: perOrder.size,
    distinctEvents: counts.reduce((sum, n) => sum + Math.min(n, LIFECYCLE.length), 0),
    hottestOrderShare: (counts[0] ?? 0) / count,
    hottestTenthShare: counts.slice(0, tenth).reduce((a, b) => a + b, 0) / count,
  };
}

/** One side's run at one environment count. */
export interface ContentionRun {
  readonly side: SideName;
  readonly environments: number;
  readonly batchSize: number;
  readonly messages: number;
  readonly distinctEvents: number;
  readonly invocations: number;
  /** Sum of the invocations' durations, in milliseconds. */
  readonly handlerMs: number;
  /** From the first receive to the last settle, in milliseconds. */
  readonly wallMs: number;
  /** Sequential DynamoDB and SQS round trips on the invocations' critical paths (`roundTrips.ts`), summed. */
  readonly roundTrips: number;
  /**
   * The invocations' modeled duration, summed, in milliseconds: each critical path at the assumed
   * AWS latencies (`latencyModel.ts`) plus the waits the consumer chose (the engine's backoff
   * after a contended commit); CPU time is left out on both sides.
   */
  readonly modeledMs: number;
  /** The part of {@link modeledMs} the consumer spent waiting of its own accord, in milliseconds. */
  readonly waitedMs: number;
  readonly tally: Tally;
  readonly counts: DeliveryCounts;
  /** Moved to the dead-letter queue by the redrive policy. */
  readonly redriven: number;
  /** Deliveries in all: first deliveries and redeliveries (the queue's count). */
  readonly deliveries: number;
  /** Messages the consumer deleted from the queue with the receipt handle of their latest receive (parked messages settled from the park). */
  readonly deletedByReceiptHandle: number;
}

/** The function timeout the invocations get, in seconds (the settings' default). */
const FUNCTION_TIMEOUT_SECONDS = 30;

/**
 * Drains `messages` with `handlers.length` execution environments at once: each takes the next
 * batch visible, invokes its handler, settles the batch (failures come back), and takes the
 * next, until the queue is empty; an environment that finds nothing visible waits for a batch in
 * flight to settle.
 */
async function drainConcurrently(
  side: Side,
  environments: readonly SeparateEnvironment[],
  messages: readonly QueuedMessage[],
  batchSize: number,
  queueArn: string,
): Promise<{
  invocations: number;
  handlerMs: number;
  wallMs: number;
  roundTrips: number;
  modeledMs: number;
  waitedMs: number;
  redriven: number;
  deliveries: number;
  deletedByReceiptHandle: number;
}> {
  const queue = new SimulatedQueue(messages, { queueArn, maxReceiveCount: side.maxReceiveCount });
  side.simulatedQueues.add(queue);
  try {
    const result = await drainQueueConcurrently(side, environments, queue, batchSize);
    const { deliveries, deletedByReceiptHandle } = queue.totals;
    return { ...result, deliveries, deletedByReceiptHandle };
  } finally {
    side.simulatedQueues.delete(queue);
  }
}

async function drainQueueConcurrently(
  side: Side,
  environments: readonly SeparateEnvironment[],
  queue: SimulatedQueue,
  batchSize: number,
): Promise<{
  invocations: number;
  handlerMs: number;
  wallMs: number;
  roundTrips: number;
  modeledMs: number;
  waitedMs: number;
  redriven: number;
}> {
  let waiting: (() => void)[] = [];
  const wake = () => {
    const woken = waiting;
    waiting = [];
    for (const resume of woken) resume();
  };
  let invocations = 0;
  let handlerMs = 0;
  let redriven = 0;
  let roundTrips = 0;
  let modeledMs = 0;
  let waitedMs = 0;
  const started = performance.now();
  const environment = async ({ handler, meter, waits }: SeparateEnvironment, index: number) => {
    while (!queue.isEmpty) {
      if (queue.visibleCount === 0) {
        await new Promise<void>((resolve) => waiting.push(resolve));
        continue;
      }
      const batch = queue.receiveBatch(batchSize);
      const context = createLambdaContext({
        functionName: `benchmark-${side.name}`,
        region: 'us-east-1',
        accountId: '000000000000',
        timeoutSeconds: FUNCTION_TIMEOUT_SECONDS,
        memorySizeMb: 1024,
        logStreamName: `benchmark-contention-${index}`,
      });
      const intervals: NonNullable<typeof meter.intervals> = [];
      meter.intervals = intervals;
      const waitedBefore = waits.ms;
      const invoked = performance.now();
      let response: SQSBatchResponse | undefined;
      try {
        response = await handler({ Records: batch.records }, context);
      } catch {
        response = undefined; // an invocation error: Lambda returns every record of the batch to the queue
      }
      handlerMs += performance.now() - invoked;
      meter.intervals = undefined;
      const path = criticalPath(intervals, assumedLatencyMs);
      roundTrips += path.roundTrips;
      modeledMs += path.modeledMs + (waits.ms - waitedBefore);
      waitedMs += waits.ms - waitedBefore;
      invocations += 1;
      const failed = new Set(
        response === undefined ? batch.records.map((r) => r.messageId) : response.batchItemFailures.map((f) => f.itemIdentifier),
      );
      redriven += batch.settle(failed).length;
      wake();
    }
    wake();
  };
  await Promise.all(environments.map((env, index) => environment(env, index)));
  return { invocations, handlerMs, wallMs: performance.now() - started, roundTrips, modeledMs, waitedMs, redriven };
}

/** Options of {@link runContention}. */
export interface RunContentionOptions {
  /** Messages per run. */
  readonly messages: number;
  /** Environment counts, one run per count and side. */
  readonly environments: readonly number[];
  readonly batchSize: number;
  /** Progress lines. */
  readonly log: (line: string) => void;
}

/**
 * Runs the scenario at each environment count, engine then baseline (interleaved, as the other
 * scenarios are), each run on orders of its own and with environments of its own.
 *
 * @returns every run, in the order they ran
 */
export async function runContention(sides: Sides, options: RunContentionOptions): Promise<ContentionRun[]> {
  const runs: ContentionRun[] = [];
  for (const environments of options.environments) {
    for (const side of [sides.engine, sides.baseline]) {
      const workload = contentionMessages(`contention-e${environments}-${side.name[0]}`, options.messages);
      const conflictTracker = new ConflictTracker();
      const tally = new Tally();
      const separate = Array.from({ length: environments }, () => {
        const environment = side.newEnvironment(conflictTracker);
        environment.meter.tally = tally;
        return environment;
      });
      side.counts = emptyCounts();
      const result = await drainConcurrently(side, separate, workload.messages, options.batchSize, sides.queueArn);
      for (const environment of separate) environment.meter.enabled = false;
      const run: ContentionRun = {
        side: side.name,
        environments,
        batchSize: options.batchSize,
        messages: workload.messages.length,
        distinctEvents: workload.distinctEvents,
        tally,
        counts: side.counts,
        ...result,
      };
      runs.push(run);
      const figures = contentionSideFigures(run);
      options.log(
        `  contention ${String(environments).padStart(2)} environment(s) ${side.name.padEnd(8)} ` +
          `goodput ${figures.goodputPerSecond.toFixed(1)} msg/s measured, ${figures.modeledGoodputPerSecond.toFixed(0)} modeled, ${figures.goodputPerInvocation.toFixed(2)} per invocation, ` +
          `${figures.cancelledTransactionsPerMessage.toFixed(3)} cancelled transactions/msg, ${figures.redeliveriesPerMessage.toFixed(3)} redeliveries/msg, ` +
          `${figures.falseDeadLetters} false dead letters`,
      );
    }
  }
  return runs;
}

/** One side's figures at one environment count. */
export interface ContentionSideFigures {
  readonly invocations: number;
  /** Summed invocation time, in seconds. */
  readonly invocationSeconds: number;
  /** Wall time of the run, in seconds. */
  readonly wallSeconds: number;
  readonly applied: number;
  readonly duplicate: number;
  /** Messages that ended applied or acknowledged as duplicates, per second of summed invocation time. */
  readonly goodputPerSecond: number;
  /** The same per invocation. */
  readonly goodputPerInvocation: number;
  /** The same per second of wall time. */
  readonly wallGoodputPerSecond: number;
  /** The same per second of modeled invocation time ({@link ContentionRun.modeledMs}): what AWS's latencies would give, not this machine's. */
  readonly modeledGoodputPerSecond: number;
  /** Sequential round trips per invocation, mean. */
  readonly roundTripsPerInvocation: number;
  /** Modeled duration per invocation, in milliseconds, mean. */
  readonly modeledMsPerInvocation: number;
  /** The consumer's own waits per invocation (part of the modeled duration), in milliseconds, mean. */
  readonly waitedMsPerInvocation: number;
  /** `TransactWriteItems` (and `TransactGetItems`) cancelled, per message. */
  readonly cancelledTransactionsPerMessage: number;
  /** Single-item writes refused by their condition, per message. */
  readonly failedConditionsPerMessage: number;
  /** Redeliveries per message: the queue's deliveries minus the messages, ÷ the messages. */
  readonly redeliveriesPerMessage: number;
  /** Deliveries reported as batch item failures, per message (each comes back, unless parked and taken up from the park). */
  readonly retriedPerMessage: number;
  /**
   * Batch item failures per message by reason: the engine's failure reason (`<reason>, parked` for
   * a parked one), the baseline's error name.
   */
  readonly redeliveriesByReason: Readonly<Record<string, number>>;
  /** Deliveries parked, per message (the engine's, with parking on). */
  readonly parkedPerMessage: number;
  /** Messages settled from the park, per message. */
  readonly fromParkPerMessage: number;
  /** Messages the consumer deleted from the queue by receipt handle, per message. */
  readonly deletedByReceiptHandlePerMessage: number;
  /** Duplicates of a message already settled (taken up from the park while received again), per message: `DeliveryCounts.settledAgain`. */
  readonly settledAgainPerMessage: number;
  readonly dynamoDbRequestsPerMessage: number;
  readonly readUnitsPerMessage: number;
  readonly writeUnitsPerMessage: number;
  /** DynamoDB on demand, US dollars per million messages (us-east-1, `capacity.ts`). */
  readonly usdPerMillion: number;
  /** Dead letters of these valid messages (every message of the scenario is valid). */
  readonly falseDeadLetters: number;
  /** The same by reason; {@link REDRIVE_REASON} for the queue's redrive policy. */
  readonly falseDeadLettersByReason: Readonly<Record<string, number>>;
}

const round = (n: number, digits = 3): number => (Number.isFinite(n) ? Number(n.toFixed(digits)) : n);

/** The figures of one run (pure: from the run's counts and tally). */
export function contentionSideFigures(run: ContentionRun): ContentionSideFigures {
  const { counts, tally, messages } = run;
  const good = counts.applied + counts.duplicate;
  const byReason: Record<string, number> = { ...counts.deadLetterReasons };
  if (run.redriven > 0) byReason[REDRIVE_REASON] = (byReason[REDRIVE_REASON] ?? 0) + run.redriven;
  const perMessage = (n: number) => round(n / messages);
  return {
    invocations: run.invocations,
    invocationSeconds: round(run.handlerMs / 1000, 2),
    wallSeconds: round(run.wallMs / 1000, 2),
    applied: counts.applied,
    duplicate: counts.duplicate,
    goodputPerSecond: round((good * 1000) / run.handlerMs, 1),
    goodputPerInvocation: round(good / run.invocations, 2),
    wallGoodputPerSecond: round((good * 1000) / run.wallMs, 1),
    modeledGoodputPerSecond: round((good * 1000) / run.modeledMs, 1),
    roundTripsPerInvocation: round(run.roundTrips / run.invocations, 2),
    modeledMsPerInvocation: round(run.modeledMs / run.invocations, 1),
    waitedMsPerInvocation: round(run.waitedMs / run.invocations, 1),
    cancelledTransactionsPerMessage: perMessage(tally.cancelledTransactions),
    failedConditionsPerMessage: perMessage(tally.failedConditions),
    redeliveriesPerMessage: perMessage(run.deliveries - messages),
    retriedPerMessage: perMessage(counts.retried),
    parkedPerMessage: perMessage(counts.parked),
    fromParkPerMessage: perMessage(counts.fromPark),
    deletedByReceiptHandlePerMessage: perMessage(run.deletedByReceiptHandle),
    settledAgainPerMessage: perMessage(counts.settledAgain),
    redeliveriesByReason: Object.fromEntries(
      Object.entries(counts.retryReasons)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([reason, n]) => [reason, perMessage(n)]),
    ),
    dynamoDbRequestsPerMessage: perMessage(tally.dynamoDbRequests),
    readUnitsPerMessage: perMessage(tally.readUnits),
    writeUnitsPerMessage: perMessage(tally.writeUnits),
    usdPerMillion: round(usdPerMillionMessages(tally.readUnits / messages, tally.writeUnits / messages), 2),
    falseDeadLetters: counts.deadLettered + run.redriven,
    falseDeadLettersByReason: byReason,
  };
}

/** One environment count, both sides. */
export interface ContentionFigures {
  readonly environments: number;
  readonly engine: ContentionSideFigures;
  readonly baseline: ContentionSideFigures;
  /** The engine's goodput per second of invocation time ÷ the baseline's. */
  readonly goodputRatioToBaseline: number;
  /** The engine's modeled goodput ÷ the baseline's. */
  readonly modeledGoodputRatioToBaseline: number;
  /** Why the outcomes are not the ones the scenario must end in; empty when they are. */
  readonly problems: readonly string[];
}

/** What the JSON reports under `contention`. */
export interface ContentionReport {
  readonly model: string;
  readonly batchSize: number;
  readonly messages: number;
  readonly zipf: { readonly keys: number; readonly exponent: number; readonly seed: number };
  readonly orders: number;
  readonly distinctEvents: number;
  readonly hottestOrderShare: number;
  readonly hottestTenthShare: number;
  readonly results: readonly ContentionFigures[];
}

/**
 * The problems of one run: a message that did not settle, an event applied more than once, and,
 * for the engine, any false dead letter (the engine promises none; the baseline's are a figure).
 */
export function contentionProblems(run: ContentionRun): string[] {
  const { counts } = run;
  const problems: string[] = [];
  const settled = counts.applied + counts.duplicate + counts.deadLettered + run.redriven;
  if (settled !== run.messages)
    problems.push(
      `${run.side}@${run.environments}: ${settled} of ${run.messages} messages settled (applied ${counts.applied}, duplicate ${counts.duplicate}, dead-lettered ${counts.deadLettered}, redriven ${run.redriven})`,
    );
  if (counts.applied > run.distinctEvents)
    problems.push(`${run.side}@${run.environments}: ${counts.applied} messages applied for ${run.distinctEvents} distinct events`);
  const falseDeadLetters = counts.deadLettered + run.redriven;
  if (run.side === SideName.Engine && falseDeadLetters > 0) {
    const reasons = Object.entries(contentionSideFigures(run).falseDeadLettersByReason)
      .map(([reason, n]) => `${reason} ${n}`)
      .join(', ');
    problems.push(`engine@${run.environments}: ${falseDeadLetters} valid messages dead-lettered (${reasons})`);
  }
  return problems;
}

/** The report of the runs (both sides at each environment count, in the order of `environments`). */
export function contentionReport(runs: readonly ContentionRun[], environments: readonly number[]): ContentionReport {
  const messages = runs[0]?.messages ?? 0;
  const workload = contentionMessages('x', Math.max(1, messages));
  const results: ContentionFigures[] = [];
  for (const count of environments) {
    const engineRun = runs.find((r) => r.environments === count && r.side === SideName.Engine);
    const baselineRun = runs.find((r) => r.environments === count && r.side === SideName.Baseline);
    if (engineRun === undefined || baselineRun === undefined) continue;
    const engine = contentionSideFigures(engineRun);
    const baseline = contentionSideFigures(baselineRun);
    results.push({
      environments: count,
      engine,
      baseline,
      goodputRatioToBaseline: round(engine.goodputPerSecond / baseline.goodputPerSecond, 2),
      modeledGoodputRatioToBaseline: round(engine.modeledGoodputPerSecond / baseline.modeledGoodputPerSecond, 2),
      problems: [...contentionProblems(engineRun), ...contentionProblems(baselineRun)],
    });
  }
  return {
    model:
      'standard queue; orderId drawn from a Zipf law; an order’s first 4 messages are its lifecycle, later ones producer re-sends; every message valid',
    batchSize: runs[0]?.batchSize ?? CONTENTION_DEFAULTS.batchSize,
    messages,
    zipf: { keys: workload.keys, exponent: CONTENTION_DEFAULTS.exponent, seed: CONTENTION_DEFAULTS.seed },
    orders: workload.orders,
    distinctEvents: workload.distinctEvents,
    hottestOrderShare: round(workload.hottestOrderShare),
    hottestTenthShare: round(workload.hottestTenthShare),
    results,
  };
}

const pad = (text: string | number, width: number) => String(text).padStart(width);

/** The report's text section. */
export function formatContention(report: ContentionReport): string[] {
  const lines: string[] = [];
  lines.push('');
  lines.push(
    `Contention: ${report.messages} messages, batch ${report.batchSize}, on a standard queue drained by N execution environments at once ` +
      `(transaction conflicts as on AWS: the strict DynamoDB layer). orderId drawn from Zipf(s = ${report.zipf.exponent}) over ${report.zipf.keys} orders: ` +
      `the hottest order has ${Math.round(report.hottestOrderShare * 100)} % of the messages, the hottest tenth ${Math.round(report.hottestTenthShare * 100)} %; ` +
      `${report.distinctEvents} distinct events, the other ${report.messages - report.distinctEvents} messages producer re-sends; every message valid.`,
  );
  lines.push(
    'Goodput: messages applied or acknowledged as duplicates, per second of summed invocation time (measured here), per invocation, per second of',
  );
  lines.push(
    'modeled invocation time (round trips at the assumed AWS latencies + the consumer’s own waits). Per message: cancelled transactions, refused',
  );
  lines.push(
    'conditional writes, redeliveries, US$ per million (DynamoDB on demand); false dead letters (valid messages dead-lettered). engine | baseline.',
  );
  lines.push('');
  lines.push(
    `${pad('envs', 4)} │${pad('goodput/s measured', 26)} │${pad('per invocation', 14)} │${pad('goodput/s modeled', 25)} │` +
      `${pad('cancelled tx', 13)} │${pad('failed cond.', 13)} │${pad('redeliveries', 13)} │${pad('$/million', 13)} │${pad('false DLQ', 10)}`,
  );
  for (const r of report.results) {
    const both = (f: (s: ContentionSideFigures) => number, digits: number, width: number) =>
      `${pad(f(r.engine).toFixed(digits), width)}${pad(f(r.baseline).toFixed(digits), width)}`;
    lines.push(
      `${pad(r.environments, 4)} │${both((s) => s.goodputPerSecond, 1, 9)}${pad(`${r.goodputRatioToBaseline.toFixed(2)}×`, 8)} │` +
        `${both((s) => s.goodputPerInvocation, 2, 7)} │${both((s) => s.modeledGoodputPerSecond, 0, 8)}${pad(`${r.modeledGoodputRatioToBaseline.toFixed(2)}×`, 9)} │` +
        `${both((s) => s.cancelledTransactionsPerMessage, 3, 6)}${pad('', 1)} │${both((s) => s.failedConditionsPerMessage, 3, 6)}${pad('', 1)} │` +
        `${both((s) => s.redeliveriesPerMessage, 3, 6)}${pad('', 1)} │${both((s) => s.usdPerMillion, 2, 6)}${pad('', 1)} │${both((s) => s.falseDeadLetters, 0, 5)}`,
    );
  }
  const reasons = (m: Readonly<Record<string, number>>) =>
    Object.entries(m)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ') || 'none';
  for (const r of report.results) {
    lines.push(
      `  ${r.environments} environment(s): round trips/invocation ${r.engine.roundTripsPerInvocation} | ${r.baseline.roundTripsPerInvocation}; ` +
        `modeled ms/invocation ${r.engine.modeledMsPerInvocation} | ${r.baseline.modeledMsPerInvocation} (own waits ${r.engine.waitedMsPerInvocation} | ${r.baseline.waitedMsPerInvocation}); ` +
        `wall goodput ${r.engine.wallGoodputPerSecond} | ${r.baseline.wallGoodputPerSecond} msg/s; ` +
        `batch item failures/msg by reason ${reasons(r.engine.redeliveriesByReason)} | ${reasons(r.baseline.redeliveriesByReason)}; ` +
        `engine parked ${r.engine.parkedPerMessage}/msg, settled from the park ${r.engine.fromParkPerMessage}, deleted by receipt handle ${r.engine.deletedByReceiptHandlePerMessage}, settled again ${r.engine.settledAgainPerMessage}; ` +
        `false dead letters ${reasons(r.engine.falseDeadLettersByReason)} | ${reasons(r.baseline.falseDeadLettersByReason)}`,
    );
    for (const problem of r.problems) lines.push(`    UNEXPECTED ${problem}`);
  }
  return lines;
}
