import { createHash } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, paginateScan } from '@aws-sdk/lib-dynamodb';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { MessageHold } from '../cli/dlq/queueInspector.js';
import { readDeadLetterAttributes } from '../lambda/dlq/deadLetterMessage.js';
import { type ConsumerSettings, lambdaEnvironment, METRICS_NAMESPACE } from '../config/settings.js';
import { assertValidSettings } from '../config/validateSettings.js';
import { readRuntimeConfig, type RuntimeConfig } from '../lambda/config/runtimeConfig.js';
import { type Consumer, createConsumer } from '../lambda/createConsumer.js';
import { createSqsHandler } from '../lambda/handlers/createSqsHandler.js';
import { LEDGER_SK_PREFIX, ORDER_STATE_SK } from '../lambda/inbox/DynamoDBInbox.js';
import { LogObserver } from '../lambda/observability/LogObserver.js';
import { MetricsObserver } from '../lambda/observability/MetricsObserver.js';
import { combineObservers, type OutcomeObserver, type OutcomeRecord, peekIds } from '../lambda/observability/outcomes.js';
import { NOTIFICATION_SK_PREFIX } from '../lambda/sideEffects/Notifier.js';
import { lockDataDir } from './dataDirLock.js';
import { type Emulators, localClientConfig, startEmulators } from './emulators.js';
import { transientFailures } from './faultInjection.js';
import type { InputMessage } from './inputFile.js';
import { inProducerOrder } from './producerOrder.js';
import { MetricsCapture, type MetricTotals } from './metricsCapture.js';
import { type LocalResources, provisionResources } from './provision.js';
import { buildReport, type DeadLetterSnapshot, type EffectCounts, type RunReport, type SentMessage } from './report.js';
import { pollerOptionsFromSettings, SqsEventSourcePoller } from './sqsEventSourcePoller.js';

/** Progress of a run, reported about once a second. */
export interface Progress {
  readonly sent: number;
  readonly applied: number;
  readonly duplicates: number;
  readonly retried: number;
  readonly deadLettered: number;
  readonly invocations: number;
  readonly elapsedMs: number;
}

/** The progress figures from the metric totals so far; `started` is a `performance.now()` value. */
export function progress(totals: MetricTotals, sent: number, invocations: number, started: number): Progress {
  return {
    sent,
    applied: totals.applied,
    duplicates: totals.duplicates,
    retried: totals.retried,
    deadLettered: totals.deadLettered,
    invocations,
    elapsedMs: performance.now() - started,
  };
}

/** Options of {@link runLocal}. */
export interface LocalRunOptions {
  /** The messages to send, from `readInputFile`. */
  readonly input: readonly InputMessage[];
  /** The consumer's settings (the one source, `config/settings.ts`). */
  readonly settings: ConsumerSettings;
  /** Keep DynamoDB Local's data in this directory between runs. @default in memory */
  readonly dataDir?: string;
  /** Share of events whose first delivery fails with a retryable error, 0 to 1. @default 0 */
  readonly transientFailureRate?: number;
  /** The consumer's log level (Powertools Logger). @default POWERTOOLS_LOG_LEVEL, else 'ERROR' */
  readonly logLevel?: string;
  /** Use these running emulators instead of starting new ones (tests); `prefix` keeps names apart. */
  readonly endpoints?: { readonly dynamoDb: string; readonly sqs: string; readonly prefix?: string };
  /** Give up waiting for the queue to drain after this long, in milliseconds. @default 600000 */
  readonly timeoutMs?: number;
  readonly onProgress?: (progress: Progress) => void;
  /** Called once the emulators and resources are ready. */
  readonly onReady?: (resources: LocalResources) => void;
  /**
   * Called after the report, before the emulators stop; they stop when it resolves. `npm start
   * -- --keep-running` waits here for Ctrl-C so the DLQ tool can be used on the run's queues.
   */
  readonly beforeStop?: (report: RunReport, running: RunningLocalRuntime) => Promise<void>;
}

/** Where a local run's emulators and resources are, while they still run. */
export interface RunningLocalRuntime {
  readonly dynamoDbEndpoint: string;
  readonly sqsEndpoint: string;
  readonly resources: LocalResources;
}

