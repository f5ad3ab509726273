/**
 * The café's deployable stack: its business table, the idempotent consumer of its order events,
 * the consumer's monitoring, and outputs. It uses the library's public entry points only.
 *
 * @module
 */
import { fileURLToPath } from 'node:url';
import { RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import { CapacityProvider } from 'aws-cdk-lib/aws-lambda';
import { AttributeType, BillingMode, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import { type IKey, Key } from 'aws-cdk-lib/aws-kms';
import type { Construct } from 'constructs';
import {
  ConsumerMonitoring,
  consumerContext,
  IdempotentConsumer,
  validateMonitoringOptions,
  type ConsumerMonitoringOptions,
  type KafkaSourceOptions,
} from '@idempotent-consumer/cdk';
import { withOverrides, type ConsumerSettings } from 'idempotent-consumer/settings';
import { cafeSettings, cafeTables } from '../settings.js';

/** The café's handler file (written next to its domain). */
export const cafeHandlerEntry = fileURLToPath(new URL('../handler.ts', import.meta.url));

/** Properties of a {@link CafeStack}. CDK context overrides them (see {@link CafeStack}). */
export interface CafeStackProps extends StackProps {
  /** @default cafeSettings */
  readonly settings?: ConsumerSettings;
  /** A Kafka event source (Amazon MSK or self-managed). @default - none, unless context names a cluster */
  readonly kafka?: KafkaSourceOptions;
  /** Alarm email and thresholds. @default - no email subscription, default thresholds */
  readonly monitoring?: ConsumerMonitoringOptions;
  /**
   * Encryption at rest of the orders, inbox and idempotency tables. With CUSTOMER_MANAGED the
   * stack creates one key (rotated yearly, retained with the tables) for all three.
   * @default TableEncryption.DEFAULT (an AWS owned key)
   */
  readonly tableEncryption?: TableEncryption;
}

/**
 * The café consumer: the `orders` table (partition key `orderId`, sort key `sk`, from
 * `cafeTables`), an {@link IdempotentConsumer} running `examples/cafe/handler.ts`, its
 * {@link ConsumerMonitoring}, and outputs for producers, operators, the command line and the
 * integration tests (`IdempotentConsumer.addOutputs`): `ConsumerName`, `QueueUrl`,
 * `DeadLetterQueueUrl`, `InboxTableName`, `OrdersTableName`, `IdempotencyTableName`,
 * `PayloadBucketName`, `FunctionName`, `LogGroupName`, `OutboxTopicArn`,
 * `OutboxRelayFunctionName`, `AlarmTopicArn`, `DashboardName`, `DashboardUrl`, and with Kafka
 * `KafkaConsumerGroupId` and `KafkaEventSourceMappingId`.
 *
 * CDK context overrides the props (`consumerContextKeys`), so a variant needs no code change:
 * `-c fifo=true`; `-c kafkaClusterArn=…` (MSK) or `-c kafkaBootstrapServers=host:port,…
 * -c kafkaSecretArn=…` (self-managed), with `-c kafkaSecretKeyArn`, `-c kafkaTopic`,
 * `-c kafkaConsumerGroup`; `-c alarmEmail=ops@example.com`; `-c tableEncryption=customer-managed`;
 * `-c nodeRuntime=nodejs22.x` (the function's and the relay's runtime; `nodejs24.x` by default);
 * `-c capacityProviderArn=… [-c concurrencyPerEnvironment=N]` (the function on Lambda Managed
 * Instances, with 2048 MB, the least they run).
 *
 * The stack needs no account or region at synth time (no lookups), so `cdk synth` works offline.
 *
 * @throws InvalidSettingsError when the settings, the Kafka options, the monitoring options or
 * the context (after overrides) break a rule; nothing is created
 */
export class CafeStack extends Stack {
  /** The café's business table: order state items (`sk = "ORDER"`) and points ledger entries. */
  public readonly ordersTable: Table;
  /** The consumer: its queues, tables, bucket, function and event sources. */
  public readonly consumer: IdempotentConsumer;
  /** The consumer's alarms, alarm topic and dashboard. */
  public readonly monitoring: ConsumerMonitoring;
  /** The key of the three tables, with `tableEncryption` CUSTOMER_MANAGED. */
  public readonly tableEncryptionKey?: IKey;

  constructor(scope: Construct, id: string, props: CafeStackProps = {}) {
    super(scope, id, {
      description: 'Campus café order events: an idempotent SQS (and optional Kafka) consumer on AWS Lambda with a DynamoDB inbox',
      ...props,
    });
    const context = consumerContext(this);
    const base = props.settings ?? cafeSettings;
    const settings = withOverrides(
      {
        ...(context.fifo === undefined ? {} : { queue: { fifo: context.fifo } }),
        function: {
          ...(context.nodeRuntime === undefined ? {} : { runtime: context.nodeRuntime }),
          // Lambda Managed Instances run functions of 2048 MB and more.
          ...(context.managedInstances === undefined ? {} : { memorySizeMb: Math.max(2048, base.function.memorySizeMb) }),
        },
      },
      base,
    );
    const kafka = context.kafka === undefined ? props.kafka : { ...props.kafka, ...context.kafka };
    const monitoring: ConsumerMonitoringOptions = { ...props.monitoring, alarmEmail: context.alarmEmail ?? props.monitoring?.alarmEmail };
    validateMonitoringOptions(monitoring);
    const tableEncryption = context.tableEncryption ?? props.tableEncryption ?? TableEncryption.DEFAULT;

    if (tableEncryption === TableEncryption.CUSTOMER_MANAGED) {
      this.tableEncryptionKey = new Key(this, 'TableKey', {
        description: "Encrypts the café consumer's orders, inbox and idempotency tables",
        enableKeyRotation: true,
        // The retained tables stay readable only as long as their key exists.
        removalPolicy: RemovalPolicy.RETAIN,
      });
    }
    const { orders } = cafeTables;
    this.ordersTable = new Table(this, 'Orders', {
      partitionKey: { name: orders.partitionKey, type: AttributeType.STRING },
      sortKey: { name: orders.sortKey, type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
      ...(tableEncryption === TableEncryption.DEFAULT ? {} : { encryption: tableEncryption, encryptionKey: this.tableEncryptionKey }),
    });

    this.consumer = new IdempotentConsumer(this, 'Consumer', {
      entry: cafeHandlerEntry,
      // The handler imports `idempotent-consumer` by name from this repository's sources.
      bundling: { esbuildArgs: { '--conditions': '@idempotent-consumer/source' } },
      tables: { orders: this.ordersTable },
      settings,
      kafka,
      tableEncryption,
      tableEncryptionKey: this.tableEncryptionKey,
      // PaymentReceived events leave through the outbox, to an SNS FIFO topic (deduplicated by message id).
      outbox: { destination: { create: 'topic', fifo: true } },
      ...(context.managedInstances === undefined
        ? {}
        : {
            managedInstances: {
              capacityProvider: CapacityProvider.fromCapacityProviderArn(
                this,
                'CapacityProvider',
                context.managedInstances.capacityProviderArn,
              ),
              ...(context.managedInstances.perExecutionEnvironmentMaxConcurrency === undefined
                ? {}
                : { perExecutionEnvironmentMaxConcurrency: context.managedInstances.perExecutionEnvironmentMaxConcurrency }),
            },
          }),
    });
    this.monitoring = new ConsumerMonitoring(this, 'Monitoring', { ...monitoring, consumer: this.consumer });

    // Stable output keys (`QueueUrl`, `DeadLetterQueueUrl`, `OrdersTableName`, …) that
    // `idempotent-consumer outputs --outputs-file cdk-outputs.json` reads after `cdk deploy --outputs-file`.
    this.consumer.addOutputs({ monitoring: this.monitoring });
  }
}
