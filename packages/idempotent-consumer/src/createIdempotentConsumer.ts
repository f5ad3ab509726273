import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type {
  Context,
  DynamoDBBatchResponse,
  DynamoDBStreamEvent,
  KinesisStreamBatchResponse,
  KinesisStreamEvent,
  SQSBatchResponse,
  SQSEvent,
  SQSRecord,
} from 'aws-lambda';
import { METRICS_NAMESPACE } from './settings/settings.js';
import type { KafkaBatchResponse } from './batch/kafkaBatchResponse.js';
import type { KafkaEvent } from './batch/kafkaEvent.js';
import { backoffSeconds } from './batch/backoffSeconds.js';
import { checkKafkaDecodingOptions } from './batch/kafkaRecordDecoding.js';
import type { RetryBackoff } from './batch/retryBackoff.js';
import { sqsDeliveries } from './batch/sqsDeliveries.js';
import { type RuntimeConfig, readRuntimeConfig } from './config/runtimeConfig.js';
import { BatchEngine } from './engine/BatchEngine.js';
import { describeError } from './engine/describeError.js';
import { invocationClock } from './engine/invocationClock.js';
import type { InvocationClock, SideEffectExecutor } from './engine/Unit.js';
import { MARSHALL_OPTIONS, UNMARSHALL_OPTIONS } from './engine/values.js';
import { type ConsumerDefinition, defineConsumer } from './engine/ConsumerDefinition.js';
import type { Delivery, DeliveryResult } from './engine/Delivery.js';
import { ItemCache } from './engine/ItemCache.js';
import { type DeadLetterSink, processDeliveries, type ProcessDeliveriesDeps } from './engine/processDeliveries.js';
import { AttemptLog } from './inbox/AttemptLog.js';
import { LogObserver } from './observability/LogObserver.js';
import { MetricName, MetricsObserver } from './observability/MetricsObserver.js';
import { combineObservers, type OutcomeObserver } from './observability/outcomes.js';
import type { SegmentTracer } from './observability/traceSegments.js';
import type { IdempotentConsumerOptions, SideEffectHandlers } from './types.js';
import { startOnce } from './startOnce.js';

/**
 * What a handler runs with, beside the environment: for tests and the local runtime. In Lambda
 * leave it out (the clients are created once per execution environment from the defaults), or
 * give only what you want to replace: your own logger, metrics or tracer.
 */
export interface ConsumerRuntimeOptions {
  /** Where the configuration is read from. @default process.env */
  readonly environment?: Readonly<Record<string, string | undefined>>;
  /** The AWS clients. @default new clients with the default configuration (region and credentials from the environment) */
  readonly clients?: { readonly dynamoDb?: DynamoDBClient; readonly sqs?: SQSClient; readonly s3?: S3Client };
  /** Receives every outcome, beside the logs and metrics. */
  readonly observer?: OutcomeObserver;
  /** @default a Powertools Logger named after the consumer (level from `POWERTOOLS_LOG_LEVEL`) */
  readonly logger?: Logger;
  /** @default Powertools Metrics, namespace `POWERTOOLS_METRICS_NAMESPACE` or `IdempotentConsumer`, service = consumer name */
  readonly metrics?: Metrics;
  /** The clock. @default () => new Date() */
  readonly now?: () => Date;
  /**
   * Waits `ms` milliseconds: the engine's pauses (a Kafka record waiting for a side-effect lock
   * to expire, a short back-off after contention, the Kafka retry policy's delay between attempts:
   * `kafka.retry.delaySeconds`). A simulated clock advances itself here.
   * @default setTimeout
   */
  readonly sleep?: (ms: number) => Promise<void>;
  /**
   * A Powertools `Tracer` (`@aws-lambda-powertools/tracer`, an optional peer: install it to use
   * this), or anything with its `isTracingEnabled`, `getSegment` and `setSegment` (see
   * {@link SegmentTracer}). With it, each batch runs in an X-Ray subsegment `## batch` of the
   * invocation's segment, annotated with `consumer`, `source` (`sqs`, `sqs-fifo`, `kafka`) and the
   * counts by outcome (`deliveries`, `applied`, `duplicates`, `retried`, `deadLettered`), and its
   * phases in subsegments of their own: `## parse`, then per round `## decide`, `## read` (when
   * state is read), `## sideEffects` (when a decision asks for one), `## commit`, and `## deadLetter`.
   * Their annotations are counts and names only, never a body, an attribute or a key (an
   * idempotency key is made of the body). A phase that throws gets the error (`addError`); every
   * subsegment is closed on every path. The AWS SDK calls of clients you capture
   * (`tracer.captureAWSv3Client`, passed in `clients`) appear under the phase that made them.
   *
   * The function needs active tracing (the `IdempotentConsumer` construct's default). Cost: a few
   * microseconds per phase when tracing; with a tracer that is disabled (outside Lambda, or
   * `POWERTOOLS_TRACE_ENABLED=false`) or without one, nothing but a branch, and the tracer's
   * package is never loaded by the library.
   *
   * Whether or not it is given, a dead letter and the outbox messages carry the trace header of the
   * message they came from (SQS's `AWSTraceHeader`; for a Kafka record, the invocation's).
   * @default none: no subsegment
   * @example
   * import { Tracer } from '@aws-lambda-powertools/tracer';
   * const tracer = new Tracer({ serviceName: 'orders' });
   * export const handler = createIdempotentConsumer(options, { tracer });
   */
  readonly tracer?: SegmentTracer;
}