/** What a source runner gets: the run's options plus the provisioned resources and clients. */
export interface SourceRun extends LocalRunOptions {
  readonly config: RuntimeConfig;
  readonly resources: LocalResources;
  readonly dynamoDb: DynamoDBClient;
  readonly sqs: SQSClient;
  /** The SQS server's base URL. */
  readonly sqsEndpoint: string;
}

/** Runs one event source over provisioned resources and reports (`runSqsSource`, `runKafkaSource`). */
export type SourceRunner = (run: SourceRun) => Promise<RunReport>;

/**
 * The local runtime's main job: starts DynamoDB Local and the SQS server (unless `endpoints` are
 * given), creates the tables and queues with the stack's settings, then lets the event source
 * run (`runSqsSource` by default: sends the input to the source queue and drives the SQS event
 * source poller with the real handler until the queue is drained; `runKafkaSource` for Kafka),
 * and returns the report with its exactly-once check. The emulators are stopped at the end,
 * also on errors.
 *
 * @throws InvalidSettingsError when the settings break an AWS rule
 * @throws DataDirError when `dataDir` is not a directory or another run holds it
 * @throws the emulators' start errors (e.g. no Java), and `PollerIdleTimeoutError` when the
 *   source does not drain within `timeoutMs`
 */
export async function runLocal(options: LocalRunOptions, runSource: SourceRunner = runSqsSource): Promise<RunReport> {
  const settings = assertValidSettings(options.settings);
  const unlock = options.dataDir === undefined ? undefined : await lockDataDir(options.dataDir);
  let emulators: Emulators | undefined;
  try {
    emulators =
      options.endpoints === undefined
        ? await startEmulators(options.dataDir === undefined ? {} : { dataDir: options.dataDir })
        : undefined;
  } catch (error) {
    await unlock?.();
    throw error;
  }
  const endpoints = emulators === undefined ? options.endpoints! : { dynamoDb: emulators.dynamoDbEndpoint, sqs: emulators.sqsEndpoint };
  const dynamoDb = new DynamoDBClient(localClientConfig(endpoints.dynamoDb));
  const sqs = new SQSClient(localClientConfig(endpoints.sqs));
  try {
    const resources = await provisionResources({ dynamoDb, sqs, settings, prefix: options.endpoints?.prefix ?? '' });
    options.onReady?.(resources);
    const config = readRuntimeConfig(lambdaEnvironment(settings, resources));
    const report = await runSource({ ...options, settings, config, resources, dynamoDb, sqs, sqsEndpoint: endpoints.sqs });
    await options.beforeStop?.(report, { dynamoDbEndpoint: endpoints.dynamoDb, sqsEndpoint: endpoints.sqs, resources });
    return report;
  } finally {
    dynamoDb.destroy();
    sqs.destroy();
    await emulators?.stop();
    await unlock?.();
  }
}

/** One execution environment of a local run, as after a cold start. */
export interface LocalExecutionEnvironment {
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly consumer: Consumer;
}

/**
 * Returns a factory of execution environments for a run: each has its own logger, metrics and
 * consumer; all report their outcomes to `observer` and share the run's fault injection.
 */
export function executionEnvironments(run: SourceRun, observer: OutcomeObserver): () => LocalExecutionEnvironment {
  const faults = transientFailures(run.transientFailureRate ?? 0);
  const logLevel = run.logLevel ?? process.env.POWERTOOLS_LOG_LEVEL ?? 'ERROR';
  return () => {
    const logger = new Logger({ serviceName: run.config.consumerName, logLevel: logLevel as 'ERROR' });
    const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: run.config.consumerName });
    const consumer = createConsumer(
      run.config,
      { dynamoDb: run.dynamoDb, sqs: run.sqs },
      { observer: combineObservers(new LogObserver(logger), new MetricsObserver(metrics), observer), wrapProcessor: faults },
    );
    return { logger, metrics, consumer };
  };
}

/**
 * The SQS run on provisioned resources: sends the input to the source queue, drives the SQS
 * event source poller with the real handler until the queue is drained, then reports.
 */
