/**
 * `npm run bench`: drives the real SQS handler (`createConsumer` + `createSqsHandler`) on the
 * embedded emulators and prints, per scenario, throughput, handler latency, the DynamoDB and
 * SQS requests each message costs, and the process's memory.
 *
 *   npx tsx scripts/benchmark.ts                      # 1,000 messages per scenario
 *   npx tsx scripts/benchmark.ts --messages 2000      # more (about 2 min 20 s on 2 cores)
 *   npx tsx scripts/benchmark.ts --concurrency 5      # 5 execution environments at once
 *   npx tsx scripts/benchmark.ts --json               # text on stderr, one JSON summary line on stdout
 *
 * The handler is invoked directly, as Lambda invokes it, with SQS events of `batchSize` (10)
 * records built in memory; the source queue itself is not polled, so SQS requests counted are
 * the consumer's own (dead-letter sends, retry backoff). Every DynamoDB request gets
 * `ReturnConsumedCapacity: TOTAL` from a middleware of the benchmark's client (production code
 * is unchanged), so the consumed capacity is counted when the emulator reports it.
 *
 * Exit codes: 0; 1 when a scenario's outcomes are not the expected ones (then its figures are
 * not those of the scenario described, e.g. a write on the duplicate path) or on an error;
 * 2 for bad flags.
 *
 * @module
 */
import { parseArgs } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { ConsumedCapacity } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { defaultSettings, lambdaEnvironment } from '../config/settings.js';
import { readRuntimeConfig } from '../lambda/config/runtimeConfig.js';
import { createConsumer } from '../lambda/createConsumer.js';
import { createSqsHandler } from '../lambda/handlers/createSqsHandler.js';
import type { SqsHandler } from '../lambda/handlers/createSqsHandler.js';
import type { Outcome } from '../lambda/observability/outcomes.js';
import { localClientConfig, startEmulators } from '../local/emulators.js';
import { provisionResources } from '../local/provision.js';
import { body, lambdaContext, sqsEvent, sqsRecord } from '../test/support/sqsEvents.js';

/** Messages per scenario: the whole run takes about 75 s on 2 cores (2,000 took 140 s). */
const DEFAULT_MESSAGES = 1000;
/** DynamoDB commands that write (the ones billed in write capacity). */
const WRITE_COMMANDS = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'TransactWriteItems', 'BatchWriteItem']);
/** DynamoDB commands that read. */
const READ_COMMANDS = new Set(['GetItem', 'BatchGetItem', 'TransactGetItems', 'Query', 'Scan']);

/** Requests by command name and consumed capacity, reset before each scenario. */
class Tally {
  dynamoDb = new Map<string, number>();
  sqs = new Map<string, number>();
  readUnits = 0;
  writeUnits = 0;
  /** Whether any response reported `ConsumedCapacity`. */
  capacityReported = false;
  /** Items in the `TransactWriteItems` requests: AWS bills 2 WCU per item of up to 1 KB. */
  transactionItems = 0;
  outcomes = new Map<Outcome, number>();

  static add(map: Map<string, number>, key: string, n = 1): void {
    map.set(key, (map.get(key) ?? 0) + n);
  }

  /** Adds a response's `ConsumedCapacity` (one object, or one per table for transactions). */
  addCapacity(command: string, consumed: ConsumedCapacity | ConsumedCapacity[] | undefined): void {
    for (const c of consumed === undefined ? [] : [consumed].flat()) {
      this.capacityReported = true;
      const total = c.CapacityUnits ?? 0;
      const read = c.ReadCapacityUnits ?? (READ_COMMANDS.has(command) ? total : 0);
      this.readUnits += read;
      this.writeUnits += c.WriteCapacityUnits ?? total - read;
    }
  }
}

