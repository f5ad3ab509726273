/**
 * `npm start`: runs the consumer locally on embedded emulators and prints a report.
 *
 *   npm start                                   # the bundled sample, samples/orders.jsonl
 *   npm start -- --input my-events.jsonl        # your own file (JSON Lines, one body per line)
 *   npm start -- --data-dir .local-data         # keep DynamoDB's state between runs
 *   npm start -- --json                         # the report as one JSON line on stdout
 *   npm start -- --fifo                         # a FIFO source queue
 *   npm start -- --keep-running                 # keep the emulators up after the report (DLQ tool)
 *   npm start -- --source kafka                 # the Kafka path, on an in-process partitioned log
 *
 * Exit codes: 0 when the exactly-once check passed, 1 when it failed, 2 for bad input or flags.
 */
import { fileURLToPath } from 'node:url';
import { Command, InvalidArgumentError, Option } from 'commander';
import { defaultSettings, withOverrides } from '../config/settings.js';
import { InvalidSettingsError } from '../config/validateSettings.js';
import { DataDirError } from './errors.js';
import { InputFileError, readInputFile } from './inputFile.js';
import { formatReport, type RunReport } from './report.js';
import { type Progress, type RunningLocalRuntime, runLocal } from './runLocal.js';

/** A combination of flags that cannot run. */
class UsageError extends Error {}

const sample = fileURLToPath(new URL('../samples/orders.jsonl', import.meta.url));

function rate(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0 || n > 1) throw new InvalidArgumentError('expected a number from 0 to 1, e.g. 0.05');
  return n;
}

const program = new Command('npm start --')
  .description('Run the idempotent consumer locally on DynamoDB Local and an SQS-compatible server, then report.')
  .option('--input <file>', 'message bodies, JSON Lines: one body per line (see README, "Input format")', sample)
  .option('--data-dir <dir>', "keep DynamoDB Local's data in this directory between runs (its -dbPath)")
  .addOption(new Option('--source <source>', 'event source to run').choices(['sqs', 'kafka']).default('sqs'))
  .option('--fifo', 'use a FIFO source queue (message group = orderId)', false)
  .option('--transient-failure-rate <rate>', 'share of events whose first delivery fails with a retryable error (0 to 1)', rate, 0.05)
  .option('--json', 'print the report as one JSON object on the last line of stdout', false)
  .option('--keep-running', 'after the report, keep the emulators running (with the DLQ) until Ctrl-C, to try the DLQ tool', false)
  .addOption(new Option('--log-level <level>', "the consumer's log level").choices(['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT']))
  .showHelpAfterError()
  .exitOverride((error) => {
    process.exit(error.exitCode === 0 ? 0 : 2);
  });

async function main(): Promise<number> {
  program.parse();
  const options = program.opts<{
    input: string;
    dataDir?: string;
    source: 'sqs' | 'kafka';
    fifo: boolean;
    transientFailureRate: number;
    json: boolean;
    keepRunning: boolean;
    logLevel?: string;
  }>();

  if (options.source === 'kafka' && options.fifo) {
    // As the stack refuses it: Lambda cannot send Kafka on-failure records to a FIFO queue.
    throw new UsageError('--source kafka cannot run with --fifo: a Kafka event source needs a standard dead-letter queue (its on-failure destination)');
  }
  const settings = withOverrides({ queue: { fifo: options.fifo } }, defaultSettings);
  const input = await readInputFile(options.input, settings.queue.maxMessageSizeBytes);
  const tty = process.stderr.isTTY === true;
  const say = (text: string) => process.stderr.write(`${text}\n`);
  say(`Running ${input.length} messages from ${options.input} through the ${options.source.toUpperCase()}${options.fifo ? ' FIFO' : ''} consumer…`);
  const onProgress = (p: Progress) => {
    const line =
      `  ${(p.elapsedMs / 1000).toFixed(0).padStart(4)} s  applied ${p.applied}, duplicates ${p.duplicates}, ` +
      `retried ${p.retried}, dead-lettered ${p.deadLettered} of ${p.sent} (${p.invocations} invocations)`;
    if (tty) process.stderr.write(`\r${line}\u001b[K`);
    else say(line);
  };

  let printed = false;
  const print = (report: RunReport) => {
    if (printed) return;
    printed = true;
    if (tty) process.stderr.write('\n');
    if (options.json) {
      say(formatReport(report));
      process.stdout.write(`${JSON.stringify(report)}\n`);
    } else {
      process.stdout.write(formatReport(report));
    }
  };
  const beforeStop = options.keepRunning
    ? async (report: RunReport, running: RunningLocalRuntime) => {
        print(report);
        say(
          [
            '',
            'The emulators keep running until Ctrl-C. In another terminal, for example:',
            `  export AWS_ENDPOINT_URL=${running.sqsEndpoint}`,
            `  export DLQ_URL=${running.resources.deadLetterQueueUrl}`,
            '  npx idempotent-consumer dlq list',
            '  npx idempotent-consumer dlq redrive --reason ValidationError --dry-run',
            `DynamoDB Local: ${running.dynamoDbEndpoint} (tables ${running.resources.inboxTable}, ${running.resources.ordersTable})`,
          ].join('\n'),
        );
        await new Promise<void>((resolve) => process.once('SIGINT', () => resolve()));
      }
    : undefined;

  const runOptions = {
    input,
    settings,
    ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
    transientFailureRate: options.transientFailureRate,
    ...(options.logLevel === undefined ? {} : { logLevel: options.logLevel }),
    ...(beforeStop === undefined ? {} : { beforeStop }),
    onProgress,
  };
  const report =
    options.source === 'kafka'
      ? await (await import('./kafka/runLocalKafka.js')).runLocalKafka(runOptions)
      : await runLocal(runOptions);
  print(report);
  return report.check.ok ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof InputFileError || error instanceof InvalidSettingsError || error instanceof DataDirError || error instanceof UsageError) {
      process.stderr.write(`error: ${error.message}\n`);
      process.exitCode = 2;
      return;
    }
    process.stderr.write(`error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  },
);