export async function runSqsSource(run: SourceRun): Promise<RunReport> {
  const started = performance.now();
  const startedAt = new Date();
  const outcomes: OutcomeRecord[] = [];
  const environments = executionEnvironments(run, { onOutcome: (record) => outcomes.push(record) });
  let invocations = 0;

  const capture = new MetricsCapture();
  capture.start();
  const progressTimer = setInterval(() => run.onProgress?.(progressOf()), 1000);
  const progressOf = () => progress(capture.totals(), run.input.length, invocations, started);
  let sent: SentMessage[] = [];
  try {
    // A FIFO producer sends each message group in order; the sample's out-of-order lines model a standard queue.
    const input = run.settings.queue.fifo ? inProducerOrder(run.input) : run.input;
    sent = await sendInput(run.sqs, run.resources.queueUrl, input, run.settings.queue.fifo);
    const poller = new SqsEventSourcePoller({
      sqs: run.sqs,
      queueUrl: run.resources.queueUrl,
      queueArn: run.resources.queueArn,
      ...pollerOptionsFromSettings(run.settings),
      createHandler: () => {
        const { consumer, logger, metrics } = environments();
        return createSqsHandler(consumer, { logger, metrics });
      },
      onInvocation: () => {
        invocations += 1;
      },
    });
    try {
      await poller.runUntilIdle({ idleMs: 1500, timeoutMs: run.timeoutMs ?? 600_000 });
    } finally {
      await poller.stop();
    }
  } finally {
    clearInterval(progressTimer);
    capture.stop();
  }
  run.onProgress?.(progressOf());

  const [deadLetters, effects, remaining] = await Promise.all([
    readDeadLetterQueue(run, startedAt),
    countEffects(run.dynamoDb, run.resources.ordersTable),
    queueDepth(run.sqs, run.resources.queueUrl),
  ]);
  return buildReport({
    source: 'sqs',
    sent,
    outcomes,
    deadLetters,
    effects,
    metrics: capture.totals(),
    remainingInSource: remaining,
    durationMs: performance.now() - started,
  });
}

/**
 * Sends the input to the source queue, 10 per `SendMessageBatch`. On a FIFO queue the message
 * group is the body's `orderId` (as a producer would set it) and the deduplication id is the
 * line number, so that a producer duplicate in the file reaches the consumer, as it would from a
 * producer retry after the 5-minute deduplication window.
 *
 * @returns each sent message with its SQS `messageId`
 */
export async function sendInput(
  sqs: SQSClient,
  queueUrl: string,
  input: readonly InputMessage[],
  fifo: boolean,
): Promise<SentMessage[]> {
  const sent: SentMessage[] = [];
  for (let i = 0; i < input.length; i += 10) {
    const chunk = input.slice(i, i + 10);
    const output = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: chunk.map((message, index) => ({
          Id: String(index),
          MessageBody: message.body,
          ...(fifo
            ? {
                MessageGroupId: peekIds(message.body).orderId ?? 'no-order',
                MessageDeduplicationId: createHash('sha256').update(`line:${message.line}`).digest('hex'),
              }
            : {}),
        })),
      }),
    );
    if ((output.Failed ?? []).length > 0) {
      const failure = output.Failed?.[0];
      const line = chunk[Number(failure?.Id)]?.line;
      throw new Error(`the SQS server refused the message of input line ${line}: ${failure?.Code} ${failure?.Message ?? ''}`);
    }
    for (const success of output.Successful ?? []) {
      const message = chunk[Number(success.Id)];
      if (message !== undefined && success.MessageId !== undefined) {
        sent.push({ messageId: success.MessageId, line: message.line, body: message.body });
      }
    }
  }
  return sent;
}

/**
 * The dead-letter messages of this run, without consuming them. SQS shows a FIFO queue's
 * messages only one group head at a time, so the run asks the embedded server's inspection
 * endpoint (fauxqs: `GET /_fauxqs/queues/<name>`, read-only), which lists every message; on
 * another server it falls back to {@link peekDeadLetterQueue}.
 */