/** Counts the DynamoDB client's requests by command, and asks for and adds consumed capacity. */
function instrumentDynamoDb(client: DynamoDBClient, tally: () => Tally): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = (context.commandName ?? 'Unknown').replace(/Command$/, '');
      Tally.add(tally().dynamoDb, command);
      if (command === 'TransactWriteItems') tally().transactionItems += (args.input as { TransactItems?: unknown[] }).TransactItems?.length ?? 0;
      const input = WRITE_COMMANDS.has(command) || READ_COMMANDS.has(command)
        ? { ...args.input, ReturnConsumedCapacity: 'TOTAL' as const }
        : args.input;
      const result = await next({ ...args, input });
      const output = result.output as { ConsumedCapacity?: ConsumedCapacity | ConsumedCapacity[] };
      tally().addCapacity(command, output.ConsumedCapacity);
      return result;
    },
    { step: 'initialize', name: 'benchmarkDynamoDbCounter' },
  );
}

/** Counts the SQS client's requests by command. */
function instrumentSqs(client: SQSClient, tally: () => Tally): void {
  client.middlewareStack.add(
    (next, context) => (args) => {
      Tally.add(tally().sqs, (context.commandName ?? 'Unknown').replace(/Command$/, ''));
      return next(args);
    },
    { step: 'initialize', name: 'benchmarkSqsCounter' },
  );
}

/** One scenario: the records to deliver and the outcomes they must have. */
interface Scenario {
  readonly name: string;
  readonly records: readonly SQSRecord[];
  readonly expected: Partial<Record<Outcome, number>>;
  /** The duplicate path must not write. */
  readonly noWrites?: boolean;
}

/** What is printed for one scenario, and put in the JSON summary. */
interface ScenarioResult {
  readonly name: string;
  readonly messages: number;
  readonly invocations: number;
  readonly wallTimeS: number;
  readonly messagesPerSecond: number;
  /** Invocation time ÷ records of the invocation, in milliseconds. */
  readonly latencyMs: { readonly p50: number; readonly p90: number; readonly p99: number };
  readonly outcomes: Record<string, number>;
  readonly dynamoDbPerMessage: Record<string, number>;
  readonly dynamoDbWritesPerMessage: number;
  readonly transactionItemsPerMessage: number;
  /** `null` when the emulator did not report consumed capacity. */
  readonly capacityPerMessage: { readonly read: number; readonly write: number } | null;
  readonly sqsPerMessage: Record<string, number>;
  readonly memoryMiB: { readonly rss: number; readonly heapUsed: number };
  /** Why the outcomes are not the expected ones; empty when they are. */
  readonly problems: readonly string[];
}

/** `global.gc` when Node.js runs with `--expose-gc`. */
const gc = (globalThis as { gc?: () => void }).gc;
const round = (n: number, digits = 2): number => Number(n.toFixed(digits));
const mib = (bytes: number): number => round(bytes / 1024 / 1024, 1);

/** Nearest-rank percentile of sorted values. */
function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
}

function perMessage(map: ReadonlyMap<string, number>, messages: number): Record<string, number> {
  return Object.fromEntries([...map].sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, round(v / messages, 3)]));
}

