/**
 * Queue URLs and ARNs: parsing only, no AWS SDK (the command line loads this before any command runs).
 *
 * @module
 */
import { consumerFromFlags, type OutputsFileFlags } from '../stackOutputs.js';
import { UsageError } from './errors.js';

/**
 * The dead-letter queue a `dlq` command works on: `--queue-url`, else the `DeadLetterQueueUrl`
 * output of the consumer `--outputs-file` (with `--stack`, `--consumer`) names, else the
 * `DLQ_URL` environment variable; `undefined` when none is given.
 *
 * @throws UsageError when both `--queue-url` and `--outputs-file` are given, or `--stack` /
 *   `--consumer` come without `--outputs-file`
 * @throws StackOutputsError (exit 2) when the outputs file does not name one consumer
 */
export async function deadLetterQueueUrlFrom(
  flags: { readonly queueUrl?: string } & OutputsFileFlags,
  env: NodeJS.ProcessEnv,
): Promise<string | undefined> {
  if (flags.queueUrl !== undefined && flags.outputsFile !== undefined) throw new UsageError('give --queue-url or --outputs-file, not both');
  const consumer = await consumerFromFlags(flags);
  const url = flags.queueUrl ?? consumer?.deadLetterQueueUrl ?? env.DLQ_URL;
  return url === '' ? undefined : url;
}

/**
 * Checks that `value` looks like an SQS queue URL (`<scheme>://<host>/<account>/<queue name>`).
 *
 * @param flag - the flag named in the error, e.g. `--queue-url`
 * @returns the parsed URL
 * @throws UsageError naming the problem (an ARN instead of a URL, a missing path, not a URL)
 */
export function parseQueueUrl(value: string, flag = '--queue-url'): URL {
  if (value.startsWith('arn:')) {
    throw new UsageError(
      `${flag} takes a queue URL, not an ARN (${value}); find the URL with \`aws sqs get-queue-url --queue-name <name>\``,
    );
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`${flag} is not a URL: ${value} (expected https://sqs.<region>.amazonaws.com/<account>/<queue>)`);
  }
  const segments = url.pathname.split('/').filter((s) => s !== '');
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || segments.length !== 2) {
    throw new UsageError(`${flag} is not an SQS queue URL: ${value} (expected https://sqs.<region>.amazonaws.com/<account>/<queue>)`);
  }
  return url;
}

/** The queue's name: the last segment of its URL. */
export function queueNameOf(queueUrl: string): string {
  return (
    new URL(queueUrl).pathname
      .split('/')
      .filter((s) => s !== '')
      .at(-1) ?? queueUrl
  );
}

/** Whether the queue is FIFO: SQS requires the name of a FIFO queue to end in `.fifo`. */
export function isFifoQueueUrl(queueUrl: string): boolean {
  return queueNameOf(queueUrl).endsWith('.fifo');
}

/** Whether two queue URLs name the same queue (same account and name; hosts may differ locally). */
export function sameQueue(a: string, b: string): boolean {
  const path = (url: string): string => new URL(url).pathname.replace(/\/+$/, '');
  return path(a) === path(b);
}

/** The parts of an SQS queue ARN (`arn:<partition>:sqs:<region>:<account>:<name>`). */
export interface SqsQueueArn {
  readonly partition: string;
  readonly region: string;
  readonly account: string;
  readonly name: string;
}

/** Parses an SQS queue ARN; `undefined` for anything else (a Kafka event source ARN, say). */
export function parseSqsQueueArn(arn: string): SqsQueueArn | undefined {
  const match = /^arn:([^:]+):sqs:([^:]+):(\d+):([^:/]+)$/.exec(arn);
  if (match === null) return undefined;
  const [, partition, region, account, name] = match as unknown as [string, string, string, string, string];
  return { partition, region, account, name };
}
