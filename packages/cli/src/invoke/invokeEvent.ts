/**
 * The `invoke` command's action: one event through a consumer's handler on the embedded
 * emulators, with the resources `runLocal` provisions (`startLocalConsumer`).
 *
 * @module
 */
import type { SQSEvent } from 'aws-lambda';
import { withOverrides, type ConsumerSettings } from 'idempotent-consumer/settings';
import { assertValidSettings, InvalidSettingsError } from 'idempotent-consumer/settings';
import type { KafkaEvent } from 'idempotent-consumer/kafka';
import type { OutcomeRecord } from 'idempotent-consumer/observability';
import { DataDirError, LocalRuntimeError } from '@idempotent-consumer/local';
import { invokeWithinTimeout } from '@idempotent-consumer/local';
import { judgeBatchResponse, type BatchJudgement, type InvocationOutcome } from '@idempotent-consumer/local';
import { createLambdaContext, newLogStreamName } from '@idempotent-consumer/local';
import { MetricsCapture } from '@idempotent-consumer/local';
import { startLocalConsumer, type LocalConsumer } from '@idempotent-consumer/local';
import type { CliIo } from '../cliIo.js';
import { DlqToolError, UsageError } from '../dlq/errors.js';
import { parseSqsQueueArn } from '../dlq/queueUrl.js';
import { loadHandler, loadSettings } from '../local/loadExport.js';
import { formatLogLine } from '../local/runLocalCommand.js';
import { failedIdsOf, readLambdaEvent, recordIdsOf, withSourceQueue, type LambdaEventFile } from './lambdaEvent.js';

/** The `invoke` command's flags, as commander parsed them. */
export interface InvokeFlags {
  readonly handler: string;
  readonly event: string;
  readonly settings?: string;
  readonly dataDir?: string;
  readonly json?: boolean;
  readonly logLevel?: string;
}

/** What became of one record of the event. */
export interface RecordResult {
  /** The SQS `messageId`, or `<topic>-<partition>@<offset>` for Kafka. */
  readonly messageId: string;
  /**
   * The engine's outcome (`applied`, `duplicate`, `retried`, `dead-lettered`), or `not-run`: the
   * handler reported no outcome for it (it threw, or timed out, first).
   */
  readonly outcome: OutcomeRecord['outcome'] | 'not-run';
  /** Whether the response lists it in `batchItemFailures` (the source delivers it again). */
  readonly reportedAsFailure: boolean;
  readonly idempotencyKey?: string;
  readonly attempt?: number;
  /** Why it was dead-lettered. */
  readonly reason?: string;
  readonly errorType?: string;
  readonly errorMessage?: string;
}

/** What `invoke --json` prints: the handler's response, each record's outcome, and where they ran. */
export interface InvokeResult {
  readonly source: 'sqs' | 'sqs-fifo' | 'kafka';
  readonly event: string;
  /** How the invocation ended. */
  readonly invocation: 'returned' | 'threw' | 'timed-out';
  /** The handler's response (the partial batch response), `null` unless it returned. */
  readonly response: unknown;
  /** SQS: how Lambda's event source mapping reads the response. */
  readonly judgement?: BatchJudgement;
  /** The error the handler threw. */
  readonly error?: { readonly name: string; readonly message: string };
  readonly records: readonly RecordResult[];
  /** The provisioned source queue the SQS records were rewritten to. */
  readonly queueArn?: string;
  readonly deadLetterQueueUrl: string;
  readonly dataDir?: string;
}

/** The emulators could not start, or the invocation could not be set up. Exit code 1. */
export class InvokeFailed extends DlqToolError {}

/**
 * Runs the `invoke` command: loads the handler (and settings), reads the event, starts the
 * emulators and provisions the consumer's resources (in `--data-dir` when given, so a second
 * invoke of the same event finds its inbox row), rewrites an SQS event's queue ARN to the
 * provisioned queue's, invokes the handler once within the function timeout, and prints the
 * response (standard output) and each record's outcome (standard error), or both as one JSON
 * object with `--json`.
 *
 * The source queue is FIFO when the event is from one (its ARN ends in `.fifo` or its records
 * have a `MessageGroupId`), whatever the settings say; a Kafka event uses a standard
 * dead-letter queue.
 *
 * @returns the exit code: 0 the handler returned, 1 it threw or timed out
 * @throws UsageError (exit 2) for a bad flag, handler, settings, event or data directory
 * @throws InvokeFailed (exit 1) when the emulators do not start
 */