/** Lambda SQS records (batch-size chunks) for the scenarios, `n` orders, `bench-order-<i>`. */
function scenarios(n: number, queueArn: string, prefix = 'bench'): Scenario[] {
  const orderId = (i: number) => `${prefix}-order-${i}`;
  const range = Array.from({ length: n }, (_, i) => i);
  const paid = range.map((i) => sqsRecord(`${prefix}-paid-${i}`, body.paid(`${prefix}-paid-${i}`, orderId(i), 10), { queueArn }));
  const poison = (i: number): string | Record<string, unknown> =>
    [
      'not-json',
      { type: 'OrderShipped', orderId: orderId(i), occurredAt: '2026-01-01T12:02:00.000Z' },
      { eventId: `${prefix}-refund-${i}`, type: 'OrderRefunded', orderId: orderId(i), occurredAt: '2026-01-01T12:02:00.000Z' },
      { eventId: `${prefix}-bad-${i}`, type: 'OrderShipped', orderId: orderId(i), occurredAt: 'yesterday' },
    ][Math.floor(i / 10) % 4]!;
  const poisonCount = range.filter((i) => i % 10 === 9).length;
  return [
    {
      name: 'OrderPlaced, first delivery (inbox + order)',
      records: range.map((i) => sqsRecord(`${prefix}-placed-${i}`, body.placed(`${prefix}-placed-${i}`, orderId(i)), { queueArn })),
      expected: { applied: n },
    },
    {
      name: 'OrderPaid, first delivery (inbox + order + ledger, guarded notification)',
      records: paid,
      expected: { applied: n },
    },
    {
      name: 'OrderPaid, redelivered (all duplicates)',
      // SQS redelivers a message with the same messageId and a higher receive count.
      records: paid.map((r) => sqsRecord(r.messageId, r.body, { queueArn, receiveCount: 2 })),
      expected: { duplicate: n },
      noWrites: true,
    },
    {
      name: 'OrderShipped with 1 poison message per 10 (dead-letter sends)',
      records: range.map((i) =>
        sqsRecord(`${prefix}-shipped-${i}`, i % 10 === 9 ? poison(i) : body.shipped(`${prefix}-shipped-${i}`, orderId(i)), { queueArn }),
      ),
      expected: { applied: n - poisonCount, 'dead-lettered': poisonCount },
    },
  ];
}

/** The benchmark's running parts. */
interface Bench {
  /** One handler per execution environment. */
  readonly handlers: readonly SqsHandler[];
  /** Where the client middlewares and the outcome observer count; replaced for each scenario. */
  readonly counting: { tally: Tally };
}

/**
 * Delivers the scenario's records in events of `batchSize` records, one invocation at a time
 * per handler (execution environment), and measures each invocation.
 */
async function run(bench: Bench, scenario: Scenario, batchSize: number): Promise<ScenarioResult> {
  const tally = new Tally();
  bench.counting.tally = tally;
  const batches: SQSRecord[][] = [];
  for (let i = 0; i < scenario.records.length; i += batchSize) batches.push(scenario.records.slice(i, i + batchSize));
  const perMessageMs: number[] = [];
  const timeoutMs = defaultSettings.function.timeoutSeconds * 1000;
  let next = 0;
  let failedRecords = 0;

  const started = performance.now();
  await Promise.all(
    bench.handlers.map(async (handler) => {
      for (let batch = batches[next++]; batch !== undefined; batch = batches[next++]) {
        const invoked = performance.now();
        const response = await handler(sqsEvent(...batch), lambdaContext(timeoutMs, 'benchmark'));
        perMessageMs.push((performance.now() - invoked) / batch.length);
        failedRecords += response.batchItemFailures.length;
      }
    }),
  );
  const wallMs = performance.now() - started;

  const messages = scenario.records.length;
  const sorted = perMessageMs.sort((a, b) => a - b);
  const outcomes = Object.fromEntries(tally.outcomes);
  const writes = [...tally.dynamoDb].reduce((sum, [command, count]) => sum + (WRITE_COMMANDS.has(command) ? count : 0), 0);
  const problems: string[] = [];
  for (const outcome of new Set([...Object.keys(outcomes), ...Object.keys(scenario.expected)]) as Set<Outcome>) {
    const [got, want] = [outcomes[outcome] ?? 0, scenario.expected[outcome] ?? 0];
    if (got !== want) problems.push(`${outcome}: ${got}, expected ${want}`);
  }
  if (failedRecords > 0) problems.push(`${failedRecords} batch item failures`);
  if (scenario.noWrites === true && writes > 0) {
    const byCommand = [...tally.dynamoDb].filter(([c]) => WRITE_COMMANDS.has(c)).map(([c, n]) => `${c} ${n}`);
    problems.push(`${writes} DynamoDB writes on the duplicate path (${byCommand.join(', ')}); expected none`);
  }
  gc?.();
  const memory = process.memoryUsage();
  return {
    name: scenario.name,
    messages,
    invocations: batches.length,
    wallTimeS: round(wallMs / 1000),
    messagesPerSecond: round(messages / (wallMs / 1000), 1),
    latencyMs: { p50: round(percentile(sorted, 50)), p90: round(percentile(sorted, 90)), p99: round(percentile(sorted, 99)) },
    outcomes,
    dynamoDbPerMessage: perMessage(tally.dynamoDb, messages),
    dynamoDbWritesPerMessage: round(writes / messages, 3),
    transactionItemsPerMessage: round(tally.transactionItems / messages, 3),
    capacityPerMessage: tally.capacityReported
      ? { read: round(tally.readUnits / messages, 3), write: round(tally.writeUnits / messages, 3) }
      : null,
    sqsPerMessage: perMessage(tally.sqs, messages),
    memoryMiB: { rss: mib(memory.rss), heapUsed: mib(memory.heapUsed) },
    problems,
  };
}

