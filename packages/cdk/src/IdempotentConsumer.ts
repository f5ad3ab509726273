import { existsSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import {
  Annotations,
  ArnFormat,
  Aws,
  type CfnElement,
  CfnOutput,
  Duration,
  Names,
  RemovalPolicy,
  Stack,
  Token,
  Validations,
} from 'aws-cdk-lib';
import { AttributeType, BillingMode, type ITable, StreamViewType, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import { Grant, type IGrantable, type IRole, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { type IKey, Key } from 'aws-cdk-lib/aws-kms';
import { Architecture, FilterCriteria, Function as LambdaFunction, type IFunction, MetricType, type Tracing } from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource, type SqsEventSourceProps } from 'aws-cdk-lib/aws-lambda-event-sources';
import { type BundlingOptions, NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import { type CfnQueue, type IQueue, Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { businessTableOutputKey, consumerOutputKeys, OUTPUT_PREFIX_PATTERN, type ConsumerOutput } from 'idempotent-consumer/settings';
import {
  defaultSettings,
  environmentVariables,
  lambdaEnvironment,
  maxReceiveCount,
  METRICS_NAMESPACE,
  resourceNames,
  sqsProvisionedMode,
  tableEnvironmentVariable,
  tableKeys,
  withOverrides,
  type ConsumerSettings,
} from 'idempotent-consumer/settings';
import {
  existingQueueRetentionProblem,
  InvalidSettingsError,
  payloadExpirationDays,
  payloadLifecycleProblem,
  settingsProblems,
  SQS_DEFAULT_RETENTION_SECONDS,
  windowWarnings,
} from 'idempotent-consumer/settings';
import { KafkaSource, kafkaSourceProblems, type KafkaSourceOptions } from './KafkaSource.js';
import { KinesisSource, kinesisSourceProblems, type KinesisSourceOptions } from './KinesisSource.js';
import { DynamoDbStreamSource, dynamoDbStreamSourceProblems, type DynamoDbStreamSourceOptions } from './DynamoDbStreamSource.js';
import { defaultBundling, esbuildTarget, lambdaRuntime, runtimeAcknowledgement } from './bundling.js';
import { configureTracing } from './tracing.js';
import { grantTableKey } from './tableKey.js';
import { OutboxRelay, type OutboxRelayProps } from './OutboxRelay.js';
import {
  attachToCapacityProvider,
  type ManagedInstancesConfiguration,
  type ManagedInstancesOptions,
  managedFunctionShape,
  managedInstancesProblems,
} from './capacityProvider.js';

/**
 * The DynamoDB actions the engine calls, by table. `TransactWriteItems` and `TransactGetItems`
 * have no IAM action of their own: IAM authorizes each action inside them (`PutItem`,
 * `UpdateItem`, `DeleteItem`, `ConditionCheckItem`, `GetItem`)
 * (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis-iam.html).
 * No table gets `Scan`, `Query` or `BatchWriteItem`.
 */
export const ConsumerTableActions = {
  /**
   * A business table: read by key (`GetItem`, and `BatchGetItem` for a batch's read-ahead), written
   * only inside the batch's transaction (`Put`, `Update`, `Delete`, `ConditionCheck`).
   */
  business: [
    'dynamodb:GetItem',
    'dynamodb:BatchGetItem',
    'dynamodb:ConditionCheckItem',
    'dynamodb:PutItem',
    'dynamodb:UpdateItem',
    'dynamodb:DeleteItem',
  ],
  /** The inbox table: as a business table, without `DeleteItem` (rows leave by TTL only). */
  inbox: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:ConditionCheckItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
  /** Powertools idempotency's persistence layer (the side-effect guard). */
  idempotency: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
} as const;

/** SQS's longest queue name, in characters, `.fifo` suffix included. */
const MAX_QUEUE_NAME_LENGTH = 80;

export { defaultBundling };

/**
 * The optional peers of the runtime (`idempotent-consumer`) that it loads only when a consumer
 * needs them: Powertools' Kafka deserializers and the format libraries they load to decode Avro or
 * Protobuf values (`kafkaAvroFormat`, `kafkaProtobufFormat`), and the SNS client of an SNS outbox
 * destination. A handler's project that has not installed one gets it marked external, so its
 * bundle builds: the SNS client then comes from the Lambda runtime's own AWS SDK; a handler that
 * asks for a Kafka format fails its records as transient, with the module's name in the error,
 * until the library is installed and the function deployed again.
 */
export const optionalFormatModules: readonly string[] = ['@aws-lambda-powertools/kafka', 'avro-js', 'protobufjs', '@aws-sdk/client-sns'];

/** Whether `name` is installed for code in `directory` (a `node_modules/<name>` on the way up, as Node and esbuild look). */
function installedFrom(directory: string, name: string): boolean {
  for (let dir = directory; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'node_modules', ...name.split('/'), 'package.json'))) return true;
    if (dirname(dir) === dir) return false;
  }
}

/**
 * `externalModules` plus each of {@link optionalFormatModules} that is not installed for `entry`
 * (looked up as Node and esbuild do, from the entry's directory up). A package's `exports` may
 * hide its `package.json` from `require.resolve`: the folder is what is looked for.
 *
 * @param entry - absolute path of the handler file
 * @param externalModules - the modules already marked external
 */
export function withMissingFormatModulesExternal(entry: string, externalModules: readonly string[]): string[] {
  const missing = optionalFormatModules.filter((name) => !externalModules.includes(name) && !installedFrom(dirname(entry), name));
  return [...externalModules, ...missing];
}

/** Properties of an {@link IdempotentConsumer}. Give exactly one of `entry` and `existingFunction`. */
export interface IdempotentConsumerProps {
  /**
   * Path of the handler file, e.g. `src/handler.ts`, relative to the current directory (where
   * `cdk` runs) or absolute. It exports the handler built with `createIdempotentConsumer`; the
   * construct bundles it with esbuild into an arm64 function on the runtime of
   * `settings.function.runtime` (`nodejs24.x` by default, or `nodejs22.x`), for that Node.js.
   *
   * @default - none: give `existingFunction` instead
   */
  readonly entry?: string;
  /**
   * Name of the handler's export in `entry`.
   *
   * @default 'handler'
   */
  readonly handler?: string;
  /**
   * An existing function to drive instead of building one from `entry`. The construct adds the
   * SQS (and Kafka) event source, the grants, and, when the function is a `lambda.Function` of this
   * app, the environment; for an imported function it warns at synth and exposes the variables
   * the function needs in {@link IdempotentConsumer.environment}. The function's timeout must be
   * `settings.function.timeoutSeconds` (checked when known).
   *
   * @default - none: give `entry` instead
   */
  readonly existingFunction?: IFunction;
  /**
   * The business tables the handler reads and writes, by logical name: the keys of the handler's
   * `tables` option. Each gets the environment variable `TABLE_NAME_<LOGICAL NAME IN UPPER SNAKE
   * CASE>` (`orders` → `TABLE_NAME_ORDERS`; names that it would merge keep their own spelling, see
   * `tableEnvironmentVariable`) and the actions of {@link ConsumerTableActions}.business,
   * plus {@link TABLE_KEY_ACTIONS} on its key when it has a customer managed one.
   *
   * @default {}
   */
  readonly tables?: Readonly<Record<string, ITable>>;
  /**
   * Queue, function, event source mapping, retry, idempotency and Kafka settings. They are checked
   * against the AWS rules before anything is built (`settingsProblems`).
   *
   * @default defaultSettings
   */
  readonly settings?: ConsumerSettings;
  /**
   * An existing source queue. It must be FIFO exactly when `settings.queue.fifo` is, and have a
   * redrive policy to the dead-letter queue with at least `maxReceiveCount(settings)` receives
   * and a visibility timeout of at least 6 × function timeout + batching window. For a queue of
   * this app (`sqs.Queue`) these are checked and its dead-letter queue is taken from its redrive
   * policy; for an imported queue give `existingDeadLetterQueue` (the one its redrive policy
   * names), and the construct warns that it cannot check the rest.
   *
   * @default - a new queue (retained with the stack, SQS-managed encryption, TLS only)
   */
  readonly existingQueue?: IQueue;
  /**
   * An existing dead-letter queue: where the consumer sends poison messages with their reasons
   * (and Kafka's on-failure records). With a new source queue, its redrive policy points here.
   *
   * @default - the existing queue's redrive target, or a new queue (retained with the stack)
   */
  readonly existingDeadLetterQueue?: IQueue;
  /**
   * An Amazon MSK or self-managed Kafka event source on the same function, beside the SQS
   * queue (see {@link KafkaSource}). Its topic, when given, replaces `settings.kafka.topic`.
   *
   * @default - no Kafka event source
   */
  readonly kafka?: KafkaSourceOptions;
  /**
   * A Kinesis Data Streams event source on the same function, beside the SQS queue (see
   * {@link KinesisSource}): a stream created (on-demand, KMS-encrypted) or given, read in order per
   * shard, with the dead-letter queue as its on-failure destination.
   *
   * @default - no Kinesis event source
   */
  readonly kinesis?: KinesisSourceOptions;
  /**
   * A DynamoDB Streams event source on the same function, beside the SQS queue (see
   * {@link DynamoDbStreamSource}): the given table's stream (view type `NEW_IMAGE` or
   * `NEW_AND_OLD_IMAGES`), read in order per shard, with the dead-letter queue as its on-failure destination.
   *
   * @default - no DynamoDB Streams event source
   */
  readonly dynamoDbStream?: DynamoDbStreamSourceOptions;
  /**
   * The outbox relay: turns on the inbox table's DynamoDB stream (new images) and adds an
   * {@link OutboxRelay} that publishes the messages decisions put in `Decision.outbox` to a
   * destination (an SNS topic or an SQS queue, created or given), each at least once with a stable
   * message id for deduplication. The consumer name, inbox and idempotency tables come from this
   * construct; the relay's `projectRoot` and `depsLockFilePath` default to this construct's.
   *
   * @default - no relay (outgoing messages are written to the inbox table but nobody publishes them)
   */
  readonly outbox?: Omit<OutboxRelayProps, 'consumerName' | 'inboxTable' | 'idempotencyTable'>;
  /**
   * How long the function's log group keeps log events (`entry` only).
   *
   * @default RetentionDays.ONE_MONTH
   */
  readonly logRetention?: RetentionDays;
  /**
   * X-Ray tracing of the function (with `entry` only), and of the outbox relay unless
   * `outbox.tracing` says otherwise. `Tracing.ACTIVE` records a trace of each sampled invocation
   * (Lambda's default sampling: the first request each second and 5 % of the others): the Lambda
   * service's and the function's segments, initialization and invocation; the engine adds no
   * subsegments of its own yet. X-Ray bills the traces it records beyond its free tier
   * (https://aws.amazon.com/xray/pricing/). `Tracing.PASS_THROUGH` traces only a request that
   * arrives sampled; `Tracing.DISABLED` none.
   * @default Tracing.ACTIVE
   */
  readonly tracing?: Tracing;
  /**
   * esbuild options, applied over {@link defaultBundling} key by key (`entry` only); its `target`
   * is the Node.js of `settings.function.runtime` (`node22`, `node24`) unless given here. A handler in
   * a repository that imports this package by name from its sources needs
   * `{ esbuildArgs: { '--conditions': '@idempotent-consumer/source' } }`; a handler that imports
   * the installed package needs nothing.
   *
   * @default defaultBundling, with the runtime's target
   */
  readonly bundling?: BundlingOptions;
  /**
   * The directory esbuild bundles from (`entry` only), for a monorepo.
   *
   * @default - the directory of `depsLockFilePath`
   */
  readonly projectRoot?: string;
  /**
   * The lock file of the project (`entry` only).
   *
   * @default - the nearest `package-lock.json`, `yarn.lock`, `pnpm-lock.yaml` or `bun.lockb`
   * above the current directory
   */
  readonly depsLockFilePath?: string;
  /**
   * Environment variables of the handler's own (an API URL for a side effect, …). Names that the
   * library sets (see {@link IdempotentConsumer.environment}), the `TABLE_NAME_` prefix and
   * Lambda's reserved `AWS_` prefix are refused.
   *
   * @default {}
   */
  readonly environment?: Readonly<Record<string, string>>;
  /**
   * Encryption at rest of the inbox and idempotency tables: `DEFAULT` (an AWS owned key, no
   * cost), `AWS_MANAGED` (`aws/dynamodb`) or `CUSTOMER_MANAGED` (`tableEncryptionKey`, or a new
   * key with yearly rotation that is retained with the tables). Business tables keep their own
   * encryption.
   *
   * @default TableEncryption.CUSTOMER_MANAGED when `tableEncryptionKey` is given, else TableEncryption.DEFAULT
   */
  readonly tableEncryption?: TableEncryption;
  /**
   * The customer managed key of the inbox and idempotency tables. The function may use it only
   * through DynamoDB ({@link TABLE_KEY_ACTIONS}).
   *
   * @default - a new key when `tableEncryption` is CUSTOMER_MANAGED
   */
  readonly tableEncryptionKey?: IKey;
  /**
   * Runs the function on Lambda Managed Instances: on the EC2 instances of a capacity provider,
   * where one execution environment serves up to `perExecutionEnvironmentMaxConcurrency` invocations
   * at once (see {@link ManagedInstancesOptions}). Needs a function of at least 2048 MB
   * (`settings.function.memorySizeMb`) on `nodejs22.x` or later, built from `entry` or a
   * `lambda.Function` of this app, and an `arm64` capacity provider. The event source mappings keep
   * invoking the function by its unqualified name, which runs its `$LATEST.PUBLISHED` version; the
   * construct publishes it on every deployment. The outbox relay stays on Lambda (default).
   *
   * A function's compute type is fixed when it is created
   * (https://docs.aws.amazon.com/serverless-application-model/latest/developerguide/sam-property-function-capacityproviderconfig.html):
   * the function built from `entry` then has the construct id `ManagedInstancesFunction` instead of
   * `Function`, so that turning this on or off replaces the function (and its event source
   * mappings) instead of failing the update; during the switch both mappings may poll the queue,
   * which the inbox makes harmless.
   *
   * @default - the function runs on Lambda (default), one invocation per execution environment
   * @throws InvalidSettingsError when the function or the options break a rule of Lambda Managed Instances ({@link managedInstancesProblems})
   */
  readonly managedInstances?: ManagedInstancesOptions;
}

/** What {@link IdempotentConsumer.addOutputs} writes of the consumer's monitoring: a `ConsumerMonitoring` has both. */
export interface MonitoringOutputs {
  /** The SNS topic the alarms notify. */
  readonly topic: { readonly topicArn: string };
  /** The CloudWatch dashboard. */
  readonly dashboard: { readonly dashboardName: string };
}

/**
 * An idempotent message consumer on AWS Lambda for any handler built with
 * `createIdempotentConsumer`: a source queue (standard or FIFO) with a dead-letter queue, the
 * DynamoDB inbox and Powertools idempotency tables, an S3 bucket for dead-letter bodies too
 * large for the dead-letter queue, the function (built from `entry`, or an existing one), and
 * the SQS event source mapping that drives it with batches and partial batch responses. The
 * user's business tables come in by logical name (`tables`); with `kafka`, the same function
 * also reads a Kafka topic (Amazon MSK or self-managed, {@link KafkaSource}).
 *
 * Decisions worth knowing:
 * - **Props are checked first.** The constructor throws `InvalidSettingsError` listing every
 *   broken rule, with the values involved, before it creates anything: the settings' AWS rules
 *   (e.g. visibility timeout ≥ 6 × function timeout + batching window,
 *   https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html), the Kafka options,
 *   and these props (one of `entry`/`existingFunction`, an entry file that exists, table names,
 *   environment names, an existing queue that matches the settings).
 * - **Least privilege.** The function's role has no AWS managed policy. It may: write its log
 *   group; call {@link ConsumerTableActions} on the inbox, idempotency and business tables (with
 *   {@link TABLE_KEY_ACTIONS} on customer managed keys, through DynamoDB only); `sqs:SendMessage`
 *   to the dead-letter queue; consume the source queue (the event source mapping's
 *   `ReceiveMessage`, `DeleteMessage`, `GetQueueAttributes`, `GetQueueUrl`, and
 *   `ChangeMessageVisibility`, which the consumer also calls for its retry backoff);
 *   `s3:PutObject` into the payload bucket. With Kafka, what {@link KafkaSource} lists; with a
 *   stream, what {@link KinesisSource} or {@link DynamoDbStreamSource} lists.
 * - **Stateful resources outlive the stack.** The queues, tables, table key and payload bucket are
 *   retained when the stack is deleted (`RemovalPolicy.RETAIN`); the tables also have deletion
 *   protection and point-in-time recovery. Their construct ids come from `resourceNames`, so
 *   their logical ids stay stable.
 * - **The source queue has a name** generated from this construct's path (unique per stack):
 *   the dead-letter queue's redrive-allow policy must name the source queue's ARN, and
 *   referencing the queue's `Arn` attribute would make a cycle with the source queue's
 *   redrive policy. Every other resource name is generated by CloudFormation.
 * - **Bundling is local** ({@link defaultBundling}): esbuild (a dev dependency of your project)
 *   bundles the handler into one ES module with a source map; Docker is never needed. The AWS
 *   SDK is bundled too, so the function runs the SDK version your tests run.
 * - **The SQS event source mapping** follows the settings (`sqsMappingOptions`): filter
 *   criteria (`function.filters`), provisioned mode (`function.minimumPollers`/`maximumPollers`)
 *   in place of the maximum concurrency, and its `EventCount` metrics on unless
 *   `function.mappingMetrics` is false.
 * - **Tracing is active** (`tracing`): Lambda records a trace of each sampled invocation, with
 *   `xray:PutTraceSegments` and `xray:PutTelemetryRecords` on `*` in a policy of their own. The
 *   engine adds no subsegments of its own yet.
 *
 * **Environment the engine reads** (built by `lambdaEnvironment()`): `CONSUMER_NAME`,
 * `INBOX_TABLE_NAME`, `IDEMPOTENCY_TABLE_NAME`, `DEAD_LETTER_QUEUE_URL`, `PAYLOAD_BUCKET_NAME`,
 * `SOURCE_QUEUE_FIFO`, `MAX_ATTEMPTS`, `INBOX_TTL_SECONDS`, `SIDE_EFFECT_TTL_SECONDS`,
 * `SIDE_EFFECT_MIN_REMAINING_MS`, `RETRY_BACKOFF_BASE_SECONDS`, `RETRY_BACKOFF_MAX_SECONDS`,
 * `DEAD_LETTER_MAX_MESSAGE_SIZE_BYTES`, one `TABLE_NAME_<NAME>` per business table; and for
 * Powertools `POWERTOOLS_SERVICE_NAME` (the consumer name), `POWERTOOLS_METRICS_NAMESPACE`
 * (`IdempotentConsumer`), `POWERTOOLS_LOG_LEVEL` (`INFO`); `NODE_OPTIONS=--enable-source-maps`.
 *
 * **Lambda Managed Instances.** With `managedInstances`, the function runs on a capacity
 * provider's instances, many invocations per execution environment (a Node.js worker thread shares
 * its globals between them). The engine keeps a batch's state to its own invocation and shares
 * only the clients, the configuration and its item cache, which it trusts only through a
 * version condition; Powertools' Logger and Metrics keep each invocation's keys apart (Lambda's
 * `InvokeStore`). See {@link ManagedInstancesOptions}.
 *
 * **Extension point: the outbox relay.** A later `outbox` prop turns on the inbox table's
 * DynamoDB stream (`stream` in {@link IdempotentConsumer.inboxTableOptions}) and adds a relay
 * function with its stream event source mapping after the consumer's own resources; the inbox
 * table is a `Table` field so that its `tableStreamArn` is at hand.
 *
 * @throws InvalidSettingsError when the settings, the Kafka options or these props break a rule
 *
 * @example
 * const orders = new Table(this, 'Orders', { partitionKey: { name: 'id', type: AttributeType.STRING } });
 * const consumer = new IdempotentConsumer(this, 'Consumer', {
 *   entry: 'src/handler.ts',
 *   tables: { orders },
 *   settings: withOverrides({ consumerName: 'orders', queue: { fifo: true } }),
 * });
 * consumer.addOutputs(); // QueueUrl, DeadLetterQueueUrl, …: what `idempotent-consumer outputs` reads
 */
export class IdempotentConsumer extends Construct {
  /** The settings this consumer was built with (validated; the Kafka topic of `kafka` applied). */
  public readonly settings: ConsumerSettings;
  /** The source queue: producers send here; the event source mapping reads from it. */
  public readonly queue: IQueue;
  /** The dead-letter queue: poison messages and exhausted retries, with their reasons. */
  public readonly deadLetterQueue: IQueue;
  /**
   * The inbox: one row per processed message (partition key `pk`, TTL attribute `expiresAt`);
   * also the engine's attempt records and outbox items.
   */
  public readonly inboxTable: Table;
  /** The Powertools idempotency table guarding inline side effects (`id`, TTL attribute `expiration`). */
  public readonly idempotencyTable: Table;
  /** The business tables, by logical name, as given. */
  public readonly tables: Readonly<Record<string, ITable>>;
  /** The customer managed key of the inbox and idempotency tables, when they have one. */
  public readonly tableEncryptionKey?: IKey;
  /** Dead-letter bodies too large for the dead-letter queue (the extended-client convention). */
  public readonly payloadBucket: Bucket;
  /** The consumer function (built from `entry`, or `existingFunction`). */
  public readonly function: IFunction;
  /** The function's execution role. */
  public readonly role: IRole;
  /** The function's log group, when this construct built the function. */
  public readonly logGroup?: LogGroup;
  /** The environment variables the function needs: the library's and `props.environment`. */
  public readonly environment: Readonly<Record<string, string>>;
  /** The SQS event source; its `eventSourceMappingId` and `eventSourceMappingArn` name the mapping. */
  public readonly eventSource: SqsEventSource;
  /** The Kafka event source mapping, when the `kafka` prop was given. */
  public readonly kafkaSource?: KafkaSource;
  /** The Kinesis Data Streams event source, when the `kinesis` prop was given. */
  public readonly kinesisSource?: KinesisSource;
  /** The DynamoDB Streams event source, when the `dynamoDbStream` prop was given. */
  public readonly dynamoDbStreamSource?: DynamoDbStreamSource;
  /** The outbox relay, when the `outbox` prop was given. */
  public readonly outboxRelay?: OutboxRelay;
  /** Whether the inbox table needs its stream (for the outbox relay). */
  private readonly withOutbox: boolean;
  /** How the inbox and idempotency tables are encrypted at rest. */
  public readonly tableEncryption: TableEncryption;
  /** The function's Lambda Managed Instances configuration, defaults applied, when the `managedInstances` prop was given. */
  public readonly managedInstances?: ManagedInstancesConfiguration;

  /**
   * @throws InvalidSettingsError when `props` break a rule (see the class comment); nothing is created
   */
  constructor(scope: Construct, id: string, props: IdempotentConsumerProps) {
    const base = props.settings ?? defaultSettings;
    const topic = props.kafka?.topic;
    const settings = topic === undefined ? base : withOverrides({ kafka: { topic } }, base);
    const problems = [
      ...settingsProblems(settings),
      ...(props.kafka === undefined ? [] : kafkaSourceProblems(props.kafka, settings)),
      ...(props.kinesis === undefined ? [] : kinesisSourceProblems(props.kinesis, settings)),
      ...(props.dynamoDbStream === undefined ? [] : dynamoDbStreamSourceProblems(props.dynamoDbStream, settings)),
      ...consumerPropsProblems(props, settings),
      ...optionalProblem(payloadLifecycleProblem(payloadExpirationDays(settings), settings.queue.deadLetterRetentionPeriodSeconds)),
      ...(props.managedInstances === undefined
        ? []
        : managedInstancesProblems(props.managedInstances, managedFunctionShape(props.existingFunction, settings))),
    ];
    if (problems.length > 0) throw new InvalidSettingsError(problems);
    super(scope, id);
    this.withOutbox = props.outbox !== undefined;
    this.settings = settings;
    // The Kafka source adds the Kafka windows' warnings itself.
    for (const warning of windowWarnings(settings, { kafka: false })) {
      Annotations.of(this).addWarningV2('idempotent-consumer:windows', warning);
    }
    this.tables = { ...props.tables };

    const queues = this.createQueues(settings, props);
    this.queue = queues.queue;
    this.deadLetterQueue = queues.deadLetterQueue;

    this.tableEncryption =
      props.tableEncryptionKey !== undefined ? TableEncryption.CUSTOMER_MANAGED : (props.tableEncryption ?? TableEncryption.DEFAULT);
    this.tableEncryptionKey = this.tableKey(props);
    this.inboxTable = this.createTable(resourceNames.inboxTable, this.inboxTableOptions());
    this.idempotencyTable = this.createTable(resourceNames.idempotencyTable, {
      partitionKey: tableKeys.idempotency.partitionKey,
      timeToLiveAttribute: tableKeys.idempotency.ttlAttribute,
    });
    this.payloadBucket = this.createPayloadBucket(settings);

    this.environment = {
      ...lambdaEnvironment(settings, {
        inboxTable: this.inboxTable.tableName,
        idempotencyTable: this.idempotencyTable.tableName,
        deadLetterQueueUrl: this.deadLetterQueue.queueUrl,
        payloadBucket: this.payloadBucket.bucketName,
        tables: Object.fromEntries(Object.entries(this.tables).map(([name, table]) => [name, table.tableName])),
      }),
      ...powertoolsEnvironment(settings),
      ...props.environment,
    };

    if (props.existingFunction === undefined) {
      const built = this.createFunction(settings, props);
      this.function = built.function;
      this.logGroup = built.logGroup;
    } else {
      this.function = props.existingFunction;
      this.setEnvironment(props.existingFunction);
    }
    // consumerPropsProblems made sure that an existing function has a role;
    // managedInstancesProblems that a function for a capacity provider is a lambda.Function.
    this.role = this.function.role as IRole;
    if (props.managedInstances !== undefined) {
      this.managedInstances = attachToCapacityProvider(this.function as LambdaFunction, props.managedInstances);
    }

    this.grantEngineAccess();

    this.eventSource = new SqsEventSource(this.queue, {
      batchSize: settings.function.batchSize,
      maxBatchingWindow:
        settings.function.maxBatchingWindowSeconds > 0 ? Duration.seconds(settings.function.maxBatchingWindowSeconds) : undefined,
      reportBatchItemFailures: true,
      ...sqsMappingOptions(settings),
    });
    this.function.addEventSource(this.eventSource);

    if (props.kafka !== undefined) {
      this.kafkaSource = new KafkaSource(this, 'KafkaSource', {
        ...props.kafka,
        function: this.function,
        deadLetterQueue: this.deadLetterQueue,
        settings,
      });
    }
    if (props.kinesis !== undefined) {
      const source = { function: this.function, deadLetterQueue: this.deadLetterQueue, settings };
      this.kinesisSource = new KinesisSource(this, 'KinesisSource', { ...props.kinesis, ...source });
    }
    if (props.dynamoDbStream !== undefined) {
      const source = { function: this.function, deadLetterQueue: this.deadLetterQueue, settings };
      this.dynamoDbStreamSource = new DynamoDbStreamSource(this, 'DynamoDbStreamSource', { ...props.dynamoDbStream, ...source });
    }
    if (props.outbox !== undefined) {
      this.outboxRelay = new OutboxRelay(this, 'OutboxRelay', {
        ...props.outbox,
        // The relay bundles from the consumer's project root and lock file unless `outbox` names its own.
        projectRoot: props.outbox.projectRoot ?? props.projectRoot,
        depsLockFilePath: props.outbox.depsLockFilePath ?? props.depsLockFilePath,
        // And runs on the consumer's runtime.
        runtime: props.outbox.runtime ?? settings.function.runtime,
        // And is traced as the consumer is.
        tracing: props.outbox.tracing ?? props.tracing,
        consumerName: settings.consumerName,
        inboxTable: this.inboxTable,
        idempotencyTable: this.idempotencyTable,
      });
    }
  }

  /**
   * Adds the consumer's resources to the stack's outputs under stable keys, so that `cdk deploy
   * --outputs-file F` writes them where the command line (`idempotent-consumer outputs`, `send`,
   * `dlq … --outputs-file F`) and the integration tests find them. Each key is `prefix` + the
   * suffix of `consumerOutputKeys` (`config/outputKeys.ts`), whatever the construct's path:
   * `ConsumerName`, `QueueUrl`, `DeadLetterQueueUrl`, `InboxTableName`, `IdempotencyTableName`,
   * `PayloadBucketName`, `FunctionName`, `LogGroupName` (when this construct made the function),
   * one `<Name>TableName` per business table (`orders` → `OrdersTableName`), with the outbox
   * `OutboxTopicArn`, `OutboxQueueUrl` or `OutboxEventBusArn` and `OutboxRelayFunctionName`, with Kafka
   * `KafkaConsumerGroupId` and `KafkaEventSourceMappingId`, and with `monitoring`
   * `AlarmTopicArn`, `DashboardName` and `DashboardUrl` (the CloudWatch console page of the
   * dashboard). No output is exported (`exportName`): nothing ties another stack to them.
   *
   * @param options.prefix - put before every key, for a second consumer in the same stack:
   *   a letter, then letters and digits (CloudFormation's rule for output keys). @default ''
   * @param options.monitoring - the consumer's {@link ConsumerMonitoring}, for its alarm topic and dashboard
   * @returns the outputs, by key
   * @throws InvalidSettingsError when the prefix is not letters and digits, a business table's key
   *   would be the inbox's or the idempotency table's, or outputs were added already
   *
   * @example
   * const consumer = new IdempotentConsumer(this, 'Consumer', { entry: 'src/handler.ts', tables: { orders } });
   * consumer.addOutputs({ monitoring: new ConsumerMonitoring(this, 'Monitoring', { consumer }) });
   * // cdk deploy --outputs-file cdk-outputs.json; eval "$(npx idempotent-consumer outputs --shell --outputs-file cdk-outputs.json)"
   */
  public addOutputs(
    options: { readonly prefix?: string; readonly monitoring?: MonitoringOutputs } = {},
  ): Readonly<Record<string, CfnOutput>> {
    const prefix = options.prefix ?? '';
    const problems: string[] = [];
    if (!OUTPUT_PREFIX_PATTERN.test(prefix))
      problems.push(`output prefix "${prefix}" must be a letter followed by letters and digits (CloudFormation's rule for output keys)`);
    if (this.node.tryFindChild('Outputs') !== undefined)
      problems.push(`addOutputs was called already on ${this.node.path}: call it once per consumer`);
    const tableKeys: [string, string][] = [];
    for (const name of Object.keys(this.tables)) {
      try {
        tableKeys.push([name, businessTableOutputKey(name, prefix)]);
      } catch (error) {
        problems.push((error as Error).message);
      }
    }
    if (problems.length > 0) throw new InvalidSettingsError(problems);

    const consumer = this.settings.consumerName;
    const values: [ConsumerOutput, string, string][] = [
      ['consumerName', consumer, 'Name of the idempotent consumer (settings.consumerName)'],
      ['queueUrl', this.queue.queueUrl, `URL of the ${consumer} source queue: producers send here`],
      [
        'deadLetterQueueUrl',
        this.deadLetterQueue.queueUrl,
        `URL of the ${consumer} dead-letter queue (messages with their failure reasons)`,
      ],
      ['inboxTable', this.inboxTable.tableName, `Name of the ${consumer} inbox table`],
      ['idempotencyTable', this.idempotencyTable.tableName, `Name of the ${consumer} Powertools idempotency table (side-effect guard)`],
      [
        'payloadBucket',
        this.payloadBucket.bucketName,
        `Name of the S3 bucket of ${consumer} dead-letter bodies too large for the dead-letter queue`,
      ],
      ['functionName', this.function.functionName, `Name of the ${consumer} consumer function`],
    ];
    if (this.logGroup !== undefined)
      values.push([
        'logGroupName',
        this.logGroup.logGroupName,
        `Log group of the ${consumer} consumer function (aws logs tail <name> --follow)`,
      ]);
    const relay = this.outboxRelay;
    if (relay !== undefined) {
      const destination = relay.destinations.default;
      if (destination !== undefined && 'topicArn' in destination)
        values.push(['outboxTopicArn', destination.topicArn, `ARN of the SNS topic the ${consumer} outbox relay publishes to`]);
      else if (destination !== undefined && 'queueUrl' in destination)
        values.push(['outboxQueueUrl', destination.queueUrl, `URL of the SQS queue the ${consumer} outbox relay sends to`]);
      else if (destination !== undefined && 'eventBusArn' in destination)
        values.push([
          'outboxEventBusArn',
          destination.eventBusArn,
          `ARN of the EventBridge event bus the ${consumer} outbox relay publishes to`,
        ]);
      values.push(['outboxRelayFunctionName', relay.function.functionName, `Name of the ${consumer} outbox relay function`]);
    }
    const kafka = this.kafkaSource;
    if (kafka !== undefined) {
      values.push([
        'kafkaConsumerGroupId',
        kafka.consumerGroupId,
        `Kafka consumer group of the ${consumer} event source mapping (topic ${kafka.topic})`,
      ]);
      values.push(['kafkaEventSourceMappingId', kafka.mapping.eventSourceMappingId, `UUID of the ${consumer} Kafka event source mapping`]);
    }
    const monitoring = options.monitoring;
    if (monitoring !== undefined) {
      const dashboard = monitoring.dashboard.dashboardName;
      values.push([
        'alarmTopicArn',
        monitoring.topic.topicArn,
        `ARN of the SNS topic the ${consumer} alarms notify (subscribe on-call here)`,
      ]);
      values.push(['dashboardName', dashboard, `Name of the ${consumer} CloudWatch dashboard`]);
      values.push([
        'dashboardUrl',
        `https://${Aws.REGION}.console.aws.amazon.com/cloudwatch/home?region=${Aws.REGION}#dashboards/dashboard/${dashboard}`,
        `CloudWatch console page of the ${consumer} dashboard`,
      ]);
    }

    const scope = new Construct(this, 'Outputs');
    const outputs: Record<string, CfnOutput> = {};
    const add = (key: string, value: string, description: string): void => {
      const output = new CfnOutput(scope, key, { value, description });
      output.overrideLogicalId(key);
      outputs[key] = output;
    };
    for (const [what, value, description] of values) add(`${prefix}${consumerOutputKeys[what]}`, value, description);
    for (const [name, key] of tableKeys) add(key, this.tables[name]!.tableName, `Name of the ${consumer} business table "${name}"`);
    return outputs;
  }

  /**
   * Key schema, TTL and stream of the inbox table. The outbox relay (a later `outbox` prop) sets
   * `stream: StreamViewType.NEW_IMAGE` here: a table's stream is set when the table is created.
   */
  protected inboxTableOptions(): TableOptions {
    return {
      partitionKey: tableKeys.inbox.partitionKey,
      timeToLiveAttribute: tableKeys.inbox.ttlAttribute,
      ...(this.withOutbox ? { stream: StreamViewType.NEW_IMAGE } : {}),
    };
  }

  /** The library's grants to the function's role (see the class comment). */
  private grantEngineAccess(): void {
    const grantee: IGrantable = this.function;
    this.grantTable(grantee, this.inboxTable, ConsumerTableActions.inbox);
    this.grantTable(grantee, this.idempotencyTable, ConsumerTableActions.idempotency);
    for (const table of Object.values(this.tables)) this.grantTable(grantee, table, ConsumerTableActions.business);

    this.deadLetterQueue.grant(grantee, 'sqs:SendMessage');
    const deadLetterKey = this.deadLetterQueue.encryptionMasterKey;
    // SendMessage to a queue with a customer managed key needs these two
    // (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-key-management.html).
    deadLetterKey?.grant(grantee, 'kms:GenerateDataKey', 'kms:Decrypt');
    // The consumer delays the redelivery of a retryable failure with ChangeMessageVisibility
    // (backoff by attempt). The event source mapping grants it too; this keeps the need explicit.
    this.queue.grant(grantee, 'sqs:ChangeMessageVisibility');

    Grant.addToPrincipal({ grantee, actions: ['s3:PutObject'], resourceArns: [this.payloadBucket.arnForObjects('*')] });
    const bucket = Stack.of(this).getLogicalId(this.payloadBucket.node.defaultChild as CfnElement);
    Validations.of(this.role).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${bucket}.Arn>/*]`,
      reason:
        's3:PutObject into the payload bucket: each dead-letter body too large for the dead-letter queue is a new object whose ' +
        'key the consumer derives from the message, so no fixed object ARN exists; the bucket holds nothing else.',
    });
  }

  /** `actions` on `table`, and {@link TABLE_KEY_ACTIONS} on its customer managed key through DynamoDB. */
  private grantTable(grantee: IGrantable, table: ITable, actions: readonly string[]): void {
    Grant.addToPrincipal({ grantee, actions: [...actions], resourceArns: [table.tableArn] });
    grantTableKey(grantee, table);
  }

  /** Sets `environment` on a function of this app, or warns that the user must. */
  private setEnvironment(fn: IFunction): void {
    if (fn instanceof LambdaFunction) {
      for (const [name, value] of Object.entries(this.environment)) fn.addEnvironment(name, value);
      return;
    }
    Annotations.of(this).addWarningV2(
      'idempotent-consumer:imported-function-environment',
      `existingFunction is imported: set its environment to IdempotentConsumer.environment yourself ` +
        `(${Object.keys(this.environment).join(', ')}); the consumer reads its tables and queues from it`,
    );
  }

  /**
   * The source queue and its dead-letter queue: the given ones, or new ones. A new dead-letter
   * queue is created first (the source's redrive policy points at it) and allows only the source
   * queue to use it.
   */
  private createQueues(settings: ConsumerSettings, props: IdempotentConsumerProps): { queue: IQueue; deadLetterQueue: IQueue } {
    if (props.existingQueue !== undefined) {
      const existing = props.existingQueue;
      const redriveTarget = existing instanceof Queue ? existing.deadLetterQueue?.queue : undefined;
      if (!(existing instanceof Queue)) {
        Annotations.of(this).addWarningV2(
          'idempotent-consumer:imported-queue',
          `existingQueue is imported: make sure its visibility timeout is at least ` +
            `${6 * settings.function.timeoutSeconds + settings.function.maxBatchingWindowSeconds} s and its redrive policy ` +
            `sends to the dead-letter queue after at least ${maxReceiveCount(settings)} receives (the construct cannot check either)`,
        );
      }
      // consumerPropsProblems made sure that one of them is given.
      return { queue: existing, deadLetterQueue: (props.existingDeadLetterQueue ?? redriveTarget) as IQueue };
    }

    const { queue: q } = settings;
    const fifoProps = q.fifo ? { fifo: true, contentBasedDeduplication: false } : {};
    const queueName = this.sourceQueueName(q.fifo);
    const sourceQueueArn = Stack.of(this).formatArn({ service: 'sqs', resource: queueName, arnFormat: ArnFormat.NO_RESOURCE_NAME });

    const deadLetterQueue =
      props.existingDeadLetterQueue ??
      new Queue(this, resourceNames.deadLetterQueue, {
        ...fifoProps,
        retentionPeriod: Duration.seconds(q.deadLetterRetentionPeriodSeconds),
        maxMessageSizeBytes: q.deadLetterMaxMessageSizeBytes,
        encryption: QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        // Stateful: it holds the messages nobody could process.
        removalPolicy: RemovalPolicy.RETAIN,
        redriveAllowPolicy: {
          sourceQueues: [Queue.fromQueueAttributes(this, 'SourceQueueReference', { queueArn: sourceQueueArn, queueName })],
        },
      });

    const queue = new Queue(this, resourceNames.queue, {
      ...fifoProps,
      queueName,
      visibilityTimeout: Duration.seconds(q.visibilityTimeoutSeconds),
      retentionPeriod: Duration.seconds(q.retentionPeriodSeconds),
      maxMessageSizeBytes: q.maxMessageSizeBytes,
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      // Stateful: messages not consumed yet survive a stack deletion or replacement.
      removalPolicy: RemovalPolicy.RETAIN,
      deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount: maxReceiveCount(settings) },
    });
    return { queue, deadLetterQueue };
  }

  /**
   * The source queue's name: this construct's path made unique with a hash, then
   * `-<resourceNames.queue>`, then `.fifo` for a FIFO queue; at most 80 characters.
   */
  private sourceQueueName(fifo: boolean): string {
    const suffix = `-${resourceNames.queue}${fifo ? '.fifo' : ''}`;
    const unique = Names.uniqueResourceName(this, { maxLength: MAX_QUEUE_NAME_LENGTH - suffix.length, separator: '-' });
    return `${unique}${suffix}`;
  }

  /** The customer managed key of the library's tables: the given one, a new one, or none. */
  private tableKey(props: IdempotentConsumerProps): IKey | undefined {
    if (props.tableEncryptionKey !== undefined) return props.tableEncryptionKey;
    if (this.tableEncryption !== TableEncryption.CUSTOMER_MANAGED) return undefined;
    return new Key(this, 'TableKey', {
      description: `Encrypts the inbox and idempotency tables of the ${this.settings.consumerName} consumer`,
      enableKeyRotation: true,
      // The retained tables stay readable only as long as their key exists.
      removalPolicy: RemovalPolicy.RETAIN,
    });
  }

  /** An on-demand table with point-in-time recovery and deletion protection that outlives the stack. */
  private createTable(id: string, options: TableOptions): Table {
    const key = this.tableEncryptionKey;
    return new Table(this, id, {
      ...options,
      partitionKey: { name: options.partitionKey, type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
      ...(this.tableEncryption === TableEncryption.DEFAULT ? {} : { encryption: this.tableEncryption, encryptionKey: key }),
    });
  }

  /**
   * The bucket of dead-letter bodies too large for the dead-letter queue: SSE-S3, TLS only, no
   * public access, retained with the stack. Objects expire after source retention + dead-letter
   * retention + 1 day, rounded up to days (`payloadExpirationDays`): at least as long as a
   * dead-letter message (or the same message redriven to the source queue) can point at them;
   * the constructor checks it against the dead-letter queue's retention (`payloadLifecycleProblem`).
   */
  private createPayloadBucket(settings: ConsumerSettings): Bucket {
    const days = payloadExpirationDays(settings);
    const bucket = new Bucket(this, resourceNames.payloadBucket, {
      encryption: BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      versioned: false,
      removalPolicy: RemovalPolicy.RETAIN,
      lifecycleRules: [
        { id: 'ExpireDeadLetterPayloads', expiration: Duration.days(days), abortIncompleteMultipartUploadAfter: Duration.days(1) },
      ],
    });
    Validations.of(bucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason:
        'The payload bucket holds only dead-letter bodies that the consumer function writes (s3:PutObject) and operators read ' +
        'with the DLQ tool; object-level access is auditable with CloudTrail data events, which a team turns on account-wide ' +
        'rather than with a second, log-only bucket per consumer.',
    });
    return bucket;
  }

  /** {@link defaultBundling} for the runtime's Node.js under `props.bundling`, the missing optional format modules external. */
  private bundlingFor(settings: ConsumerSettings, props: IdempotentConsumerProps): BundlingOptions {
    const bundling = { ...defaultBundling, target: esbuildTarget(settings.function.runtime), ...props.bundling };
    if (props.entry === undefined) return bundling;
    const entry = isAbsolute(props.entry) ? props.entry : resolve(props.entry);
    return { ...bundling, externalModules: withMissingFormatModulesExternal(entry, bundling.externalModules ?? []) };
  }

  /** The function built from `entry`, its role (no AWS managed policy) and log group. */
  private createFunction(settings: ConsumerSettings, props: IdempotentConsumerProps): { function: NodejsFunction; logGroup: LogGroup } {
    const logGroup = new LogGroup(this, 'FunctionLogGroup', { retention: props.logRetention ?? RetentionDays.ONE_MONTH });
    const role = new Role(this, 'FunctionRole', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `Runs the ${settings.consumerName} idempotent consumer`,
    });
    logGroup.grantWrite(role);
    // A function's compute type is fixed at creation: another id replaces it when it changes.
    const fn = new NodejsFunction(this, props.managedInstances === undefined ? 'Function' : 'ManagedInstancesFunction', {
      entry: props.entry,
      handler: props.handler ?? 'handler',
      projectRoot: props.projectRoot,
      depsLockFilePath: props.depsLockFilePath,
      runtime: lambdaRuntime(settings.function.runtime),
      architecture: Architecture.ARM_64,
      timeout: Duration.seconds(settings.function.timeoutSeconds),
      memorySize: settings.function.memorySizeMb,
      role,
      logGroup,
      description:
        `Idempotent consumer ${settings.consumerName} (SQS ${settings.queue.fifo ? 'FIFO' : 'standard'}` +
        `${props.kafka === undefined ? '' : `, Kafka topic ${settings.kafka.topic}`})`,
      environment: { ...this.environment },
      bundling: this.bundlingFor(settings, props),
    });
    Validations.of(fn).acknowledge(runtimeAcknowledgement(settings.function.runtime, 'The consumer function'));
    configureTracing(this, 'TracingPolicy', fn, role, props.tracing);
    return { function: fn, logGroup };
  }
}

