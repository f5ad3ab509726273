/**
 * The `send` command's action: message bodies to a consumer's source queue, through the local
 * runtime's size-aware sender (`local/sendInput.ts`).
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { InputFileError, inputLineBody, readInputFile, type InputMessage } from '@idempotent-consumer/local';
import { fifoIdPattern, SendInputError, sendInput } from '@idempotent-consumer/local';
import type { CliIo, CliOutcome } from '../cliIo.js';
import { DlqToolError, UsageError } from '../dlq/errors.js';
import { isFifoQueueUrl, parseQueueUrl } from '../dlq/queueUrl.js';
import { createSqsClient } from '../dlq/sqsClient.js';
import { consumerFromFlags, describeConsumer, type OutputsFileFlags, StackOutputsError } from '../stackOutputs.js';

/** The `send` command's flags, as commander parsed them. */
export interface SendFlags extends OutputsFileFlags {
  readonly queueUrl?: string;
  readonly body?: readonly string[];
  readonly file?: string;
  readonly groupIdField?: string;
  readonly groupId?: string;
  readonly dedupIdField?: string;
  readonly endpoint?: string;
  readonly region?: string;
  readonly json?: boolean;
}

/** One sent message, as `send` prints it. */
export interface SentMessageReport {
  /** Where the body came from: `<file>:<line>` or `--body #<n>`. */
  readonly input: string;
  /** SQS's id of the message. */
  readonly messageId: string;
  readonly messageGroupId?: string;
  readonly messageDeduplicationId?: string;
}

/** What `send --json` prints. */
export interface SendReport {
  readonly queueUrl: string;
  readonly fifo: boolean;
  readonly sent: readonly SentMessageReport[];
}

/** SQS refused a message after the checks passed, or the request failed. Exit code 1. */
export class SendFailedError extends DlqToolError {}

/**
 * Sends the bodies of `--body` or `--file` to the source queue (see `send --help`): checks every
 * body against the queue's `MaximumMessageSize` and SQS's characters, and on a FIFO queue its
 * message group and deduplication id, before the first request; then sends them in order with
 * `sendInput` and prints each message id (text, or JSON with `--json`) on standard output.
 *
 * @throws UsageError (exit 2) for bad flags, bodies or files; nothing is sent
 * @throws StackOutputsError (exit 2) when `--outputs-file` does not name one consumer with a source queue
 * @throws SendFailedError (exit 1) when SQS refuses a message
 * @throws the SDK's errors (the command line turns a missing queue, credentials or endpoint into its own)
 */
export async function sendMessages(flags: SendFlags, io: CliIo, outcome: CliOutcome): Promise<SendReport> {
  const queueUrl = await sourceQueueUrl(flags, io.env);
  if (flags.body !== undefined && flags.file !== undefined) throw new UsageError('give --body or --file, not both');
  if (flags.body === undefined && flags.file === undefined) throw new UsageError('send needs --body JSON (repeatable) or --file F.jsonl');
  if (flags.groupId !== undefined && flags.groupIdField !== undefined)
    throw new UsageError('give --group-id or --group-id-field, not both');

  const { sqs, connection } = createSqsClient({
    queueUrl,
    env: io.env,
    ...(flags.endpoint === undefined ? {} : { endpoint: flags.endpoint }),
    ...(flags.region === undefined ? {} : { region: flags.region }),
  });
  outcome.queueUrl = queueUrl;
  if (connection.endpoint !== undefined) outcome.endpoint = connection.endpoint;
  try {
    const { Attributes: attributes = {} } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['MaximumMessageSize', 'FifoQueue'] }),
    );
    const fifo = attributes.FifoQueue === 'true' || isFifoQueueUrl(queueUrl);
    const maxBodyBytes = Number(attributes.MaximumMessageSize ?? 262_144);
    const messages = await readBodies(flags, maxBodyBytes);
    const labelOf = (message: InputMessage): string =>
      flags.file === undefined ? `--body #${message.line}` : `${flags.file}:${message.line}`;

    const groups = new Map<number, string>();
    const deduplications = new Map<number, string>();
    if (fifo) {
      if (flags.groupId === undefined && flags.groupIdField === undefined) {
        throw new UsageError(
          `${queueUrl} is a FIFO queue: give each message a group with --group-id-field FIELD (a top-level body field) or --group-id ID`,
        );
      }
      for (const message of messages) {
        const group = flags.groupId ?? fieldOf(message, flags.groupIdField!, labelOf(message), 'message group');
        const deduplication =
          flags.dedupIdField === undefined
            ? createHash('sha256').update(message.body).digest('hex')
            : fieldOf(message, flags.dedupIdField, labelOf(message), 'deduplication id');
        for (const [what, value] of [
          ['message group', group],
          ['deduplication id', deduplication],
        ] as const) {
          if (!fifoIdPattern.test(value)) {
            throw new UsageError(
              `${labelOf(message)}: the ${what} ${JSON.stringify(value)} breaks SQS's rule (1 to 128 letters, digits or ASCII punctuation)`,
            );
          }
        }
        groups.set(message.line, group);
        deduplications.set(message.line, deduplication);
      }
    } else {
      const given = [
        flags.groupId === undefined ? undefined : '--group-id',
        flags.groupIdField === undefined ? undefined : '--group-id-field',
        flags.dedupIdField === undefined ? undefined : '--dedup-id-field',
      ].filter((f) => f !== undefined);
      if (given.length > 0) throw new UsageError(`${given.join(', ')} apply to a FIFO queue; ${queueUrl} is a standard queue`);
    }

    let sent;
    try {
      sent = await sendInput(sqs, queueUrl, messages, {
        fifo,
        messageGroupId: (message) => groups.get(message.line)!,
        deduplicationId: (message) => deduplications.get(message.line)!,
      });
    } catch (error) {
      if (error instanceof SendInputError)
        throw new SendFailedError(
          error.message.replace(/input line (\d+)/, (_, line: string) => labelOf({ line: Number(line), body: '' })),
          { cause: error },
        );
      throw error;
    }
    const report: SendReport = {
      queueUrl,
      fifo,
      sent: sent.map((message) => ({
        input: labelOf(message),
        messageId: message.messageId,
        ...(fifo ? { messageGroupId: groups.get(message.line)!, messageDeduplicationId: deduplications.get(message.line)! } : {}),
      })),
    };
    io.stdout.write(flags.json === true ? `${JSON.stringify(report, null, 2)}\n` : formatSendReport(report));
    return report;
  } finally {
    sqs.destroy();
  }
}

