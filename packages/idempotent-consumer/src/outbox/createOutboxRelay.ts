import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import type { SNSClient } from '@aws-sdk/client-sns';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Context, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { METRICS_NAMESPACE } from '../settings/settings.js';
import { EnvironmentError } from '../config/runtimeConfig.js';
import { OutboxMessageError, type OutboxDestination } from './OutboxDestination.js';
import { OutboxMetricName } from './outboxMetrics.js';
import { OutboxPublisher } from './OutboxPublisher.js';
import { type OutboxRelayConfig, readOutboxRelayConfig } from './outboxRelayConfig.js';
import { DEFAULT_DESTINATION, destinationEnvironmentVariable } from './outboxRelaySettings.js';
import { readOutboxRecord } from './outboxStreamRecords.js';
import { eventBridgeDestination } from './eventBridgeDestination.js';
import { snsTopicDestination } from './snsTopicDestination.js';
import { sqsQueueDestination } from './sqsQueueDestination.js';
import { startOnce } from '../startOnce.js';
import { type SegmentTracer, TraceSegmentName, traced } from '../observability/traceSegments.js';

export { OutboxMetricName } from './outboxMetrics.js';

/** What the relay is built with beside the environment: its destinations in code. */
export interface OutboxRelayOptions {
  /**
   * Destinations by logical name (`OutgoingMessage.destination`; `'default'` when a message names
   * none). They take precedence over the built-in ones named in the environment
   * (`OUTBOX_DESTINATION_<NAME>`: an SNS topic ARN, an SQS queue URL or an EventBridge bus ARN).
   * Use it for a destination that is not built in, or a built-in one with options of your own (e.g.
   * `eventBridgeDestination({ eventBusName, source: 'com.example.orders' })`; see `docs/outbox.md`).
   * @default {} (only the environment's)
   */
  readonly destinations?: Readonly<Record<string, OutboxDestination>>;
}

/**
 * What a relay runs with, beside the environment: for tests and the local runtime. In Lambda, leave
 * it out, or give only what you want to replace (your own logger, metrics or tracer).
 */
export interface OutboxRelayRuntimeOptions {
  /** Where the configuration is read from. @default process.env */
  readonly environment?: Readonly<Record<string, string | undefined>>;
  /** The AWS clients. @default new clients with the default configuration, the SNS, SQS and EventBridge ones created at their first use */
  readonly clients?: {
    readonly dynamoDb?: DynamoDBClient;
    readonly sns?: SNSClient;
    readonly sqs?: SQSClient;
    readonly eventBridge?: EventBridgeClient;
  };
  /** @default a Powertools Logger named after the consumer (level from `POWERTOOLS_LOG_LEVEL`) */
  readonly logger?: Logger;
  /** @default Powertools Metrics, namespace `POWERTOOLS_METRICS_NAMESPACE` or `IdempotentConsumer`, service = consumer name */
  readonly metrics?: Metrics;
  /** The clock. @default () => new Date() */
  readonly now?: () => Date;
  /** Called after each outbox message the relay handled (sent now, or found sent before), once it is marked. What it throws is logged, not reported. */
  readonly onRelayed?: (relayed: RelayedMessage) => void;
  /**
   * A Powertools `Tracer` (`@aws-lambda-powertools/tracer`, an optional peer: install it to use
   * this), or anything with its `isTracingEnabled`, `getSegment` and `setSegment`. With it, each
   * publish runs in an X-Ray subsegment `## publish` of the invocation's segment, annotated with
   * `consumer`, `destination` (the logical name), `sent` and `marked` (never the body, the
   * attributes or the idempotency key); a publish that fails gets the error (`addError`) and the
   * subsegment is closed on every path. The function needs active tracing (the `OutboxRelay`
   * construct's default). Costs a few microseconds per message when tracing; a tracer that is
   * disabled (outside Lambda, `POWERTOOLS_TRACE_ENABLED=false`) opens nothing.
   *
   * Whether or not it is given, every message is published with the trace header of the message
   * that emitted it (see `OutboxMessage.traceHeader`).
   * @default none: no subsegment
   */
  readonly tracer?: SegmentTracer;
}

/** One outbox message the relay handled, for {@link OutboxRelayRuntimeOptions.onRelayed}. */
export interface RelayedMessage {
  /** The outbox message's stable id: SHA-256 (hex, 64 characters) of consumer name, idempotency key and position. */
  readonly messageId: string;
  /** The logical name of the destination it went to (`OutgoingMessage.destination`; `'default'` when the message named none). */
  readonly destination: string;
  /** `true` when this invocation sent it; `false` when Powertools found its publish completed before. */
  readonly sent: boolean;
  /** `false` when the item was already marked published, or is gone. */
  readonly marked: boolean;
}

