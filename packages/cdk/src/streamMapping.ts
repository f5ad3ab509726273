import { Duration, Stack, Validations } from 'aws-cdk-lib';
import type { IRole } from 'aws-cdk-lib/aws-iam';
import { type CfnEventSourceMapping, FilterCriteria, type IFunction, MetricType, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { SqsDlq, type StreamEventSourceProps } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import {
  type ConsumerSettings,
  describeSeconds,
  type FilterPattern,
  filterCriteriaProblems,
  RECEIVE_ALLOWANCE,
  streamSettingsOf,
} from 'idempotent-consumer/settings';

/**
 * The event source mapping settings of a Kinesis Data Streams or DynamoDB Streams source. Every
 * field is optional; the defaults keep the guarantees the consumer relies on (order per shard,
 * finite retries that never give up on a record with attempts left).
 *
 * Not settable, on purpose: `ReportBatchItemFailures` (always on), `BisectBatchOnFunctionError`
 * (always off: see `streamMappingProps`), the on-failure destination (always the consumer's
 * dead-letter queue).
 */
export interface StreamMappingOptions {
  /**
   * Records per invocation, per shard (1 to 10,000; AWS's rule for Kinesis and DynamoDB Streams,
   * https://docs.aws.amazon.com/lambda/latest/api/API_CreateEventSourceMapping.html). The whole
   * batch must also fit Lambda's 6 MB invocation payload. Prefer `settings.stream.batchSize`, which
   * the local runtime reads too; given both, they must agree.
   *
   * @default settings.stream.batchSize (100, AWS's default)
   */
  readonly batchSize?: number;
  /**
   * How long the mapping gathers records before it invokes the function, in **seconds** (0 to 300).
   *
   * @default 0
   */
  readonly maxBatchingWindowSeconds?: number;
  /**
   * Where a new mapping starts reading the stream: `TRIM_HORIZON` (the oldest record still kept:
   * nothing committed is skipped) or `LATEST` (only what arrives after the mapping is created).
   *
   * @default 'TRIM_HORIZON'
   */
  readonly startingPosition?: 'TRIM_HORIZON' | 'LATEST';
  /**
   * Concurrent batches per shard (`ParallelizationFactor`, 1 to 10). With 1, records of a shard are
   * processed strictly in order, one batch at a time. Above 1, Lambda reads a shard with that many
   * concurrent batches and keeps order **per partition key** only (the Kinesis partition key, the
   * DynamoDB item's key): choose it only when the consumer's ordering key is that partition key
   * (https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html#services-kinesis-parallelization).
   *
   * @default 1
   */
  readonly parallelizationFactor?: number;
  /**
   * Retries of a failed batch after the first attempt (`MaximumRetryAttempts`, 0 to 10,000). Must
   * be finite: AWS's default, -1, retries a failing record until it leaves the stream and blocks its
   * shard meanwhile. The consumer dead-letters a record itself on its attempt `retry.maxAttempts`;
   * the records of a shard behind a failed one are reported without being run, so each retry of the
   * mapping is not an attempt of every record. Leave it unset for {@link requiredStreamRetryAttempts},
   * which leaves room for that.
   *
   * @default requiredStreamRetryAttempts(settings, batchSize): maxAttempts × batchSize − 1 + 5, at most 10,000
   */
  readonly retryAttempts?: number;
  /**
   * Oldest record the mapping still sends to the function, in **seconds** (60 to 604,800), or -1
   * for no limit (`MaximumRecordAgeInSeconds`; the stream's retention bounds it then). Older records
   * go to the on-failure destination as metadata only, unprocessed, so a limit trades lag for loss.
   *
   * @default -1
   */
  readonly maxRecordAgeSeconds?: number;
}

/** The mapping settings with every default applied. */
export interface ResolvedStreamMapping {
  /** Records per invocation, per shard. */
  readonly batchSize: number;
  /** The batching window, in seconds (0: none). */
  readonly maxBatchingWindowSeconds: number;
  /** Where a new mapping starts reading. */
  readonly startingPosition: 'TRIM_HORIZON' | 'LATEST';
  /** Concurrent batches per shard (1: strict order per shard). */
  readonly parallelizationFactor: number;
  /** `MaximumRetryAttempts` (finite). */
  readonly retryAttempts: number;
  /** `MaximumRecordAgeInSeconds`, in seconds, or -1 for no limit. */
  readonly maxRecordAgeSeconds: number;
  /** The filter criteria (`settings.stream.filters`), when any. */
  readonly filters?: readonly FilterPattern[];
}

/** AWS's default batch size of a Kinesis or DynamoDB Streams mapping. */
export const STREAM_DEFAULT_BATCH_SIZE = 100;

/** How long a DynamoDB stream keeps a record, in hours (fixed by AWS). */
export const DYNAMODB_STREAM_RETENTION_HOURS = 24;

/**
 * The `MetricsConfig` of a stream mapping: `EventCount` (polled, invoked, filtered, failed, dropped
 * and on-failure-delivered event counts). `ErrorCount` and `KafkaMetrics` apply to Kafka only
 * (https://docs.aws.amazon.com/lambda/latest/api/API_EventSourceMappingMetricsConfig.html).
 */
export const streamMappingMetrics: readonly MetricType[] = [MetricType.EVENT_COUNT];

/**
 * The least `MaximumRetryAttempts` with which a stream mapping never gives up on a record that
 * still has attempts left: each record of a shard may fail `maxAttempts` times, and each failure is
 * a retry of the batch for the records behind it, so `maxAttempts × batchSize − 1`; plus
 * `RECEIVE_ALLOWANCE` (5) retries that are no attempt of the consumer's (an invocation that crashed
 * or timed out, which the mapping counts and the attempt log cannot). At most 10,000, AWS's limit.
 * The same rule as Kafka's (`requiredKafkaRetryAttempts`), with the stream mapping's batch size.
 *
 * @param settings - the consumer's settings (`retry.maxAttempts`)
 * @param batchSize - the stream mapping's batch size
 */
export function requiredStreamRetryAttempts(settings: Pick<ConsumerSettings, 'retry'>, batchSize: number): number {
  return Math.min(10_000, settings.retry.maxAttempts * batchSize - 1 + RECEIVE_ALLOWANCE);
}

/** The options with AWS's and the library's defaults applied. */
export function resolveStreamMapping(
  options: StreamMappingOptions,
  settings: Pick<ConsumerSettings, 'retry' | 'stream'>,
): ResolvedStreamMapping {
  const stream = streamSettingsOf(settings);
  const batchSize = options.batchSize ?? stream.batchSize ?? STREAM_DEFAULT_BATCH_SIZE;
  return {
    ...(stream.filters === undefined || stream.filters.length === 0 ? {} : { filters: stream.filters }),
    batchSize,
    maxBatchingWindowSeconds: options.maxBatchingWindowSeconds ?? 0,
    startingPosition: options.startingPosition ?? 'TRIM_HORIZON',
    parallelizationFactor: options.parallelizationFactor ?? 1,
    retryAttempts: options.retryAttempts ?? requiredStreamRetryAttempts(settings, batchSize),
    maxRecordAgeSeconds: options.maxRecordAgeSeconds ?? -1,
  };
}

/**
 * Checks a stream source's mapping options against AWS's ranges and the consumer's rules, and returns
 * one sentence per broken rule (empty when all hold):
 * - batch size 1 to 10,000, batching window 0 to 300 s, parallelization factor 1 to 10, record age
 *   -1 or 60 to 604,800 s, a starting position of `TRIM_HORIZON` or `LATEST`
 *   (https://docs.aws.amazon.com/lambda/latest/api/API_CreateEventSourceMapping.html);
 * - retries finite (0 to 10,000) and at least {@link requiredStreamRetryAttempts};
 * - the window rule: the inbox TTL covers how long a record can reach the function (the stream's
 *   retention, cut to the maximum record age) + the dead-letter queue's retention, so a record read
 *   again by a mapping created or reset at `TRIM_HORIZON`, or redriven from the DLQ, still meets its
 *   inbox row (the Kafka rule of `settings/windows.ts`, with the stream's retention);
 * - the on-failure destination is the dead-letter queue, so it must be a standard queue (Lambda sends
 *   no message group id: https://docs.aws.amazon.com/lambda/latest/dg/kinesis-on-failure-destination.html).
 *
 * @param what - `Kinesis` or `DynamoDB Streams`, to name the source in the sentences
 * @param options - the mapping options as given
 * @param settings - the consumer's settings
 * @param retentionHours - how long the stream keeps a record, in hours, when known
 */
export function streamMappingProblems(
  what: string,
  options: StreamMappingOptions,
  settings: ConsumerSettings,
  retentionHours: number | undefined,
): string[] {
  const problems: string[] = [];
  const mapping = resolveStreamMapping(options, settings);
  const isInteger = (value: number, min: number, max: number) => Number.isInteger(value) && value >= min && value <= max;
  if (!isInteger(mapping.batchSize, 1, 10_000)) {
    problems.push(`${what} batch size ${mapping.batchSize} must be an integer from 1 to 10000 (AWS rule)`);
  }
  if (!isInteger(mapping.maxBatchingWindowSeconds, 0, 300)) {
    problems.push(`${what} maximum batching window ${mapping.maxBatchingWindowSeconds} s must be an integer from 0 to 300 s (AWS rule)`);
  }
  if (!isInteger(mapping.parallelizationFactor, 1, 10)) {
    problems.push(`${what} parallelization factor ${mapping.parallelizationFactor} must be an integer from 1 to 10 (AWS rule)`);
  }
  if (mapping.startingPosition !== 'TRIM_HORIZON' && mapping.startingPosition !== 'LATEST') {
    problems.push(`${what} starting position ${JSON.stringify(mapping.startingPosition)} must be TRIM_HORIZON or LATEST`);
  }
  if (mapping.maxRecordAgeSeconds !== -1 && !isInteger(mapping.maxRecordAgeSeconds, 60, 604_800)) {
    problems.push(`${what} maximum record age ${mapping.maxRecordAgeSeconds} s must be -1 (no limit) or an integer from 60 to 604800 s`);
  }
  const required = requiredStreamRetryAttempts(settings, mapping.batchSize);
  if (!isInteger(mapping.retryAttempts, 0, 10_000)) {
    problems.push(
      `${what} retry attempts ${mapping.retryAttempts} must be an integer from 0 to 10000 ` +
        "(rule: stream retries must be finite, so a failing record cannot block its shard; AWS's -1 means infinite)",
    );
  } else if (mapping.retryAttempts < required) {
    problems.push(
      `${what} retry attempts ${mapping.retryAttempts} are below ${required} = maxAttempts ${settings.retry.maxAttempts} × batch size ` +
        `${mapping.batchSize} − 1 + ${RECEIVE_ALLOWANCE} (rule: the mapping must not give up on a record that still has attempts left; ` +
        'records behind a failed one are reported without running, and an invocation that crashes spends a retry). ' +
        `Leave retryAttempts unset to use ${required}`,
    );
  }
  const givenInSettings = settings.stream?.batchSize;
  if (options.batchSize !== undefined && givenInSettings !== undefined && options.batchSize !== givenInSettings) {
    problems.push(
      `${what} batch size ${options.batchSize} differs from settings.stream.batchSize ${givenInSettings}: the local runtime reads ` +
        'the settings; set it in one place (settings.stream.batchSize)',
    );
  }
  problems.push(...filterCriteriaProblems(settings.stream?.filters, what === 'Kinesis' ? 'kinesis' : 'dynamodb-streams', 'stream.filters'));
  const window = streamWindowProblem(what, mapping, settings, retentionHours);
  if (window !== undefined) problems.push(window);
  if (settings.queue.fifo) {
    problems.push(
      `a ${what} event source needs a standard dead-letter queue: the mapping's on-failure destination is the DLQ, and Lambda ` +
        'cannot send on-failure records to a FIFO queue (rule: stream retries finite with an on-failure destination); use fifo=false',
    );
  }
  return problems;
}

/** The window rule of {@link streamMappingProblems}, or `undefined` when it holds or cannot be checked. */
function streamWindowProblem(
  what: string,
  mapping: ResolvedStreamMapping,
  settings: ConsumerSettings,
  retentionHours: number | undefined,
): string | undefined {
  const retention = retentionHours === undefined ? undefined : Math.ceil(retentionHours * 3600);
  const age = mapping.maxRecordAgeSeconds === -1 ? undefined : mapping.maxRecordAgeSeconds;
  const reach = retention === undefined ? age : age === undefined ? retention : Math.min(retention, age);
  if (reach === undefined) return undefined;
  const dlq = settings.queue.deadLetterRetentionPeriodSeconds;
  const ttl = settings.idempotency.inboxTtlSeconds;
  if (ttl >= reach + dlq) return undefined;
  const bound =
    reach === retention ? `${what} stream retention ${retentionHours} hours` : `the maximum record age ${describeSeconds(reach)}`;
  return (
    `inbox TTL ${describeSeconds(ttl)} is shorter than ${bound} + dead-letter queue retention ${describeSeconds(dlq)} = ` +
    `${describeSeconds(reach + dlq)}: a record read again (a mapping created or reset at TRIM_HORIZON) or redriven from the ` +
    `dead-letter queue after its inbox row expired would be applied again. Fix: idempotency.inboxTtlSeconds ≥ ${reach + dlq}, ` +
    'or a shorter stream retention or maxRecordAgeSeconds'
  );
}

/**
 * The properties of the L2 stream event source (`KinesisEventSource`, `DynamoEventSource`) the
 * constructs create, from the resolved settings:
 * - `reportBatchItemFailures: true`: the consumer reports the first failed record of each shard and
 *   every later record of that shard in the batch, by sequence number; Lambda checkpoints at the
 *   lowest one and retries from there
 *   (https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-batchfailurereporting.html);
 * - `bisectBatchOnError: false`. Bisecting breaks what the consumer relies on: a crash or timeout
 *   splits the batch in two whatever the partial batch response says, and with a partial response
 *   Lambda splits the batch at the reported sequence number; the halves are retried as batches of
 *   their own, whose splits do not count as retries, so the retry arithmetic of
 *   {@link requiredStreamRetryAttempts} no longer bounds what reaches the dead-letter queue, and the
 *   consumer, which already stops at the first failure of a shard, gains nothing from it;
 * - finite `retryAttempts`, `maxRecordAge` (unset for -1), the starting position, batch size and
 *   window, the parallelization factor;
 * - `onFailure`: the dead-letter queue (`SqsDlq`, which grants `sqs:SendMessage` to the function's
 *   role). For a stream, Lambda sends a metadata record there (the shard, the first and last
 *   sequence numbers, the reason), not the records: replay them from the stream while it keeps them
 *   (https://docs.aws.amazon.com/lambda/latest/dg/kinesis-on-failure-destination.html);
 * - `metricsConfig`: {@link streamMappingMetrics}.
 */
export function streamMappingProps(mapping: ResolvedStreamMapping, deadLetterQueue: IQueue): StreamEventSourceProps {
  return {
    startingPosition: mapping.startingPosition === 'LATEST' ? StartingPosition.LATEST : StartingPosition.TRIM_HORIZON,
    batchSize: mapping.batchSize,
    maxBatchingWindow: mapping.maxBatchingWindowSeconds > 0 ? Duration.seconds(mapping.maxBatchingWindowSeconds) : undefined,
    parallelizationFactor: mapping.parallelizationFactor,
    retryAttempts: mapping.retryAttempts,
    maxRecordAge: mapping.maxRecordAgeSeconds === -1 ? undefined : Duration.seconds(mapping.maxRecordAgeSeconds),
    bisectBatchOnError: false,
    reportBatchItemFailures: true,
    onFailure: new SqsDlq(deadLetterQueue),
    metricsConfig: { metrics: [...streamMappingMetrics] },
    // Filter criteria (settings.stream.filters): a record no pattern matches is skipped, the shard's checkpoint moving past it.
    ...(mapping.filters === undefined
      ? {}
      : { filters: mapping.filters.map((pattern) => FilterCriteria.filter(pattern as Record<string, unknown>)) }),
  };
}

/**
 * The CloudFormation mapping the L2 event source added to `fn` under `id` (its construct id is
 * `<event source name>:<unique id of the stream or table>`).
 *
 * @throws Error when the function has no such mapping
 */
export function findMapping(fn: IFunction, id: string): CfnEventSourceMapping {
  const mapping = fn.node.tryFindChild(id);
  if (mapping === undefined) throw new Error(`the event source mapping ${id} was not added to ${fn.node.path}`);
  return mapping.node.defaultChild as CfnEventSourceMapping;
}

/**
 * The rules the built mapping must keep, read back from its CloudFormation properties so that an
 * escape hatch cannot remove one unseen: finite retries, an on-failure destination, partial batch
 * responses, no bisecting, the parallelization factor of the settings.
 *
 * @param what - `Kinesis` or `DynamoDB Streams`
 * @param cfn - the mapping
 * @param mapping - the resolved settings it was built from
 */
export function builtStreamMappingProblems(what: string, cfn: CfnEventSourceMapping, mapping: ResolvedStreamMapping): string[] {
  const stack = Stack.of(cfn);
  const problems: string[] = [];
  const rule = 'rule: stream retries finite with an on-failure destination';
  const retries = stack.resolve(cfn.maximumRetryAttempts) as unknown;
  if (typeof retries !== 'number' || !Number.isInteger(retries) || retries < 0 || retries > 10_000) {
    problems.push(
      `${what} event source mapping has MaximumRetryAttempts ${JSON.stringify(retries)}: it must be 0 to 10000 (${rule}; ` +
        'unset or -1 retries a failing batch until its records expire and blocks their shard)',
    );
  }
  const destination = (stack.resolve(cfn.destinationConfig) as { onFailure?: { destination?: unknown } } | undefined)?.onFailure
    ?.destination;
  if (destination === undefined) {
    problems.push(`${what} event source mapping has no on-failure destination (DestinationConfig.OnFailure) (${rule})`);
  }
  const responseTypes = stack.resolve(cfn.functionResponseTypes) as unknown;
  if (!Array.isArray(responseTypes) || !responseTypes.includes('ReportBatchItemFailures')) {
    problems.push(`${what} event source mapping must report batch item failures (FunctionResponseTypes: [ReportBatchItemFailures])`);
  }
  if (stack.resolve(cfn.bisectBatchOnFunctionError) === true) {
    problems.push(
      `${what} event source mapping must not bisect batches (BisectBatchOnFunctionError: false): a split batch is retried in ` +
        'halves that do not count as retries, and the consumer already stops at the first failure of a shard',
    );
  }
  const factor = stack.resolve(cfn.parallelizationFactor) as unknown;
  if ((factor ?? 1) !== mapping.parallelizationFactor) {
    problems.push(
      `${what} event source mapping has ParallelizationFactor ${JSON.stringify(factor)}, not ${mapping.parallelizationFactor} as its ` +
        'settings say: above 1 the order holds per partition key only; set parallelizationFactor in the options instead',
    );
  }
  return problems;
}

/**
 * Acknowledges, on the role, the cdk-nag finding of `dynamodb:ListStreams` on `*`, which the
 * DynamoDB event source grants (it has no resource-level permission).
 */
export function acknowledgeListStreams(role: IRole): void {
  Validations.of(role).acknowledge({
    id: 'AwsSolutions-IAM5[Resource::*]',
    reason:
      'dynamodb:ListStreams (granted by the DynamoDB event source) has no resource-level permission; Lambda calls it to find the ' +
      "stream. The stream's own actions (DescribeStream, GetRecords, GetShardIterator) are on the table's stream only.",
  });
}
