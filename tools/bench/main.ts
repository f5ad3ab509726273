/**
 * `npm run bench`: the engine (the café handler built with `createIdempotentConsumer`) side by
 * side with the same consumer written the typical Powertools way (`makeIdempotent` per record,
 * see `tools/bench/powertoolsBaseline.ts`), on one DynamoDB Local and one SQS server,
 * interleaved (engine, baseline, engine, …), over several repetitions.
 *
 *   npm run bench                                   # the full run (7 to 11 min on 2 busy cores)
 *   npm run bench -- --messages 100 --repetitions 1 --batch-sizes 10 --cold-start-runs 0 --heap-messages 0
 *   npm run bench --silent -- --json                # text on stderr; one JSON object, the last line of stdout
 *
 * Per scenario and batch size it reports DynamoDB requests and capacity units per message
 * (counted from the requests with AWS's billing rules: `tools/bench/capacity.ts`), US dollars
 * per million messages at on-demand prices, SQS requests per message, the sequential round trips
 * on an invocation's critical path (`tools/bench/roundTrips.ts`) with the AWS latency and Lambda
 * duration cost they model (`tools/bench/latencyModel.ts`), messages per second, p50/p99 batch
 * latency and the ratios to the baseline; then the heap growth from 1,000 to 10,000 messages and
 * the cold start of both bundled as the stack bundles them, with whether the machine was quiet
 * (`tools/bench/machineLoad.ts`). The scenarios are in `tools/bench/scenarios.ts`; the issues'
 * targets are checked at the end.
 *
 * Flags:
 *   --messages N           messages per run (mixed is always the sample's 510)   default 300
 *   --repetitions N        repetitions (the issue asks for at least 3)            default 3
 *   --batch-sizes LIST     batch sizes, e.g. 1,10,100                             default 1,10,100
 *   --scenarios LIST       fresh,duplicates,fresh-side-effect,mixed,poison,contention   default all
 *   --contention-messages N      messages per contention run (once, batch 10)   default 600
 *   --contention-environments L  execution environments at once, one run each   default 1,4,16
 *   --heap-messages A,B    heap growth measured from A to B messages (0: skip)    default 1000,10000
 *   --cold-start-runs N    fresh-process imports per side (0: skip)              default 20
 *   --sample FILE          the mixed scenario's stream                            default examples/cafe/samples/orders.jsonl
 *   --dynamodb-endpoint URL --sqs-endpoint URL   use these instead of starting the embedded emulators
 *   --parking on|off       the engine parks out-of-order messages (the café's settings) or not (the library's default)   default off
 *   --inbox-home on|off    the engine keeps each event's inbox mark on its order (the café's consumer) or writes an inbox row   default on
 *   --json                 the JSON summary as the last line of stdout
 *
 * Exit status: 0; 1 when a scenario's outcomes are not the expected ones (its figures would not
 * be those of the scenario described) or on an error; 2 for a bad flag or sample file.
 *
 * @module
 */
import { startEmulators } from '@idempotent-consumer/local/internal';
import { InputFileError, readInputFile } from '@idempotent-consumer/local/internal';
import { type BenchmarkReport, formatReport, targetsOf } from './report.js';
import { FlagError, type Flags, parseFlags, USAGE } from './flags.js';
import { createSides } from './sides.js';
import { runScenarios, scenarioFigures, warmUp } from './runScenarios.js';
import { measureHeapGrowth } from './heapGrowth.js';
import { measureColdStart } from './coldStart.js';
import { ON_DEMAND_PRICES } from './capacity.js';
import { ASSUMED_LATENCY_MS, LAMBDA_PRICES } from './latencyModel.js';
import { CONTENTION_DEFAULTS, contentionReport, runContention } from './contention.js';
import { ScenarioName } from './scenarios.js';

async function main(): Promise<number> {
  let flags: Flags | 'help';
  try {
    flags = parseFlags(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof FlagError)) throw error;
    process.stderr.write(`error: ${error.message}\n${USAGE}\n`);
    return 2;
  }
  if (flags === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  // Lambda runs Node.js 22; the AWS SDK's warning about Node.js 20 is noise here.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const say = (text: string) => (flags.json ? process.stderr : process.stdout).write(`${text}\n`);
  const started = performance.now();
  let sample: string[];
  try {
    sample = (await readInputFile(flags.sample)).map((message) => message.body);
  } catch (error) {
    if (!(error instanceof InputFileError)) throw error;
    process.stderr.write(`error: --sample: ${error.message}\n`);
    return 2;
  }

  const emulators = flags.endpoints === undefined ? await startEmulators() : undefined;
  const endpoints = flags.endpoints ?? { dynamoDb: emulators!.dynamoDbEndpoint, sqs: emulators!.sqsEndpoint };
  const sides = await createSides(endpoints, { parking: flags.parking, inboxHome: flags.inboxHome });
  try {
    say(
      `Benchmark: ${flags.repetitions} repetition(s) × batch sizes ${flags.batchSizes.join(', ')} × ${flags.scenarios.join(', ')}; ${flags.messages} messages per run (mixed: ${sample.length}); engine parking ${flags.parking ? 'on' : 'off'}, inbox home ${flags.inboxHome ? 'on' : 'off'}.`,
    );
    // Warm-up, not counted: the JITs of Node.js and DynamoDB Local, and what each side loads lazily.
    await warmUp(sides, sample);
    const runs = await runScenarios(sides, { ...flags, sample, log: say });
    const scenarios = scenarioFigures(runs, flags.scenarios, flags.batchSizes, { messages: flags.messages, sample });
    const contention = flags.scenarios.includes(ScenarioName.Contention)
      ? contentionReport(
          await runContention(sides, {
            messages: flags.contentionMessages,
            environments: flags.contentionEnvironments,
            batchSize: CONTENTION_DEFAULTS.batchSize,
            log: say,
          }),
          flags.contentionEnvironments,
        )
      : undefined;
    const heap = flags.heap === undefined ? undefined : await measureHeapGrowth(sides, flags.heap, say);
    const coldStart = flags.coldStartRuns === 0 ? undefined : await measureColdStart({ runs: flags.coldStartRuns, log: say });
    const report: BenchmarkReport = {
      baseline: 'powertools-makeIdempotent',
      engineParking: flags.parking ? 'on' : 'off',
      engineInboxHome: flags.inboxHome ? 'on' : 'off',
      repetitions: flags.repetitions,
      messagesPerRun: flags.messages,
      pricing: ON_DEMAND_PRICES,
      latencyModel: { assumedLatencyMs: ASSUMED_LATENCY_MS, lambda: LAMBDA_PRICES },
      scenarios,
      ...(contention === undefined ? {} : { contention }),
      ...(heap === undefined ? {} : { heap }),
      ...(coldStart === undefined ? {} : { coldStart }),
      targets: [],
      totalSeconds: 0,
      ok: scenarios.every((s) => s.problems.length === 0) && (contention?.results.every((r) => r.problems.length === 0) ?? true),
    };
    report.targets.push(...targetsOf(report));
    report.totalSeconds = Number(((performance.now() - started) / 1000).toFixed(1));
    say(formatReport(report));
    if (flags.json) process.stdout.write(`${JSON.stringify(report)}\n`);
    return report.ok ? 0 : 1;
  } finally {
    await sides.dispose();
    await emulators?.stop();
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  },
);
