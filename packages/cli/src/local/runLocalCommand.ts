/**
 * The `local` command's action: loads the user's handler, settings and check, runs them with
 * `runLocal` and prints progress (standard error) and the report (standard output).
 *
 * @module
 */
import { isAbsolute, relative } from 'node:path';
import { defaultSettings, environmentVariables, tableEnvironmentVariables, withOverrides } from 'idempotent-consumer/settings';
import { InvalidSettingsError } from 'idempotent-consumer/settings';
import type { LocalCheck } from '@idempotent-consumer/local';
import { CloudAssemblyError, DataDirError, LocalRuntimeError, TemplateMismatchError } from '@idempotent-consumer/local';
import { FaultFlagError, faultRatesFromFlags, parseSeedFlag } from '@idempotent-consumer/local';
import { toHtmlReportInput } from '@idempotent-consumer/local';
import { InputFileError, readInputFile } from '@idempotent-consumer/local';
import { eventTimeField } from '@idempotent-consumer/local';
import { formatReport } from '@idempotent-consumer/local';
import type { LocalRunResult, Progress, RunningLocalRuntime } from '@idempotent-consumer/local';
import type { OutcomeRecord } from 'idempotent-consumer/observability';
import type { CliIo } from '../cliIo.js';
import { DlqToolError, UsageError } from '../dlq/errors.js';
import { loadExport, loadHandler, loadSettings, parseModuleSpec } from './loadExport.js';
import { checkOutputFileFlags } from './outputFileFlags.js';

/** The `local` command's flags, as commander parsed them. */
export interface LocalFlags {
  /** The handler's module; or `app`. */
  readonly handler?: string;
  /** The CDK app (a command, a folder with a cdk.json, or a cloud assembly); or `handler`. */
  readonly app?: string;
  /** With `app`: the stack. */
  readonly stack?: string;
  /** With `app`: `key=value` context of the synthesis. */
  readonly context?: readonly string[];
  /** With `app`: the consumer function, when the stack has several. */
  readonly function?: string;
  /** With `app`: a node_modules folder of Node.js binaries (`node-22`, `node-24`). */
  readonly runtimes?: string;
  readonly input: string;
  readonly settings?: string;
  readonly check?: string;
  readonly eventTime?: string;
  /** @default 'sqs'; with `app`, the template's */
  readonly source?: 'sqs' | 'kafka' | 'kinesis' | 'dynamodb-streams';
  readonly fifo?: boolean;
  readonly fault: readonly string[];
  readonly seed?: string;
  readonly transientFailureRate: number;
  readonly partitions?: number;
  /** Kinesis and DynamoDB Streams: shards of the local stream. */
  readonly shards?: number;
  readonly concurrencyPerProcess?: number;
  readonly kafkaRetryReading?: 'resume-from-lowest-offset' | 'retry-reported-records';
  /** Kafka: the local mapping's S3 on-failure destination (a bucket of the local S3 server). */
  readonly kafkaOnFailureBucket?: string;
  readonly relay: boolean;
  readonly dataDir?: string;
  readonly json?: boolean;
  readonly report?: string;
  readonly screenshot?: string;
  readonly keepRunning?: boolean;
  /** With `app` and `keepRunning`: write the stack's outputs here, as `cdk deploy --outputs-file` does. */
  readonly outputsFile?: string;
  /** With `app` and `keepRunning`: write the emulators' endpoints here, as `NAME=value` lines. */
  readonly endpointsFile?: string;
  readonly logLevel?: string;
  readonly timeout?: number;
}

/**
 * The flags of `local` that npm takes for its own configuration when they are given to
 * `npm start` without `--` (it sets `npm_config_<name>` and does not pass them on).
 */
const flagsNpmSwallows = [
  'fifo',
  'json',
  'keep-running',
  'input',
  'source',
  'data-dir',
  'report',
  'screenshot',
  'fault',
  'seed',
  'event-time',
  'transient-failure-rate',
  'log-level',
  'partitions',
  'shards',
  'concurrency-per-process',
  'handler',
  'settings',
  'check',
  'app',
  'stack',
  'context',
  'function',
  'runtimes',
  'outputs-file',
  'endpoints-file',
];

/**
 * The flags given to an npm script without `--`: npm keeps them as `npm_config_<name>` (dashes
 * become underscores) and the script never sees them. Only under an npm script
 * (`npm_lifecycle_event` set); `json` counts only when npm's own `json` setting is not also a flag.
 */