function format(index: number, r: ScenarioResult): string {
  const requests = (map: Record<string, number>) => {
    const total = round(Object.values(map).reduce((a, b) => a + b, 0), 3);
    const parts = Object.entries(map).map(([command, n]) => `${command} ${n}`);
    return parts.length === 0 ? '0' : `${total} (${parts.join(', ')})`;
  };
  const capacity = r.capacityPerMessage === null
    ? 'not reported'
    : `${r.capacityPerMessage.read} RCU, ${r.capacityPerMessage.write} WCU`;
  return [
    `${index}. ${r.name}`,
    `   messages ${r.messages} in ${r.invocations} invocations; wall time ${r.wallTimeS} s; ${r.messagesPerSecond} messages/s`,
    `   latency per message  p50 ${r.latencyMs.p50} ms, p90 ${r.latencyMs.p90} ms, p99 ${r.latencyMs.p99} ms`,
    `   outcomes             ${Object.entries(r.outcomes).map(([o, n]) => `${o} ${n}`).join(', ')}`,
    `   DynamoDB / message   ${requests(r.dynamoDbPerMessage)}; writes ${r.dynamoDbWritesPerMessage}`,
    `   capacity / message   ${capacity}; items in transactions ${r.transactionItemsPerMessage}`,
    `   SQS / message        ${requests(r.sqsPerMessage)}`,
    `   memory after         RSS ${r.memoryMiB.rss} MiB, heap used ${r.memoryMiB.heapUsed} MiB`,
    ...r.problems.map((p) => `   UNEXPECTED           ${p}`),
  ].join('\n');
}

function header(messages: number, concurrency: number, batchSize: number, warmup: number): string {
  return [
    `Benchmark of the SQS consumer: ${messages} messages per scenario, events of ${batchSize} records,`,
    `${concurrency} execution environment(s) invoked one event at a time each; ${warmup} warm-up messages first (not counted).`,
    '',
    'What the numbers mean:',
    '- DynamoDB Local (Java, on this machine) is far slower than DynamoDB, and shares the CPU with',
    '  the consumer: wall time, messages/s and latency are only comparable between runs and',
    '  scenarios here, not a prediction for AWS.',
    '- Requests per message (by command) are the cost figures that carry over to AWS: each is',
    '  billed as a request (and in capacity units), and each is a network round trip in Lambda.',
    '- Latency per message = time of one handler invocation ÷ the records in its event (records',
    '  run in parallel inside an invocation), nearest-rank percentiles over the invocations.',
    '- Capacity is what DynamoDB Local reports with ReturnConsumedCapacity=TOTAL (set by the',
    "  benchmark's client middleware). It reports one item per table for a TransactWriteItems, so",
    '  it undercounts transactions with two items in one table; AWS bills 2 WCU per transaction',
    '  item (up to 1 KB): see "items in transactions".',
    "- SQS counts are the consumer's own requests (dead-letter sends, retry backoff; no polling).",
    `- Memory is this Node.js process's (not DynamoDB Local's) after the scenario, ${
      gc === undefined ? 'without a forced GC (run with NODE_OPTIONS=--expose-gc for one)' : 'after a forced GC'
    }.`,
    '',
  ].join('\n');
}

