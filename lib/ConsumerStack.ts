import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { defaultSettings, withOverrides, type ConsumerSettings } from '../config/settings.js';
import { ConsumerMonitoring, type ConsumerMonitoringOptions, validateMonitoringOptions } from './ConsumerMonitoring.js';
import { IdempotentConsumer } from './IdempotentConsumer.js';
import type { KafkaSourceOptions } from './KafkaSource.js';

/** Properties of a {@link ConsumerStack}. */
export interface ConsumerStackProps extends StackProps {
  /**
   * The consumer's settings. CDK context can still override a few of them (see
   * {@link ConsumerStack}).
   *
   * @default defaultSettings (from `config/settings.ts`)
   */
  readonly settings?: ConsumerSettings;

  /**
   * A Kafka event source (Amazon MSK or self-managed) on the consumer's function. CDK context
   * keys override single fields (see {@link ConsumerStack}).
   *
   * @default - no Kafka event source, unless context names a cluster
   */
  readonly kafka?: KafkaSourceOptions;

  /**
   * Alarm email and thresholds of the monitoring (alarms and dashboard are always created).
   * `-c alarmEmail=...` overrides `alarmEmail`.
   *
   * @default - no email subscription, default thresholds
   */
  readonly monitoring?: ConsumerMonitoringOptions;
}

/**
 * The deployable stack: one {@link IdempotentConsumer}, its {@link ConsumerMonitoring} (alarms,
 * SNS topic, dashboard), and outputs naming what it created (queue and dead-letter queue URLs,
 * table names, function name, alarm topic, dashboard, Kafka consumer group) for producers,
 * operators and the integration tests.
 *
 * CDK context overrides the props, so a variant needs no code change:
 * - `-c fifo=true` (or `false`) deploys a FIFO (or standard) source queue and dead-letter queue.
 * - `-c kafkaClusterArn=arn:aws:kafka:...` adds an Amazon MSK event source;
 *   `-c kafkaBootstrapServers=broker1:9096,broker2:9096 -c kafkaSecretArn=arn:aws:secretsmanager:...`
 *   a self-managed Kafka one. `-c kafkaTopic=orders` and `-c kafkaConsumerGroup=...` set the
 *   topic and consumer group (defaults: `settings.kafka.topic`, a stable generated id).
 * - `-c alarmEmail=ops@example.com` subscribes an address to the alarm topic.
 *
 * The stack needs no account or region at synth time (no lookups), so `cdk synth` works
 * offline.
 *
 * @throws InvalidSettingsError when the settings or the Kafka options (after context overrides)
 * break a rule, e.g. both a cluster ARN and bootstrap servers, or infinite Kafka retries
 * @throws Error when a context value is not one of the accepted values, or the alarm email is
 * not an address
 */
export class ConsumerStack extends Stack {
  /** The consumer: its queues, tables, function and event sources. */
  public readonly consumer: IdempotentConsumer;
  /** The consumer's alarms, alarm topic and dashboard. */
  public readonly monitoring: ConsumerMonitoring;