export async function invokeEvent(flags: InvokeFlags, io: CliIo): Promise<number> {
  const handler = await loadHandler(flags.handler);
  const baseSettings = flags.settings === undefined ? undefined : await loadSettings(flags.settings);
  const parsed = await readLambdaEvent(flags.event);
  const notes: string[] = [];
  const settings = settingsFor(parsed, baseSettings ?? withOverrides({}), notes, flags.settings !== undefined);
  try {
    assertValidSettings(settings);
  } catch (error) {
    if (error instanceof InvalidSettingsError) throw new UsageError(error.message);
    throw error;
  }

  const say = (line: string): void => void io.stderr.write(`${line}\n`);
  for (const note of notes) say(note);
  let local: LocalConsumer;
  try {
    local = await startLocalConsumer({
      handler,
      settings,
      ...(flags.dataDir === undefined ? {} : { dataDir: flags.dataDir }),
      onStep: (step) => say(`${step}…`),
    });
  } catch (error) {
    if (error instanceof DataDirError) throw new UsageError(error.message);
    if (error instanceof LocalRuntimeError) throw new InvokeFailed(error.message, { cause: error });
    throw error;
  }

  const outcomes: OutcomeRecord[] = [];
  // The consumer's metric lines are counted, not printed; its log lines go to standard error.
  const capture = new MetricsCapture((line) => say(formatLogLine(line)));
  try {
    const queue = parseSqsQueueArn(local.resources.queueArn);
    const region = queue?.region ?? 'us-east-1';
    const context = createLambdaContext({
      functionName: settings.consumerName,
      region,
      accountId: queue?.account ?? '000000000000',
      timeoutSeconds: settings.function.timeoutSeconds,
      memorySizeMb: settings.function.memorySizeMb,
      logStreamName: newLogStreamName(),
    });
    const environment = handler.withRuntime(
      local.runtime({
        observer: { onOutcome: (record) => outcomes.push(record) },
        logLevel: flags.logLevel ?? io.env.POWERTOOLS_LOG_LEVEL ?? 'ERROR',
      }),
    );
    const count = recordIdsOf(parsed).length;
    say(`invoking ${settings.consumerName} with ${count} ${sourceName(parsed)} record${count === 1 ? '' : 's'} from ${flags.event}…`);

    capture.start();
    let outcome: InvocationOutcome;
    try {
      outcome =
        parsed.source === 'sqs'
          ? await invokeWithinTimeout(
              environment.sqs,
              withSourceQueue(parsed.event, local.resources.queueArn, region) as SQSEvent,
              context,
              settings.function.timeoutSeconds,
            )
          : await invokeWithinTimeout(environment.kafka, parsed.event as KafkaEvent, context, settings.function.timeoutSeconds);
    } finally {
      capture.stop();
    }

    const result = resultOf(parsed, flags, outcome, outcomes, local);
    if (flags.json === true) {
      io.stdout.write(`${JSON.stringify(result)}\n`);
    } else {
      say(formatRecords(result));
      if (result.response !== null) io.stdout.write(`${JSON.stringify(result.response, null, 2)}\n`);
    }
    if (outcome.kind === 'threw') say(`the handler threw ${result.error?.name}: ${result.error?.message}`);
    if (outcome.kind === 'timed-out') say(`the handler did not return within the function timeout of ${outcome.timeoutSeconds} s`);
    return outcome.kind === 'returned' ? 0 : 1;
  } finally {
    await local.stop();
  }
}