/** Key schema, TTL and stream of a table the library creates (see {@link IdempotentConsumer.inboxTableOptions}). */
export interface TableOptions {
  /** Name of the partition key attribute (a string; the tables have no sort key), e.g. `pk` for the inbox. */
  readonly partitionKey: string;
  /** Name of the TTL attribute (epoch seconds), e.g. `expiresAt` for the inbox. @default none: no TTL */
  readonly timeToLiveAttribute?: string;
  /** The DynamoDB stream's view type; the outbox relay needs `NEW_IMAGE` on the inbox table. @default none: no stream */
  readonly stream?: StreamViewType;
}

/**
 * The SQS event source mapping's filter criteria, scaling and metrics from the settings:
 * `FilterCriteria` from `function.filters`; provisioned mode (`ProvisionedPollerConfig`) when
 * `function.minimumPollers` or `maximumPollers` is set, else `ScalingConfig.MaximumConcurrency`
 * (AWS: the two are mutually exclusive, https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html);
 * `MetricsConfig: { Metrics: ['EventCount'] }` unless `function.mappingMetrics` is false.
 * aws-cdk-lib's `SqsEventSource` takes all three (no escape hatch).
 */
export function sqsMappingOptions(
  settings: ConsumerSettings,
): Pick<SqsEventSourceProps, 'filters' | 'maxConcurrency' | 'provisionedPollerConfig' | 'metricsConfig'> {
  const fn = settings.function;
  return {
    ...(fn.filters === undefined || fn.filters.length === 0
      ? {}
      : { filters: fn.filters.map((pattern) => FilterCriteria.filter(pattern as Record<string, unknown>)) }),
    ...(sqsProvisionedMode(settings)
      ? { provisionedPollerConfig: { minimumPollers: fn.minimumPollers, maximumPollers: fn.maximumPollers } }
      : { maxConcurrency: fn.maxConcurrency }),
    ...(fn.mappingMetrics === false ? {} : { metricsConfig: { metrics: [MetricType.EVENT_COUNT] } }),
  };
}

