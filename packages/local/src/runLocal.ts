/**
 * The local runtime: runs any handler built with `createIdempotentConsumer` on embedded emulators
 * (DynamoDB Local, and fauxqs for SQS, SNS and S3), with the event source Lambda would put in
 * front of it (an SQS event source mapping, or a Kafka one on an in-process partitioned log), the
 * outbox relay on the inbox table's stream, and an exactly-once check of what is really stored.
 *
 * @module
 */
import { GetQueueAttributesCommand, CreateQueueCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { type ConsumerSettings, METRICS_NAMESPACE } from 'idempotent-consumer/settings';
import { assertValidSettings, filterCriteriaProblems, InvalidSettingsError, streamSettingsOf } from 'idempotent-consumer/settings';
import { createIdempotentConsumer, type IdempotentConsumerHandler } from 'idempotent-consumer';
import { RetryableError } from 'idempotent-consumer';
import { readDeadLetterAttributes, EMPTY_BODY_PLACEHOLDER } from 'idempotent-consumer/dlq';
import { type ConsumerDefinition, defineConsumer } from 'idempotent-consumer/internal';
import { combineObservers, type OutcomeObserver, type OutcomeRecord } from 'idempotent-consumer/observability';
import type { KafkaEvent } from 'idempotent-consumer/kafka';
import { kafkaMessageId } from 'idempotent-consumer/kafka';
import { MessageHold } from './messageHold.js';
import type { LocalClients } from './aws/localClients.js';
import type { LocalCheck } from './check.js';
import { INJECTED_TRANSIENT_FAILURE } from './deadLetterCause.js';
import { PollerIdleTimeoutError } from './errors.js';
import type { FaultOptions } from './faultInjection.js';
import { createDeliveryRecorder } from './htmlReportInput.js';
import type { HtmlReportInput } from './htmlReportInput.js';
import type { InputMessage } from './inputFile.js';
import {
  KafkaEventSourcePoller,
  type KafkaOnFailureRecord,
  type KafkaRetryReading,
  type LocalKafkaHandler,
  kafkaPollerOptionsFromSettings,
} from './kafka/KafkaEventSourcePoller.js';
import { PartitionedLog } from './kafka/PartitionedLog.js';
import { appendInput, isStreamSource, type StreamSource } from './streams/appendInput.js';
import { ShardLog } from './streams/ShardLog.js';
import {
  type LocalStreamHandler,
  StreamEventSourcePoller,
  type StreamOnFailureRecord,
  streamPollerOptionsFromSettings,
} from './streams/StreamEventSourcePoller.js';
import { startLocalKafkaFunction } from './kafka/localFunctionEndpoint.js';
import { createS3OnFailureDestination } from './kafka/s3OnFailureDestination.js';
import { MetricsCapture, type MetricTotals } from './metricsCapture.js';
import { countOutboxItems } from './outbox/countOutboxItems.js';
import { startLocalRelay } from './outbox/startLocalRelay.js';
import { runInInitContext } from './lambdaInvokeStore.js';
import { inProducerOrder } from './producerOrder.js';
import type { LocalResources } from './provision.js';
import { buildReport, type DeadLetterSnapshot, type RunReport, type SentMessage } from './report.js';
import { sendInput } from './sendInput.js';
import { startLocalConsumer } from './startLocalConsumer.js';
import { type LocalSqsHandler, pollerOptionsFromSettings, SqsEventSourcePoller } from './sqsEventSourcePoller.js';
import type { AnySdkClient } from './aws/sdkMiddleware.js';

/** Progress of a run, reported about once a second. */
export interface Progress {
  /** `starting`: emulators and resources; `running`: sending and consuming; `checking`: reading back what is stored. */
  readonly phase: 'starting' | 'running' | 'checking';
  /** What is happening, in a few words (start-up steps). */
  readonly step: string;
  /** Messages sent: the input's size in the progress reported while consuming and checking; 0 in that of a start-up step. */
  readonly sent: number;
  /** Messages applied so far (the consumer's `MessagesApplied` metric). */
  readonly applied: number;
  /** Deliveries acknowledged as duplicates so far (`DuplicatesAcknowledged`). */
  readonly duplicates: number;
  /** Deliveries reported for a retry so far (`RetryableFailures`); one message may count several times. */
  readonly retried: number;
  /** Messages dead-lettered so far (`DeadLettered`). */
  readonly deadLettered: number;
  /** Invocations the local event source has completed so far. */
  readonly invocations: number;
  /** Milliseconds since the run started. */
  readonly elapsedMs: number;
}

/** Options of {@link runLocal}. */
export interface LocalRunOptions {
  /** The handler to run: what `createIdempotentConsumer` returned (each execution environment is `handler.withRuntime(…)`). */
  readonly handler: IdempotentConsumerHandler;
  /** The message bodies to send, from `readInputFile`. */
  readonly input: readonly InputMessage[];
  /** The consumer's settings (the same object its CDK stack uses). */
  readonly settings: ConsumerSettings;
  /**
   * The event source. `kinesis` and `dynamodb-streams` run on an in-process shard log with a local
   * stream mapping (`streams/`; docs/streams.md). @default 'sqs'
   */
  readonly source?: 'sqs' | 'kafka' | StreamSource;
  /** Kinesis and DynamoDB Streams: shards of the local stream. @default 2 */
  readonly shards?: number;
  /** The consumer's own invariants, checked after the run (its `--check` module). */
  readonly check?: LocalCheck;
  /**
   * The event time of a message, to send a FIFO group or a Kafka key in the order the events
   * happened (as a producer that emitted them in order); `undefined`: the file's order.
   */
  readonly eventTime?: (message: InputMessage) => number | undefined;
  /** Keep DynamoDB Local's data in this directory between runs. @default in memory */
  readonly dataDir?: string;
  /** The consumer's log level (Powertools Logger). @default POWERTOOLS_LOG_LEVEL, else 'ERROR' */
  readonly logLevel?: string;
  /** Fault injection on the consumer's DynamoDB and SQS clients (`--fault`, `--seed`). */
  readonly faults?: FaultOptions;
  /**
   * The share (0 to 1) of idempotency keys whose first decision fails with a retryable
   * {@link InjectedTransientFailure}, to watch retries end in one application. Which keys is
   * drawn from `seed`. @default 0
   */
  readonly transientFailureRate?: number;
  /** Seed of the transient failures' draw (and of `faults`, which carry their own). @default 1 */
  readonly seed?: number;
  /** Kafka: partitions of the local topic. @default 3 */
  readonly partitions?: number;
  /**
   * SQS: how many invocations one execution environment serves at once, as on Lambda Managed
   * Instances (a capacity provider): the mapping's workers share environments (handler instances,
   * or with `runLocalApp` processes) this many to one, and `AWS_LAMBDA_MAX_CONCURRENCY` is set, as
   * Lambda sets it, so Powertools keeps per-invocation state in Lambda's per-invocation store
   * (https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-nodejs-runtime.html).
   * The local Kafka mapping invokes one batch at a time, so on Kafka only the variable changes.
   * With `runLocalApp`, a template's `PerExecutionEnvironmentMaxConcurrency` is used when this is
   * not given; both given and different is an error.
   * @default 1, or the template's
   */
  readonly concurrencyPerProcess?: number;
  /** Kafka: which reading of AWS's retry rule the local event source follows. @default 'resume-from-lowest-offset' */
  readonly kafkaRetryReading?: KafkaRetryReading;
  /**
   * Kafka: the local mapping's on-failure destination is this bucket of the embedded S3 server
   * (created if missing), as with the construct's `onFailureBucket`: each batch given up is written
   * as Lambda's S3 invocation record, its whole last event in `payload`
   * (`kafka/s3OnFailureDestination.ts`; `dlq list --on-failure-bucket` reads them).
   * @default none: the run only counts the batches given up
   */
  readonly kafkaOnFailureBucket?: string;
  /** Run the outbox relay on the inbox table's stream (to a local FIFO queue). @default true */
  readonly relay?: boolean;
  /** Use these running emulators instead of starting new ones (tests); `prefix` keeps names apart. */
  readonly endpoints?: { readonly dynamoDb: string; readonly sqs: string; readonly s3?: string; readonly prefix?: string };
  /**
   * The run's time limit: stop consuming when the source has not drained after this long, in
   * milliseconds (counted from the first poll), then check what is stored as usual: the report
   * says the run hit its limit, and the check fails (the messages left are unaccounted for).
   * @default 600000
   */
  readonly timeoutMs?: number;
  /** Receives the run's {@link Progress}: at each start-up step, then about once a second, then once when checking starts. */
  readonly onProgress?: (progress: Progress) => void;
  /** Receives each line the consumer logs (standard error by default), e.g. to keep a progress line apart. */
  readonly onLogLine?: (line: string) => void;
  /**
   * Called with the report, while everything still runs. With `keepRunning` the consumer then
   * keeps consuming (and the relay relaying) until the signal aborts: a message redriven from the
   * DLQ is processed.
   */
  readonly onReport?: (result: LocalRunResult, running: RunningLocalRuntime) => void | Promise<void>;
  /** After the report, keep the emulators, the event source and the relay running until this aborts. */
  readonly keepRunning?: AbortSignal;
  /** Receives each outcome that comes after the report (with `keepRunning`: a redriven message, one sent meanwhile). */
  readonly onOutcomeAfterReport?: (record: OutcomeRecord) => void;
}

/** Where a local run's emulators and resources are, while they run. */
export interface RunningLocalRuntime {
  /** DynamoDB Local's base URL, e.g. `http://127.0.0.1:<port>`. */
  readonly dynamoDbEndpoint: string;
  /** The SQS (and SNS, S3) server's base URL, e.g. `http://127.0.0.1:<port>`. */
  readonly sqsEndpoint: string;
  /** The physical names of the run's tables, queues (URLs and ARNs) and bucket. */
  readonly resources: LocalResources;
  /** The outbox relay's destination queue, when the relay runs. */
  readonly outboxQueueUrl: string | undefined;
  /**
   * Kafka with `keepRunning`: the local endpoint of Lambda's `Invoke` API for the consumer's
   * function (`AWS_ENDPOINT_URL_LAMBDA`), named `functionName`; a Kafka dead letter is redriven
   * through it (`dlq redrive --function`). See `kafka/localFunctionEndpoint.ts`.
   */
  readonly lambda?: { readonly endpoint: string; readonly functionName: string };
}

/** What a local run found. */
export interface LocalRunResult {
  /** The run's report, with the exactly-once check (`report.check`). */
  readonly report: RunReport;
  /** Every delivery's outcome, stamped with its time in the run: the HTML report's input. */
  readonly deliveries: HtmlReportInput['deliveries'];
  /** When the run started (the wall clock). */
  readonly startedAt: Date;
  /** The run's event source, as the HTML report names it: `sqs`, `sqs-fifo` (a FIFO queue), `kafka`, `kinesis` or `dynamodb-streams`. */
  readonly source: 'sqs' | 'sqs-fifo' | 'kafka' | StreamSource;
}

/**
 * Runs a consumer locally: starts DynamoDB Local and the SQS/SNS/S3 server on 127.0.0.1 (unless
 * `endpoints` are given), creates the tables, queues and bucket from the settings and the
 * consumer's `tables` with the provisioner the tests use, starts the outbox relay, sends the input
 * through the event source (SQS: the queue and a local event source mapping with Lambda's
 * semantics; Kafka: an in-process partitioned log and a local Kafka event source mapping), and
 * waits until it drains, or until its time limit (`timeoutMs`). Then it checks exactly-once
 * against what is stored (see `buildReport`), with the consumer's own invariants (`check`) and
 * what the run injects on purpose (`faults`, `transientFailureRate`: the dead letters those
 * produce are excused, see `judgeDeadLetter`). A run that hits its time limit, or whose outbox
 * relay does not drain, is reported all the same, its check failed. Everything is stopped at the
 * end, also on errors.
 *
 * @throws InvalidSettingsError when the settings break an AWS rule
 * @throws DataDirError when `dataDir` is not a directory or another run holds it
 * @throws RangeError when `transientFailureRate` is not a number from 0 to 1
 * @throws the emulators' start errors (e.g. no Java, `EmulatorStartError`) and `ProvisioningError`
 */
export async function runLocal(options: LocalRunOptions): Promise<LocalRunResult> {
  const settings = assertValidSettings(options.settings);
  const source = options.source ?? 'sqs';
  if (source === 'kafka' && settings.queue.fifo) {
    throw new Error('a Kafka event source needs a standard dead-letter queue (its on-failure destination): run Kafka without a FIFO queue');
  }
  if (isStreamSource(source) && settings.queue.fifo) {
    throw new Error(
      `a ${source} event source needs a standard dead-letter queue (its on-failure destination): run it without a FIFO queue`,
    );
  }
  const handler = withTransientFailures(options.handler, options.transientFailureRate ?? 0, options.seed ?? 1);
  const definition = defineConsumer(options.handler.options);
  return runLocalTarget(options, source, async (run) => {
    const local = await startLocalConsumer({
      handler: options.handler,
      settings,
      ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
      ...(options.endpoints === undefined ? {} : { endpoints: options.endpoints }),
      ...(options.faults ? { faults: options.faults } : {}),
      inboxStream: options.relay !== false,
      onStep: (step) => run.say(step),
      // With keepRunning the caller's signal stops the run: the pollers first, then the emulators.
      ...(options.keepRunning === undefined ? {} : { stopOnSignal: false }),
    });
    run.stops.unshift(() => local.stop());
    const { admin, consumer, resources } = local;
    return {
      settings,
      endpoints: local.endpoints,
      admin,
      resources,
      eventSourceSqs: consumer.eventSourceSqs,
      guarded: consumer.guarded,
      capturesProcessOutput: true,
      concurrencyPerEnvironment: options.concurrencyPerProcess ?? 1,
      orderingKeyOf: (message) => orderingKeyOf(definition, message),
      idempotencyKeyField: definition.idempotencyKeyField,
      sqsPollerOptions: pollerOptionsFromSettings(settings),
      kafkaPollerOptions: kafkaPollerOptionsFromSettings(settings),
      // Made as an execution environment's init: in a context of Lambda's store of its own.
      newEnvironment: () => runInInitContext(() => handler.withRuntime(local.runtime({ observer: run.observer, logLevel: run.logLevel }))),
      startRelay: async () => {
        run.say('starting the outbox relay');
        const queue = await admin.sqs.send(
          new CreateQueueCommand({ QueueName: `${options.endpoints?.prefix ?? ''}Outbox.fifo`, Attributes: { FifoQueue: 'true' } }),
        );
        const outboxQueueUrl = queue.QueueUrl!;
        const relay = await startLocalRelay({
          dynamoDb: admin.dynamoDb,
          consumerName: settings.consumerName,
          inboxTableName: resources.inboxTable,
          idempotencyTableName: resources.idempotencyTable,
          destinations: { default: outboxQueueUrl },
          clients: { sqs: admin.sqs },
          logger: new Logger({ serviceName: `${settings.consumerName}-relay`, logLevel: run.logLevel as 'ERROR' }),
          metrics: new Metrics({ namespace: METRICS_NAMESPACE, serviceName: `${settings.consumerName}-relay` }),
        });
        return { relay, outboxQueueUrl };
      },
    };
  });
}

/** The ordering key of an input message for the consumer `definition` (its FIFO group, its Kafka key), or `undefined` when it has none. */
export function orderingKeyOf(
  definition: Pick<ConsumerDefinition<unknown>, 'parseEvent' | 'orderingKeyOf'>,
  message: InputMessage,
): string | undefined {
  try {
    const event = definition.parseEvent(JSON.parse(message.body));
    const key = definition.orderingKeyOf(event);
    return typeof key === 'string' && key !== '' ? key : undefined;
  } catch {
    return undefined;
  }
}

/** What a local run starts with: the hooks its target plugs into. */
export interface LocalRunContext {
  /** Reports a start-up step. */
  readonly say: (step: string) => void;
  /** What to stop at the end, first first: put a stop in front (`unshift`) as each part starts. */
  readonly stops: (() => Promise<void> | void)[];
  /** Receives every delivery's outcome (the report's, the HTML report's, and after the report `onOutcomeAfterReport`). */
  readonly observer: OutcomeObserver;
  /** Adds up the consumer's metric lines; its other lines go to the run's log output. */
  readonly capture: MetricsCapture;
  /** The consumer's log level, upper case. */
  readonly logLevel: string;
}

/** The relay of a local run, as the run uses it. */
export interface LocalRunRelay {
  /** On-failure records of the batches given up so far. */
  gaveUp(): readonly unknown[];
  /** Resolves once every outbox item committed before the call has been relayed (or given up). @throws PollerIdleTimeoutError after `timeoutMs` */
  drain(options?: { readonly timeoutMs?: number }): Promise<void>;
  /** Stops relaying. */
  stop(): Promise<void>;
}

/** What a local run runs: a handler in this process (`runLocal`), or a stack's bundles in child processes (`runLocalApp`). */
export interface LocalRunTarget {
  /** The consumer's settings: its source, name and event source mapping. */
  readonly settings: ConsumerSettings;
  /** The emulators' base URLs. */
  readonly endpoints: { readonly dynamoDb: string; readonly sqs: string };
  /** The tools' clients (sending, inspection). */
  readonly admin: LocalClients;
  /** The physical names of the consumer's tables, queues and bucket. */
  readonly resources: LocalResources;
  /** The SQS client of the event source mapping. */
  readonly eventSourceSqs: SQSClient;
  /** The consumer's clients in this process, which the pollers guard (none for a child process: it is killed at its timeout). */
  readonly guarded: readonly AnySdkClient[];
  /** Whether the consumer writes to this process's standard output and error (its metrics are captured there), or `capture` is fed. */
  readonly capturesProcessOutput: boolean;
  /** SQS: invocations one execution environment serves at once (see {@link LocalRunOptions.concurrencyPerProcess}). */
  readonly concurrencyPerEnvironment: number;
  /** An input message's ordering key: its FIFO message group and Kafka key. */
  readonly orderingKeyOf: (message: InputMessage) => string | undefined;
  /** The SQS event source mapping's settings. */
  readonly sqsPollerOptions: ReturnType<typeof pollerOptionsFromSettings>;
  /** The Kafka event source mapping's settings. */
  readonly kafkaPollerOptions: ReturnType<typeof kafkaPollerOptionsFromSettings> & { readonly eventSource?: KafkaEvent['eventSource'] };
  /** The body field holding the idempotency key, when the consumer names one (the local DynamoDB stream's sort key). */
  readonly idempotencyKeyField?: string | undefined;
  /** A new execution environment: its handlers of SQS and Kafka events (and of the stream events, when it runs in this process). */
  newEnvironment(): {
    readonly sqs: LocalSqsHandler;
    readonly kafka: LocalKafkaHandler;
    readonly kinesis?: LocalStreamHandler;
    readonly dynamodbStreams?: LocalStreamHandler;
  };
  /** Starts the outbox relay; `undefined` when the consumer has none. */
  startRelay(): Promise<{ readonly relay: LocalRunRelay; readonly outboxQueueUrl: string | undefined } | undefined>;
}

/** The options of a run that do not say what it runs. */
export type LocalRunCommonOptions = Omit<
  LocalRunOptions,
  'handler' | 'settings' | 'source' | 'dataDir' | 'faults' | 'transientFailureRate'
> &
  Pick<LocalRunOptions, 'faults' | 'transientFailureRate'>;

/**
 * Runs a target made by `makeTarget` (which starts the emulators and provisions): starts its
 * relay, sends the input, runs the event source until it drains or the time limit, checks what is
 * stored and builds the report (see {@link runLocal}). Everything is stopped at the end, also on
 * errors.
 *
 * @param showLine - whether a line the consumer wrote (not a metric) is passed to `onLogLine`; @default every line
 * @param progressSince - when the progress's elapsed time counts from (`performance.now()`, e.g. before a synthesis); @default now
 */
export async function runLocalTarget(
  options: LocalRunCommonOptions,
  source: 'sqs' | 'kafka' | StreamSource,
  makeTarget: (run: LocalRunContext) => Promise<LocalRunTarget>,
  showLine: (line: string) => boolean = () => true,
  progressSince?: number,
): Promise<LocalRunResult> {
  const started = performance.now();
  const since = progressSince ?? started;
  const startedAt = new Date();
  const say = (step: string, phase: Progress['phase'] = 'starting') =>
    options.onProgress?.({
      phase,
      step,
      sent: 0,
      applied: 0,
      duplicates: 0,
      retried: 0,
      deadLettered: 0,
      invocations: 0,
      elapsedMs: performance.now() - since,
    });

  const stops: (() => Promise<void> | void)[] = [];
  try {
    const outcomes: OutcomeRecord[] = [];
    // When each outcome was observed (Date.now(), index for index): the end of the report's endToEndMs.
    const outcomesObservedAtMs: number[] = [];
    const recorder = createDeliveryRecorder();
    // Powertools reads POWERTOOLS_METRICS_DISABLED whenever it makes a Metrics (a dead letter's
    // reason is a single metric of its own): the run's report is built from them, so they are on
    // while it runs, whatever the caller's environment says.
    const metricsDisabled = process.env.POWERTOOLS_METRICS_DISABLED;
    process.env.POWERTOOLS_METRICS_DISABLED = 'false';
    stops.unshift(() => {
      if (metricsDisabled === undefined) delete process.env.POWERTOOLS_METRICS_DISABLED;
      else process.env.POWERTOOLS_METRICS_DISABLED = metricsDisabled;
    });
    const stderrWrite = process.stderr.write.bind(process.stderr);
    const logLine = options.onLogLine ?? ((line: string) => void stderrWrite(`${line}\n`));
    const capture = new MetricsCapture((line) => {
      if (showLine(line)) logLine(line);
    });
    const logLevel = (options.logLevel ?? process.env.POWERTOOLS_LOG_LEVEL ?? 'ERROR').toUpperCase();
    let reported = false;
    const observer = combineObservers(
      {
        onOutcome: (record: OutcomeRecord) => {
          if (!reported) {
            outcomes.push(record);
            outcomesObservedAtMs.push(Date.now());
          } else options.onOutcomeAfterReport?.(record);
        },
      },
      recorder,
    );
    const target = await makeTarget({ say, stops, observer, capture, logLevel });
    const { settings, admin, resources, endpoints } = target;

    let relay: LocalRunRelay | undefined;
    let outboxQueueUrl: string | undefined;
    if (options.relay !== false) {
      const started = await target.startRelay();
      if (started !== undefined) {
        relay = started.relay;
        outboxQueueUrl = started.outboxQueueUrl;
        stops.unshift(() => relay?.stop());
      }
    }

    const keyOf = target.orderingKeyOf;
    const ordered =
      (settings.queue.fifo || source !== 'sqs') && options.eventTime !== undefined
        ? inProducerOrder(options.input, keyOf, options.eventTime)
        : [...options.input];

    if (target.capturesProcessOutput && target.concurrencyPerEnvironment > 1 && process.env.AWS_LAMBDA_MAX_CONCURRENCY === undefined) {
      // Lambda Managed Instances set it; Powertools then keeps its per-invocation state in
      // Lambda's per-invocation store, which the local pollers keep (invokeWithinTimeout.ts).
      process.env.AWS_LAMBDA_MAX_CONCURRENCY = String(target.concurrencyPerEnvironment);
      stops.unshift(() => {
        delete process.env.AWS_LAMBDA_MAX_CONCURRENCY;
      });
    }
    if (target.capturesProcessOutput) {
      capture.start();
      stops.unshift(() => capture.stop());
    }
    let invocations = 0;
    const progressOf = (phase: Progress['phase'], totals: MetricTotals = capture.totals()): Progress => ({
      phase,
      step: phase === 'running' ? 'consuming' : 'checking',
      sent: options.input.length,
      applied: totals.applied,
      duplicates: totals.duplicates,
      retried: totals.retried,
      deadLettered: totals.deadLettered,
      invocations,
      elapsedMs: performance.now() - since,
    });
    const progressTimer = setInterval(() => options.onProgress?.(progressOf('running')), 1000);
    stops.unshift(() => clearInterval(progressTimer));

    let sent: SentMessage[];
    let remaining: () => Promise<number>;
    let onFailureRecords: (KafkaOnFailureRecord | StreamOnFailureRecord)[] = [];
    let keepConsuming: (signal: AbortSignal) => Promise<void>;
    let lambda: RunningLocalRuntime['lambda'];
    // The run's time limit: past it, consuming stops and the report says so (the check fails).
    const limitMs = options.timeoutMs ?? 600_000;
    let timedOut: { limitMs: number; detail: string } | undefined;
    // Messages the mapping's filter criteria dropped: they end there, never invoked, as on AWS.
    const filteredOut = new Set<string>();
    say(`sending ${options.input.length} messages`, 'running');
    if (source === 'sqs') {
      sent = await sendInput(admin.sqs, resources.queueUrl, ordered, {
        fifo: settings.queue.fifo,
        messageGroupId: (message) => groupIdOf(keyOf(message)),
      });
      const newPoller = () =>
        new SqsEventSourcePoller({
          sqs: target.eventSourceSqs,
          queueUrl: resources.queueUrl,
          queueArn: resources.queueArn,
          ...target.sqsPollerOptions,
          concurrencyPerEnvironment: target.concurrencyPerEnvironment,
          createHandler: () => target.newEnvironment().sqs,
          guardedClients: target.guarded,
          onFilteredOut: (dropped) => {
            for (const id of dropped.messageIds) filteredOut.add(id);
          },
          onInvocation: () => {
            invocations += 1;
          },
        });
      const poller = newPoller();
      try {
        await poller.runUntilIdle({ idleMs: 1500, timeoutMs: limitMs });
      } catch (error) {
        if (!(error instanceof PollerIdleTimeoutError)) throw error;
        timedOut = { limitMs, detail: error.message };
      } finally {
        await poller.stop();
      }
      remaining = () => queueDepth(admin, resources.queueUrl);
      keepConsuming = (signal) => newPoller().run(signal);
    } else if (isStreamSource(source)) {
      ({ sent, remaining, keepConsuming, timedOut } = await consumeStream(source, target, ordered, options, {
        limitMs,
        onFilteredOut: (ids) => {
          for (const id of ids) filteredOut.add(id);
        },
        onFailure: (record) => onFailureRecords.push(record),
        onInvocation: () => {
          invocations += 1;
        },
      }));
    } else {
      const log = new PartitionedLog({ topic: settings.kafka.topic, partitions: options.partitions ?? 3 });
      sent = ordered.map((message) => {
        const { partition, offset } = log.append({ key: keyOf(message) ?? null, value: message.body });
        return {
          messageId: kafkaMessageId({ topic: log.topic, partition, offset }),
          line: message.line,
          body: message.body,
          sentAtMs: Date.now(),
        };
      });
      onFailureRecords = [];
      if (options.kafkaOnFailureBucket !== undefined && admin.s3 === undefined) {
        throw new Error('kafkaOnFailureBucket needs the local S3 server, and this run has no S3 endpoint');
      }
      const writeToBucket =
        options.kafkaOnFailureBucket === undefined || admin.s3 === undefined
          ? undefined
          : await createS3OnFailureDestination({ s3: admin.s3, bucket: options.kafkaOnFailureBucket });
      const poller = new KafkaEventSourcePoller({
        log,
        ...target.kafkaPollerOptions,
        createHandler: () => target.newEnvironment().kafka,
        guardedClients: target.guarded,
        ...(options.kafkaRetryReading ? { retryReading: options.kafkaRetryReading } : {}),
        onFailure: async (record, event) => {
          onFailureRecords.push(record);
          await writeToBucket?.(record, event);
        },
        onFilteredOut: (ids) => {
          for (const id of ids) filteredOut.add(id);
        },
        onInvocation: () => {
          invocations += 1;
        },
      });
      try {
        await poller.runUntilIdle({ timeoutMs: limitMs });
      } catch (error) {
        if (!(error instanceof PollerIdleTimeoutError)) throw error;
        timedOut = { limitMs, detail: error.message };
      }
      remaining = async () => poller.lag();
      if (options.keepRunning !== undefined) {
        // The consumer's function, invocable as on AWS: how a Kafka dead letter is redriven.
        const endpoint = await startLocalKafkaFunction({
          createHandler: () => target.newEnvironment().kafka,
          ...target.kafkaPollerOptions,
          onInvocation: () => {
            invocations += 1;
          },
        });
        stops.unshift(() => endpoint.stop());
        lambda = { endpoint: endpoint.url, functionName: target.kafkaPollerOptions.functionName };
      }
      keepConsuming = async (signal) => {
        while (!signal.aborted) {
          await poller.runUntilIdle({ timeoutMs: 24 * 3600_000 }).catch(() => undefined);
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
      };
    }
    clearInterval(progressTimer);
    options.onProgress?.(progressOf('checking'));

    let relayProblem: string | undefined;
    try {
      await relay?.drain({ timeoutMs: 60_000 });
    } catch (error) {
      if (!(error instanceof PollerIdleTimeoutError)) throw error;
      relayProblem = `the outbox relay did not drain within 60 s: ${error.message}`;
    }
    const documentClient = DynamoDBDocumentClient.from(admin.dynamoDb);
    const [deadLetters, left, outbox, domainProblems] = await Promise.all([
      readDeadLetterQueue(admin, endpoints.sqs, resources.deadLetterQueueUrl, startedAt),
      remaining(),
      relay === undefined ? Promise.resolve(undefined) : countOutboxItems(admin.dynamoDb, resources.inboxTable, settings.consumerName),
      options.check === undefined
        ? Promise.resolve([])
        : options.check({ documentClient, tables: resources.tables, inboxTable: resources.inboxTable, outcomes }),
    ]);
    const report = buildReport({
      source,
      fifo: settings.queue.fifo,
      sent,
      outcomes,
      outcomesObservedAtMs,
      deadLetters,
      filteredOut,
      domainProblems: [
        ...domainProblems,
        ...(onFailureRecords.length === 0
          ? []
          : [
              `${onFailureRecords.length} ${source === 'kafka' ? 'Kafka' : source} batch(es) went to the on-failure destination (metadata only, records not processed)`,
            ]),
        ...(relay !== undefined && relay.gaveUp().length > 0 ? [`the outbox relay gave up on ${relay.gaveUp().length} batch(es)`] : []),
        ...(relayProblem === undefined ? [] : [relayProblem]),
      ],
      ...(outbox === undefined ? {} : { outbox: { written: outbox.written, published: outbox.published } }),
      metrics: capture.totals(),
      remainingInSource: left,
      injected: { faults: options.faults?.rates ?? {}, transientFailureRate: options.transientFailureRate ?? 0 },
      ...(timedOut === undefined ? {} : { timedOut }),
      durationMs: performance.now() - started,
    });
    const result: LocalRunResult = {
      report,
      deliveries: recorder.deliveries(),
      startedAt,
      source: source !== 'sqs' ? source : settings.queue.fifo ? 'sqs-fifo' : 'sqs',
    };
    await options.onReport?.(result, {
      dynamoDbEndpoint: endpoints.dynamoDb,
      sqsEndpoint: endpoints.sqs,
      resources,
      outboxQueueUrl,
      ...(lambda === undefined ? {} : { lambda }),
    });
    reported = true;
    if (options.keepRunning !== undefined && !options.keepRunning.aborted) await keepConsuming(options.keepRunning);
    return result;
  } finally {
    for (const stop of stops) {
      try {
        await stop();
      } catch {
        // stopping what is left goes on
      }
    }
  }
}

/**
 * Writes the input to an in-process shard log (`streams/ShardLog.ts`) and runs the local stream
 * mapping (`streams/StreamEventSourcePoller.ts`) on it until it drains or the time limit.
 *
 * @throws Error when the target runs its consumer in another process (a template's bundle): the
 *   stream sources run from a handler and a settings module only
 */
async function consumeStream(
  source: StreamSource,
  target: LocalRunTarget,
  ordered: readonly InputMessage[],
  options: LocalRunCommonOptions,
  hooks: {
    readonly limitMs: number;
    readonly onFailure: (record: StreamOnFailureRecord) => void;
    readonly onFilteredOut: (eventIds: readonly string[]) => void;
    readonly onInvocation: () => void;
  },
): Promise<{
  sent: SentMessage[];
  remaining: () => Promise<number>;
  keepConsuming: (signal: AbortSignal) => Promise<void>;
  timedOut: { limitMs: number; detail: string } | undefined;
}> {
  const handlerOf = () => {
    const environment = target.newEnvironment();
    const handler = source === 'kinesis' ? environment.kinesis : environment.dynamodbStreams;
    if (handler === undefined) throw new Error(`--source ${source} runs a handler module (--handler), not a template's bundle`);
    return handler;
  };
  handlerOf(); // fails now, before anything is sent, when the target has no stream handler
  // The settings may hold either stream source's filter keys; this run's source is known now.
  const filterProblems = filterCriteriaProblems(streamSettingsOf(target.settings).filters, source, 'stream.filters');
  if (filterProblems.length > 0) throw new InvalidSettingsError(filterProblems);
  const log = new ShardLog({ kind: source, name: target.settings.consumerName, shards: options.shards ?? 2 });
  const appendedAtMs = Date.now();
  const sent = appendInput(log, ordered, { orderingKeyOf: target.orderingKeyOf, idempotencyKeyField: target.idempotencyKeyField }).map(
    (message) => ({ ...message, sentAtMs: appendedAtMs }),
  );
  const poller = new StreamEventSourcePoller({
    log,
    ...streamPollerOptionsFromSettings(target.settings),
    createHandler: handlerOf,
    guardedClients: target.guarded,
    onFailure: hooks.onFailure,
    onFilteredOut: hooks.onFilteredOut,
    onInvocation: hooks.onInvocation,
  });
  let timedOut: { limitMs: number; detail: string } | undefined;
  try {
    await poller.runUntilIdle({ timeoutMs: hooks.limitMs });
  } catch (error) {
    if (!(error instanceof PollerIdleTimeoutError)) throw error;
    timedOut = { limitMs: hooks.limitMs, detail: error.message };
  }
  return {
    sent,
    remaining: async () => poller.lag(),
    timedOut,
    keepConsuming: async (signal) => {
      while (!signal.aborted) {
        await poller.runUntilIdle({ timeoutMs: 24 * 3600_000 }).catch(() => undefined);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    },
  };
}

/**
 * The error a local run's `transientFailureRate` throws from `decide` on the first decision of a
 * chosen idempotency key: retryable, so the message is retried and then applied once.
 */
export class InjectedTransientFailure extends RetryableError {
  constructor(idempotencyKey: string) {
    super(`injected transient failure (first decision of ${idempotencyKey}); the retry applies it`);
    this.name = INJECTED_TRANSIENT_FAILURE;
  }
}

/**
 * The handler with its `decide` failing once, retryably, for a `rate` share of idempotency keys
 * (chosen by a hash of the key and the seed, so a run repeats). The same handler when `rate` is 0.
 *
 * @throws RangeError when `rate` is not a number from 0 to 1
 */
function withTransientFailures(handler: IdempotentConsumerHandler, rate: number, seed: number): IdempotentConsumerHandler {
  if (!(rate >= 0 && rate <= 1)) throw new RangeError(`transientFailureRate must be a number from 0 to 1, got ${rate}`);
  if (rate === 0) return handler;
  const options = handler.options;
  const definition = defineConsumer(options);
  const failed = new Set<string>();
  const chosen = (key: string): boolean => {
    let hash = 2166136261 ^ seed;
    for (const char of key) hash = Math.imul(hash ^ (char.codePointAt(0) ?? 0), 16777619);
    return (hash >>> 0) / 2 ** 32 < rate;
  };
  return createIdempotentConsumer({
    ...options,
    decide: (event, state) => {
      const key = definition.idempotencyKeyOf(event);
      if (!failed.has(key) && chosen(key)) {
        failed.add(key);
        throw new InjectedTransientFailure(key);
      }
      return options.decide(event, state);
    },
  });
}

/** An SQS message group id from an ordering key: itself when SQS accepts it, else a hash of it. */
function groupIdOf(key: string | undefined): string {
  if (key === undefined) return 'no-ordering-key';
  if (/^[\x21-\x7e]{1,128}$/.test(key)) return key;
  let hash = 0;
  for (const char of key) hash = (Math.imul(hash, 31) + (char.codePointAt(0) ?? 0)) | 0;
  return `key-${(hash >>> 0).toString(16)}`;
}

async function queueDepth(clients: LocalClients, queueUrl: string): Promise<number> {
  const output = await clients.sqs.send(
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

interface InspectedMessage {
  readonly messageId: string;
  readonly body: string;
  readonly sentTimestamp?: number;
  readonly messageAttributes?: Readonly<Record<string, { readonly StringValue?: string }>>;
}

/**
 * The dead-letter messages of this run, without consuming them. SQS shows a FIFO queue's messages
 * only one group head at a time, so the run asks the embedded server's inspection endpoint
 * (fauxqs: `GET /_fauxqs/queues/<name>`, read-only), which lists every message; on another server
 * it receives them and makes them visible again (the DLQ tool's `MessageHold`).
 */
export async function readDeadLetterQueue(
  clients: LocalClients,
  sqsEndpoint: string,
  queueUrl: string,
  since: Date,
): Promise<DeadLetterSnapshot[]> {
  const toSnapshot = (
    messageId: string,
    body: string,
    attributes: Readonly<Record<string, { readonly StringValue?: string }>>,
    sentAt: number | undefined,
  ): DeadLetterSnapshot | undefined => {
    const dead = readDeadLetterAttributes(attributes);
    if ((dead?.failedAt?.getTime() ?? sentAt ?? 0) < since.getTime()) return undefined;
    const empty = dead?.context.bodyEncoding === 'empty' && body === EMPTY_BODY_PLACEHOLDER;
    return {
      messageId,
      body: empty ? '' : body,
      failureReason: dead?.failureReason,
      errorType: dead?.errorType,
      errorMessage: dead?.errorMessage,
      originalMessageId: dead?.context.originalMessageId ?? messageId,
    };
  };
  const name = queueUrl.slice(queueUrl.lastIndexOf('/') + 1);
  try {
    const response = await fetch(`${sqsEndpoint}/_fauxqs/queues/${encodeURIComponent(name)}`);
    if (response.ok) {
      const state = (await response.json()) as { messages: Record<'ready' | 'delayed' | 'inflight', unknown[]> };
      const { ready, delayed, inflight } = state.messages;
      const messages = [...ready, ...delayed, ...inflight.map((entry) => (entry as { message: unknown }).message)] as InspectedMessage[];
      return messages.flatMap((m) => toSnapshot(m.messageId, m.body, m.messageAttributes ?? {}, m.sentTimestamp) ?? []);
    }
  } catch {
    // not the embedded server: read it through the SQS API
  }
  const hold = new MessageHold(clients.sqs, queueUrl);
  try {
    const records = await hold.scan({ visibilityTimeoutSeconds: 30, waitTimeSeconds: 0 });
    return records.flatMap(
      (record) => toSnapshot(record.messageId, record.body, record.messageAttributes ?? {}, record.sentAt?.getTime()) ?? [],
    );
  } finally {
    await hold.release();
  }
}
