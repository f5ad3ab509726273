/**
 * Runs the scenarios on both sides, interleaved (engine, baseline, engine, …), and aggregates
 * each (scenario, batch size) over the repetitions.
 *
 * @module
 */
import type { SQSBatchResponse } from 'aws-lambda';
import { createLambdaContext } from '@idempotent-consumer/local/internal';
import { usdPerMillionMessages } from './capacity.js';
import { assumedLatencyMs, lambdaUsdPerMillionMessages } from './latencyModel.js';
import { criticalPath } from './roundTrips.js';
import { Tally } from './RequestMeter.js';
import { type ExpectedOutcomes, ScenarioName, scenarioMessages } from './scenarios.js';
import { type DeliveryCounts, emptyCounts, type Side, type SideName, type Sides } from './sides.js';
import { type QueuedMessage, SimulatedQueue } from './SimulatedQueue.js';

/** The function timeout the invocations get, in seconds (the settings' default). */
const FUNCTION_TIMEOUT_SECONDS = 30;

/** What the messages of one run ended as. */
export interface FinalOutcomes {
  applied: number;
  duplicate: number;
  /** Dead-lettered by the consumer (with a reason). */
  deadLettered: number;
  /** Moved to the dead-letter queue by the redrive policy. */
  redriven: number;
  /** Deliveries reported as batch item failures (each came back). */
  retriedDeliveries: number;
}

/** One side's run of one scenario at one batch size. */
export interface Run {
  readonly side: SideName;
  readonly scenario: ScenarioName;
  readonly batchSize: number;
  readonly messages: number;
  readonly invocations: number;
  /** Sum of the invocations' durations, in milliseconds. */
  readonly handlerMs: number;
  /** Each invocation's duration, in milliseconds. */
  readonly batchMs: readonly number[];
  /** Each invocation's sequential round trips to DynamoDB and SQS (`roundTrips.ts`). */
  readonly roundTrips: readonly number[];
  /** Each invocation's modeled AWS latency, in milliseconds (`latencyModel.ts`). */
  readonly modeledAwsMs: readonly number[];
  readonly tally: Tally;
  readonly outcomes: FinalOutcomes;
  /** Deliveries in all: first deliveries and redeliveries (the queue's count). */
  readonly deliveries: number;
  /** What parking did (the engine's; zeros for the baseline and with parking off). */
  readonly parking: ParkingCounts;
  /** Batch item failures by reason (`DeliveryCounts.retryReasons`). */
  readonly retryReasons: Readonly<Record<string, number>>;
}

/** What parking did in a run (docs/parking.md). */
export interface ParkingCounts {
  /** Deliveries parked (reported as batch item failures, their record kept in the inbox table). */
  readonly parked: number;
  /** Messages settled from the park by the invocation that applied their predecessor. */
  readonly fromPark: number;
  /** Messages the consumer deleted from the queue with the receipt handle of their latest receive (the simulated queue's count). */
  readonly deletedByReceiptHandle: number;
  /** Duplicates of a message already settled (taken up from the park while it was received again). */
  readonly settledAgain: number;
}

/** Options of {@link runScenarios}. */
export interface RunScenariosOptions {
  readonly scenarios: readonly ScenarioName[];
  readonly batchSizes: readonly number[];
  readonly repetitions: number;
  /** Messages per run (`mixed` is always the whole sample). */
  readonly messages: number;
  /** The sample stream's bodies. */
  readonly sample: readonly string[];
  /** Progress lines. */
  readonly log: (line: string) => void;
}