/** A Lambda handler for the inbox table's DynamoDB Stream, built by {@link createOutboxRelay}. */
export interface OutboxRelayHandler {
  /**
   * Relays one batch of stream records, in order (see {@link createOutboxRelay}). The first
   * invocation reads the environment and creates the clients.
   *
   * @returns the partial batch response: each record that failed, by its `SequenceNumber`
   *   (`{"batchItemFailures":[{"itemIdentifier":"<SequenceNumber>"}]}`); it resolves when
   *   records fail, also all of them
   * @throws EnvironmentError (the promise rejects, and the next invocation tries again) when the
   *   environment lacks a variable, holds a malformed one, or names no destination while none
   *   is given in code
   */
  (event: DynamoDBStreamEvent, context: Context): Promise<DynamoDBBatchResponse>;
  /** A new execution environment of the same relay with other runtime options (tests, the local runtime). */
  withRuntime(runtime: OutboxRelayRuntimeOptions): OutboxRelayHandler;
}

interface RelayEnvironment {
  readonly config: OutboxRelayConfig;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly publisher: OutboxPublisher;
  readonly onRelayed: ((relayed: RelayedMessage) => void) | undefined;
  readonly tracer: SegmentTracer | undefined;
}

/**
 * Builds the outbox relay: a Lambda handler for the inbox table's DynamoDB Stream that publishes
 * each new outbox item of its consumer to the item's destination, with the item's message id as
 * the deduplication id where the destination has one and as the `outboxMessageId` attribute
 * everywhere, then marks the item published with a short TTL (see `OutboxPublisher`).
 *
 * - Records are handled in stream order, one at a time, through Powertools'
 *   `processPartialResponse` with `BatchProcessor(EventType.DynamoDBStreams)`: a record that fails
 *   is reported by its `SequenceNumber` in `{"batchItemFailures":[{"itemIdentifier":"<SequenceNumber>"}]}`
 *   (https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-batchfailurereporting.html). The
 *   records after it are still published: Lambda retries from the lowest reported record (the
 *   retry finds their publishes completed and sends nothing), and when the retries run out it
 *   discards the batch from that record on, so a message that can never be published (a poison
 *   item) does not take the good ones behind it to the on-failure destination. The handler never
 *   throws for a record, also when all fail.
 * - Records that are not an `INSERT` of an outbox item of this consumer are acknowledged and
 *   skipped (the event source mapping's filter drops them before; see `outboxFilterPattern`).
 * - Configuration comes from the environment that `outboxRelayEnvironment()` builds (consumer
 *   name, inbox and idempotency tables, destinations, TTLs), read at the first invocation; the
 *   SNS, SQS and EventBridge SDKs are loaded when a destination of theirs first publishes.
 *
 * Metrics: {@link OutboxMetricName}. Logs: one line per batch, one per failure. Traces: each
 * message is published with the X-Ray trace header of the message that emitted it (stored on its
 * item; see `OutboxMessage.traceHeader`), and with a tracer (`runtime.tracer`) in a `## publish`
 * subsegment.
 *
 * @throws EnvironmentError at the first invocation when the environment lacks a variable, holds a
 *   malformed one, or names no destination while none is given in code
 * @example
 * // the construct's default entry (outbox/relayHandler.ts):
 * export const handler = createOutboxRelay();
 * // with a destination of your own:
 * export const handler = createOutboxRelay({ destinations: { default: eventBridgeDestination(bus) } });
 */
export function createOutboxRelay(options: OutboxRelayOptions = {}, runtime: OutboxRelayRuntimeOptions = {}): OutboxRelayHandler {
  const ready = startOnce(() => buildEnvironment(options, runtime));
  const handler = (async (event: DynamoDBStreamEvent, context: Context): Promise<DynamoDBBatchResponse> => {
    const env = await ready();
    return relayBatch(event, context, env);
  }) as OutboxRelayHandler;
  Object.defineProperty(handler, 'withRuntime', { value: (next: OutboxRelayRuntimeOptions) => createOutboxRelay(options, next) });
  return handler;
}