/** The Powertools variables: service name (the consumer's), metrics namespace, log level. */
function powertoolsEnvironment(settings: ConsumerSettings): Record<string, string> {
  return {
    POWERTOOLS_SERVICE_NAME: settings.consumerName,
    POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
    POWERTOOLS_LOG_LEVEL: 'INFO',
    NODE_OPTIONS: '--enable-source-maps',
  };
}

/** Names that only `entry` may use. */
const ENTRY_ONLY_PROPS = ['handler', 'logRetention', 'bundling', 'projectRoot', 'depsLockFilePath', 'tracing'] as const;

/**
 * Checks the props of an {@link IdempotentConsumer} (the settings are checked by
 * `settingsProblems`, the Kafka options by `kafkaSourceProblems`) and returns one sentence per
 * broken rule: exactly one of `entry` and `existingFunction`, an entry file that exists, options
 * that apply to `entry` only, table names that make distinct environment variables, environment
 * names that do not collide with the library's, existing queues that match the settings (FIFO,
 * redrive policy, visibility timeout), an existing function with a role and the settings' timeout,
 * and the table encryption.
 *
 * @param props - the props as given
 * @param settings - the settings the consumer is built with
 */
export function consumerPropsProblems(props: IdempotentConsumerProps, settings: ConsumerSettings): string[] {
  const problems: string[] = [];
  const { entry, existingFunction } = props;
  if ((entry === undefined) === (existingFunction === undefined)) {
    problems.push(
      `give exactly one of entry (the handler file to bundle) or existingFunction, got ${entry === undefined ? 'neither' : 'both'}`,
    );
  }
  if (entry !== undefined && !existsSync(resolve(entry))) {
    const resolved = isAbsolute(entry) ? '' : ` (resolved to ${resolve(entry)}: a relative path is relative to the directory cdk runs in)`;
    problems.push(`entry "${entry}" does not exist${resolved}`);
  }
  if (existingFunction !== undefined) {
    const given = ENTRY_ONLY_PROPS.filter((name) => props[name] !== undefined);
    if (given.length > 0) problems.push(`${given.join(', ')} apply only with entry, not with existingFunction`);
    if (existingFunction instanceof LambdaFunction) {
      const timeout = existingFunction.timeout?.toSeconds() ?? 3;
      if (timeout !== settings.function.timeoutSeconds) {
        problems.push(
          `existingFunction's timeout ${timeout} s differs from settings.function.timeoutSeconds ${settings.function.timeoutSeconds} s: ` +
            'the queue and side-effect rules are checked against the settings, so make them equal',
        );
      }
    }
    if (existingFunction.role === undefined) {
      problems.push(
        'existingFunction has no execution role, so nothing can be granted to it: import it with its role ' +
          '(lambda.Function.fromFunctionAttributes(scope, id, { functionArn, role: iam.Role.fromRoleArn(...) }))',
      );
    }
  }
  problems.push(...tableProblems(props), ...environmentProblems(props, settings), ...queueProblems(props, settings));
  return problems;
}