/** Delivers `messages` to `handler` through a {@link SimulatedQueue} until it is empty; measures each invocation. */
export async function drain(
  side: Side,
  handler: Side['handler'],
  messages: readonly QueuedMessage[],
  batchSize: number,
  queueArn: string,
  afterInvocation?: (delivered: number) => void,
): Promise<{
  batchMs: number[];
  handlerMs: number;
  roundTrips: number[];
  modeledAwsMs: number[];
  redriven: number;
  counts: DeliveryCounts;
  /** Deliveries in all, and messages the consumer deleted by receipt handle (the queue's totals). */
  deliveries: number;
  deletedByReceiptHandle: number;
}> {
  const counts = emptyCounts();
  side.counts = counts;
  const queue = new SimulatedQueue(messages, { queueArn, maxReceiveCount: side.maxReceiveCount });
  side.simulatedQueues.add(queue);
  try {
    const result = await drainQueue(side, handler, queue, batchSize, afterInvocation);
    const { deliveries, deletedByReceiptHandle } = queue.totals;
    return { ...result, counts, deliveries, deletedByReceiptHandle };
  } finally {
    side.simulatedQueues.delete(queue);
  }
}

async function drainQueue(
  side: Side,
  handler: Side['handler'],
  queue: SimulatedQueue,
  batchSize: number,
  afterInvocation: ((delivered: number) => void) | undefined,
): Promise<{ batchMs: number[]; handlerMs: number; roundTrips: number[]; modeledAwsMs: number[]; redriven: number }> {
  const batchMs: number[] = [];
  const roundTrips: number[] = [];
  const modeledAwsMs: number[] = [];
  let redriven = 0;
  let delivered = 0;
  while (!queue.isEmpty) {
    const records = queue.receive(batchSize);
    const context = createLambdaContext({
      functionName: `benchmark-${side.name}`,
      region: 'us-east-1',
      accountId: '000000000000',
      timeoutSeconds: FUNCTION_TIMEOUT_SECONDS,
      memorySizeMb: 1024,
      logStreamName: 'benchmark',
    });
    const intervals: NonNullable<Side['meter']['intervals']> = [];
    side.meter.intervals = intervals;
    const started = performance.now();
    let response: SQSBatchResponse | undefined;
    try {
      response = await handler({ Records: records }, context);
    } catch {
      response = undefined; // an invocation error: Lambda returns every record of the batch to the queue
    }
    batchMs.push(performance.now() - started);
    side.meter.intervals = undefined;
    const path = criticalPath(intervals, assumedLatencyMs);
    roundTrips.push(path.roundTrips);
    modeledAwsMs.push(path.modeledMs);
    const failed = new Set(
      response === undefined ? records.map((r) => r.messageId) : response.batchItemFailures.map((f) => f.itemIdentifier),
    );
    redriven += queue.settle(failed).length;
    delivered += records.length;
    afterInvocation?.(delivered);
  }
  return { batchMs, handlerMs: batchMs.reduce((a, b) => a + b, 0), roundTrips, modeledAwsMs, redriven };
}

/** One side's run: setup (not counted), then the scenario's messages (counted). */
async function runOne(
  side: Side,
  sides: Sides,
  name: ScenarioName,
  prefix: string,
  batchSize: number,
  options: RunScenariosOptions,
): Promise<Run> {
  const scenario = scenarioMessages(name, prefix, options.messages, options.sample);
  if (scenario.setup.length > 0) {
    side.meter.tally = new Tally();
    await drain(side, side.setupHandler, scenario.setup, 10, sides.queueArn);
  }
  const tally = new Tally();
  side.meter.tally = tally;
  const result = await drain(side, side.handler, scenario.messages, batchSize, sides.queueArn);
  side.meter.tally = new Tally();
  return {
    side: side.name,
    scenario: name,
    batchSize,
    messages: scenario.messages.length,
    invocations: result.batchMs.length,
    handlerMs: result.handlerMs,
    batchMs: result.batchMs,
    roundTrips: result.roundTrips,
    modeledAwsMs: result.modeledAwsMs,
    tally,
    outcomes: {
      applied: result.counts.applied,
      duplicate: result.counts.duplicate,
      deadLettered: result.counts.deadLettered,
      redriven: result.redriven,
      retriedDeliveries: result.counts.retried,
    },
    deliveries: result.deliveries,
    parking: {
      parked: result.counts.parked,
      fromPark: result.counts.fromPark,
      deletedByReceiptHandle: result.deletedByReceiptHandle,
      settledAgain: result.counts.settledAgain,
    },
    retryReasons: result.counts.retryReasons,
  };
}

