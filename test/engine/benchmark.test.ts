/**
 * The benchmark's short run (`npm run bench --silent -- --json` with tiny sizes) against the test
 * run's DynamoDB and SQS: the JSON summary is the last line of stdout, in the issue's shape, and
 * every scenario ends in the outcomes it must (so its figures are those of the scenario described).
 * Capacity units are checked where AWS's billing rules fix them; speed never is.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { beforeAll, expect, it } from 'vitest';
import { awsEndpoints } from '../support/awsEndpoints.js';
import { describeUnlessDeployedStack } from '../support/testResources.js';

const describe = describeUnlessDeployedStack('measures the engine on tables and queues of its own');

const run = promisify(execFile);

interface Figures {
  name: string;
  batchSize: number;
  [figure: string]: unknown;
  outcomes: { applied: number; duplicate: number; deadLettered: number; redriven: number; retriedDeliveries: number };
  baselineOutcomes: { applied: number; duplicate: number; deadLettered: number; redriven: number; retriedDeliveries: number };
  problems: string[];
}

/** The figures the issue names for every scenario. */
const ISSUE_FIGURES = [
  'dynamoDbRequestsPerMessage',
  'baselineDynamoDbRequestsPerMessage',
  'capacityUnitsPerMessage',
  'baselineCapacityUnitsPerMessage',
  'usdPerMillion',
  'baselineUsdPerMillion',
  'messagesPerSecond',
  'throughputRatioToBaseline',
  'p50BatchMs',
  'p99BatchMs',
  'roundTripsPerBatch',
  'baselineRoundTripsPerBatch',
  'modeledAwsMsPerBatch',
  'lambdaUsdPerMillion',
] as const;

