/**
 * The one source of the consumer's settings.
 *
 * The CDK stack (`lib/`), the Lambda's environment (`lambda/config/runtimeConfig.ts`) and the
 * local runtime (`local/`) all read these values, so what runs on a laptop is what
 * `cdk deploy` creates. Change a value here and every one of them follows.
 *
 * Units are in the property names: `...Seconds` is seconds, `...Mb` is mebibytes.
 *
 * @module
 */

/** Settings of the source queue and its dead-letter queue. */
export interface QueueSettings {
  /**
   * A FIFO queue (`.fifo`, ordered per message group) instead of a standard queue.
   * @default false
   */
  readonly fifo: boolean;
  /**
   * Visibility timeout of the source queue, in seconds. AWS recommends at least
   * 6 × the function timeout + the maximum batching window
   * (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html); the stack
   * refuses to synthesize below that.
   * @default 180
   */
  readonly visibilityTimeoutSeconds: number;
  /**
   * Receives before SQS moves a message to the dead-letter queue (the redrive policy), and the
   * attempt on which the consumer itself dead-letters a retryable failure as
   * `RetriesExhausted`. AWS recommends at least 5 for Lambda consumers.
   * @default 5
   */
  readonly maxReceiveCount: number;
  /**
   * How long the source queue keeps a message, in seconds (SQS: 60 to 1,209,600).
   * @default 345600 (4 days)
   */
  readonly retentionPeriodSeconds: number;
  /**
   * How long the dead-letter queue keeps a message, in seconds (SQS: at most 1,209,600).
   * @default 1209600 (14 days)
   */
  readonly deadLetterRetentionPeriodSeconds: number;
  /**
   * Largest message the source queue accepts, in bytes (body + attributes).
   * @default 262144 (256 KiB)
   */
  readonly maxMessageSizeBytes: number;
  /**
   * Largest message the dead-letter queue accepts, in bytes. It is larger than the source's so
   * that a body of the source's maximum size still fits beside the reason attributes (SQS has
   * allowed up to 1 MiB since 2025); the body is never cut.
   * @default 1048576 (1 MiB)
   */
  readonly deadLetterMaxMessageSizeBytes: number;
}

/** Settings of the Lambda function and of its SQS event source mapping. */
export interface FunctionSettings {
  /** Function timeout in seconds. @default 30 */
  readonly timeoutSeconds: number;
  /** Memory in MB. @default 1024 */
  readonly memorySizeMb: number;
  /** Records per invocation (SQS: 1 to 10,000; above 10 needs a batching window). @default 10 */
  readonly batchSize: number;
  /** Maximum batching window, in seconds (0 to 300). @default 0 */
  readonly maxBatchingWindowSeconds: number;
  /** Maximum concurrent invocations the SQS event source may drive (2 to 1,000). @default 5 */
  readonly maxConcurrency: number;
}

/**
 * Backoff of retryable failures. The consumer calls `ChangeMessageVisibility` on a failed
 * record so that it comes back after `min(baseSeconds × 2^(receiveCount − 1), maxSeconds)`
 * seconds instead of after the whole visibility timeout.
 */
export interface RetryBackoffSettings {
  /** Delay after the first failed receive, in seconds; 0 turns the backoff off. @default 2 */
  readonly baseSeconds: number;
  /** Upper bound of the delay, in seconds (must not exceed the visibility timeout). @default 60 */
  readonly maxSeconds: number;
}

/** Settings of the DynamoDB inbox and of the side-effect guard. */
export interface IdempotencySettings {
  /**
   * How long an inbox row is kept, in seconds, before DynamoDB's TTL removes it. A duplicate
   * that arrives later than this would be applied again, so the window must cover the source
   * queue's retention plus the dead-letter queue's retention (a redrive replays an old
   * message); the stack checks that. The business table's own conditions (one ledger entry
   * per order and rule, the order state machine) still stop a late duplicate from awarding
   * points twice.
   * @default 2592000 (30 days)
   */
  readonly inboxTtlSeconds: number;
  /**
   * How long Powertools idempotency keeps the result of a guarded side effect, in seconds
   * (`IdempotencyConfig.expiresAfterSeconds`). The side effect runs before the inbox commit, so
   * if that commit then fails for good and the message is redriven later, only this record stops
   * a second send: the window must cover the source queue's retention plus the dead-letter
   * queue's, like the inbox's (the stack checks that).
   * @default 2592000 (30 days)
   */
  readonly sideEffectTtlSeconds: number;
}