/**
 * Runs a few messages of `fresh`, `fresh-side-effect` and `poison` on both sides, not counted:
 * the JITs of Node.js and DynamoDB Local warm up, and each side loads what it loads lazily (the
 * engine its side-effect guard and dead-letter writer).
 */
export async function warmUp(sides: Sides, sample: readonly string[]): Promise<void> {
  const options: RunScenariosOptions = { scenarios: [], batchSizes: [], repetitions: 0, messages: 50, sample, log: () => undefined };
  for (const side of [sides.engine, sides.baseline]) {
    for (const name of [ScenarioName.Fresh, ScenarioName.FreshSideEffect, ScenarioName.Poison])
      await runOne(side, sides, name, `warmup-${side.name}-${name}`, 10, options);
  }
}

/**
 * Runs every (repetition, batch size, scenario) on the engine, then on the baseline, and so on:
 * the two sides take turns on the same DynamoDB Local, so a drift of the machine's speed touches
 * both. `duplicates` redelivers the messages of the same repetition's `fresh` run.
 *
 * @returns every run, in the order they ran
 */
export async function runScenarios(sides: Sides, options: RunScenariosOptions): Promise<Run[]> {
  const runs: Run[] = [];
  for (let rep = 0; rep < options.repetitions; rep += 1) {
    for (const batchSize of options.batchSizes) {
      for (const name of options.scenarios) {
        if (name === ScenarioName.Contention) continue; // its own runs: runContention (contention.ts)
        for (const side of [sides.engine, sides.baseline]) {
          const base = `r${rep}-b${batchSize}-${side.name[0]}`;
          const prefix = name === ScenarioName.Duplicates ? `${base}-${ScenarioName.Fresh}` : `${base}-${name}`;
          if (name === ScenarioName.Duplicates && !options.scenarios.includes(ScenarioName.Fresh)) {
            throw new Error('the duplicates scenario redelivers the fresh one: run fresh too');
          }
          const run = await runOne(side, sides, name, prefix, batchSize, options);
          runs.push(run);
          options.log(
            `  rep ${rep + 1} batch ${String(batchSize).padStart(3)} ${name.padEnd(17)} ${side.name.padEnd(8)} ` +
              `${(run.tally.dynamoDbRequests / run.messages).toFixed(3)} req/msg, ${((run.tally.readUnits + run.tally.writeUnits) / run.messages).toFixed(2)} units/msg, ` +
              `${mean(run.roundTrips).toFixed(2)} round trips/batch, ${((run.messages * 1000) / run.handlerMs).toFixed(0)} msg/s`,
          );
        }
      }
    }
  }
  return runs;
}

