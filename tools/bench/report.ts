/**
 * The benchmark's report: its JSON shape, the issue's targets checked against it, and the text
 * table a person reads.
 *
 * @module
 */
import type { ON_DEMAND_PRICES } from './capacity.js';
import type { ASSUMED_LATENCY_MS, LAMBDA_PRICES } from './latencyModel.js';
import type { ColdStart } from './coldStart.js';
import type { HeapGrowth } from './heapGrowth.js';
import type { ScenarioFigures } from './runScenarios.js';
import { type ContentionReport, formatContention } from './contention.js';

/** One of the issues' targets, checked. */
export interface TargetCheck {
  /** e.g. `fresh@10 dynamoDbRequestsPerMessage ≤ 0.15`. */
  readonly target: string;
  readonly figure: number | null;
  readonly limit: number | null;
  /** `null` when the figure was not measured in this run. */
  readonly met: boolean | null;
}

/** What `npm run bench --silent -- --json` prints as its last line. */
export interface BenchmarkReport {
  readonly baseline: 'powertools-makeIdempotent';
  /** Whether the engine parked out-of-order messages (`--parking`; the café's settings: on). */
  readonly engineParking: 'on' | 'off';
  /** Whether the engine kept each event's inbox mark on its order (`--inbox-home`, docs/inbox-home.md; the café's consumer: on). */
  readonly engineInboxHome: 'on' | 'off';
  readonly repetitions: number;
  readonly messagesPerRun: number;
  readonly pricing: typeof ON_DEMAND_PRICES;
  /** The latencies assumed per request and Lambda's duration price, for the modeled figures. */
  readonly latencyModel: { readonly assumedLatencyMs: typeof ASSUMED_LATENCY_MS; readonly lambda: typeof LAMBDA_PRICES };
  readonly scenarios: readonly ScenarioFigures[];
  /** The contention scenario (`contention.ts`), when it ran. */
  readonly contention?: ContentionReport;
  readonly heap?: HeapGrowth;
  readonly coldStart?: ColdStart;
  readonly targets: TargetCheck[];
  totalSeconds: number;
  /** Every scenario ended in the expected outcomes. */
  readonly ok: boolean;
}

/**
 * The issues' targets ("Done means"), against the report's figures: issue 17's requests,
 * throughput and units; issue 19's dollars, round trips and cold start.
 */