describe('npm run bench --silent -- --json, a short run', () => {
  let report: {
    baseline: string;
    engineParking: string;
    scenarios: Figures[];
    coldStart: Record<string, unknown>;
    heap: Record<string, unknown>;
    contention: {
      messages: number;
      distinctEvents: number;
      results: {
        environments: number;
        engine: Record<string, unknown> & { applied: number; duplicate: number; falseDeadLetters: number };
        baseline: Record<string, unknown> & { applied: number; duplicate: number; falseDeadLetters: number };
        goodputRatioToBaseline: number;
        problems: string[];
      }[];
    };
    targets: { target: string; met: boolean | null }[];
    ok: boolean;
  };
  let stdout: string;

  beforeAll(async () => {
    const endpoints = awsEndpoints();
    const output = await run(
      'npm',
      [
        'run',
        'bench',
        '--silent',
        '--',
        '--json',
        '--messages',
        '20',
        '--repetitions',
        '1',
        '--batch-sizes',
        '10',
        '--heap-messages',
        '20,60',
        '--cold-start-runs',
        '1',
        '--contention-messages',
        '40',
        '--contention-environments',
        '1,4',
        // The café's settings as it ships them (the bench's default is the library's: parking off).
        '--parking',
        'on',
        '--dynamodb-endpoint',
        endpoints.dynamoDbEndpoint,
        '--sqs-endpoint',
        endpoints.sqsEndpoint,
      ],
      { cwd: process.cwd(), maxBuffer: 16 * 1024 * 1024, timeout: 420_000 },
    );
    stdout = output.stdout;
    report = JSON.parse(stdout.trimEnd().split('\n').at(-1)!);
  }, 480_000);

  it('prints one JSON object as the last line of stdout, and nothing else there', () => {
    expect(stdout.trimEnd().split('\n')).toHaveLength(1);
    expect(report.baseline).toBe('powertools-makeIdempotent');
    expect(report.engineParking).toBe('on'); // asked for: the café's settings
    expect(report.ok).toBe(true);
  });

  it('reports every scenario with the issue’s figures, as numbers', () => {
    expect(report.scenarios.map((s) => `${s.name}@${s.batchSize}`)).toEqual([
      'fresh@10',
      'duplicates@10',
      'fresh-side-effect@10',
      'mixed@10',
      'poison@10',
    ]);
    for (const scenario of report.scenarios) {
      for (const figure of ISSUE_FIGURES) expect(typeof scenario[figure], `${scenario.name} ${figure}`).toBe('number');
      expect(scenario.problems).toEqual([]);
    }
    expect(Object.keys(report.coldStart)).toEqual(
      expect.arrayContaining(['bundleBytes', 'initMs', 'baselineBundleBytes', 'baselineInitMs']),
    );
    expect(report.heap).toMatchObject({ from: 20, to: 60 });
    expect(report.coldStart).toHaveProperty('machine.quiet');
    expect(report.targets).toHaveLength(15);
  });

  it('ends every message of every scenario as it must, on both sides', () => {
    const of = (name: string) => report.scenarios.find((s) => s.name === name)!;
    expect(of('fresh').outcomes).toEqual({ applied: 20, duplicate: 0, deadLettered: 0, redriven: 0, retriedDeliveries: 0 });
    expect(of('fresh').baselineOutcomes).toEqual({ applied: 20, duplicate: 0, deadLettered: 0, redriven: 0, retriedDeliveries: 0 });
    expect(of('duplicates').outcomes).toMatchObject({ applied: 0, duplicate: 20 });
    expect(of('duplicates').baselineOutcomes).toMatchObject({ applied: 0, duplicate: 20 });
    expect(of('fresh-side-effect').outcomes).toMatchObject({ applied: 20, deadLettered: 0 });
    expect(of('fresh-side-effect').baselineOutcomes).toMatchObject({ applied: 20, redriven: 0 });
    // 2 of 20 invalid: the engine dead-letters them at once with a reason; the baseline's queue redrives them after 5 receives.
    expect(of('poison').outcomes).toEqual({ applied: 18, duplicate: 0, deadLettered: 2, redriven: 0, retriedDeliveries: 0 });
    expect(of('poison').baselineOutcomes).toEqual({ applied: 18, duplicate: 0, deadLettered: 0, redriven: 2, retriedDeliveries: 10 });
    // The sample's 510 messages: 464 applied by both; the engine dead-letters 8 with reasons (the 7 poison
    // and the orphan payment), the baseline takes the reused key for a duplicate and redrives the other 7.
    expect(of('mixed').outcomes).toMatchObject({ applied: 464, duplicate: 38, deadLettered: 8, redriven: 0 });
    expect(of('mixed').baselineOutcomes).toMatchObject({ applied: 464, duplicate: 39, deadLettered: 0, redriven: 7 });
    // Parking on: out-of-order messages of the sample are parked, settled from the park by the invocation that applies
    // their predecessor, and deleted from the simulated queue with their parked receipt handle (so they are not delivered again).
    const parking = of('mixed').parkingPerMessage as { parked: number; fromPark: number; deletedByReceiptHandle: number };
    expect(parking.parked).toBeGreaterThan(0);
    expect(parking.deletedByReceiptHandle).toBeGreaterThan(0);
    expect(parking.deletedByReceiptHandle).toBeLessThanOrEqual(parking.fromPark);
    expect(of('mixed').redeliveriesPerMessage).toBeLessThan(of('mixed').baselineRedeliveriesPerMessage as number);
  });

  it('runs the contention scenario at each environment count, both sides, and the engine dead-letters no valid message', () => {
    expect(report.contention).toMatchObject({ messages: 40, batchSize: 10 });
    expect(report.contention.results.map((r) => r.environments)).toEqual([1, 4]);
    for (const result of report.contention.results) {
      for (const side of [result.engine, result.baseline]) {
        for (const figure of [
          'goodputPerSecond',
          'goodputPerInvocation',
          'cancelledTransactionsPerMessage',
          'redeliveriesPerMessage',
          'usdPerMillion',
        ])
          expect(typeof side[figure], `${result.environments} ${figure}`).toBe('number');
      }
      expect(result.problems).toEqual([]);
      expect(result.engine.falseDeadLetters).toBe(0);
      // Every message is valid: each distinct event applied once, every re-send a duplicate.
      expect(result.engine.applied).toBe(report.contention.distinctEvents);
      expect(result.engine.duplicate).toBe(40 - report.contention.distinctEvents);
    }
    expect(report.targets.find((t) => t.target.startsWith('contention engine falseDeadLetters'))?.met).toBe(true);
  });

  it('bills the capacity AWS’s rules give for items under 1 KB', () => {
    const of = (name: string) => report.scenarios.find((s) => s.name === name)!;
    // Engine: one transaction of the order alone, with the event's inbox mark on it (the café's inboxHome), 2 write
    // units, and beside it (parking on) the strongly consistent read of the park items of the batch's ordering keys,
    // 1 read unit per key (an absent item costs the minimum). Baseline: lock, order and completion writes, one consistent read.
    expect(of('fresh')).toMatchObject({
      writeUnitsPerMessage: 2,
      readUnitsPerMessage: 1,
      baselineWriteUnitsPerMessage: 3,
      baselineReadUnitsPerMessage: 1,
    });
    // Engine: no write for a duplicate. Baseline: the refused lock put, 1 write unit.
    expect(of('duplicates')).toMatchObject({ writeUnitsPerMessage: 0, baselineWriteUnitsPerMessage: 1, baselineReadUnitsPerMessage: 0 });
    // Engine: per batch of 10 its TransactWriteItems and (parking on) the park's BatchGetItem.
    expect(of('fresh')).toMatchObject({ dynamoDbRequestsPerMessage: 0.2, baselineDynamoDbRequestsPerMessage: 4 });
    // Like with like: the baseline writes the payment's outbox item in its transaction (order, ledger entry, outbox item: 6),
    // besides its lock and completion (2) and the notification's lock, send and completion (3).
    expect(of('fresh-side-effect')).toMatchObject({ baselineWriteUnitsPerMessage: 11, baselineReadUnitsPerMessage: 1 });
  });

  it('counts the round trips on the critical path: requests in flight together once', () => {
    const of = (name: string) => report.scenarios.find((s) => s.name === name)!;
    // Engine: one transaction per batch, the park's read (parking on) in flight beside it. Baseline: the records in
    // parallel, each a lock, a read, a write and a completion.
    expect(of('fresh')).toMatchObject({ roundTripsPerBatch: 1, baselineRoundTripsPerBatch: 4 });
  });
});