/** Business table names and table encryption (see {@link consumerPropsProblems}). */
function tableProblems(props: IdempotentConsumerProps): string[] {
  const problems: string[] = [];
  for (const name of Object.keys(props.tables ?? {})) {
    try {
      tableEnvironmentVariable(name);
    } catch (error) {
      problems.push(`tables: ${(error as Error).message}`);
    }
  }
  if (
    props.tableEncryptionKey !== undefined &&
    props.tableEncryption !== undefined &&
    props.tableEncryption !== TableEncryption.CUSTOMER_MANAGED
  ) {
    problems.push(`tableEncryptionKey needs tableEncryption CUSTOMER_MANAGED (or unset), got ${props.tableEncryption}`);
  }
  return problems;
}

/** The user's environment variables (see {@link consumerPropsProblems}). */
function environmentProblems(props: IdempotentConsumerProps, settings: ConsumerSettings): string[] {
  const problems: string[] = [];
  const library = new Set([
    ...Object.values(environmentVariables).filter((name) => name !== environmentVariables.tablePrefix),
    ...Object.keys(powertoolsEnvironment(settings)),
  ]);
  for (const name of Object.keys(props.environment ?? {})) {
    if (library.has(name) || name.startsWith(environmentVariables.tablePrefix) || name.startsWith('AWS_')) {
      problems.push(
        `environment variable ${name} is reserved (set by the library, the ${environmentVariables.tablePrefix} prefix, or Lambda's AWS_ prefix): choose another name`,
      );
    } else if (!/^[A-Za-z][A-Za-z0-9_]*$/.test(name)) {
      problems.push(
        `environment variable name "${name}" must start with a letter and contain only letters, digits and '_' (Lambda's rule)`,
      );
    }
  }
  return problems;
}

