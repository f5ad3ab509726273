import { Aws, Duration, RemovalPolicy, Token } from 'aws-cdk-lib';
import {
  Alarm,
  AlarmStatusWidget,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  type IMetric,
  MathExpression,
  Metric,
  TextWidget,
  TreatMissingData,
  type IWidget,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import { FAILURE_REASON_DIMENSION, MetricName } from 'idempotent-consumer/settings';
import { METRICS_NAMESPACE } from 'idempotent-consumer/settings';
import { InvalidSettingsError } from 'idempotent-consumer/settings';
import type { IdempotentConsumer } from './IdempotentConsumer.js';

/** What a stack may set on the consumer's monitoring; {@link ConsumerMonitoringProps} adds the consumer. */
export interface ConsumerMonitoringOptions {
  /**
   * An address that receives the alarm notifications by email. AWS sends a confirmation
   * message first; nothing is delivered until the recipient confirms.
   *
   * @default - no subscription (subscribe to the `AlarmTopicArn` output yourself)
   */
  readonly alarmEmail?: string;
  /**
   * Age of the oldest message in the source queue above which the consumer counts as falling
   * behind, in **seconds** (SQS `ApproximateAgeOfOldestMessage`, maximum over one minute).
   * A message that fails retryably stays in the queue across its retries (backoff, or the
   * visibility timeout after a crash), so keep it above the time your retries take.
   *
   * @default 300 (5 minutes)
   */
  readonly oldestMessageAgeThresholdSeconds?: number;
  /**
   * Kafka only: the offset lag above which the consumer counts as falling behind, in
   * **records** (Lambda's `OffsetLag`, maximum over 5 minutes, three periods in a row).
   *
   * @default 1000
   */
  readonly kafkaOffsetLagThreshold?: number;
  /**
   * Kinesis or DynamoDB Streams only: the age of the last record the function read above which the
   * consumer counts as falling behind, in **seconds** (Lambda's `IteratorAge`, which CloudWatch
   * holds in milliseconds; maximum over 5 minutes, three periods in a row). A record that keeps
   * failing holds its shard, so the age grows while its retries run.
   *
   * @default 300 (5 minutes)
   */
  readonly streamIteratorAgeThresholdSeconds?: number;
}

/** Properties of a {@link ConsumerMonitoring}. */
export interface ConsumerMonitoringProps extends ConsumerMonitoringOptions {
  /** The consumer to watch. */
  readonly consumer: IdempotentConsumer;
}

/** The consumer's alarms, by what they watch. */
export interface ConsumerAlarms {
  /** The dead-letter queue holds messages (`ApproximateNumberOfMessagesVisible` > 0). */
  readonly deadLetterQueueNotEmpty: Alarm;
  /** The source queue's oldest message is older than the threshold (`ApproximateAgeOfOldestMessage`). */
  readonly oldestMessageAge: Alarm;
  /** The function failed (`Errors` > 0): a crash or a timeout, never a record the handler reported. */
  readonly functionErrors: Alarm;
  /** The function was throttled (`Throttles` > 0). */
  readonly functionThrottles: Alarm;
  /** The consumer dead-lettered messages in the last 5 minutes (custom metric `DeadLettered` > 0). */
  readonly deadLettered: Alarm;
  /** Kafka only: the topic's offset lag stays above the threshold (`OffsetLag`). */
  readonly kafkaOffsetLag?: Alarm;
  /**
   * Kafka only: the mapping gave up on records (`DroppedEventCount` > 0: retries exhausted or records
   * older than the maximum record age), which went to its on-failure destination unprocessed.
   */
  readonly kafkaDroppedEvents?: Alarm;
  /** Kinesis or DynamoDB Streams only: the stream's iterator age stays above the threshold (`IteratorAge`). */
  readonly streamIteratorAge?: Alarm;
}

const EMAIL = /^[^@\s]+@[^@\s]+\.[^@\s]+$/;

/** What a `Throttles` alarm tells on Lambda (default). */
const throttlesOnLambda =
  'Lambda throttled the consumer function: the account or reserved concurrency is exhausted. Check ConcurrentExecutions ' +
  'against the limits and raise them, or lower the event source maximum concurrency (SQS) or maximum pollers (Kafka).';

/**
 * What a `Throttles` alarm tells on Lambda Managed Instances: capacity scales asynchronously, and
 * traffic that more than doubles within 5 minutes is throttled until it has
 * (https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-core-concepts.html).
 */
const throttlesOnManagedInstances =
  'Lambda throttled the consumer function on its capacity provider: its execution environments were saturated ' +
  '(traffic more than doubled within 5 minutes, or the capacity provider reached its vCPU maximum or the function its ' +
  "maxExecutionEnvironments). Throttled batches return to the queue and are retried. Check the capacity provider's " +
  'CPUUtilization and the execution environment concurrency; raise minExecutionEnvironments, maxExecutionEnvironments ' +
  "or the capacity provider's maxVCpuCount, or lower the event source maximum concurrency (SQS).";

/**
 * Alarms and a dashboard for an {@link IdempotentConsumer}. Every alarm notifies one SNS
 * topic (on ALARM and on OK); an email address subscribes to it when given.
 *
 * | alarm | metric | fires when |
 * |---|---|---|
 * | `deadLetterQueueNotEmpty` | `AWS/SQS` `ApproximateNumberOfMessagesVisible` of the DLQ, Maximum, 1 min | > 0 for 1 period |
 * | `oldestMessageAge` | `AWS/SQS` `ApproximateAgeOfOldestMessage` of the source queue, Maximum, 1 min | > threshold (300 s) for 1 period |
 * | `functionErrors` | `AWS/Lambda` `Errors` of the function, Sum, 5 min | > 0 for 1 period |
 * | `functionThrottles` | `AWS/Lambda` `Throttles` of the function, Sum, 5 min | > 0 for 1 period |
 * | `deadLettered` | `IdempotentConsumer` `DeadLettered` {service}, Sum, 5 min | > 0 for 1 period |
 * | `kafkaOffsetLag` (Kafka on) | `AWS/Lambda` `OffsetLag` of the function, Maximum, 5 min | > threshold (1000 records) for 3 periods |
 * | `kafkaDroppedEvents` (Kafka on) | `AWS/Lambda` `DroppedEventCount` of the Kafka mapping (`EventSourceMappingUUID`), Sum, 5 min | > 0 for 1 period |
 * | `streamIteratorAge` (Kinesis or DynamoDB Streams on) | `AWS/Lambda` `IteratorAge` of the function, Maximum, 5 min | > threshold (300 s, in ms) for 3 periods |
 *
 * Missing data: the dead-letter queue alarm keeps its state (`ignore`), because SQS stops
 * publishing metrics for a queue that has been inactive for six hours even while messages sit
 * in it; the other alarms treat missing data as not breaching (no invocation, no error).
 *
 * `OffsetLag` is the function-level metric Lambda publishes for Kafka event sources: the
 * difference between the last offset written to the topic and the last one the consumer group
 * committed, in records
 * (https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html).
 *
 * The topic is encrypted with a customer managed KMS key (with rotation) that CloudWatch may
 * use (an AWS managed `alias/aws/sns` key cannot be used by CloudWatch alarms) for this
 * account's alarms only: the key policy's statement for `cloudwatch.amazonaws.com` has the
 * conditions `aws:SourceAccount` = this account and `aws:SourceArn` like
 * `arn:<partition>:cloudwatch:<region>:<account>:alarm:*` (confused deputy protection,
 * https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html). The topic refuses
 * requests without TLS. The key is scheduled for deletion (7 days) with the stack: it protects
 * notifications in flight only.
 *
 * The dashboard shows throughput (applied, duplicates), failures (retryable, dead-lettered, and
 * dead-lettered by `failureReason` through a `SEARCH` expression, so new reasons appear on
 * their own), dead-letter queue depth, oldest message age, processing latency p50/p90/p99,
 * the function's invocations, errors, throttles, duration and concurrency, and the Kafka offset
 * lag when Kafka is on.
 *
 * **The event source mappings' own metrics** (`MetricsConfig` `EventCount`, in `AWS/Lambda` by
 * `EventSourceMappingUUID`,
 * https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html#event-source-mapping-metrics)
 * say what the function's metrics cannot: how many messages the mapping polled
 * (`PolledEventCount`), dropped by its filter criteria (`FilteredOutEventCount`), invoked the
 * function with (`InvokedEventCount`), failed to invoke with (`FailedInvokeEventCount`), deleted
 * from the queue (`DeletedEventCount`, SQS), gave up on (`DroppedEventCount`, Kafka) and sent to the
 * on-failure destination (`OnFailureDestinationDeliveredEventCount`, Kafka). The dashboard graphs
 * them for the SQS mapping (unless `settings.function.mappingMetrics` is false) and the Kafka
 * mapping; `kafkaDroppedEvents` alarms on the Kafka give-ups, which reach an S3 on-failure
 * destination without any message in the dead-letter queue.
 *
 * @throws InvalidSettingsError when `alarmEmail` is not an email address, or a threshold is not a
 * positive whole number (see {@link monitoringOptionsProblems}); nothing is created
 */
export class ConsumerMonitoring extends Construct {
  /** The SNS topic every alarm notifies. */
  public readonly topic: Topic;
  /** The alarms, by name. */
  public readonly alarms: ConsumerAlarms;
  /** The CloudWatch dashboard. */
  public readonly dashboard: Dashboard;

  /** @throws InvalidSettingsError when the options break a rule (see {@link monitoringOptionsProblems}) */
  constructor(scope: Construct, id: string, props: ConsumerMonitoringProps) {
    validateMonitoringOptions(props);
    super(scope, id);
    const { consumer } = props;
    const oldestAgeThreshold = props.oldestMessageAgeThresholdSeconds ?? 300;
    const offsetLagThreshold = props.kafkaOffsetLagThreshold ?? 1000;
    const iteratorAgeThreshold = props.streamIteratorAgeThresholdSeconds ?? 300;

    const serviceName = consumer.settings.consumerName;
    const oneMinute = Duration.minutes(1);
    const fiveMinutes = Duration.minutes(5);
    /** A metric of the consumer's own (Powertools, dimension `service`). */
    const consumerMetric = (metricName: string, statistic: string, label?: string, period = oneMinute) =>
      new Metric({ namespace: METRICS_NAMESPACE, metricName, dimensionsMap: { service: serviceName }, statistic, period, label });
    // Built from names, so that an imported queue or function (IQueue, IFunction) is watched too.
    const queueMetric = (queueName: string, metricName: string, label?: string) =>
      new Metric({
        namespace: 'AWS/SQS',
        metricName,
        dimensionsMap: { QueueName: queueName },
        statistic: 'Maximum',
        period: oneMinute,
        label,
      });
    const functionMetric = (metricName: string, statistic: string, period: Duration, label?: string) =>
      new Metric({
        namespace: 'AWS/Lambda',
        metricName,
        dimensionsMap: { FunctionName: consumer.function.functionName },
        statistic,
        period,
        label,
      });
    const offsetLag = (period: Duration, label?: string) => functionMetric('OffsetLag', 'Maximum', period, label);
    const visibleInDeadLetterQueue = (label?: string) =>
      queueMetric(consumer.deadLetterQueue.queueName, 'ApproximateNumberOfMessagesVisible', label);
    const oldestMessageAge = (label?: string) => queueMetric(consumer.queue.queueName, 'ApproximateAgeOfOldestMessage', label);

    this.topic = this.createTopic(serviceName, props.alarmEmail);
    const action = new SnsAction(this.topic);
    const alarm = (
      alarmId: string,
      alarmProps: {
        metric: IMetric;
        threshold: number;
        evaluationPeriods?: number;
        treatMissingData?: TreatMissingData;
        description: string;
      },
    ): Alarm => {
      const created = new Alarm(this, alarmId, {
        metric: alarmProps.metric,
        threshold: alarmProps.threshold,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: alarmProps.evaluationPeriods ?? 1,
        datapointsToAlarm: alarmProps.evaluationPeriods ?? 1,
        treatMissingData: alarmProps.treatMissingData ?? TreatMissingData.NOT_BREACHING,
        alarmDescription: `${serviceName}: ${alarmProps.description}`,
      });
      created.addAlarmAction(action);
      created.addOkAction(action);
      return created;
    };

    const kafkaOn = consumer.kafkaSource !== undefined;
    /** An event source mapping metric (`MetricsConfig` `EventCount`), by the mapping's UUID. */
    const mappingMetric = (uuid: string, metricName: string, period: Duration, label?: string) =>
      new Metric({ namespace: 'AWS/Lambda', metricName, dimensionsMap: { EventSourceMappingUUID: uuid }, statistic: 'Sum', period, label });
    const mappingEvents = (uuid: string, names: readonly string[]) =>
      names.map((name) => mappingMetric(uuid, name, oneMinute, name.replace(/EventCount$/, '')));
    const kafkaMappingId = consumer.kafkaSource?.mapping.eventSourceMappingId;
    const streamOn = consumer.kinesisSource !== undefined || consumer.dynamoDbStreamSource !== undefined;
    // IteratorAge: the age of the last record of a stream batch, in milliseconds (function-level metric).
    const iteratorAge = (period: Duration, label?: string) => functionMetric('IteratorAge', 'Maximum', period, label);
    this.alarms = {
      deadLetterQueueNotEmpty: alarm('DeadLetterQueueNotEmptyAlarm', {
        metric: visibleInDeadLetterQueue(),
        threshold: 0,
        treatMissingData: TreatMissingData.IGNORE,
        description:
          'messages are waiting in the dead-letter queue. List them by reason (npx idempotent-consumer dlq list), fix the ' +
          'producer or the consumer, then redrive or archive them (docs/dlq.md); messages without failureReason came from the ' +
          "queue's redrive policy (crashes, timeouts) or, for Kafka, Kinesis and DynamoDB Streams, are Lambda's on-failure " +
          'records (metadata only: replay the named offsets or sequence numbers from the topic or stream, do not redrive them).',
      }),
      oldestMessageAge: alarm('OldestMessageAgeAlarm', {
        metric: oldestMessageAge(),
        threshold: oldestAgeThreshold,
        description:
          `the oldest message in the source queue is older than ${oldestAgeThreshold} s: the consumer is falling behind or a ` +
          'message keeps failing. Check the function errors, throttles and RetryableFailures on the dashboard and the logs; ' +
          'raise the SQS maximum concurrency or fix the failing dependency.',
      }),
      functionErrors: alarm('FunctionErrorsAlarm', {
        metric: functionMetric('Errors', 'Sum', fiveMinutes),
        threshold: 0,
        description:
          'the consumer function failed (a crash, an out-of-memory error or a timeout; failed records are reported, never ' +
          'thrown). Find the error in the function log group, fix it or raise the timeout or memory; the whole batch is retried.',
      }),
      functionThrottles: alarm('FunctionThrottlesAlarm', {
        metric: functionMetric('Throttles', 'Sum', fiveMinutes),
        threshold: 0,
        description: consumer.managedInstances === undefined ? throttlesOnLambda : throttlesOnManagedInstances,
      }),
      deadLettered: alarm('DeadLetteredAlarm', {
        metric: consumerMetric(MetricName.DeadLettered, 'Sum', undefined, fiveMinutes),
        threshold: 0,
        description:
          'the consumer dead-lettered messages in the last 5 minutes. See which failureReason on the dashboard, then inspect ' +
          'them in the DLQ (npx idempotent-consumer dlq list --reason <reason>) and fix their cause before redriving them.',
      }),
      ...(kafkaOn
        ? {
            kafkaOffsetLag: alarm('KafkaOffsetLagAlarm', {
              metric: offsetLag(fiveMinutes),
              threshold: offsetLagThreshold,
              evaluationPeriods: 3,
              description:
                `the Kafka offset lag has stayed above ${offsetLagThreshold} records for 15 minutes: the consumer is not keeping ` +
                'up with the topic or a partition is stuck. Check function errors, RetryableFailures and duration; raise the ' +
                'maximum pollers (up to the partition count) or the batch size.',
            }),
            kafkaDroppedEvents: alarm('KafkaDroppedEventsAlarm', {
              metric: mappingMetric(kafkaMappingId!, 'DroppedEventCount', fiveMinutes),
              threshold: 0,
              description:
                'the Kafka event source mapping gave up on records in the last 5 minutes (DroppedEventCount: retries exhausted by ' +
                'function errors or timeouts, or records older than the maximum record age): they went to the on-failure ' +
                'destination unprocessed. List them (npx idempotent-consumer dlq list), find the cause in the function errors and ' +
                'logs, fix it, then replay the named offsets.',
            }),
          }
        : {}),
      ...(streamOn
        ? {
            streamIteratorAge: alarm('StreamIteratorAgeAlarm', {
              metric: iteratorAge(fiveMinutes),
              threshold: iteratorAgeThreshold * 1000,
              evaluationPeriods: 3,
              description:
                `the stream's iterator age has stayed above ${iteratorAgeThreshold} s for 15 minutes: the consumer is not keeping ` +
                'up with the stream or a shard is stuck behind a failing record. Check function errors, RetryableFailures and ' +
                'duration; raise the batch size or the parallelization factor (order then holds per partition key only). ' +
                'Records leave the stream at its retention (DynamoDB Streams: 24 hours).',
            }),
          }
        : {}),
    };

    this.dashboard = new Dashboard(this, 'Dashboard', { defaultInterval: Duration.hours(3) });
    const graph = (title: string, left: IMetric[], extra: Partial<ConstructorParameters<typeof GraphWidget>[0]> = {}) =>
      new GraphWidget({ title, left, width: 8, height: 6, ...extra });
    const deadLetteredByReason = new MathExpression({
      expression:
        `SEARCH('{${METRICS_NAMESPACE},${FAILURE_REASON_DIMENSION},service} ` +
        `MetricName="${MetricName.DeadLettered}" service="${serviceName}"', 'Sum', 60)`,
      usingMetrics: {},
      label: '',
      period: oneMinute,
    });
    const rows: IWidget[][] = [
      [
        new TextWidget({
          markdown:
            `# ${serviceName}: idempotent consumer\n` +
            'Counts are per minute. Alarm descriptions say what each alarm means and what to do.',
          width: 12,
          height: 2,
        }),
        new AlarmStatusWidget({ title: 'Alarms', alarms: Object.values(this.alarms) as Alarm[], width: 12, height: 2 }),
      ],
      [
        graph('Throughput (messages)', [
          consumerMetric(MetricName.MessagesApplied, 'Sum', 'Applied'),
          consumerMetric(MetricName.DuplicatesAcknowledged, 'Sum', 'Duplicates acknowledged'),
        ]),
        graph('Failures (messages)', [
          consumerMetric(MetricName.RetryableFailures, 'Sum', 'Retryable failures'),
          consumerMetric(MetricName.DeadLettered, 'Sum', 'Dead-lettered'),
          // Zero unless retry.parkOutOfOrder is on (docs/parking.md).
          consumerMetric(MetricName.MessagesParked, 'Sum', 'Parked (out of order)'),
          consumerMetric(MetricName.AppliedFromPark, 'Sum', 'Applied from the park'),
        ]),
        graph('Dead-lettered by failureReason (messages)', [deadLetteredByReason]),
      ],
      [
        graph('Dead-letter queue depth (messages)', [visibleInDeadLetterQueue('Visible')]),
        graph('Oldest message age in the source queue (seconds)', [oldestMessageAge('Oldest message age')], {
          leftAnnotations: [{ value: oldestAgeThreshold, label: 'alarm threshold' }],
        }),
        graph(
          'Processing latency per message (milliseconds)',
          ['p50', 'p90', 'p99'].map((statistic) => consumerMetric(MetricName.ProcessingLatency, statistic, statistic)),
        ),
      ],
      [
        graph('Function invocations, errors and throttles', [
          functionMetric('Invocations', 'Sum', oneMinute, 'Invocations'),
          functionMetric('Errors', 'Sum', oneMinute, 'Errors'),
          functionMetric('Throttles', 'Sum', oneMinute, 'Throttles'),
        ]),
        graph(
          'Function duration (milliseconds)',
          ['p50', 'p99', 'Maximum'].map((statistic) => functionMetric('Duration', statistic, oneMinute, statistic)),
          { leftAnnotations: [{ value: consumer.settings.function.timeoutSeconds * 1000, label: 'timeout' }] },
        ),
        graph('Function concurrency', [functionMetric('ConcurrentExecutions', 'Maximum', oneMinute, 'Concurrent executions')]),
      ],
      ...(consumer.settings.function.mappingMetrics === false
        ? []
        : [
            [
              graph(
                'SQS event source mapping (messages)',
                mappingEvents(consumer.eventSource.eventSourceMappingId, [
                  'PolledEventCount',
                  'FilteredOutEventCount',
                  'InvokedEventCount',
                  'FailedInvokeEventCount',
                  'DeletedEventCount',
                ]),
                { width: 24 },
              ),
            ],
          ]),
      ...(kafkaOn
        ? [
            [
              graph('Kafka offset lag (records)', [offsetLag(oneMinute, 'Offset lag')], {
                width: 12,
                leftAnnotations: [{ value: offsetLagThreshold, label: 'alarm threshold' }],
              }),
              graph(
                'Kafka event source mapping (records)',
                mappingEvents(kafkaMappingId!, [
                  'PolledEventCount',
                  'FilteredOutEventCount',
                  'InvokedEventCount',
                  'FailedInvokeEventCount',
                  'DroppedEventCount',
                  'OnFailureDestinationDeliveredEventCount',
                ]),
                { width: 12 },
              ),
            ],
          ]
        : []),
      ...(streamOn
        ? [
            [
              graph('Stream iterator age (milliseconds)', [iteratorAge(oneMinute, 'Iterator age')], {
                width: 24,
                leftAnnotations: [{ value: iteratorAgeThreshold * 1000, label: 'alarm threshold' }],
              }),
            ],
          ]
        : []),
    ];
    for (const row of rows) this.dashboard.addWidgets(...row);
    // The outbox relay's own alarms notify the same topic; its widgets join the dashboard.
    if (consumer.outboxRelay !== undefined) {
      consumer.outboxRelay.addAlarmAction(new SnsAction(this.topic));
      consumer.outboxRelay.addToDashboard(this.dashboard);
    }
  }

  /** The alarm topic: KMS-encrypted with a key CloudWatch may use, TLS only, an email subscription when given. */
  private createTopic(serviceName: string, alarmEmail: string | undefined): Topic {
    const key = new Key(this, 'AlarmTopicKey', {
      description: `Encrypts the alarm notifications of the ${serviceName} consumer`,
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.DESTROY,
      pendingWindow: Duration.days(7),
    });
    // CloudWatch publishes the alarm notifications to the encrypted topic, for this account's alarms
    // only (confused deputy protection: https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html).
    key.addToResourcePolicy(
      new PolicyStatement({
        sid: 'CloudWatchAlarmsOfThisAccount',
        principals: [new ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
        conditions: {
          StringEquals: { 'aws:SourceAccount': Aws.ACCOUNT_ID },
          ArnLike: { 'aws:SourceArn': `arn:${Aws.PARTITION}:cloudwatch:${Aws.REGION}:${Aws.ACCOUNT_ID}:alarm:*` },
        },
      }),
    );
    const topic = new Topic(this, 'AlarmTopic', {
      displayName: `${serviceName} consumer alarms`,
      masterKey: key,
      enforceSSL: true,
    });
    if (alarmEmail !== undefined) topic.addSubscription(new EmailSubscription(alarmEmail));
    return topic;
  }
}

/**
 * Checks the monitoring options and returns one sentence per broken rule (empty when all hold):
 * an alarm email that is not an address, a threshold that is not a positive whole number.
 */
export function monitoringOptionsProblems(options: ConsumerMonitoringOptions): string[] {
  const { alarmEmail, oldestMessageAgeThresholdSeconds: oldestAge, kafkaOffsetLagThreshold: offsetLag } = options;
  const iteratorAge = options.streamIteratorAgeThresholdSeconds;
  const problems: string[] = [];
  if (alarmEmail !== undefined && !Token.isUnresolved(alarmEmail) && !EMAIL.test(alarmEmail)) {
    problems.push(`alarm email ${JSON.stringify(alarmEmail)} is not an email address (for example -c alarmEmail=ops@example.com)`);
  }
  if (oldestAge !== undefined && (!Number.isInteger(oldestAge) || oldestAge <= 0)) {
    problems.push(`oldest message age threshold ${oldestAge} s must be a positive whole number of seconds`);
  }
  if (offsetLag !== undefined && (!Number.isInteger(offsetLag) || offsetLag <= 0)) {
    problems.push(`Kafka offset lag threshold ${offsetLag} must be a positive whole number of records`);
  }
  if (iteratorAge !== undefined && (!Number.isInteger(iteratorAge) || iteratorAge <= 0)) {
    problems.push(`stream iterator age threshold ${iteratorAge} s must be a positive whole number of seconds`);
  }
  return problems;
}

/**
 * Checks the monitoring options, so that a stack can refuse them before it builds anything.
 *
 * @throws InvalidSettingsError listing every problem {@link monitoringOptionsProblems} finds
 */
export function validateMonitoringOptions(options: ConsumerMonitoringOptions): void {
  const problems = monitoringOptionsProblems(options);
  if (problems.length > 0) throw new InvalidSettingsError(problems);
}