/** The settings the event calls for: its queue's kind (FIFO or standard), and a standard one for Kafka. */
function settingsFor(parsed: LambdaEventFile, settings: ConsumerSettings, notes: string[], given: boolean): ConsumerSettings {
  const fifo = parsed.source === 'sqs' && parsed.fifo;
  if (settings.queue.fifo === fifo) return settings;
  notes.push(
    parsed.source === 'kafka'
      ? 'the settings make a FIFO queue; a Kafka event source needs a standard dead-letter queue: using standard queues'
      : `the event comes from a ${fifo ? 'FIFO' : 'standard'} queue${given ? `, the settings make a ${settings.queue.fifo ? 'FIFO' : 'standard'} one` : ''}: using ${fifo ? 'FIFO' : 'standard'} queues`,
  );
  return withOverrides({ queue: { fifo } }, settings);
}

function sourceName(parsed: LambdaEventFile): string {
  return parsed.source === 'kafka' ? 'Kafka' : parsed.fifo ? 'SQS FIFO' : 'SQS';
}

function resultOf(
  parsed: LambdaEventFile,
  flags: InvokeFlags,
  outcome: InvocationOutcome,
  outcomes: readonly OutcomeRecord[],
  local: LocalConsumer,
): InvokeResult {
  const response = outcome.kind === 'returned' ? outcome.response : null;
  const failed = failedIdsOf(response);
  const ids = recordIdsOf(parsed);
  const records = ids.map((messageId): RecordResult => {
    const record = outcomes.filter((o) => o.messageId === messageId).at(-1);
    return {
      messageId,
      outcome: record?.outcome ?? 'not-run',
      reportedAsFailure: failed.has(messageId),
      ...(record?.idempotencyKey === undefined ? {} : { idempotencyKey: record.idempotencyKey }),
      ...(record?.attempt === undefined ? {} : { attempt: record.attempt }),
      ...(record?.reason === undefined ? {} : { reason: record.reason }),
      ...(record?.errorType === undefined ? {} : { errorType: record.errorType }),
      ...(record?.errorMessage === undefined ? {} : { errorMessage: record.errorMessage }),
    };
  });
  const error = outcome.kind === 'threw' ? (outcome.error as { name?: unknown; message?: unknown } | undefined) : undefined;
  return {
    source: parsed.source === 'kafka' ? 'kafka' : parsed.fifo ? 'sqs-fifo' : 'sqs',
    event: flags.event,
    invocation: outcome.kind,
    response,
    ...(parsed.source === 'sqs' ? { judgement: judgeBatchResponse(outcome, ids), queueArn: local.resources.queueArn } : {}),
    ...(outcome.kind === 'threw'
      ? { error: { name: String(error?.name ?? 'Error'), message: String(error?.message ?? outcome.error) } }
      : {}),
    records,
    deadLetterQueueUrl: local.resources.deadLetterQueueUrl,
    ...(flags.dataDir === undefined ? {} : { dataDir: flags.dataDir }),
  };
}

/** One line per record: outcome, id, idempotency key, and the reason or error. */
export function formatRecords(result: InvokeResult): string {
  const width = Math.max(...result.records.map((r) => r.messageId.length));
  const lines = result.records.map((r) => {
    const outcome = r.outcome === 'not-run' ? (r.reportedAsFailure ? 'not run, reported as failed' : 'not run') : r.outcome;
    const why =
      r.outcome === 'dead-lettered'
        ? `  ${r.reason ?? 'unknown reason'}${r.errorMessage === undefined ? '' : `: ${r.errorMessage}`}`
        : r.outcome === 'retried'
          ? `  ${r.errorType ?? 'Error'}${r.errorMessage === undefined ? '' : `: ${r.errorMessage}`}`
          : '';
    return `  ${outcome.padEnd(13)}  ${r.messageId.padEnd(width)}${r.idempotencyKey === undefined ? '' : `  key ${r.idempotencyKey}`}${why}`;
  });
  const summary =
    result.judgement !== undefined
      ? `Lambda's event source mapping would read the response as: ${result.judgement.reason}`
      : result.invocation === 'returned'
        ? `${failedCount(result)} record(s) reported in batchItemFailures`
        : '';
  return [
    `${result.records.length} record${result.records.length === 1 ? '' : 's'}:`,
    ...lines,
    ...(summary === '' ? [] : [summary]),
    `dead-letter queue (in memory, gone when this command ends): ${result.deadLetterQueueUrl}`,
  ].join('\n');
}

function failedCount(result: InvokeResult): number {
  return result.records.filter((r) => r.reportedAsFailure).length;
}