/** One (scenario, batch size) over all repetitions, both sides: the figures the JSON reports. */
export interface ScenarioFigures {
  readonly name: ScenarioName;
  readonly batchSize: number;
  readonly repetitions: number;
  /** Messages per repetition. */
  readonly messages: number;
  readonly dynamoDbRequestsPerMessage: number;
  readonly baselineDynamoDbRequestsPerMessage: number;
  /** Read + write request units per message. */
  readonly capacityUnitsPerMessage: number;
  readonly baselineCapacityUnitsPerMessage: number;
  readonly readUnitsPerMessage: number;
  readonly writeUnitsPerMessage: number;
  readonly baselineReadUnitsPerMessage: number;
  readonly baselineWriteUnitsPerMessage: number;
  /** DynamoDB on demand, US dollars per million messages (us-east-1). */
  readonly usdPerMillion: number;
  readonly baselineUsdPerMillion: number;
  /** Sequential DynamoDB and SQS round trips on an invocation's critical path (`roundTrips.ts`), mean over the invocations. */
  readonly roundTripsPerBatch: number;
  readonly baselineRoundTripsPerBatch: number;
  /** The most round trips of one invocation. */
  readonly maxRoundTripsPerBatch: number;
  readonly baselineMaxRoundTripsPerBatch: number;
  /** `roundTripsPerBatch` ÷ the baseline's. */
  readonly roundTripRatioToBaseline: number;
  /** Invocations per message (a retried delivery is invoked again). */
  readonly invocationsPerMessage: number;
  readonly baselineInvocationsPerMessage: number;
  /** Redeliveries per message: the queue's deliveries minus the messages, ÷ the messages. */
  readonly redeliveriesPerMessage: number;
  readonly baselineRedeliveriesPerMessage: number;
  /** Batch item failures per message by reason, the engine's (`<reason>, parked` for a parked one). */
  readonly retriedByReason: Readonly<Record<string, number>>;
  /** What parking did, per message (the engine's; zeros with parking off): {@link ParkingCounts} ÷ the messages. */
  readonly parkingPerMessage: ParkingCounts;
  /** The critical path's modeled AWS latency per invocation, in milliseconds, mean (`latencyModel.ts`: assumed latencies, not measured). */
  readonly modeledAwsMsPerBatch: number;
  readonly baselineModeledAwsMsPerBatch: number;
  /** Lambda duration (arm64, 1,024 MB, us-east-1) spent waiting for AWS as modeled, US dollars per million messages. */
  readonly lambdaUsdPerMillion: number;
  readonly baselineLambdaUsdPerMillion: number;
  readonly sqsRequestsPerMessage: number;
  readonly baselineSqsRequestsPerMessage: number;
  /** Messages ÷ the invocations' summed duration. */
  readonly messagesPerSecond: number;
  readonly baselineMessagesPerSecond: number;
  readonly throughputRatioToBaseline: number;
  readonly p50BatchMs: number;
  readonly p99BatchMs: number;
  readonly baselineP50BatchMs: number;
  readonly baselineP99BatchMs: number;
  /** Requests per message by operation. */
  readonly dynamoDbRequestsByOperation: Readonly<Record<string, number>>;
  readonly baselineDynamoDbRequestsByOperation: Readonly<Record<string, number>>;
  readonly sqsRequestsByOperation: Readonly<Record<string, number>>;
  /** Cancelled transactions per message (the engine's fallback path). */
  readonly cancelledTransactionsPerMessage: number;
  /** Share of the invocations' time spent waiting for DynamoDB (requests summed; the baseline's overlap within a batch). */
  readonly dynamoDbTimeShare: number;
  readonly baselineDynamoDbTimeShare: number;
  /** What the messages ended as, summed over the repetitions. */
  readonly outcomes: FinalOutcomes;
  readonly baselineOutcomes: FinalOutcomes;
  /** Why the outcomes are not the expected ones; empty when they are. */
  readonly problems: readonly string[];
}

const round = (n: number, digits = 3): number => (Number.isFinite(n) ? Number(n.toFixed(digits)) : n);

const sumOf = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0);
const mean = (values: readonly number[]): number => (values.length === 0 ? 0 : sumOf(values) / values.length);