export async function readDeadLetterQueue(run: SourceRun, since: Date): Promise<DeadLetterSnapshot[]> {
  const queueUrl = run.resources.deadLetterQueueUrl;
  const name = queueUrl.slice(queueUrl.lastIndexOf('/') + 1);
  try {
    const response = await fetch(`${run.sqsEndpoint}/_fauxqs/queues/${encodeURIComponent(name)}`);
    if (response.ok) {
      const state = (await response.json()) as { messages: Record<'ready' | 'delayed' | 'inflight', unknown[]> };
      const { ready, delayed, inflight } = state.messages;
      const messages = [...ready, ...delayed, ...inflight.map((entry) => (entry as { message: unknown }).message)] as InspectedMessage[];
      return messages
        .map((m) => ({ m, dead: readDeadLetterAttributes(m.messageAttributes ?? {}) }))
        .filter(({ m, dead }) => (dead?.failedAt?.getTime() ?? 0) >= since.getTime() || (m.sentTimestamp ?? 0) >= since.getTime())
        .map(({ m, dead }) => ({
          messageId: m.messageId,
          body: m.body,
          failureReason: dead?.failureReason,
          originalMessageId: dead?.context.originalMessageId ?? m.messageId,
        }));
    }
  } catch {
    // not the embedded server: read it through the SQS API
  }
  return peekDeadLetterQueue(run.sqs, queueUrl, since);
}

interface InspectedMessage {
  readonly messageId: string;
  readonly body: string;
  readonly sentTimestamp?: number;
  readonly messageAttributes?: Readonly<Record<string, { readonly StringValue?: string }>>;
}

/**
 * Reads the messages that entered the dead-letter queue since `since` without consuming them
 * (the DLQ tool's `MessageHold`: receive, then make them visible again), so `dlq list` still
 * finds them and earlier runs' messages on a kept queue do not count.
 */
export async function peekDeadLetterQueue(sqs: SQSClient, queueUrl: string, since: Date): Promise<DeadLetterSnapshot[]> {
  const hold = new MessageHold(sqs, queueUrl);
  try {
    const records = await hold.scan({ visibilityTimeoutSeconds: 30, waitTimeSeconds: 0 });
    return records
      .filter((record) => (record.failedAt ?? record.sentAt ?? since).getTime() >= since.getTime())
      .map((record) => ({
        messageId: record.messageId,
        body: record.body,
        failureReason: record.failureReason,
        originalMessageId: record.originalMessageId ?? record.messageId,
      }));
  } finally {
    await hold.release();
  }
}

/** Counts ledger entries and notifications per order in the business table. */
export async function countEffects(dynamoDb: DynamoDBClient, ordersTable: string): Promise<EffectCounts> {
  const documents = DynamoDBDocumentClient.from(dynamoDb);
  const ledgerEntries = new Map<string, number>();
  const notifications = new Map<string, number>();
  const ledgerPoints = new Map<string, number>();
  const pointsAwarded = new Map<string, number>();
  const add = (map: Map<string, number>, key: string, n: number) => map.set(key, (map.get(key) ?? 0) + n);
  const scan = paginateScan({ client: documents }, { TableName: ordersTable, ProjectionExpression: 'orderId, sk, points, pointsAwarded' });
  for await (const page of scan) {
    for (const item of page.Items ?? []) {
      const orderId = String(item.orderId);
      const sk = String(item.sk);
      if (sk.startsWith(LEDGER_SK_PREFIX)) {
        add(ledgerEntries, orderId, 1);
        add(ledgerPoints, orderId, Number(item.points));
      } else if (sk.startsWith(NOTIFICATION_SK_PREFIX)) {
        add(notifications, orderId, 1);
      } else if (sk === ORDER_STATE_SK) {
        pointsAwarded.set(orderId, Number(item.pointsAwarded));
      }
    }
  }
  return { ledgerEntries, notifications, ledgerPoints, pointsAwarded };
}

async function queueDepth(sqs: SQSClient, queueUrl: string): Promise<number> {
  const output = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'],
    }),
  );
  const a = output.Attributes ?? {};
  return (
    Number(a.ApproximateNumberOfMessages ?? 0) +
    Number(a.ApproximateNumberOfMessagesNotVisible ?? 0) +
    Number(a.ApproximateNumberOfMessagesDelayed ?? 0)
  );
}