/**
 * A Lambda handler for SQS (standard and FIFO), Kafka (Amazon MSK and self-managed), Kinesis Data
 * Streams and DynamoDB Streams events, built by {@link createIdempotentConsumer}.
 */
export interface IdempotentConsumerHandler {
  /**
   * Handles one invocation: an event whose first record's `eventSource` is `aws:kinesis` goes to
   * the Kinesis handler, `aws:dynamodb` to the DynamoDB Streams handler, any other event with a
   * `Records` array to the SQS handler, one whose `eventSource` is `aws:kafka` or
   * `SelfManagedKafka` to the Kafka handler. The first invocation reads the environment and
   * creates the clients.
   *
   * @returns the partial batch response of the event's source: `SQSBatchResponse` for SQS,
   *   `KafkaBatchResponse` for Kafka, `KinesisStreamBatchResponse` / `DynamoDBBatchResponse`
   *   (`itemIdentifier` = the sequence number) for the streams; it resolves for failed messages
   *   too (they are listed in `batchItemFailures`, or dead-lettered)
   * @throws Error (the promise rejects) when the event is none of these
   * @throws EnvironmentError (the promise rejects, and the next invocation tries again) when the
   *   environment lacks a variable or holds a malformed one
   */
  (
    event: SQSEvent | KafkaEvent | KinesisStreamEvent | DynamoDBStreamEvent,
    context: Context,
  ): Promise<SQSBatchResponse | KafkaBatchResponse | KinesisStreamBatchResponse | DynamoDBBatchResponse>;
  /** The SQS handler alone. */
  readonly sqs: (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;
  /** The Kafka handler alone. */
  readonly kafka: (event: KafkaEvent, context: Context) => Promise<KafkaBatchResponse>;
  /** The Kinesis Data Streams handler alone (see docs/streams.md). */
  readonly kinesis: (event: KinesisStreamEvent, context: Context) => Promise<KinesisStreamBatchResponse>;
  /** The DynamoDB Streams handler alone: each record's `NewImage` is an event (see docs/streams.md). */
  readonly dynamodbStreams: (event: DynamoDBStreamEvent, context: Context) => Promise<DynamoDBBatchResponse>;
  /** The options it was built from (tools such as the local runtime read `tables`). */
  readonly options: IdempotentConsumerOptions<never>;
  /**
   * A new execution environment of the same consumer: the same options with other runtime
   * options (clients, environment, observer), and its own caches. For tests and the local
   * runtime, which run several environments side by side.
   */
  withRuntime(runtime: ConsumerRuntimeOptions): IdempotentConsumerHandler;
}

/** Everything one execution environment builds at its first invocation. */
interface ConsumerEnvironment<Event> {
  readonly config: RuntimeConfig;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly deps: ProcessDeliveriesDeps<Event>;
  readonly backoff: () => Promise<RetryBackoff>;
}

/**
 * Builds the Lambda handler of an idempotent consumer from the user's pure pieces (see
 * {@link IdempotentConsumerOptions}): a schema, the idempotency and ordering keys, the items a
 * decision reads, a pure `decide`, optional inline side effects, the user's own errors.
 *
 * The handler serves an SQS event source mapping (standard or FIFO queue; `ReportBatchItemFailures`
 * on), an Amazon MSK or self-managed Kafka one, and a Kinesis Data Streams or DynamoDB Streams one
 * (per-shard order, `itemIdentifier` = the sequence number: docs/streams.md); the event's shape says which. For each batch it
 * commits the state changes of every message with their inbox rows and outbox items in as few
 * DynamoDB transactions as the limits allow (one on the happy path), dead-letters poison with its
 * reason, and returns the partial batch response AWS documents:
 * `{"batchItemFailures":[{"itemIdentifier":"<messageId>"}]}` for SQS
 * (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html),
 * `{"batchItemFailures":[{"itemIdentifier":{"partition":"<topic>-<partition>","offset":<n>}}]}`
 * for Kafka (https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html). It
 * never throws for a failed message, also when all of them fail.
 *
 * Configuration (table names, the DLQ, attempt budget, windows) comes from the environment that
 * the `IdempotentConsumer` construct sets (`lambdaEnvironment()` in `idempotent-consumer/settings`),
 * read at the first invocation, when the clients are created too.
 *
 * The table names and side effects are typed from the options: `read`, `state.get`, the writes'
 * `TableName` and `context.tableName` accept only the keys of `tables` (when its type knows them:
 * inline, or `as const`), and a decision's side-effect requests only the names of `sideEffects`,
 * each with its handler's input type. The run-time checks stay, for JavaScript callers.
 *
 * @typeParam Event - the event type, from `schema` or `parse`
 * @typeParam TableName - the logical table names, inferred from `tables` (`string` when it is left out or typed `Record<string, TableDefinition>`)
 * @typeParam Handlers - the side effects, inferred from `sideEffects`
 * @throws ConsumerDefinitionError at once, when the options are malformed (no schema, a bad table name, …)
 * @example
 * export const handler = createIdempotentConsumer({
 *   schema: ReservationSchema,
 *   idempotencyKey: 'reservationId',
 *   orderingKey: 'sku',
 *   tables: { stock: { partitionKey: 'sku' } },
 *   read: (event) => [{ table: 'stock', key: { sku: event.sku } }],
 *   decide: (event, state) => {
 *     const stock = state.get('stock', { sku: event.sku });
 *     if ((stock?.available ?? 0) < event.quantity) throw new OutOfStock(`${event.sku}: not enough left`);
 *     return { writes: [{ Put: { TableName: 'stock', Item: { sku: event.sku, available: stock.available - event.quantity } } }] };
 *   },
 * });
 */
export function createIdempotentConsumer<
  Event,
  TableName extends string = string,
  Handlers extends SideEffectHandlers<TableName> = SideEffectHandlers<TableName>,
>(options: IdempotentConsumerOptions<Event, TableName, Handlers>, runtime: ConsumerRuntimeOptions = {}): IdempotentConsumerHandler {
  const definition = defineConsumer(options);
  checkKafkaDecodingOptions(options.kafka);
  const ready = startOnce(() => buildEnvironment(definition, runtime));

  const sqs = async (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => {
    const env = await ready();
    return handleSqsEvent(event, context, env);
  };
  const kafka = async (event: KafkaEvent, context: Context): Promise<KafkaBatchResponse> => {
    const env = await ready();
    const { handleKafkaEvent } = await import('./batch/handleKafkaEvent.js');
    env.logger.addContext(context);
    return handleKafkaEvent(event, context, env.deps, env.metrics, options.kafka, runtime.sleep);
  };
  const kinesis = async (event: KinesisStreamEvent, context: Context): Promise<KinesisStreamBatchResponse> => {
    const env = await ready();
    const { handleKinesisEvent } = await import('./batch/handleStreamEvent.js');
    env.logger.addContext(context);
    return handleKinesisEvent(event, context, env.deps, env.metrics);
  };
  const dynamodbStreams = async (event: DynamoDBStreamEvent, context: Context): Promise<DynamoDBBatchResponse> => {
    const env = await ready();
    const { handleDynamoDbStreamEvent } = await import('./batch/handleStreamEvent.js');
    env.logger.addContext(context);
    return handleDynamoDbStreamEvent(event, context, env.deps, env.metrics);
  };
  const handler = (async (event: SQSEvent | KafkaEvent | KinesisStreamEvent | DynamoDBStreamEvent, context: Context) => {
    if (event !== null && typeof event === 'object' && 'Records' in event && Array.isArray(event.Records)) {
      // The records of one invocation come from one source: the first one's `eventSource` says which.
      const eventSource = (event.Records[0] as { eventSource?: unknown } | undefined)?.eventSource;
      if (eventSource === 'aws:kinesis') return kinesis(event as KinesisStreamEvent, context);
      if (eventSource === 'aws:dynamodb') return dynamodbStreams(event as DynamoDBStreamEvent, context);
      return sqs(event as SQSEvent, context);
    }
    if (
      event !== null &&
      typeof event === 'object' &&
      'eventSource' in event &&
      (event.eventSource === 'aws:kafka' || event.eventSource === 'SelfManagedKafka')
    ) {
      return kafka(event, context);
    }
    throw new Error(
      'unsupported event: expected an SQS, Kinesis or DynamoDB Streams event (Records) or a Kafka event (eventSource aws:kafka or SelfManagedKafka)',
    );
  }) as IdempotentConsumerHandler;
  Object.defineProperties(handler, {
    sqs: { value: sqs },
    kafka: { value: kafka },
    kinesis: { value: kinesis },
    dynamodbStreams: { value: dynamodbStreams },
    options: { value: options },
    withRuntime: { value: (next: ConsumerRuntimeOptions) => createIdempotentConsumer(options, next) },
  });
  return handler;
}

/**
 * A record handler for teams that keep their own Powertools `processPartialResponse` (with
 * `BatchProcessor` or `SqsFifoPartialProcessorAsync`): it processes one SQS record as a batch of
 * one (its own transaction; no folding across records) and throws when the record must be
 * retried, so Powertools reports it as a batch item failure. Pass the Lambda context to
 * `processPartialResponse` (`{ context }`): without it, inline side effects are not started.
 *
 * @example
 * const recordHandler = createRecordHandler(options);
 * export const handler = (event, context) =>
 *   processPartialResponse(event, recordHandler, new BatchProcessor(EventType.SQS), { context });
 * @typeParam Event - the event type, from `schema` or `parse`
 * @typeParam TableName - the logical table names, inferred from `tables` (as {@link createIdempotentConsumer})
 * @typeParam Handlers - the side effects, inferred from `sideEffects`
 */
export function createRecordHandler<
  Event,
  TableName extends string = string,
  Handlers extends SideEffectHandlers<TableName> = SideEffectHandlers<TableName>,
>(
  options: IdempotentConsumerOptions<Event, TableName, Handlers>,
  runtime: ConsumerRuntimeOptions = {},
): (record: SQSRecord, context?: Context) => Promise<void> {
  const definition = defineConsumer(options);
  const ready = startOnce(() => buildEnvironment(definition, runtime));
  return async (record, context) => {
    const env = await ready();
    // Without a context there is no deadline (no side effect starts: see SideEffectRunner).
    const clock: InvocationClock = context === undefined ? { remainingTimeMs: () => Number.MAX_SAFE_INTEGER } : invocationClock(context);
    const [result] = await processDeliveries(sqsDeliveries([record], env.config.fifo), env.deps, clock);
    env.metrics.publishStoredMetrics();
    if (result?.reported) {
      const failure = result.verdict.kind === 'retry' ? result.verdict.failure : undefined;
      throw new Error(`message ${record.messageId} must be retried${failure === undefined ? '' : `: ${failure.errorType}`}`);
    }
  };
}

async function buildEnvironment<Event>(
  definition: ConsumerDefinition<Event>,
  runtime: ConsumerRuntimeOptions,
): Promise<ConsumerEnvironment<Event>> {
  const variables = runtime.environment ?? process.env;
  const config = readRuntimeConfig(variables, Object.keys(definition.tables));
  const dynamoDb = runtime.clients?.dynamoDb ?? new DynamoDBClient({});
  const client = DynamoDBDocumentClient.from(dynamoDb, {
    marshallOptions: { ...MARSHALL_OPTIONS },
    unmarshallOptions: { ...UNMARSHALL_OPTIONS },
  });
  const logger = runtime.logger ?? new Logger({ serviceName: config.consumerName });
  const metrics =
    runtime.metrics ??
    new Metrics({ namespace: variables.POWERTOOLS_METRICS_NAMESPACE ?? METRICS_NAMESPACE, serviceName: config.consumerName });
  const now = runtime.now ?? (() => new Date());
  const sqs = startOnce(
    (): Promise<SQSClient> | SQSClient =>
      runtime.clients?.sqs ?? import('@aws-sdk/client-sqs').then(({ SQSClient: Client }) => new Client({})),
  );

  const loadSideEffects = startOnce(async (): Promise<SideEffectExecutor> => {
    const { SideEffectRunner, CompletionDeferringStore } = await import('./sideEffects/SideEffectRunner.js');
    return new SideEffectRunner({
      handlers: definition.sideEffects,
      persistenceStore: new CompletionDeferringStore({ tableName: config.idempotencyTable, awsSdkV3Client: dynamoDb }),
      keyPrefix: config.consumerName,
      expiresAfterSeconds: config.sideEffectTtlSeconds,
      minRemainingMs: config.sideEffectMinRemainingMs,
      documentClient: client,
      tables: config.tables,
    });
  });

  const deadLetters = startOnce(async (): Promise<DeadLetterSink> => {
    const { DeadLetterQueue } = await import('./dlq/DeadLetterQueue.js');
    const s3 = runtime.clients?.s3;
    return new DeadLetterQueue({
      sqs: await sqs(),
      // Loaded only when a body is too large for the dead-letter queue.
      s3: s3 !== undefined ? s3 : () => import('@aws-sdk/client-s3').then(({ S3Client }) => new S3Client({})),
      queueUrl: config.deadLetterQueueUrl,
      maxMessageSizeBytes: config.deadLetterMaxMessageSizeBytes,
      ...(config.payloadBucket !== undefined ? { payloadBucket: config.payloadBucket } : {}),
    });
  });

  const engine = new BatchEngine<Event>({
    definition,
    config,
    client,
    cache: new ItemCache(),
    sideEffects: loadSideEffects,
    logger,
    now,
    ...(runtime.sleep === undefined ? {} : { sleep: runtime.sleep }),
    ...(runtime.tracer === undefined ? {} : { tracer: runtime.tracer }),
  });
  // Loaded at the first retry, with the SQS client: an invocation that retries nothing never loads either.
  const backoff = startOnce(async (): Promise<RetryBackoff> => {
    const [client, { RetryBackoff: Backoff }] = await Promise.all([sqs(), import('./batch/retryBackoff.js')]);
    return new Backoff({ sqs: client });
  });
  const deps: ProcessDeliveriesDeps<Event> = {
    definition,
    config,
    client,
    engine,
    attempts: new AttemptLog({
      client,
      tableName: config.inboxTable,
      consumerName: config.consumerName,
      ttlSeconds: config.inboxTtlSeconds,
      now,
      ...(runtime.sleep === undefined ? {} : { sleep: runtime.sleep }),
    }),
    deadLetters,
    observer: combineObservers(new LogObserver(logger), new MetricsObserver(metrics), runtime.observer),
    logger,
    now,
    ...(config.parkOutOfOrder === true && !config.fifo
      ? {
          // Loaded at the first invocation only when parking is on: nothing of it at anyone else's cold start.
          parking: new (await import('./inbox/ParkedMessages.js')).ParkedMessages({
            client,
            tableName: config.inboxTable,
            consumerName: config.consumerName,
            ttlSeconds: config.inboxTtlSeconds,
            now,
            deleter: backoff,
            logger,
          }),
        }
      : {}),
    ...(runtime.tracer === undefined ? {} : { tracer: runtime.tracer }),
  };
  return {
    config,
    logger,
    metrics,
    deps,
    backoff,
  };
}

/**
 * The SQS path: deliveries → engine → the partial batch response through Powertools'
 * `processPartialResponse` (`BatchProcessor`, or `SqsFifoPartialProcessorAsync` with
 * `skipGroupOnError` on a FIFO queue, so Powertools itself checks that nothing after a failed
 * message of a group is acknowledged), then the retries' visibility delays.
 */
async function handleSqsEvent<Event>(event: SQSEvent, context: Context, env: ConsumerEnvironment<Event>): Promise<SQSBatchResponse> {
  env.logger.addContext(context);
  const { config, deps, logger, metrics } = env;
  const deliveries = sqsDeliveries(event.Records, config.fifo);
  const results = await processDeliveries(deliveries, deps, invocationClock(context));
  const reported = new Set(results.filter((result) => result.reported).map((result) => result.delivery.messageId));

  const { BatchProcessor, EventType, SqsFifoPartialProcessorAsync, processPartialResponse } = await import('@aws-lambda-powertools/batch');
  const recordHandler = async (record: SQSRecord): Promise<void> => {
    if (reported.has(record.messageId)) throw new Error(`message ${record.messageId} must be retried`);
  };
  const response = config.fifo
    ? await processPartialResponse(event, recordHandler, new SqsFifoPartialProcessorAsync(), {
        context,
        skipGroupOnError: true,
        throwOnFullBatchFailure: false,
      })
    : await processPartialResponse(event, recordHandler, new BatchProcessor(EventType.SQS), { context, throwOnFullBatchFailure: false });

  try {
    await delayRetries(event.Records, results, env);
  } catch (error) {
    logger.warn('could not delay the retries; they return after the visibility timeout', { error: describeError(error) });
  }
  metrics.addMetric(MetricName.BatchSize, MetricUnit.Count, event.Records.length);
  metrics.publishStoredMetrics();
  return { batchItemFailures: response.batchItemFailures.map(({ itemIdentifier }) => ({ itemIdentifier })) };
}

/**
 * Delays each reported message with `ChangeMessageVisibility`: until a side-effect lock expires;
 * else by the backoff of its attempt, `min(base × 2^(attempt − 1), max)` seconds. On a FIFO queue
 * every reported message of a group gets its first one's delay (a group is blocked while any of its
 * messages is in flight, so a later message must not come back after the first).
 */
async function delayRetries<Event>(
  records: readonly SQSRecord[],
  results: readonly DeliveryResult[],
  env: ConsumerEnvironment<Event>,
): Promise<void> {
  const { config, deps } = env;
  const nowMs = deps.now().getTime();
  const byGroup = new Map<string, number>();
  const delayed: { receiptHandle: string; eventSourceARN: string; delaySeconds: number }[] = [];
  results.forEach((result, index) => {
    if (!result.reported) return;
    const record = records[index]!;
    const verdict = result.verdict;
    const attempt = verdict.kind === 'retry' || verdict.kind === 'dead-lettered' ? verdict.attempt : undefined;
    const retryAt = verdict.kind === 'retry' ? verdict.retryAt : undefined;
    let delay =
      retryAt !== undefined
        ? Math.max(1, Math.ceil((retryAt - nowMs) / 1000) + 1)
        : backoffSeconds(attempt ?? receiveCountOf(result.delivery), config.retryBackoffBaseSeconds, config.retryBackoffMaxSeconds);
    const group = config.fifo ? record.attributes?.MessageGroupId : undefined;
    if (group !== undefined) {
      const first = byGroup.get(group);
      if (first === undefined) byGroup.set(group, delay);
      else delay = first;
    }
    if (delay > 0) delayed.push({ receiptHandle: record.receiptHandle, eventSourceARN: record.eventSourceARN, delaySeconds: delay });
  });
  if (delayed.length === 0) return;
  await (await env.backoff()).delay(delayed);
}

function receiveCountOf(delivery: Delivery): number {
  return delivery.attempts.kind === 'receive-count' ? delivery.attempts.receiveCount : 1;
}