/** Nearest-rank percentile. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

interface Aggregate {
  messages: number;
  handlerMs: number;
  batchMs: number[];
  roundTrips: number[];
  modeledAwsMs: number[];
  tally: Tally;
  outcomes: FinalOutcomes;
  deliveries: number;
  parking: { -readonly [K in keyof ParkingCounts]: number };
  retryReasons: Record<string, number>;
  runs: Run[];
}

function aggregate(runs: readonly Run[]): Aggregate {
  const total: Aggregate = {
    messages: 0,
    handlerMs: 0,
    batchMs: [],
    roundTrips: [],
    modeledAwsMs: [],
    tally: new Tally(),
    outcomes: { applied: 0, duplicate: 0, deadLettered: 0, redriven: 0, retriedDeliveries: 0 },
    deliveries: 0,
    parking: { parked: 0, fromPark: 0, deletedByReceiptHandle: 0, settledAgain: 0 },
    retryReasons: {},
    runs: [...runs],
  };
  for (const run of runs) {
    total.messages += run.messages;
    total.handlerMs += run.handlerMs;
    total.batchMs.push(...run.batchMs);
    total.roundTrips.push(...run.roundTrips);
    total.modeledAwsMs.push(...run.modeledAwsMs);
    total.tally.add(run.tally);
    for (const key of Object.keys(total.outcomes) as (keyof FinalOutcomes)[]) total.outcomes[key] += run.outcomes[key];
    total.deliveries += run.deliveries;
    for (const key of Object.keys(total.parking) as (keyof ParkingCounts)[]) total.parking[key] += run.parking[key];
    for (const [reason, n] of Object.entries(run.retryReasons)) total.retryReasons[reason] = (total.retryReasons[reason] ?? 0) + n;
  }
  return total;
}

function perMessage(map: ReadonlyMap<string, number>, messages: number): Record<string, number> {
  return Object.fromEntries([...map].sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, round(v / messages)]));
}

/** Checks a side's runs against the scenario's expected outcomes; the problems found. */
function problemsOf(side: SideName, runs: readonly Run[], expected: ExpectedOutcomes | undefined): string[] {
  const problems: string[] = [];
  for (const run of runs) {
    const o = run.outcomes;
    const settled = o.applied + o.duplicate + o.deadLettered + o.redriven;
    if (settled !== run.messages)
      problems.push(
        `${side}: ${settled} of ${run.messages} messages settled (applied ${o.applied}, duplicate ${o.duplicate}, dead-lettered ${o.deadLettered}, redriven ${o.redriven})`,
      );
    if (expected === undefined) continue;
    const dead = o.deadLettered + o.redriven;
    for (const [what, got, want] of [
      ['applied', o.applied, expected.applied ?? 0],
      ['duplicate', o.duplicate, expected.duplicate ?? 0],
      ['dead-lettered or redriven', dead, expected.dead ?? 0],
    ] as const) {
      if (got !== want) problems.push(`${side}: ${what} ${got}, expected ${want}`);
    }
  }
  return problems;
}

/**
 * The figures of each (scenario, batch size), in the order of `scenarios` × `batchSizes`.
 */