export function targetsOf(report: Pick<BenchmarkReport, 'scenarios' | 'coldStart' | 'contention'>): TargetCheck[] {
  const find = (name: string, batchSize: number) => report.scenarios.find((s) => s.name === name && s.batchSize === batchSize);
  const atMost = (target: string, figure: number | undefined, limit: number | undefined): TargetCheck => ({
    target,
    figure: figure ?? null,
    limit: limit ?? null,
    met: figure === undefined || limit === undefined ? null : figure <= limit,
  });
  const ratioAtMost = (target: string, figure: number | undefined, baseline: number | undefined, share: number): TargetCheck =>
    atMost(target, figure, baseline === undefined ? undefined : Number((baseline * share).toFixed(3)));
  const fresh10 = find('fresh', 10);
  const mixed10 = find('mixed', 10);
  const contention = report.contention?.results;
  const contention16 = contention?.find((r) => r.environments === 16);
  return [
    atMost('fresh@10 dynamoDbRequestsPerMessage ≤ 0.15', fresh10?.dynamoDbRequestsPerMessage, 0.15),
    atMost('duplicates@10 dynamoDbRequestsPerMessage ≤ 0.11', find('duplicates', 10)?.dynamoDbRequestsPerMessage, 0.11),
    atMost('mixed@10 dynamoDbRequestsPerMessage ≤ 0.6', mixed10?.dynamoDbRequestsPerMessage, 0.6),
    atMost('fresh@100 dynamoDbRequestsPerMessage ≤ 0.05', find('fresh', 100)?.dynamoDbRequestsPerMessage, 0.05),
    {
      target: 'fresh@10 throughputRatioToBaseline ≥ 5',
      figure: fresh10?.throughputRatioToBaseline ?? null,
      limit: 5,
      met: fresh10 === undefined ? null : fresh10.throughputRatioToBaseline >= 5,
    },
    atMost(
      'fresh@10 capacityUnitsPerMessage ≤ baselineCapacityUnitsPerMessage',
      fresh10?.capacityUnitsPerMessage,
      fresh10?.baselineCapacityUnitsPerMessage,
    ),
    atMost(
      'mixed@10 capacityUnitsPerMessage ≤ baselineCapacityUnitsPerMessage',
      mixed10?.capacityUnitsPerMessage,
      mixed10?.baselineCapacityUnitsPerMessage,
    ),
    atMost('coldStart.initMs ≤ coldStart.baselineInitMs', report.coldStart?.initMs, report.coldStart?.baselineInitMs),
    {
      target: 'every scenario usdPerMillion ≤ baselineUsdPerMillion (figure: the scenarios above)',
      figure: report.scenarios.filter((s) => s.usdPerMillion > s.baselineUsdPerMillion).length,
      limit: 0,
      met: report.scenarios.length === 0 ? null : report.scenarios.every((s) => s.usdPerMillion <= s.baselineUsdPerMillion),
    },
    ratioAtMost('fresh@10 usdPerMillion ≤ 0.7 × baselineUsdPerMillion', fresh10?.usdPerMillion, fresh10?.baselineUsdPerMillion, 0.7),
    ratioAtMost(
      'duplicates@10 usdPerMillion ≤ 0.5 × baselineUsdPerMillion',
      find('duplicates', 10)?.usdPerMillion,
      find('duplicates', 10)?.baselineUsdPerMillion,
      0.5,
    ),
    ratioAtMost(
      'fresh@10 roundTripsPerBatch ≤ baselineRoundTripsPerBatch ÷ 3',
      fresh10?.roundTripsPerBatch,
      fresh10?.baselineRoundTripsPerBatch,
      1 / 3,
    ),
    ratioAtMost(
      'mixed@10 roundTripsPerBatch ≤ baselineRoundTripsPerBatch ÷ 3',
      mixed10?.roundTripsPerBatch,
      mixed10?.baselineRoundTripsPerBatch,
      1 / 3,
    ),
    // The modeled goodput (round trips at AWS latencies, the consumer's own waits): the measured
    // one measures 16 invocations sharing this machine's cores as much as the code.
    {
      target: 'contention@16 engine modeledGoodputPerSecond ≥ baseline modeledGoodputPerSecond',
      figure: contention16?.engine.modeledGoodputPerSecond ?? null,
      limit: contention16?.baseline.modeledGoodputPerSecond ?? null,
      met: contention16 === undefined ? null : contention16.engine.modeledGoodputPerSecond >= contention16.baseline.modeledGoodputPerSecond,
    },
    atMost(
      'contention engine falseDeadLetters = 0 (figure: summed over the environment counts)',
      contention === undefined || contention.length === 0 ? undefined : contention.reduce((sum, r) => sum + r.engine.falseDeadLetters, 0),
      0,
    ),
  ];
}

const pad = (text: string | number, width: number) => String(text).padStart(width);