/** Existing queues against the settings (see {@link consumerPropsProblems}). */
function queueProblems(props: IdempotentConsumerProps, settings: ConsumerSettings): string[] {
  const problems: string[] = [];
  const { existingQueue: queue, existingDeadLetterQueue: given } = props;
  const kind = (fifo: boolean) => (fifo ? 'FIFO' : 'standard');
  const expected = kind(settings.queue.fifo);
  if (queue !== undefined && queue.fifo !== settings.queue.fifo) {
    problems.push(`existingQueue is a ${kind(queue.fifo)} queue but settings.queue.fifo says ${expected}`);
  }
  if (given !== undefined && given.fifo !== settings.queue.fifo) {
    problems.push(
      `existingDeadLetterQueue is a ${kind(given.fifo)} queue but settings.queue.fifo says ${expected} (a dead-letter queue is of its source's kind)`,
    );
  }
  problems.push(
    ...existingRetentionProblems(queue, given ?? (queue instanceof Queue ? queue.deadLetterQueue?.queue : undefined), settings),
  );
  if (queue === undefined) return problems;

  const redrive = queue instanceof Queue ? queue.deadLetterQueue : undefined;
  if (queue instanceof Queue && redrive === undefined) {
    problems.push(
      `existingQueue has no redrive policy: give it deadLetterQueue: { queue, maxReceiveCount: ${maxReceiveCount(settings)} } ` +
        '(the safety net for crashes and timeouts; AWS rule: a Lambda SQS consumer needs a dead-letter queue)',
    );
  }
  if (!(queue instanceof Queue) && given === undefined) {
    problems.push('existingQueue is imported: give existingDeadLetterQueue, the queue its redrive policy sends to');
  }
  if (redrive !== undefined && given !== undefined && redrive.queue !== given) {
    problems.push("existingDeadLetterQueue is not the queue existingQueue's redrive policy sends to: give that one, or leave it out");
  }
  if (redrive !== undefined && redrive.maxReceiveCount < maxReceiveCount(settings)) {
    problems.push(
      `existingQueue's redrive policy maxReceiveCount ${redrive.maxReceiveCount} is below ${maxReceiveCount(settings)} = maxReceiveCount(settings) ` +
        '(rule: the redrive policy must never move a message that still has attempts left)',
    );
  }
  if (queue instanceof Queue) {
    const cfn = queue.node.defaultChild as CfnQueue;
    const visibility = Token.isUnresolved(cfn.visibilityTimeout) ? undefined : (cfn.visibilityTimeout ?? 30);
    const minimum = 6 * settings.function.timeoutSeconds + settings.function.maxBatchingWindowSeconds;
    if (visibility !== undefined && visibility < minimum) {
      problems.push(
        `existingQueue's visibility timeout ${visibility} s is below 6 × function timeout ${settings.function.timeoutSeconds} s + ` +
          `batching window ${settings.function.maxBatchingWindowSeconds} s = ${minimum} s ` +
          '(AWS rule: visibility timeout ≥ 6 × function timeout + maximum batching window)',
      );
    }
  }
  return problems;
}