export function scenarioFigures(
  runs: readonly Run[],
  scenarios: readonly ScenarioName[],
  batchSizes: readonly number[],
  options: Pick<RunScenariosOptions, 'messages' | 'sample'>,
): ScenarioFigures[] {
  const figures: ScenarioFigures[] = [];
  for (const name of scenarios) {
    for (const batchSize of batchSizes) {
      const of = (side: SideName) => runs.filter((r) => r.scenario === name && r.batchSize === batchSize && r.side === side);
      const engineRuns = of('engine');
      const baselineRuns = of('baseline');
      if (engineRuns.length === 0 || baselineRuns.length === 0) continue;
      const e = aggregate(engineRuns);
      const b = aggregate(baselineRuns);
      const expected = scenarioMessages(name, 'x', options.messages, options.sample).expected;
      const problems = [...problemsOf('engine', engineRuns, expected), ...problemsOf('baseline', baselineRuns, expected)];
      if (name === ScenarioName.Duplicates && e.tally.writeUnits > 0)
        problems.push(`engine: ${round(e.tally.writeUnits / e.messages)} write units per duplicate; expected none`);
      if (name === ScenarioName.Mixed && e.outcomes.applied !== b.outcomes.applied) {
        problems.push(`the engine applied ${e.outcomes.applied} messages of the sample, the baseline ${b.outcomes.applied}`);
      }
      const eps = (e.messages * 1000) / e.handlerMs;
      const bps = (b.messages * 1000) / b.handlerMs;
      const units = (a: Aggregate) => ({ read: a.tally.readUnits / a.messages, write: a.tally.writeUnits / a.messages });
      const [eu, bu] = [units(e), units(b)];
      const lambdaUsd = (a: Aggregate) => lambdaUsdPerMillionMessages(sumOf(a.modeledAwsMs) / a.messages);
      figures.push({
        name,
        batchSize,
        repetitions: engineRuns.length,
        messages: engineRuns[0]!.messages,
        dynamoDbRequestsPerMessage: round(e.tally.dynamoDbRequests / e.messages),
        baselineDynamoDbRequestsPerMessage: round(b.tally.dynamoDbRequests / b.messages),
        capacityUnitsPerMessage: round(eu.read + eu.write),
        baselineCapacityUnitsPerMessage: round(bu.read + bu.write),
        readUnitsPerMessage: round(eu.read),
        writeUnitsPerMessage: round(eu.write),
        baselineReadUnitsPerMessage: round(bu.read),
        baselineWriteUnitsPerMessage: round(bu.write),
        usdPerMillion: round(usdPerMillionMessages(eu.read, eu.write), 2),
        baselineUsdPerMillion: round(usdPerMillionMessages(bu.read, bu.write), 2),
        roundTripsPerBatch: round(mean(e.roundTrips), 2),
        baselineRoundTripsPerBatch: round(mean(b.roundTrips), 2),
        maxRoundTripsPerBatch: Math.max(0, ...e.roundTrips),
        baselineMaxRoundTripsPerBatch: Math.max(0, ...b.roundTrips),
        roundTripRatioToBaseline: round(mean(e.roundTrips) / mean(b.roundTrips), 2),
        invocationsPerMessage: round(e.roundTrips.length / e.messages),
        baselineInvocationsPerMessage: round(b.roundTrips.length / b.messages),
        redeliveriesPerMessage: round((e.deliveries - e.messages) / e.messages),
        baselineRedeliveriesPerMessage: round((b.deliveries - b.messages) / b.messages),
        retriedByReason: perMessage(new Map(Object.entries(e.retryReasons)), e.messages),
        parkingPerMessage: {
          parked: round(e.parking.parked / e.messages),
          fromPark: round(e.parking.fromPark / e.messages),
          deletedByReceiptHandle: round(e.parking.deletedByReceiptHandle / e.messages),
          settledAgain: round(e.parking.settledAgain / e.messages),
        },
        modeledAwsMsPerBatch: round(mean(e.modeledAwsMs), 1),
        baselineModeledAwsMsPerBatch: round(mean(b.modeledAwsMs), 1),
        lambdaUsdPerMillion: round(lambdaUsd(e), 3),
        baselineLambdaUsdPerMillion: round(lambdaUsd(b), 3),
        sqsRequestsPerMessage: round(e.tally.sqsRequests / e.messages),
        baselineSqsRequestsPerMessage: round(b.tally.sqsRequests / b.messages),
        messagesPerSecond: round(eps, 1),
        baselineMessagesPerSecond: round(bps, 1),
        throughputRatioToBaseline: round(eps / bps, 2),
        p50BatchMs: round(percentile(e.batchMs, 50), 2),
        p99BatchMs: round(percentile(e.batchMs, 99), 2),
        baselineP50BatchMs: round(percentile(b.batchMs, 50), 2),
        baselineP99BatchMs: round(percentile(b.batchMs, 99), 2),
        dynamoDbRequestsByOperation: perMessage(e.tally.dynamoDb, e.messages),
        baselineDynamoDbRequestsByOperation: perMessage(b.tally.dynamoDb, b.messages),
        sqsRequestsByOperation: perMessage(e.tally.sqs, e.messages),
        cancelledTransactionsPerMessage: round(e.tally.cancelledTransactions / e.messages),
        dynamoDbTimeShare: round(e.tally.dynamoDbMs / e.handlerMs, 2),
        baselineDynamoDbTimeShare: round(b.tally.dynamoDbMs / b.handlerMs, 2),
        outcomes: e.outcomes,
        baselineOutcomes: b.outcomes,
        problems,
      });
    }
  }
  return figures;
}