async function buildEnvironment(options: OutboxRelayOptions, runtime: OutboxRelayRuntimeOptions): Promise<RelayEnvironment> {
  const variables = runtime.environment ?? process.env;
  const config = readOutboxRelayConfig(variables);
  const inCode = options.destinations ?? {};
  if (Object.keys(config.destinations).length === 0 && Object.keys(inCode).length === 0) {
    throw new EnvironmentError([
      `no outbox destination: set ${destinationEnvironmentVariable(DEFAULT_DESTINATION)} (an SNS topic ARN, an SQS queue URL or an EventBridge bus ARN) or pass destinations in code`,
    ]);
  }
  const dynamoDb = runtime.clients?.dynamoDb ?? new DynamoDBClient({});
  const documentClient = DynamoDBDocumentClient.from(dynamoDb, { marshallOptions: { removeUndefinedValues: true } });
  const logger = runtime.logger ?? new Logger({ serviceName: config.consumerName });
  const metrics =
    runtime.metrics ??
    new Metrics({ namespace: variables.POWERTOOLS_METRICS_NAMESPACE ?? METRICS_NAMESPACE, serviceName: config.consumerName });
  const now = runtime.now ?? (() => new Date());

  const fromEnvironment = new Map<string, OutboxDestination>();
  const clients = runtime.clients;
  for (const [variable, target] of Object.entries(config.destinations)) {
    fromEnvironment.set(
      variable,
      target.kind === 'sns'
        ? snsTopicDestination({ topicArn: target.topicArn, ...(clients?.sns === undefined ? {} : { client: clients.sns }) })
        : target.kind === 'sqs'
          ? sqsQueueDestination({ queueUrl: target.queueUrl, ...(clients?.sqs === undefined ? {} : { client: clients.sqs }) })
          : eventBridgeDestination({
              eventBusName: target.eventBusArn,
              ...(clients?.eventBridge === undefined ? {} : { client: clients.eventBridge }),
            }),
    );
  }
  const destination = (logicalName: string): OutboxDestination => {
    if (Object.hasOwn(inCode, logicalName)) return inCode[logicalName]!;
    let variable: string;
    try {
      variable = destinationEnvironmentVariable(logicalName);
    } catch (error) {
      throw new OutboxMessageError((error as Error).message);
    }
    const found = fromEnvironment.get(variable);
    if (found === undefined)
      throw new OutboxMessageError(`no outbox destination named ${JSON.stringify(logicalName)}: set ${variable} or pass it in code`);
    return found;
  };

  const { DynamoDBPersistenceLayer } = await import('@aws-lambda-powertools/idempotency/dynamodb');
  const publisher = new OutboxPublisher({
    destination,
    persistenceStore: new DynamoDBPersistenceLayer({ tableName: config.idempotencyTable, awsSdkV3Client: dynamoDb }),
    keyPrefix: config.consumerName,
    idempotencyTtlSeconds: config.idempotencyTtlSeconds,
    documentClient,
    inboxTable: config.inboxTable,
    publishedTtlSeconds: config.publishedTtlSeconds,
    now,
  });
  return { config, logger, metrics, publisher, onRelayed: runtime.onRelayed, tracer: runtime.tracer };
}

/** An error's type and message for a log line (the message cut to 500 characters). */
function describeError(error: unknown): { name: string; message: string } {
  if (error instanceof Error) return { name: error.name, message: error.message.slice(0, 500) };
  return { name: typeof error, message: String(error).slice(0, 500) };
}

async function relayBatch(event: DynamoDBStreamEvent, context: Context, env: RelayEnvironment): Promise<DynamoDBBatchResponse> {
  const { config, logger, metrics, publisher, onRelayed, tracer } = env;
  logger.addContext(context);
  const counts = { published: 0, replayed: 0, skipped: 0, failed: 0 };
  let metricsAdded = false;
  const addMetric = (name: string, unit: (typeof MetricUnit)[keyof typeof MetricUnit], value: number): void => {
    metrics.addMetric(name, unit, value);
    metricsAdded = true;
  };

  const recordHandler = async (record: DynamoDBRecord): Promise<void> => {
    const sequenceNumber = record.dynamodb?.SequenceNumber ?? '?';
    try {
      const verdict = readOutboxRecord(record, config.consumerName);
      if (verdict.kind === 'skip') {
        counts.skipped += 1;
        logger.debug('stream record skipped', { sequenceNumber, reason: verdict.reason });
        return;
      }
      const message = verdict.message;
      const result = await traced(tracer, TraceSegmentName.Publish, async (annotate) => {
        annotate({ consumer: config.consumerName, destination: message.destination });
        const published = await publisher.publish(message, context);
        annotate({ sent: published.sent, marked: published.marked });
        return published;
      });
      if (result.sent) {
        counts.published += 1;
        addMetric(OutboxMetricName.OutboxMessagesPublished, MetricUnit.Count, 1);
        if (result.publishDelayMs !== undefined)
          addMetric(OutboxMetricName.OutboxPublishDelay, MetricUnit.Milliseconds, result.publishDelayMs);
      } else {
        counts.replayed += 1;
      }
      try {
        onRelayed?.({
          messageId: verdict.message.messageId,
          destination: verdict.message.destination,
          sent: result.sent,
          marked: result.marked,
        });
      } catch (error) {
        logger.warn('the onRelayed observer threw; the record counts as relayed', { sequenceNumber, error: describeError(error) });
      }
      logger.debug('outbox message relayed', {
        sequenceNumber,
        messageId: verdict.message.messageId,
        sent: result.sent,
        marked: result.marked,
      });
    } catch (error) {
      counts.failed += 1;
      addMetric(OutboxMetricName.OutboxPublishFailures, MetricUnit.Count, 1);
      logger.error('outbox record failed; the batch is retried from the first failed record', {
        sequenceNumber,
        error: describeError(error),
      });
      throw error;
    }
  };

  const { BatchProcessor, EventType, processPartialResponse } = await import('@aws-lambda-powertools/batch');
  const response = await processPartialResponse(event, recordHandler, new BatchProcessor(EventType.DynamoDBStreams), {
    context,
    throwOnFullBatchFailure: false,
    processInParallel: false,
  });
  logger.info('outbox batch relayed', { records: event.Records.length, ...counts });
  if (metricsAdded) metrics.publishStoredMetrics();
  return { batchItemFailures: response.batchItemFailures.map(({ itemIdentifier }) => ({ itemIdentifier })) };
}