/**
 * Settings of the Kafka event source mapping (Amazon MSK or self-managed Apache Kafka). The
 * stack creates the mapping from them; the local runtime's partitioned log follows them too.
 *
 * AWS's error handling controls for Kafka (retries, record age, split batch, partial batch
 * response) need the event poller in provisioned mode
 * (https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html).
 */
export interface KafkaSettings {
  /** The topic the mapping reads; producers key its records by `orderId`. @default 'orders' */
  readonly topic: string;
  /** Records per invocation, across partitions (1 to 10,000). @default 100 */
  readonly batchSize: number;
  /** Where a new mapping starts reading. @default 'TRIM_HORIZON' */
  readonly startingPosition: 'TRIM_HORIZON' | 'LATEST';
  /**
   * Retries of a failed batch after the first attempt (`MaximumRetryAttempts`, 0 to 10,000).
   * Must be finite: AWS's default, -1, retries a failing record until it leaves the topic and
   * blocks its partition meanwhile. The consumer dead-letters a record itself on attempt
   * `retryAttempts + 1` (see {@link kafkaMaxAttempts}); records AWS gives up on first (e.g.
   * after timeouts) go to the mapping's on-failure destination.
   * @default 4 (5 attempts, like the SQS `maxReceiveCount`)
   */
  readonly retryAttempts: number;
  /**
   * Oldest record the mapping still sends to the function, in seconds (60 to 604,800), or -1
   * for no limit (`MaximumRecordAgeInSeconds`). Older records go to the on-failure destination
   * as metadata only, unprocessed, so a limit trades lag for loss.
   * @default -1
   */
  readonly maxRecordAgeSeconds: number;
  /** Split a failed batch in two and retry each half (`BisectBatchOnFunctionError`). @default false */
  readonly bisectBatchOnError: boolean;
  /** Provisioned mode: the fewest event pollers (1 to 200). @default 1 */
  readonly minimumPollers: number;
  /** Provisioned mode: the most event pollers (1 to 2,000, ≥ `minimumPollers`). @default 2 */
  readonly maximumPollers: number;
}

/** Names of the tables' keys: the stack creates them, the adapters read and write them. */
export const tableKeys = {
  /** Inbox: partition key `pk` = `<consumer>#<idempotency key>`; TTL attribute `expiresAt` (epoch seconds). */
  inbox: { partitionKey: 'pk', ttlAttribute: 'expiresAt' },
  /** Business table: order state (`sk = "ORDER"`), ledger (`sk = "LEDGER#<rule>"`), notifications. */
  orders: { partitionKey: 'orderId', sortKey: 'sk' },
  /** Powertools idempotency persistence layer's default schema. */
  idempotency: { partitionKey: 'id', ttlAttribute: 'expiration' },
} as const;

/** The whole of the consumer's settings. */
export interface ConsumerSettings {
  /** Name of this consumer: part of every inbox key, so two consumers can share an inbox table. */
  readonly consumerName: string;
  readonly queue: QueueSettings;
  readonly function: FunctionSettings;
  readonly retryBackoff: RetryBackoffSettings;
  readonly idempotency: IdempotencySettings;
  readonly kafka: KafkaSettings;
}

/**
 * The attempt on which the Kafka consumer dead-letters a retryable failure as
 * `RetriesExhausted`: the first attempt plus `retryAttempts` retries.
 */
export function kafkaMaxAttempts(settings: ConsumerSettings): number {
  return settings.kafka.retryAttempts + 1;
}

/** The defaults shipped with the café example. */
export const defaultSettings: ConsumerSettings = {
  consumerName: 'cafe-orders',
  queue: {
    fifo: false,
    visibilityTimeoutSeconds: 180,
    maxReceiveCount: 5,
    retentionPeriodSeconds: 4 * 24 * 3600,
    deadLetterRetentionPeriodSeconds: 14 * 24 * 3600,
    maxMessageSizeBytes: 262_144,
    deadLetterMaxMessageSizeBytes: 1_048_576,
  },
  function: {
    timeoutSeconds: 30,
    memorySizeMb: 1024,
    batchSize: 10,
    maxBatchingWindowSeconds: 0,
    maxConcurrency: 5,
  },
  retryBackoff: { baseSeconds: 2, maxSeconds: 60 },
  idempotency: {
    inboxTtlSeconds: 30 * 24 * 3600,
    sideEffectTtlSeconds: 30 * 24 * 3600,
  },
  kafka: {
    topic: 'orders',
    batchSize: 100,
    startingPosition: 'TRIM_HORIZON',
    retryAttempts: 4,
    maxRecordAgeSeconds: -1,
    bisectBatchOnError: false,
    minimumPollers: 1,
    maximumPollers: 2,
  },
};

