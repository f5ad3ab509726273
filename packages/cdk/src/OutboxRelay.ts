import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Duration, RemovalPolicy, Token, Validations } from 'aws-cdk-lib';
import {
  Alarm,
  AlarmStatusWidget,
  ComparisonOperator,
  type Dashboard,
  GraphWidget,
  type IAlarmAction,
  type IMetric,
  Metric,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { EventBus, type IEventBus } from 'aws-cdk-lib/aws-events';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { grantTableKey } from './tableKey.js';
import { Alias } from 'aws-cdk-lib/aws-kms';
import { Architecture, FilterCriteria, StartingPosition, type Tracing } from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { defaultBundling, esbuildTarget, lambdaRuntime, runtimeAcknowledgement } from './bundling.js';
import { configureTracing } from './tracing.js';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { type ITopic, Topic } from 'aws-cdk-lib/aws-sns';
import { type IQueue, Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { defaultSettings, type LambdaNodeRuntime, METRICS_NAMESPACE } from 'idempotent-consumer/settings';
import { OutboxMetricName } from 'idempotent-consumer/outbox';
import {
  DEFAULT_DESTINATION,
  defaultOutboxRelaySettings,
  destinationEnvironmentVariable,
  InvalidOutboxRelaySettingsError,
  outboxRelayEnvironment,
  outboxRelaySettingsProblems,
  type OutboxRelaySettings,
} from 'idempotent-consumer/outbox';
import { outboxFilterPattern } from 'idempotent-consumer/outbox';

/**
 * The relay's default entry: the built-in SNS, SQS and EventBridge destinations, configured from the
 * environment: `outbox/relayHandler` of the `idempotent-consumer` package the app resolves (a peer
 * of this one), its TypeScript source when the package is this repository's workspace (it has
 * `src/`), its compiled `dist/outbox/relayHandler.js` when it is installed.
 */
function defaultEntry(): string {
  const packageDirectory = dirname(createRequire(import.meta.url).resolve('idempotent-consumer/package.json'));
  const source = join(packageDirectory, 'src', 'outbox', 'relayHandler.ts');
  return existsSync(source) ? source : join(packageDirectory, 'dist', 'outbox', 'relayHandler.js');
}

/**
 * Where the relay publishes the messages of one logical destination name:
 * - `{ topic }` / `{ queue }`: an existing SNS topic or SQS queue (FIFO when its name ends in
 *   `.fifo`; an imported one needs its real name in its ARN or URL);
 * - `{ eventBus }`: an existing EventBridge event bus (e.g. `EventBus.fromEventBusArn(...)`, also of
 *   another account whose bus policy lets this one put events); the relay gets its ARN;
 * - `{ create: 'topic' | 'queue', fifo? }`: a new one, created by the construct (FIFO by
 *   default: deduplication by message id needs a FIFO destination);
 * - `{ create: 'eventBus' }`: a new custom event bus (EventBridge has no FIFO and no deduplication:
 *   receivers deduplicate on the event's `detail.outboxMessageId`; see `eventBridgeDestination`).
 */
export type OutboxRelayDestination =
  | { readonly topic: ITopic }
  | { readonly queue: IQueue }
  | { readonly eventBus: IEventBus }
  | {
      /** What to create: an SNS topic, an SQS queue or an EventBridge event bus. */
      readonly create: 'topic' | 'queue' | 'eventBus';
      /** A FIFO topic or queue (deduplicated by the outbox message id); not for an event bus. @default true for a topic or queue */
      readonly fifo?: boolean;
    };

/** What a destination of the relay is once resolved: a topic, a queue or an event bus. */
export type OutboxRelayTarget = ITopic | IQueue | IEventBus;

/** Properties of an {@link OutboxRelay}. */
export interface OutboxRelayProps {
  /** The consumer's name (`settings.consumerName`): the relay publishes its outbox items only. */
  readonly consumerName: string;
  /**
   * The consumer's inbox table (it holds the outbox items). It must have a stream with new images:
   * create it with `stream: StreamViewType.NEW_IMAGE` (or `NEW_AND_OLD_IMAGES`).
   */
  readonly inboxTable: ITable;
  /** The Powertools idempotency table (partition key `id`, TTL attribute `expiration`), e.g. the consumer's. */
  readonly idempotencyTable: ITable;
  /** The destination of messages that name none (`'default'`). */
  readonly destination: OutboxRelayDestination;
  /**
   * More destinations, by the logical name an outgoing message gives in `destination` (letters,
   * digits, `_`).
   * @default {}
   */
  readonly destinations?: Readonly<Record<string, OutboxRelayDestination>>;
  /**
   * The relay's settings: TTLs, batch size and window, retries, bisect, record age,
   * parallelization, timeout and memory. Checked before anything is built.
   * @default defaultOutboxRelaySettings
   */
  readonly settings?: OutboxRelaySettings;
  /**
   * The relay function's Lambda runtime, `nodejs22.x` or `nodejs24.x`; the relay is bundled for
   * its Node.js (esbuild target `node22`, `node24`).
   * @default defaultSettings.function.runtime ('nodejs24.x'); in an `IdempotentConsumer`, the consumer's `settings.function.runtime`
   */
  readonly runtime?: LambdaNodeRuntime;
  /**
   * The relay's handler file, for destinations of your own (`createOutboxRelay({ destinations })`);
   * grant its function what they need (`relay.function`).
   * @default the library's relay handler (the built-in SNS, SQS and EventBridge destinations): `src/outbox/relayHandler.ts` of `idempotent-consumer`
   *   in the repository, `dist/outbox/relayHandler.js` in the installed package
   */
  readonly entry?: string;
  /**
   * The directory esbuild bundles from. It must contain the entry: the library's default entry is
   * inside your project's `node_modules`.
   * @default - the directory of `depsLockFilePath`
   */
  readonly projectRoot?: string;
  /**
   * Your project's lock file.
   * @default - the nearest `package-lock.json`, `yarn.lock`, `pnpm-lock.yaml`, `bun.lock` or
   * `bun.lockb` above the current directory (where `cdk` runs)
   */
  readonly depsLockFilePath?: string;
  /** How long the relay's log group keeps log events. @default RetentionDays.ONE_MONTH */
  readonly logRetention?: RetentionDays;
  /**
   * X-Ray tracing of the relay (see `IdempotentConsumerProps.tracing`): `Tracing.ACTIVE` records a
   * trace of each sampled invocation; X-Ray bills the traces beyond its free tier.
   * @default Tracing.ACTIVE (within an `IdempotentConsumer`: the consumer's `tracing`)
   */
  readonly tracing?: Tracing;
  /**
   * Age, in **seconds**, above which an unpublished outbox item counts as stuck: the threshold of
   * the `IteratorAge` and `OutboxPublishDelay` alarms (both in milliseconds in CloudWatch).
   * @default 300 (5 minutes)
   */
  readonly oldestUnpublishedAgeThresholdSeconds?: number;
}

/** The relay's alarms, by what they watch. None has an action: add one with {@link OutboxRelay.addAlarmAction}. */
export interface OutboxRelayAlarms {
  /** The relay function failed (`Errors` > 0 over 5 minutes): a crash or a timeout; its batch is retried. */
  readonly functionErrors: Alarm;
  /** Outbox records failed to publish (`OutboxPublishFailures` > 0 over 5 minutes): they are retried. */
  readonly publishFailures: Alarm;
  /** The relay is behind: the age of the last stream record it read (`IteratorAge`, maximum) is above the threshold for 3 minutes. */
  readonly iteratorAge: Alarm;
  /** Items waited longer than the threshold between commit and publish (`OutboxPublishDelay`, maximum over 1 minute). */
  readonly publishDelay: Alarm;
  /** Batches were given up after their retries: their metadata is in the on-failure queue (> 0 messages). */
  readonly onFailureQueueNotEmpty: Alarm;
}

/**
 * The outbox relay: a Lambda function on the inbox table's DynamoDB Stream that publishes the
 * consumer's outbox items (written in the same transaction as its state change) to SNS topics,
 * SQS queues or EventBridge event buses, each at least once, with its stable message id as the
 * FIFO deduplication id and as the `outboxMessageId` attribute (on an event bus: the event's
 * `detail.outboxMessageId`) (`createOutboxRelay` in the runtime).
 *
 * What it builds:
 * - **The function**: the library's relay entry (or `entry`), bundled locally with esbuild as the
 *   consumer is (ES module, AWS SDK bundled, source maps; Docker never needed; the SNS or
 *   EventBridge client, optional peers, left to the Lambda runtime's SDK when the project has not
 *   installed it), on the runtime
 *   of `runtime` (Node.js 24 by default, or 22), arm64, its own role and log group, and the environment of `outboxRelayEnvironment()`.
 * - **The event source mapping** on the table's stream: starting at `TRIM_HORIZON` (nothing
 *   committed is skipped), **filter criteria** that let only the `INSERT`s of this consumer's
 *   outbox items through (`outboxFilterPattern`: the relay's own marks, TTL deletions and inbox
 *   rows never invoke it), `ReportBatchItemFailures`, `bisectBatchOnError`, finite
 *   `retryAttempts`, batch size and window from the settings, and an **SQS on-failure
 *   destination** (a standard queue, as Lambda requires for streams) that receives the metadata
 *   of a batch given up.
 * - **The destinations**: created (FIFO by default; topics encrypted with the AWS managed SNS
 *   key, queues with SSE-SQS, both TLS only; event buses encrypted with an AWS owned key, as
 *   EventBridge does by default) or the ones passed in.
 * - **Least privilege**: read the table's stream (with `dynamodb:ListStreams` on `*`, which Lambda
 *   needs and which has no resource-level permission); `UpdateItem` on the inbox table only for
 *   keys `<consumer>#outbox#…` (the mark); get, put, update and delete on the idempotency table
 *   only for keys `<consumer>#…`; publish, send or put events to its destinations (`events:PutEvents`
 *   on each bus); send to the on-failure
 *   queue; write its log group. No managed policy.
 * - **Alarms** ({@link OutboxRelayAlarms}, without actions) and **dashboard widgets**
 *   (`addToDashboard`).
 *
 * Wiring it to a consumer: the inbox table needs `stream: StreamViewType.NEW_IMAGE`; pass the
 * consumer's name, inbox and idempotency tables.
 *
 * @throws InvalidOutboxRelaySettingsError when the settings break a rule (nothing is created)
 * @throws Error when the runtime is not `nodejs22.x` or `nodejs24.x`, the inbox table has no
 *   stream, the consumer name or a destination name is malformed, or the alarm threshold is not
 *   a positive whole number of seconds
 * @example
 * const relay = new OutboxRelay(this, 'OutboxRelay', {
 *   consumerName: consumer.settings.consumerName,
 *   inboxTable: consumer.inboxTable,
 *   idempotencyTable: consumer.idempotencyTable,
 *   destination: { create: 'topic' },
 * });
 * relay.addAlarmAction(new SnsAction(monitoring.topic));
 * relay.addToDashboard(monitoring.dashboard);
 */
export class OutboxRelay extends Construct {
  /** The settings the relay was built with (checked). */
  public readonly settings: OutboxRelaySettings;
  /** The relay function. */
  public readonly function: NodejsFunction;
  /** The relay's log group. */
  public readonly logGroup: LogGroup;
  /** The stream event source; its `eventSourceMappingId` names the mapping. */
  public readonly eventSource: DynamoEventSource;
  /** The on-failure destination of the mapping: metadata of the batches given up (standard queue, 14 days). */
  public readonly onFailureQueue: Queue;
  /** The destinations, by logical name (`'default'` for `destination`). */
  public readonly destinations: Readonly<Record<string, OutboxRelayTarget>>;
  /** The alarms. */
  public readonly alarms: OutboxRelayAlarms;
  readonly #consumerName: string;
  /** The names of the destinations whose topic this construct created (encrypted with `alias/aws/sns`). */
  readonly #createdTopics = new Set<string>();
  readonly #thresholdSeconds: number;

  constructor(scope: Construct, id: string, props: OutboxRelayProps) {
    super(scope, id);
    const settings = props.settings ?? defaultOutboxRelaySettings;
    const problems = outboxRelaySettingsProblems(settings);
    if (problems.length > 0) throw new InvalidOutboxRelaySettingsError(problems);
    const { consumerName, inboxTable, idempotencyTable } = props;
    if (!Token.isUnresolved(consumerName) && !/^[A-Za-z0-9_-]{1,64}$/.test(consumerName)) {
      throw new Error(`OutboxRelay: consumer name ${JSON.stringify(consumerName)} must be 1 to 64 letters, digits, '-' or '_'`);
    }
    if (inboxTable.tableStreamArn === undefined) {
      throw new Error(
        'OutboxRelay: the inbox table has no stream; create it with `stream: StreamViewType.NEW_IMAGE` (or import it with its tableStreamArn)',
      );
    }
    const threshold = props.oldestUnpublishedAgeThresholdSeconds ?? 300;
    if (!Number.isInteger(threshold) || threshold <= 0) {
      throw new Error(`OutboxRelay: oldest unpublished age threshold ${threshold} s must be a positive whole number of seconds`);
    }
    const runtime = props.runtime ?? defaultSettings.function.runtime;
    const functionRuntime = lambdaRuntime(runtime); // throws for a runtime that is not one of lambdaNodeRuntimes
    const named = { [DEFAULT_DESTINATION]: props.destination, ...props.destinations };
    for (const [name, destination] of Object.entries(named)) {
      destinationEnvironmentVariable(name); // throws for a malformed name
      if ('create' in destination && destination.create === 'eventBus' && destination.fifo === true) {
        throw new Error(`OutboxRelay: destination ${name}: an EventBridge event bus is never FIFO; leave out fifo`);
      }
    }
    this.settings = settings;
    this.#consumerName = consumerName;
    this.#thresholdSeconds = threshold;

    this.destinations = Object.fromEntries(
      Object.entries(named).map(([name, destination]) => [name, this.resolveDestination(name, destination)]),
    );

    this.onFailureQueue = new Queue(this, 'OnFailureQueue', {
      retentionPeriod: Duration.days(14),
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      // Stateful: it names the stream records that were given up. Deleting the stack keeps it.
      removalPolicy: RemovalPolicy.RETAIN,
    });
    Validations.of(this.onFailureQueue).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        "This queue is itself the dead-letter (on-failure) destination of the relay's event source mapping; its messages are read by an operator, never by a consumer that could fail.",
    });

    this.logGroup = new LogGroup(this, 'LogGroup', { retention: props.logRetention ?? RetentionDays.ONE_MONTH });
    const role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `Runs the outbox relay of the ${consumerName} consumer`,
    });
    this.logGroup.grantWrite(role);

    const destinationTargets = Object.fromEntries(
      Object.entries(this.destinations).map(([name, destination]) => [
        name,
        isTopic(destination) ? destination.topicArn : isEventBus(destination) ? destination.eventBusArn : destination.queueUrl,
      ]),
    );
    const entry = props.entry ?? defaultEntry();
    this.function = new NodejsFunction(this, 'Function', {
      entry,
      handler: 'handler',
      projectRoot: props.projectRoot,
      depsLockFilePath: props.depsLockFilePath,
      runtime: functionRuntime,
      architecture: Architecture.ARM_64,
      timeout: Duration.seconds(settings.timeoutSeconds),
      memorySize: settings.memorySizeMb,
      role,
      logGroup: this.logGroup,
      description: `Outbox relay of the ${consumerName} consumer: inbox table stream → ${Object.keys(named).join(', ')}`,
      environment: {
        ...outboxRelayEnvironment(settings, {
          consumerName,
          inboxTable: inboxTable.tableName,
          idempotencyTable: idempotencyTable.tableName,
          destinations: destinationTargets,
        }),
        POWERTOOLS_SERVICE_NAME: consumerName,
        POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
        POWERTOOLS_LOG_LEVEL: 'INFO',
        NODE_OPTIONS: '--enable-source-maps',
      },
      // The consumer's bundling, for the runtime's Node.js, names kept, nothing external but the
      // clients of optional destinations the project has not installed (see optionalDestinationClients).
      bundling: {
        ...defaultBundling,
        target: esbuildTarget(runtime),
        externalModules: optionalDestinationClients.filter((name) => !installedFrom(dirname(entry), name)),
        keepNames: true,
      },
    });
    Validations.of(this.function).acknowledge(runtimeAcknowledgement(runtime, 'The outbox relay function'));
    configureTracing(this, 'TracingPolicy', this.function, role, props.tracing);

    this.grant(role, inboxTable, idempotencyTable);

    this.eventSource = new DynamoEventSource(inboxTable, {
      startingPosition: StartingPosition.TRIM_HORIZON,
      batchSize: settings.batchSize,
      maxBatchingWindow: settings.maxBatchingWindowSeconds > 0 ? Duration.seconds(settings.maxBatchingWindowSeconds) : undefined,
      bisectBatchOnError: settings.bisectBatchOnError,
      retryAttempts: settings.retryAttempts,
      maxRecordAge: settings.maxRecordAgeSeconds === -1 ? undefined : Duration.seconds(settings.maxRecordAgeSeconds),
      parallelizationFactor: settings.parallelizationFactor,
      reportBatchItemFailures: true,
      onFailure: new SqsDlq(this.onFailureQueue),
      filters: [FilterCriteria.filter(outboxFilterPattern(consumerName) as unknown as Record<string, unknown>)],
    });
    this.function.addEventSource(this.eventSource);
    // DynamoEventSource grants dynamodb:ListStreams on '*'.
    Validations.of(role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'dynamodb:ListStreams (granted by the DynamoDB event source) has no resource-level permission; Lambda calls it to find the stream. ' +
        'Every other action of the relay is on its own table, stream, queues and topics.',
    });

    this.alarms = this.createAlarms();
  }

  /** Adds `actions` (e.g. `new SnsAction(monitoring.topic)`) to every alarm, on ALARM and on OK. */
  addAlarmAction(...actions: IAlarmAction[]): void {
    for (const alarm of Object.values(this.alarms) as Alarm[]) {
      alarm.addAlarmAction(...actions);
      alarm.addOkAction(...actions);
    }
  }

  /**
   * Adds the relay's row of widgets to `dashboard`: alarm status; messages published and failed
   * per minute; publish delay (p50, p99, maximum, in milliseconds) and iterator age (maximum, in
   * milliseconds) with the alarm threshold; function invocations, errors and throttles; the
   * on-failure queue's depth.
   */
  addToDashboard(dashboard: Dashboard): void {
    const minute = Duration.minutes(1);
    const graph = (title: string, left: IMetric[], extra: Partial<ConstructorParameters<typeof GraphWidget>[0]> = {}) =>
      new GraphWidget({ title, left, width: 6, height: 6, ...extra });
    const thresholdMs = this.#thresholdSeconds * 1000;
    dashboard.addWidgets(
      new AlarmStatusWidget({
        title: `${this.#consumerName}: outbox relay alarms`,
        alarms: Object.values(this.alarms) as Alarm[],
        width: 24,
        height: 2,
      }),
    );
    dashboard.addWidgets(
      graph('Outbox messages (per minute)', [
        this.metric(OutboxMetricName.OutboxMessagesPublished, 'Sum', minute, 'Published'),
        this.metric(OutboxMetricName.OutboxPublishFailures, 'Sum', minute, 'Failed (retried)'),
      ]),
      graph(
        'Outbox publish delay and iterator age (milliseconds)',
        [
          ...['p50', 'p99', 'Maximum'].map((statistic) =>
            this.metric(OutboxMetricName.OutboxPublishDelay, statistic, minute, `Publish delay ${statistic}`),
          ),
          this.function.metric('IteratorAge', { statistic: 'Maximum', period: minute, label: 'Iterator age (maximum)' }),
        ],
        { leftAnnotations: [{ value: thresholdMs, label: 'alarm threshold' }] },
      ),
      graph('Relay function', [
        this.function.metricInvocations({ period: minute, statistic: 'Sum', label: 'Invocations' }),
        this.function.metricErrors({ period: minute, statistic: 'Sum', label: 'Errors' }),
        this.function.metricThrottles({ period: minute, statistic: 'Sum', label: 'Throttles' }),
      ]),
      graph('On-failure queue (batches given up)', [
        this.onFailureQueue.metricApproximateNumberOfMessagesVisible({ period: minute, statistic: 'Maximum', label: 'Visible' }),
      ]),
    );
  }

  /** A metric the relay emits (namespace `IdempotentConsumer`, dimension `service` = consumer name). */
  metric(metricName: string, statistic: string, period = Duration.minutes(1), label?: string): Metric {
    return new Metric({
      namespace: METRICS_NAMESPACE,
      metricName,
      dimensionsMap: { service: this.#consumerName },
      statistic,
      period,
      label,
    });
  }

  private createAlarms(): OutboxRelayAlarms {
    const fiveMinutes = Duration.minutes(5);
    const minute = Duration.minutes(1);
    const thresholdMs = this.#thresholdSeconds * 1000;
    const alarm = (
      alarmId: string,
      metric: IMetric,
      threshold: number,
      description: string,
      options: { evaluationPeriods?: number; treatMissingData?: TreatMissingData } = {},
    ) =>
      new Alarm(this, alarmId, {
        metric,
        threshold,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: options.evaluationPeriods ?? 1,
        datapointsToAlarm: options.evaluationPeriods ?? 1,
        treatMissingData: options.treatMissingData ?? TreatMissingData.NOT_BREACHING,
        alarmDescription: `${this.#consumerName} outbox relay: ${description}`,
      });
    return {
      functionErrors: alarm(
        'FunctionErrorsAlarm',
        this.function.metricErrors({ period: fiveMinutes, statistic: 'Sum' }),
        0,
        'the relay function failed (a crash, out of memory or a timeout; failed records are reported, never thrown). Find the error in its log group; the batch is retried.',
      ),
      publishFailures: alarm(
        'PublishFailuresAlarm',
        this.metric(OutboxMetricName.OutboxPublishFailures, 'Sum', fiveMinutes),
        0,
        'outbox messages failed to publish and are being retried. The log line "outbox record failed" names the error: a destination that refuses (permissions, throttling, a deleted topic, queue or event bus; the EventBridge ErrorCode is in the log line) or a message it cannot take (unknown destination name, too many attributes, a body EventBridge cannot take).',
      ),
      iteratorAge: alarm(
        'IteratorAgeAlarm',
        this.function.metric('IteratorAge', { statistic: 'Maximum', period: minute }),
        thresholdMs,
        `the relay is more than ${this.#thresholdSeconds} s behind the inbox table's stream: a record keeps failing (see PublishFailures) or the relay is throttled. Records leave the stream after 24 hours.`,
        { evaluationPeriods: 3 },
      ),
      publishDelay: alarm(
        'PublishDelayAlarm',
        this.metric(OutboxMetricName.OutboxPublishDelay, 'Maximum', minute),
        thresholdMs,
        `an outbox message waited more than ${this.#thresholdSeconds} s between its commit and its publish.`,
      ),
      onFailureQueueNotEmpty: alarm(
        'OnFailureQueueNotEmptyAlarm',
        this.onFailureQueue.metricApproximateNumberOfMessagesVisible({ period: minute, statistic: 'Maximum' }),
        0,
        'the relay gave up stream records after its retries: their outbox items are still unpublished. Fix the cause, then republish the unpublished items (docs/outbox.md, "Redriving").',
        { treatMissingData: TreatMissingData.IGNORE },
      ),
    };
  }

  /** The topic, queue or event bus of one destination: created, or the one passed in. */
  private resolveDestination(name: string, destination: OutboxRelayDestination): OutboxRelayTarget {
    if ('topic' in destination) return destination.topic;
    if ('queue' in destination) return destination.queue;
    if ('eventBus' in destination) return destination.eventBus;
    const fifo = destination.fifo ?? true;
    const id = `Destination${name.charAt(0).toUpperCase()}${name.slice(1)}`;
    if (destination.create === 'eventBus') {
      return new EventBus(this, `${id}EventBus`, { description: `${this.#consumerName} outbox ${name}`.slice(0, 512) });
    }
    if (destination.create === 'topic') {
      this.#createdTopics.add(name);
      return new Topic(this, `${id}Topic`, {
        fifo,
        contentBasedDeduplication: false,
        enforceSSL: true,
        masterKey: Alias.fromAliasName(this, `${id}Key`, 'alias/aws/sns'),
        displayName: `${this.#consumerName} outbox ${name}`,
      });
    }
    const queue = new Queue(this, `${id}Queue`, {
      ...(fifo ? { fifo: true, contentBasedDeduplication: false } : {}),
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    Validations.of(queue).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason: 'An outbox destination: the consumer that reads it owns its redrive policy and dead-letter queue.',
    });
    return queue;
  }

  /** The relay's permissions beyond its log group and stream (see the class comment). */
  private grant(role: Role, inboxTable: ITable, idempotencyTable: ITable): void {
    const consumer = this.#consumerName;
    role.addToPrincipalPolicy(
      new PolicyStatement({
        sid: 'MarkOutboxItemsPublished',
        actions: ['dynamodb:UpdateItem'],
        resources: [inboxTable.tableArn],
        conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [`${consumer}#outbox#*`] } },
      }),
    );
    role.addToPrincipalPolicy(
      new PolicyStatement({
        sid: 'GuardPublishesWithPowertoolsIdempotency',
        actions: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
        resources: [idempotencyTable.tableArn],
        conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [`${consumer}#*`] } },
      }),
    );
    grantTableKey(role, inboxTable);
    if (idempotencyTable.encryptionKey !== inboxTable.encryptionKey) grantTableKey(role, idempotencyTable);
    for (const [name, destination] of Object.entries(this.destinations)) {
      if (isTopic(destination) && this.#createdTopics.has(name)) {
        // A topic created here is encrypted with the AWS managed key `alias/aws/sns`, whose key
        // policy already lets every principal of the account use it through SNS
        // (https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html): only the publish is
        // granted. (`grantPublish` would add kms:GenerateDataKey* and kms:Decrypt on `key/*`.)
        role.addToPrincipalPolicy(
          new PolicyStatement({
            sid: `PublishTo${name.charAt(0).toUpperCase()}${name.slice(1)}`.replace(/[^A-Za-z0-9]/g, ''),
            actions: ['sns:Publish'],
            resources: [destination.topicArn],
          }),
        );
      } else if (isTopic(destination)) destination.grantPublish(role);
      else if (isEventBus(destination))
        destination.grantPutEventsTo(role); // events:PutEvents on the bus ARN
      else destination.grantSendMessages(role);
    }
  }
}

/**
 * The AWS SDK clients of the built-in destinations that are optional peers of the runtime: the
 * relay loads each only when a destination of its kind publishes. One that is not installed for
 * the relay's entry is left external, so the bundle builds, and comes from the Lambda runtime's own
 * AWS SDK v3 if a destination of its kind is used.
 */
const optionalDestinationClients = ['@aws-sdk/client-sns', '@aws-sdk/client-eventbridge'];

/** Whether `name` is installed for code in `directory` (a `node_modules/<name>` on the way up, as Node and esbuild look). */
function installedFrom(directory: string, name: string): boolean {
  for (let dir = directory; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'node_modules', ...name.split('/'), 'package.json'))) return true;
    if (dirname(dir) === dir) return false;
  }
}

function isTopic(destination: OutboxRelayTarget): destination is ITopic {
  return 'topicArn' in destination;
}

function isEventBus(destination: OutboxRelayTarget): destination is IEventBus {
  return 'eventBusArn' in destination;
}