export function flagsGivenToNpm(env: NodeJS.ProcessEnv): string[] {
  if (env.npm_lifecycle_event === undefined) return [];
  return flagsNpmSwallows.filter((flag) => {
    const value = env[`npm_config_${flag.replaceAll('-', '_')}`];
    return value !== undefined && value !== '' && !(flag === 'log-level' && env.npm_config_loglevel === value);
  });
}

/**
 * Runs the `local` command.
 *
 * @returns the exit code: 0 when the exactly-once check passed, 1 when it failed (also when the
 *   run hit its `--timeout`: the report is printed all the same)
 * @throws UsageError (exit 2) for a bad flag, input file, settings or data directory
 */
export async function runLocalCommand(flags: LocalFlags, io: CliIo): Promise<number> {
  const swallowed = flagsGivenToNpm(io.env);
  if (swallowed.length > 0) {
    const written = swallowed.map((flag) => `--${flag}`).join(' ');
    throw new UsageError(
      `npm kept ${written} for itself: flags of an npm script go after \`--\`, e.g. \`npm start -- ${written}\` ` +
        `(npm start ${written} runs without them)`,
    );
  }
  if (flags.screenshot !== undefined && flags.report === undefined)
    throw new UsageError('--screenshot needs --report FILE.html (it is a picture of that page)');
  if (flags.source === 'kafka' && flags.fifo === true) {
    throw new UsageError(
      '--source kafka cannot run with --fifo: a Kafka event source needs a standard dead-letter queue (its on-failure destination)',
    );
  }
  if ((flags.source === 'kinesis' || flags.source === 'dynamodb-streams') && (flags.fifo === true || flags.app !== undefined)) {
    throw new UsageError(
      `--source ${flags.source} cannot run with ${flags.fifo === true ? '--fifo: a stream event source needs a standard dead-letter queue (its on-failure destination)' : '--app yet: it runs a handler module (--handler) and a settings module'}`,
    );
  }
  const faults = (() => {
    try {
      const seed = flags.seed === undefined ? 1 : parseSeedFlag(flags.seed);
      return { rates: faultRatesFromFlags(flags.fault), seed };
    } catch (error) {
      if (error instanceof FaultFlagError) throw new UsageError(error.message);
      throw error;
    }
  })();

  if ((flags.handler === undefined) === (flags.app === undefined)) {
    throw new UsageError(
      flags.app === undefined
        ? 'local needs --handler FILE (a handler module) or --app COMMAND --stack NAME (a CDK app, run from its bundle)'
        : '--handler and --app cannot run together: --handler runs the handler module, --app the bundle its CDK app synthesizes',
    );
  }
  if (flags.app === undefined) {
    const given = { stack: flags.stack, context: flags.context?.[0], function: flags.function, runtimes: flags.runtimes };
    const appOnly = Object.entries(given).find(([, value]) => value !== undefined)?.[0];
    if (appOnly !== undefined) throw new UsageError(`--${appOnly} goes with --app (a CDK app run from its bundle), not with --handler`);
  }
  const app = flags.app === undefined ? undefined : appFlags(flags, faults.rates);
  const outputFiles = await checkOutputFileFlags(flags);
  const handler = flags.handler === undefined ? undefined : await loadHandler(flags.handler);
  const baseSettings = flags.settings === undefined ? defaultSettings : await loadSettings(flags.settings);
  const check =
    flags.check === undefined
      ? undefined
      : await loadExport<LocalCheck>('--check', parseModuleSpec('--check', flags.check), 'check', (value) =>
          typeof value === 'function'
            ? undefined
            : 'is not a function (export const check: LocalCheck = async ({ documentClient, tables }) => [])',
        );
  const settings = flags.fifo === true ? withOverrides({ queue: { fifo: true } }, baseSettings) : baseSettings;

  let input;
  try {
    // With --app the template's queue says the size; SQS's largest message until then.
    input = await readInputFile(
      flags.input,
      app !== undefined && flags.settings === undefined ? 1_048_576 : settings.queue.maxMessageSizeBytes,
    );
  } catch (error) {
    if (error instanceof InputFileError) throw new UsageError(error.message);
    throw error;
  }

  // The run captures the process's standard output and error (the consumer's metrics and logs):
  // what this command prints goes through the real `write` functions, taken now.
  const realWrite = (stream: NodeJS.WritableStream) =>
    stream === process.stdout || stream === process.stderr
      ? (stream as typeof process.stdout).write.bind(stream)
      : stream.write.bind(stream);
  const stdoutWrite = realWrite(io.stdout);
  const stderrWrite = realWrite(io.stderr);
  const progress = new ProgressLine(stderrWrite, (io.stderr as { isTTY?: boolean }).isTTY === true);
  const sourceName =
    flags.source === 'kafka'
      ? 'Kafka'
      : flags.source === 'kinesis'
        ? 'Kinesis Data Streams'
        : flags.source === 'dynamodb-streams'
          ? 'DynamoDB Streams'
          : settings.queue.fifo
            ? 'SQS FIFO'
            : 'SQS';
  const title = app === undefined ? settings.consumerName : app.stack;
  progress.say(
    app === undefined
      ? `Running ${input.length} messages from ${shortPath(flags.input)} through ${settings.consumerName} (${sourceName} event source)…`
      : `Synthesizing ${app.stack} (${app.app}), then running ${input.length} messages from ${shortPath(flags.input)} through its consumer's bundle…`,
  );

  let printed = false;
  const print = async (result: LocalRunResult): Promise<void> => {
    if (printed) return;
    printed = true;
    progress.done();
    const text = formatReport(result.report);
    if (flags.json === true) {
      stderrWrite(text);
      stdoutWrite(`${JSON.stringify(result.report)}\n`);
    } else {
      stdoutWrite(text);
    }
    if (flags.report !== undefined) {
      const { writeHtmlReport } = await import('@idempotent-consumer/local');
      const page = toHtmlReportInput(result.report, result.deliveries, {
        startedAt: result.startedAt,
        fifo: result.source === 'sqs-fifo',
        title: `${title}: local run (${result.source})`,
        ...(result.report.outbox === undefined ? {} : { outbox: result.report.outbox }),
      });
      const { bytes } = await writeHtmlReport(flags.report, page, flags.screenshot === undefined ? {} : { screenshot: flags.screenshot });
      stderrWrite(
        `Report page: ${flags.report} (${Math.round(bytes / 1024)} KB)${flags.screenshot === undefined ? '' : `, screenshot: ${flags.screenshot}`}\n`,
      );
    }
  };
  const onReport = async (result: LocalRunResult, running: RunningLocalRuntime): Promise<void> => {
    await print(result);
    if (flags.keepRunning !== true) return;
    stderrWrite(
      [
        '',
        'The consumer keeps consuming (a redriven message is processed) until Ctrl-C. In another terminal:',
        `  export AWS_ENDPOINT_URL=${running.sqsEndpoint} AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local`,
        `  export QUEUE_URL=${running.resources.queueUrl} DLQ_URL=${running.resources.deadLetterQueueUrl}`,
        '  npx idempotent-consumer dlq list',
        '  npx idempotent-consumer dlq redrive --reason RetriesExhausted --dry-run',
        ...(running.lambda === undefined
          ? []
          : [
              // Kafka: a dead letter goes back to the consumer by an Invoke of its function, served locally.
              `  export AWS_ENDPOINT_URL_LAMBDA=${running.lambda.endpoint} FUNCTION_NAME=${running.lambda.functionName}`,
              '  npx idempotent-consumer dlq redrive --yes   # Kafka dead letters: invokes the function with each record',
              ...(flags.kafkaOnFailureBucket === undefined
                ? []
                : [
                    `  npx idempotent-consumer dlq list --on-failure-bucket s3://${flags.kafkaOnFailureBucket}   # batches the mapping gave up, kept whole`,
                  ]),
            ]),
        ...(flags.handler === undefined
          ? []
          : [
              `  export AWS_ENDPOINT_URL_DYNAMODB=${running.dynamoDbEndpoint} ${environmentVariables.inboxTable}=${running.resources.inboxTable}${[
                ...tableEnvironmentVariables(Object.keys(running.resources.tables)),
              ]
                .map(([logical, variable]) => ` ${variable}=${running.resources.tables[logical]}`)
                .join('')}`,
              `  npx idempotent-consumer dlq redrive --dry-run --handler ${flags.handler}${flags.settings === undefined ? '' : ` --settings ${flags.settings}`}   # what each would do now; writes nothing`,
            ]),
        ...(outputFiles.outputsFile === undefined ? [] : [`Stack outputs (as cdk deploy --outputs-file): ${outputFiles.outputsFile}`]),
        ...(outputFiles.endpointsFile === undefined ? [] : [`Endpoints, region, credentials (NAME=value): ${outputFiles.endpointsFile}`]),
        `DynamoDB Local: ${running.dynamoDbEndpoint} (inbox ${running.resources.inboxTable}` +
          `${Object.values(running.resources.tables).length > 0 ? `, tables ${Object.values(running.resources.tables).join(', ')}` : ''})`,
        '',
      ].join('\n'),
    );
  };

  const common = {
    input,
    ...(check === undefined ? {} : { check }),
    ...(flags.eventTime === undefined ? {} : { eventTime: eventTimeField(flags.eventTime) }),
    ...(flags.dataDir === undefined ? {} : { dataDir: flags.dataDir }),
    ...(flags.logLevel === undefined ? {} : { logLevel: flags.logLevel }),
    ...(flags.partitions === undefined ? {} : { partitions: flags.partitions }),
    ...(flags.shards === undefined ? {} : { shards: flags.shards }),
    ...(flags.concurrencyPerProcess === undefined ? {} : { concurrencyPerProcess: flags.concurrencyPerProcess }),
    ...(flags.kafkaRetryReading === undefined ? {} : { kafkaRetryReading: flags.kafkaRetryReading }),
    ...(flags.kafkaOnFailureBucket === undefined ? {} : { kafkaOnFailureBucket: flags.kafkaOnFailureBucket }),
    relay: flags.relay,
    ...(flags.timeout === undefined ? {} : { timeoutMs: flags.timeout * 1000 }),
    onProgress: (p: Progress) => progress.update(p),
    onLogLine: (line: string) => progress.log(line),
    onReport,
    ...(flags.keepRunning === true && io.signal !== undefined
      ? { keepRunning: io.signal, onOutcomeAfterReport: (record: OutcomeRecord) => stderrWrite(`${formatLateOutcome(record)}\n`) }
      : {}),
  };
  const { runLocal, runLocalApp } = await import('@idempotent-consumer/local');
  let result: LocalRunResult;
  try {
    result =
      app === undefined
        ? await runLocal({
            ...common,
            handler: handler!,
            settings,
            source: flags.source ?? 'sqs',
            ...(Object.keys(faults.rates).length === 0 ? {} : { faults }),
            transientFailureRate: flags.transientFailureRate,
            seed: faults.seed,
          })
        : await runLocalApp({
            ...common,
            ...app,
            ...(flags.settings === undefined ? {} : { settings: { value: baseSettings, name: flags.settings } }),
            ...(flags.fifo === true ? { fifo: true } : {}),
            ...(flags.source === undefined ? {} : { source: flags.source }),
            ...outputFiles,
            onNote: (note) => progress.say(`Note: ${note}`),
          });
    if (flags.keepRunning === true && io.signal !== undefined)
      stderrWrite('Stopped: the event source, the relay and the emulators are shut down.\n');
  } catch (error) {
    progress.done();
    if (error instanceof InvalidSettingsError || error instanceof DataDirError) throw new UsageError(error.message);
    if (error instanceof CloudAssemblyError || error instanceof TemplateMismatchError) throw new UsageError(error.message);
    if (error instanceof RangeError) throw new UsageError(error.message);
    if (error instanceof LocalRuntimeError) throw new LocalRunFailed(error.message, { cause: error });
    throw error;
  }
  await print(result);
  return result.report.check.ok ? 0 : 1;
}