/**
 * The source queue: `--queue-url`, else the `QueueUrl` output of the consumer `--outputs-file`
 * names, else `QUEUE_URL`.
 *
 * @throws UsageError when none is given, both `--queue-url` and `--outputs-file` are, or the URL is not an SQS queue URL
 * @throws StackOutputsError when the consumer has no `QueueUrl` output
 */
async function sourceQueueUrl(flags: SendFlags, env: NodeJS.ProcessEnv): Promise<string> {
  if (flags.queueUrl !== undefined && flags.outputsFile !== undefined) throw new UsageError('give --queue-url or --outputs-file, not both');
  const consumer = await consumerFromFlags(flags);
  if (consumer !== undefined && consumer.queueUrl === undefined) {
    throw new StackOutputsError(
      `${describeConsumer(consumer)} in ${flags.outputsFile} has no ${consumer.prefix}QueueUrl output (add it with IdempotentConsumer.addOutputs())`,
    );
  }
  const url = flags.queueUrl ?? consumer?.queueUrl ?? (env.QUEUE_URL === '' ? undefined : env.QUEUE_URL);
  if (url === undefined) throw new UsageError('send needs --queue-url URL or --outputs-file FILE (or the QUEUE_URL environment variable)');
  parseQueueUrl(url, consumer === undefined || flags.queueUrl !== undefined ? '--queue-url' : 'the QueueUrl output');
  return url;
}

async function readBodies(flags: SendFlags, maxBodyBytes: number): Promise<InputMessage[]> {
  if (flags.file !== undefined) {
    try {
      return await readInputFile(flags.file, maxBodyBytes);
    } catch (error) {
      if (error instanceof InputFileError) throw new UsageError(error.message);
      throw error;
    }
  }
  return (flags.body ?? []).map((value, index) => {
    let body: string | undefined;
    try {
      body = inputLineBody(value, maxBodyBytes);
    } catch (error) {
      throw new UsageError(`--body #${index + 1}: ${(error as Error).message.replace(/^the line is/, 'the value is')}`);
    }
    if (body === undefined) throw new UsageError(`--body #${index + 1} is empty, and SQS refuses an empty message body`);
    return { line: index + 1, body };
  });
}

/** A top-level field of a JSON object body, as a string (a number is written in decimal). */
function fieldOf(message: InputMessage, field: string, label: string, what: string): string {
  let value: unknown;
  try {
    value = (JSON.parse(message.body) as Record<string, unknown> | null)?.[field];
  } catch {
    throw new UsageError(`${label}: the body is not JSON, so it has no field "${field}" for its ${what}`);
  }
  if (typeof value === 'string' && value !== '') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  throw new UsageError(`${label}: the body has no top-level field "${field}" (a non-empty string or a number) for its ${what}`);
}

/** `send`'s text output: one line per message. */
export function formatSendReport(report: SendReport): string {
  const width = Math.max(...report.sent.map((m) => m.input.length));
  const lines = report.sent.map(
    (m) => `  ${m.input.padEnd(width)}  ${m.messageId}${m.messageGroupId === undefined ? '' : `  group ${m.messageGroupId}`}`,
  );
  return `Sent ${report.sent.length} message${report.sent.length === 1 ? '' : 's'} to ${report.queueUrl} (${report.fifo ? 'FIFO' : 'standard'} queue):\n${lines.join('\n')}\n`;
}