function parseFlags(): { messages: number; concurrency: number; json: boolean } {
  const usage = `usage: tsx scripts/benchmark.ts [--messages N (>= 10, default ${DEFAULT_MESSAGES})] [--concurrency C (1-50, default 1)] [--json]`;
  try {
    const { values } = parseArgs({
      options: {
        messages: { type: 'string', default: String(DEFAULT_MESSAGES) },
        concurrency: { type: 'string', default: '1' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', default: false },
      },
    });
    if (values.help) {
      process.stdout.write(`${usage}\n`);
      process.exit(0);
    }
    const messages = Number(values.messages);
    const concurrency = Number(values.concurrency);
    if (!Number.isInteger(messages) || messages < 10) throw new Error('--messages must be an integer >= 10');
    if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 50) throw new Error('--concurrency must be an integer from 1 to 50');
    return { messages, concurrency, json: values.json };
  } catch (error) {
    process.stderr.write(`error: ${(error as Error).message}\n${usage}\n`);
    process.exit(2);
  }
}

async function main(): Promise<number> {
  const flags = parseFlags();
  const say = (text: string) => (flags.json ? process.stderr : process.stdout).write(`${text}\n`);
  const settings = defaultSettings;
  const batchSize = settings.function.batchSize;
  const warmup = Math.min(100, flags.messages);
  const runStarted = performance.now();

  say(header(flags.messages, flags.concurrency, batchSize, warmup * 2));
  const emulators = await startEmulators();
  const admin = { dynamoDb: new DynamoDBClient(localClientConfig(emulators.dynamoDbEndpoint)), sqs: new SQSClient(localClientConfig(emulators.sqsEndpoint)) };
  const dynamoDb = new DynamoDBClient(localClientConfig(emulators.dynamoDbEndpoint));
  const sqs = new SQSClient(localClientConfig(emulators.sqsEndpoint));
  try {
    const resources = await provisionResources({ ...admin, settings });
    const config = readRuntimeConfig(lambdaEnvironment(settings, resources));
    const counting = { tally: new Tally() };
    instrumentDynamoDb(dynamoDb, () => counting.tally);
    instrumentSqs(sqs, () => counting.tally);
    // One consumer per execution environment, as after a cold start; the clients are shared.
    const handlers = Array.from({ length: flags.concurrency }, () =>
      createSqsHandler(
        createConsumer(config, { dynamoDb, sqs }, { observer: { onOutcome: (r) => Tally.add(counting.tally.outcomes, r.outcome) } }),
      ),
    );
    const bench: Bench = { handlers, counting };

    // Warm-up: the JITs of Node.js and of DynamoDB Local, on other orders.
    for (const scenario of scenarios(warmup, resources.queueArn, 'warmup').slice(0, 2)) await run(bench, scenario, batchSize);

    const results: ScenarioResult[] = [];
    for (const [index, scenario] of scenarios(flags.messages, resources.queueArn).entries()) {
      const result = await run(bench, scenario, batchSize);
      results.push(result);
      say(format(index + 1, result));
    }
    const totalS = round((performance.now() - runStarted) / 1000, 1);
    const ok = results.every((r) => r.problems.length === 0);
    say(`\nTotal run time ${totalS} s (emulator start, provisioning, warm-up and scenarios).${ok ? '' : ' Some outcomes were UNEXPECTED (see above).'}`);
    if (flags.json) {
      const summary = { messages: flags.messages, concurrency: flags.concurrency, batchSize, totalS, ok, scenarios: results };
      process.stdout.write(`${JSON.stringify(summary)}\n`);
    }
    return ok ? 0 : 1;
  } finally {
    for (const client of [dynamoDb, sqs, admin.dynamoDb, admin.sqs]) client.destroy();
    await emulators.stop();
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