/** The report as text: a table per figure, both sides, then heap, cold start and the targets. */
export function formatReport(report: BenchmarkReport): string {
  const lines: string[] = [];
  lines.push('');
  lines.push(
    `Engine (parking ${report.engineParking}, inbox home ${report.engineInboxHome}) vs baseline (${report.baseline}), ${report.repetitions} repetition(s), ${report.messagesPerRun} messages per run (mixed: the sample).`,
  );
  lines.push('Per message: DynamoDB requests, capacity units (read + write, by AWS billing rules), US$ per million messages');
  lines.push(`(DynamoDB on demand, ${report.pricing.region}, ${report.pricing.source}), SQS requests; throughput; batch latency.`);
  lines.push('');
  lines.push(
    `${'scenario'.padEnd(18)}${pad('batch', 5)} │${pad('requests/msg', 16)} │${pad('units/msg', 14)} │${pad('$/million', 16)} │${pad('SQS/msg', 8)} │${pad('messages/s', 16)}${pad('ratio', 7)} │${pad('p50 / p99 ms engine', 21)} │${pad('baseline', 16)}`,
  );
  lines.push(
    `${''.padEnd(18)}${''.padEnd(5)} │${pad('engine  base', 16)} │${pad('engine  base', 14)} │${pad('engine   base', 16)} │${pad('engine', 8)} │${pad('engine   base', 16)}${''.padEnd(7)} │${''.padEnd(21)} │${''.padEnd(16)}`,
  );
  for (const s of report.scenarios) {
    lines.push(
      `${s.name.padEnd(18)}${pad(s.batchSize, 5)} │${pad(s.dynamoDbRequestsPerMessage.toFixed(3), 8)}${pad(s.baselineDynamoDbRequestsPerMessage.toFixed(3), 8)} │` +
        `${pad(s.capacityUnitsPerMessage.toFixed(2), 7)}${pad(s.baselineCapacityUnitsPerMessage.toFixed(2), 7)} │` +
        `${pad(s.usdPerMillion.toFixed(2), 8)}${pad(s.baselineUsdPerMillion.toFixed(2), 8)} │${pad(s.sqsRequestsPerMessage.toFixed(3), 8)} │` +
        `${pad(s.messagesPerSecond.toFixed(0), 8)}${pad(s.baselineMessagesPerSecond.toFixed(0), 8)}${pad(`${s.throughputRatioToBaseline.toFixed(2)}×`, 7)} │` +
        `${pad(`${s.p50BatchMs.toFixed(1)} / ${s.p99BatchMs.toFixed(1)}`, 21)} │${pad(`${s.baselineP50BatchMs.toFixed(1)} / ${s.baselineP99BatchMs.toFixed(1)}`, 16)}`,
    );
  }
  lines.push('');
  lines.push(
    `Round trips on an invocation's critical path (requests in flight together count once), mean and most per batch; invocations per message;`,
  );
  const l = report.latencyModel;
  lines.push(
    `modeled AWS latency per batch (assumed: DynamoDB single-item ${l.assumedLatencyMs.dynamoDbSingleItem} ms, batch ${l.assumedLatencyMs.dynamoDbBatch} ms, ` +
      `transaction ${l.assumedLatencyMs.dynamoDbTransaction} ms, SQS ${l.assumedLatencyMs.sqs} ms) and its Lambda duration, US$ per million messages ` +
      `(${l.lambda.architecture}, ${l.lambda.memorySizeMb} MB, $${l.lambda.usdPerGbSecond}/GB-s).`,
  );
  lines.push('');
  lines.push(
    `${'scenario'.padEnd(18)}${pad('batch', 5)} │${pad('round trips engine', 19)} │${pad('baseline', 12)} │${pad('ratio', 6)} │${pad('invocations/msg', 16)} │${pad('modeled ms/batch', 17)} │${pad('Lambda $/million', 17)}`,
  );
  for (const s of report.scenarios) {
    lines.push(
      `${s.name.padEnd(18)}${pad(s.batchSize, 5)} │${pad(`${s.roundTripsPerBatch.toFixed(2)} (max ${s.maxRoundTripsPerBatch})`, 19)} │` +
        `${pad(`${s.baselineRoundTripsPerBatch.toFixed(2)} (${s.baselineMaxRoundTripsPerBatch})`, 12)} │${pad(s.roundTripRatioToBaseline.toFixed(2), 6)} │` +
        `${pad(`${s.invocationsPerMessage.toFixed(2)} ${s.baselineInvocationsPerMessage.toFixed(2)}`, 16)} │` +
        `${pad(`${s.modeledAwsMsPerBatch.toFixed(0)} ${s.baselineModeledAwsMsPerBatch.toFixed(0)}`, 17)} │` +
        `${pad(`${s.lambdaUsdPerMillion.toFixed(3)} ${s.baselineLambdaUsdPerMillion.toFixed(3)}`, 17)}`,
    );
  }
  lines.push('');
  lines.push('Requests per message by operation (engine | baseline), and what the messages ended as:');
  for (const s of report.scenarios) {
    const ops = (m: Readonly<Record<string, number>>) =>
      Object.entries(m)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ') || 'none';
    const out = (o: ScenarioFigures['outcomes']) =>
      `applied ${o.applied}, duplicate ${o.duplicate}, dead-lettered ${o.deadLettered}, redriven ${o.redriven}, retried deliveries ${o.retriedDeliveries}`;
    lines.push(
      `  ${s.name}@${s.batchSize}: ${ops(s.dynamoDbRequestsByOperation)} | ${ops(s.baselineDynamoDbRequestsByOperation)}; SQS ${ops(s.sqsRequestsByOperation)}; ` +
        `time waiting for DynamoDB ${Math.round(s.dynamoDbTimeShare * 100)} % | ${Math.round(s.baselineDynamoDbTimeShare * 100)} %`,
    );
    lines.push(`    engine ${out(s.outcomes)}; baseline ${out(s.baselineOutcomes)}`);
    const p = s.parkingPerMessage;
    lines.push(
      `    redeliveries/msg ${s.redeliveriesPerMessage} | ${s.baselineRedeliveriesPerMessage}; engine batch item failures/msg by reason ${ops(s.retriedByReason)}; ` +
        `parked ${p.parked}/msg, settled from the park ${p.fromPark}, deleted by receipt handle ${p.deletedByReceiptHandle}, settled again ${p.settledAgain}`,
    );
    for (const problem of s.problems) lines.push(`    UNEXPECTED ${problem}`);
  }
  if (report.contention !== undefined) lines.push(...formatContention(report.contention));
  if (report.heap !== undefined) {
    const h = report.heap;
    lines.push('');
    lines.push(
      `Heap growth, ${h.scenario}@${h.batchSize}, from ${h.from} to ${h.to} messages (heap used after a forced GC): ` +
        `engine ${h.engineGrowthMiB} MiB (${h.engineBytesPerMessage} B/message), baseline ${h.baselineGrowthMiB} MiB (${h.baselineBytesPerMessage} B/message).`,
    );
  }
  if (report.coldStart !== undefined) {
    const c = report.coldStart;
    lines.push('');
    lines.push(
      `Cold start (${c.runs} fresh processes each, interleaved, Node.js ${c.node}${c.nodeIsRuntimes ? `, ${c.runtime}'s` : `, NOT ${c.runtime}'s`}, ` +
        `--enable-source-maps), median import with active tracing (both load their Tracer): ` +
        `engine ${(c.bundleBytes / 1024).toFixed(0)} KiB (map ${(c.sourceMapBytes / 1024).toFixed(0)} KiB), ${c.initMs} ms wall, ${c.initCpuMs} ms CPU; ` +
        `baseline ${(c.baselineBundleBytes / 1024).toFixed(0)} KiB (map ${(c.baselineSourceMapBytes / 1024).toFixed(0)} KiB), ${c.baselineInitMs} ms wall, ${c.baselineInitCpuMs} ms CPU.`,
    );
    lines.push(
      `  tracing off: engine ${c.tracingOff.initMs} ms wall, ${c.tracingOff.initCpuMs} ms CPU; baseline ${c.tracingOff.baselineInitMs} ms wall, ` +
        `${c.tracingOff.baselineInitCpuMs} ms CPU; pairs ${c.tracingOff.pairedWallRatio}× wall, ${c.tracingOff.pairedCpuRatio}× CPU.`,
    );
    lines.push(
      `  pairs (engine ÷ baseline, median): wall ${c.pairedWallRatio}×, CPU ${c.pairedCpuRatio}×. Machine ${c.machine.quiet ? 'quiet' : 'NOT quiet'}: ` +
        `load average ${c.machine.before.loadAverage.join(' ')} before, ${c.machine.after.loadAverage.join(' ')} after (${c.machine.cores} cores); ` +
        `calibration loop wall ÷ CPU ${c.machine.before.calibrationWallToCpu} before, ${c.machine.after.calibrationWallToCpu} after` +
        `${c.machine.reasons.length === 0 ? '' : ` (${c.machine.reasons.join('; ')})`}.`,
    );
    lines.push(
      `  largest parts of the engine's bundle: ${c.largestInputs
        .slice(0, 8)
        .map((p) => `${p.name} ${(p.bytes / 1024).toFixed(0)} KiB`)
        .join(', ')}`,
    );
  }
  lines.push('');
  lines.push("The issues' targets:");
  for (const t of report.targets)
    lines.push(
      `  ${t.met === null ? 'not measured' : t.met ? 'met    ' : 'MISSED '} ${t.target}: ${t.figure ?? '-'}${t.limit === null ? '' : ` (limit ${t.limit})`}`,
    );
  lines.push('');
  lines.push(`Total ${report.totalSeconds} s.${report.ok ? '' : ' Some outcomes were UNEXPECTED (see above).'}`);
  return lines.join('\n');
}