  constructor(scope: Construct, id: string, props: ConsumerStackProps = {}) {
    super(scope, id, {
      description:
        'Idempotent SQS (and optional Kafka) consumer on AWS Lambda with a DynamoDB inbox, a dead-letter queue, alarms and a dashboard',
      ...props,
    });
    const settings = settingsWithContext(this, props.settings ?? defaultSettings);

    const kafka = kafkaWithContext(this, props.kafka);
    const monitoring: ConsumerMonitoringOptions = {
      ...props.monitoring,
      alarmEmail: stringContext(this, 'alarmEmail') ?? props.monitoring?.alarmEmail,
    };
    validateMonitoringOptions(monitoring);

    this.consumer = new IdempotentConsumer(this, 'Consumer', { settings, kafka });
    this.monitoring = new ConsumerMonitoring(this, 'Monitoring', { ...monitoring, consumer: this.consumer });

    const outputs: Record<string, { value: string; description: string }> = {
      QueueUrl: { value: this.consumer.queue.queueUrl, description: 'URL of the source queue (send messages here)' },
      DeadLetterQueueUrl: {
        value: this.consumer.deadLetterQueue.queueUrl,
        description: 'URL of the dead-letter queue (messages with failureReason attributes)',
      },
      InboxTableName: { value: this.consumer.inboxTable.tableName, description: 'Name of the inbox table' },
      OrdersTableName: { value: this.consumer.ordersTable.tableName, description: 'Name of the orders (business) table' },
      IdempotencyTableName: {
        value: this.consumer.idempotencyTable.tableName,
        description: 'Name of the Powertools idempotency table (side-effect guard)',
      },
      FunctionName: { value: this.consumer.function.functionName, description: 'Name of the consumer function' },
      AlarmTopicArn: {
        value: this.monitoring.topic.topicArn,
        description: 'ARN of the SNS topic the alarms notify (subscribe on-call here)',
      },
      DashboardName: { value: this.monitoring.dashboard.dashboardName, description: 'Name of the CloudWatch dashboard' },
    };
    const { kafkaSource } = this.consumer;
    if (kafkaSource !== undefined) {
      outputs.KafkaConsumerGroupId = {
        value: kafkaSource.consumerGroupId,
        description: `Kafka consumer group of the event source mapping (topic ${kafkaSource.topic})`,
      };
      outputs.KafkaEventSourceMappingId = {
        value: kafkaSource.mapping.eventSourceMappingId,
        description: 'UUID of the Kafka event source mapping',
      };
    }
    for (const [outputId, output] of Object.entries(outputs)) {
      new CfnOutput(this, outputId, output);
    }
  }
}

/** CDK context keys of the Kafka event source (values arrive as strings from `-c`). */
export const kafkaContextKeys = {
  clusterArn: 'kafkaClusterArn',
  bootstrapServers: 'kafkaBootstrapServers',
  secretArn: 'kafkaSecretArn',
  topic: 'kafkaTopic',
  consumerGroupId: 'kafkaConsumerGroup',
} as const;

/**
 * `base` with the Kafka context keys applied, field by field; `undefined` when neither names
 * anything (no Kafka event source). `kafkaBootstrapServers` is a comma-separated list (or an
 * array in `cdk.json`).
 *
 * @throws Error when a context value is not a non-empty string
 */
function kafkaWithContext(scope: Construct, base: KafkaSourceOptions | undefined): KafkaSourceOptions | undefined {
  const keys = kafkaContextKeys;
  const servers: unknown = scope.node.tryGetContext(keys.bootstrapServers);
  const fromContext: KafkaSourceOptions = {
    clusterArn: stringContext(scope, keys.clusterArn),
    bootstrapServers:
      servers === undefined
        ? undefined
        : Array.isArray(servers)
          ? servers.map(String)
          : (stringContext(scope, keys.bootstrapServers) ?? '').split(',').map((server) => server.trim()),
    secretArn: stringContext(scope, keys.secretArn),
    topic: stringContext(scope, keys.topic),
    consumerGroupId: stringContext(scope, keys.consumerGroupId),
  };
  const given = Object.fromEntries(Object.entries(fromContext).filter(([, value]) => value !== undefined)) as KafkaSourceOptions;
  if (base === undefined && Object.keys(given).length === 0) return undefined;
  return { ...base, ...given };
}

/**
 * Reads a non-empty string from CDK context; `undefined` when the key is not set.
 *
 * @throws Error when the value is not a non-empty string
 */
function stringContext(scope: Construct, key: string): string | undefined {
  const value: unknown = scope.node.tryGetContext(key);
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.trim() === '') {
    throw new Error(`CDK context "${key}" must be a non-empty string (for example -c ${key}=...), got ${JSON.stringify(value)}`);
  }
  return value.trim();
}

/** Applies the CDK context overrides (`fifo`) to `base`; values arrive as strings from `-c`. */
function settingsWithContext(scope: Construct, base: ConsumerSettings): ConsumerSettings {
  const fifo = booleanContext(scope, 'fifo');
  return fifo === undefined ? base : withOverrides({ queue: { fifo } }, base);
}

/**
 * Reads a boolean from CDK context: `true`/`false` from `cdk.json` or `"true"`/`"false"`
 * from `-c key=value`; `undefined` when the key is not set.
 *
 * @throws Error when the value is anything else
 */
function booleanContext(scope: Construct, key: string): boolean | undefined {
  const value: unknown = scope.node.tryGetContext(key);
  if (value === undefined) return undefined;
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  throw new Error(`CDK context "${key}" must be true or false (for example -c ${key}=true), got ${JSON.stringify(value)}`);
}