/**
 * The `--app` flags, checked: `--stack` is needed; `--fault` and `--transient-failure-rate` are
 * refused (they wrap the handler's clients and `decide` in this process, and the bundle runs in
 * its own processes).
 *
 * @throws UsageError for a missing or refused flag, or a `--context` that is not `key=value`
 */
export function appFlags(
  flags: LocalFlags,
  faultRates: Readonly<Record<string, number>>,
): { app: string; stack: string; context: Record<string, string>; functionId?: string; nodeModules?: string[] } {
  if (flags.stack === undefined) throw new UsageError('--app needs --stack NAME: the stack whose consumer runs');
  if (Object.keys(faultRates).length > 0 || flags.transientFailureRate > 0) {
    throw new UsageError(
      `${Object.keys(faultRates).length > 0 ? '--fault' : '--transient-failure-rate'} cannot run with --app: it wraps the handler's AWS clients and decide in this process, and --app runs the bundle in processes of its own (run --handler to inject faults)`,
    );
  }
  const context: Record<string, string> = {};
  for (const pair of flags.context ?? []) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new UsageError(`--context ${pair}: expected key=value (e.g. --context fifo=true)`);
    context[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return {
    app: flags.app!,
    stack: flags.stack,
    context,
    ...(flags.function === undefined ? {} : { functionId: flags.function }),
    ...(flags.runtimes === undefined ? {} : { nodeModules: [flags.runtimes] }),
  };
}

/** One line for an outcome after the report (`--keep-running`): `applied  <message id>  key=… reason=…`. */
export function formatLateOutcome(record: OutcomeRecord): string {
  const parts = [record.outcome.padEnd(13), record.messageId];
  if (record.idempotencyKey !== undefined) parts.push(`key=${record.idempotencyKey}`);
  if (record.reason !== undefined) parts.push(`reason=${record.reason}`);
  else if (record.errorType !== undefined) parts.push(`error=${record.errorType}`);
  return parts.join('  ');
}

/** The local run could not finish (an emulator did not start, provisioning failed). Exit code 1. A run that hits its time limit is reported instead. */
export class LocalRunFailed extends DlqToolError {}

/** Powertools Logger's keys that say nothing on a local run (the same on every line). */
const quietLogKeys = new Set([
  'level',
  'message',
  'timestamp',
  'service',
  'cold_start',
  'function_arn',
  'function_memory_size',
  'function_name',
  'function_request_id',
  'sampling_rate',
  'xray_trace_id',
]);

/**
 * A consumer's log line for a terminal: `LEVEL message  key=value …` from a Powertools JSON line
 * (the keys that are the same on every line left out); any other line as it is.
 */
export function formatLogLine(line: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  if (typeof entry !== 'object' || entry === null || typeof entry.message !== 'string') return line;
  const fields = Object.entries(entry)
    .filter(([key, value]) => !quietLogKeys.has(key) && value !== undefined)
    .map(
      ([key, value]) =>
        `${key}=${typeof value === 'string' ? (/[\s"=]/.test(value) ? JSON.stringify(value) : value) : JSON.stringify(value)}`,
    );
  return `${String(entry.level ?? 'LOG').padEnd(5)} ${entry.message}${fields.length === 0 ? '' : `  ${fields.join(' ')}`}`;
}

function shortPath(file: string): string {
  const rel = relative(process.cwd(), file);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) ? rel : file;
}