/** CloudWatch namespace of the consumer's metrics (Powertools Metrics, embedded metric format). */
export const METRICS_NAMESPACE = 'IdempotentConsumer';

/**
 * Base names of the resources. CDK uses them as construct ids (it generates the physical
 * names in AWS); the local runtime uses them as the table and queue names.
 */
export const resourceNames = {
  queue: 'OrdersQueue',
  deadLetterQueue: 'OrdersDeadLetterQueue',
  inboxTable: 'Inbox',
  ordersTable: 'Orders',
  idempotencyTable: 'Idempotency',
} as const;

/**
 * Names of the Lambda environment variables that carry the settings and the resource names.
 * The stack sets them; `lambda/config/runtimeConfig.ts` reads them.
 */
export const environmentVariables = {
  consumerName: 'CONSUMER_NAME',
  inboxTable: 'INBOX_TABLE_NAME',
  ordersTable: 'ORDERS_TABLE_NAME',
  idempotencyTable: 'IDEMPOTENCY_TABLE_NAME',
  deadLetterQueueUrl: 'DEAD_LETTER_QUEUE_URL',
  fifo: 'SOURCE_QUEUE_FIFO',
  maxReceiveCount: 'MAX_RECEIVE_COUNT',
  inboxTtlSeconds: 'INBOX_TTL_SECONDS',
  sideEffectTtlSeconds: 'SIDE_EFFECT_TTL_SECONDS',
  retryBackoffBaseSeconds: 'RETRY_BACKOFF_BASE_SECONDS',
  retryBackoffMaxSeconds: 'RETRY_BACKOFF_MAX_SECONDS',
  deadLetterMaxMessageSizeBytes: 'DEAD_LETTER_MAX_MESSAGE_SIZE_BYTES',
  /** Kafka handler only: the attempt on which a retryable failure is dead-lettered ({@link kafkaMaxAttempts}). */
  kafkaMaxAttempts: 'KAFKA_MAX_ATTEMPTS',
} as const;

/** Resource names known once the resources exist (generated by CDK, or created locally). */
export interface DeployedResourceNames {
  readonly inboxTable: string;
  readonly ordersTable: string;
  readonly idempotencyTable: string;
  readonly deadLetterQueueUrl: string;
}

/**
 * The Lambda environment for these settings and resources: the one place both the stack and
 * the local runtime build it from.
 *
 * @returns a map of environment variable name → string value
 */
export function lambdaEnvironment(
  settings: ConsumerSettings,
  resources: DeployedResourceNames,
): Record<string, string> {
  const env = environmentVariables;
  return {
    [env.consumerName]: settings.consumerName,
    [env.inboxTable]: resources.inboxTable,
    [env.ordersTable]: resources.ordersTable,
    [env.idempotencyTable]: resources.idempotencyTable,
    [env.deadLetterQueueUrl]: resources.deadLetterQueueUrl,
    [env.fifo]: String(settings.queue.fifo),
    [env.maxReceiveCount]: String(settings.queue.maxReceiveCount),
    [env.inboxTtlSeconds]: String(settings.idempotency.inboxTtlSeconds),
    [env.sideEffectTtlSeconds]: String(settings.idempotency.sideEffectTtlSeconds),
    [env.retryBackoffBaseSeconds]: String(settings.retryBackoff.baseSeconds),
    [env.retryBackoffMaxSeconds]: String(settings.retryBackoff.maxSeconds),
    [env.deadLetterMaxMessageSizeBytes]: String(settings.queue.deadLetterMaxMessageSizeBytes),
    [env.kafkaMaxAttempts]: String(kafkaMaxAttempts(settings)),
  };
}

/** A settings object with some values replaced (nested objects are merged one level deep). */
export type SettingsOverrides = {
  readonly consumerName?: string;
  readonly queue?: Partial<QueueSettings>;
  readonly function?: Partial<FunctionSettings>;
  readonly retryBackoff?: Partial<RetryBackoffSettings>;
  readonly idempotency?: Partial<IdempotencySettings>;
  readonly kafka?: Partial<KafkaSettings>;
};

/** Returns `base` with `overrides` applied; neither argument is changed. */
export function withOverrides(
  overrides: SettingsOverrides = {},
  base: ConsumerSettings = defaultSettings,
): ConsumerSettings {
  return {
    consumerName: overrides.consumerName ?? base.consumerName,
    queue: { ...base.queue, ...overrides.queue },
    function: { ...base.function, ...overrides.function },
    retryBackoff: { ...base.retryBackoff, ...overrides.retryBackoff },
    idempotency: { ...base.idempotency, ...overrides.idempotency },
    kafka: { ...base.kafka, ...overrides.kafka },
  };
}