/** `[problem]`, or `[]` when the rule holds. */
function optionalProblem(problem: string | undefined): string[] {
  return problem === undefined ? [] : [problem];
}

/**
 * The retention of existing queues of this app against the settings (see
 * `existingQueueRetentionProblem`): the window rules are checked on the settings, so a queue that
 * keeps messages longer would break them unseen. An imported queue's retention is not known.
 */
function existingRetentionProblems(queue: IQueue | undefined, deadLetterQueue: IQueue | undefined, settings: ConsumerSettings): string[] {
  const retentionOf = (q: IQueue | undefined): number | undefined => {
    if (!(q instanceof Queue)) return undefined;
    const period = (q.node.defaultChild as CfnQueue).messageRetentionPeriod;
    if (Token.isUnresolved(period)) return undefined;
    return period ?? SQS_DEFAULT_RETENTION_SECONDS;
  };
  const problems: string[] = [];
  const source = retentionOf(queue);
  if (source !== undefined) {
    problems.push(
      ...optionalProblem(
        existingQueueRetentionProblem('existingQueue', source, settings.queue.retentionPeriodSeconds, 'queue.retentionPeriodSeconds'),
      ),
    );
  }
  const dlq = retentionOf(deadLetterQueue);
  if (dlq !== undefined) {
    problems.push(
      ...optionalProblem(
        existingQueueRetentionProblem(
          'existingDeadLetterQueue',
          dlq,
          settings.queue.deadLetterRetentionPeriodSeconds,
          'queue.deadLetterRetentionPeriodSeconds',
        ),
      ),
    );
  }
  return problems;
}