/**
 * One progress line on standard error: on a terminal it updates in place and log lines are
 * written above it (never glued to it); elsewhere a plain line is written when the figures change,
 * at most every 5 seconds, and every 20 seconds while they do not change (retries waiting out their backoff).
 */
/** Without a terminal, how often unchanged progress figures are written again, in milliseconds. */
const QUIET_PROGRESS_MS = 20_000;

class ProgressLine {
  #shown = '';
  #lastPlain = '';
  #lastPlainAt = 0;

  constructor(
    private readonly write: (text: string) => unknown,
    private readonly tty: boolean,
  ) {}

  /** A line of its own. */
  say(text: string): void {
    const shown = this.#shown;
    this.#clear();
    this.write(`${text}\n`);
    if (shown !== '') {
      this.#shown = shown;
      this.write(`\r${shown}\u001b[K`);
    }
  }

  /** A log line of the consumer: a structured (JSON) line is shortened to what a person reads. */
  log(line: string): void {
    this.say(formatLogLine(line));
  }

  update(p: Progress): void {
    const seconds = `${(p.elapsedMs / 1000).toFixed(0).padStart(4)} s`;
    const line =
      p.phase === 'starting'
        ? `${seconds}  ${p.step}…`
        : p.phase === 'checking'
          ? `${seconds}  checking what is stored…`
          : `${seconds}  applied ${p.applied}, duplicates ${p.duplicates}, retried ${p.retried}, dead-lettered ${p.deadLettered} of ${p.sent} (${p.invocations} invocations)`;
    if (this.tty) {
      this.#shown = line;
      this.write(`\r${line}\u001b[K`);
      return;
    }
    const figures = line.slice(seconds.length);
    const now = Date.now();
    // Figures that do not move (retries waiting out their backoff) are still said every 20 s, so a quiet run does not look hung.
    const unchanged = figures === this.#lastPlain;
    if (unchanged && (p.phase !== 'running' || now - this.#lastPlainAt < QUIET_PROGRESS_MS)) return;
    if (!unchanged && p.phase === 'running' && now - this.#lastPlainAt < 5000) return;
    this.#lastPlain = figures;
    this.#lastPlainAt = now;
    this.write(`${line}${unchanged ? '  (waiting: retried messages come back after their backoff)' : ''}\n`);
  }

  /** Ends the progress line (the report follows). */
  done(): void {
    this.#clear();
  }

  #clear(): void {
    if (this.tty && this.#shown !== '') {
      this.write('\r\u001b[K');
      this.#shown = '';
    }
  }
}
