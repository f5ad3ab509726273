/**
 * The one source of a consumer's settings.
 *
 * The CDK constructs (`@idempotent-consumer/cdk`), the Lambda's environment (`config/runtimeConfig.ts`) and the
 * local runtime (`@idempotent-consumer/local`) all read these values, so what runs on a laptop is what `cdk deploy`
 * creates. Change a value here (or pass overrides with {@link withOverrides}) and every one of
 * them follows.
 *
 * Units are in the property names: `...Seconds` is seconds, `...Ms` milliseconds, `...Mb`
 * mebibytes, `...Bytes` bytes.
 *
 * @module
 */
import type { FilterPattern } from './filterCriteria.js';

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
   * Receives before SQS moves a message to the dead-letter queue (the redrive policy). It is the
   * safety net for crashes and timeouts, not the retry budget: the consumer counts real attempts
   * itself ({@link RetrySettings.maxAttempts}) and dead-letters a message with its reason when
   * they run out. A receive is not always an attempt (a FIFO message skipped behind a failed one
   * of its group, a retry refused because another invocation holds its side-effect lock), so
   * this must leave room for those: at least {@link requiredMaxReceiveCount}. Leave it unset to
   * use exactly that.
   * @default requiredMaxReceiveCount(settings): maxAttempts + 5 (standard), maxAttempts × batchSize + 5 (FIFO)
   */
  readonly maxReceiveCount?: number;
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
   * allowed up to 1 MiB since 2025); the body is never cut. A body that does not fit (a Kafka
   * record can be larger) is offloaded to the payload bucket.
   * @default 1048576 (1 MiB)
   */
  readonly deadLetterMaxMessageSizeBytes: number;
}

/**
 * The Lambda runtimes the function may run on: Node.js 22 and 24, the ones the tests run on
 * (`npm run test:node22`, `npm run test:node24`) and that Powertools for AWS Lambda (TypeScript)
 * supports (Node.js 24 since v2.33.1).
 */
export const lambdaNodeRuntimes = ['nodejs22.x', 'nodejs24.x'] as const;

/** A Lambda runtime identifier of {@link lambdaNodeRuntimes}. */
export type LambdaNodeRuntime = (typeof lambdaNodeRuntimes)[number];

/** Settings of the Lambda function and of its SQS event source mapping. */
export interface FunctionSettings {
  /**
   * The Lambda runtime of the function, and of the outbox relay's
   * (https://docs.aws.amazon.com/lambda/latest/dg/lambda-nodejs.html). The constructs bundle
   * for its Node.js (esbuild `target` `node22` or `node24`). Lambda deprecates `nodejs22.x` on
   * 30 April 2027 (new functions blocked from 1 June 2027, updates from 1 July 2027) and
   * `nodejs24.x` on 30 April 2028, so new stacks get 24; `nodejs24.x` no longer runs
   * callback-style handlers, which the library's handlers are not.
   * @default 'nodejs24.x'
   */
  readonly runtime: LambdaNodeRuntime;
  /** Function timeout in seconds (1 to 900). @default 30 */
  readonly timeoutSeconds: number;
  /** Memory in MB (128 to 10,240, Lambda's range). @default 1024 */
  readonly memorySizeMb: number;
  /** Records per invocation (SQS: 1 to 10,000, 10 for FIFO; above 10 needs a batching window). @default 10 */
  readonly batchSize: number;
  /** Maximum batching window, in seconds (0 to 300; 0 for FIFO). @default 0 */
  readonly maxBatchingWindowSeconds: number;
  /**
   * Maximum concurrent invocations the SQS event source may drive (2 to 1,000). In provisioned mode
   * ({@link FunctionSettings.minimumPollers}, {@link FunctionSettings.maximumPollers}) the mapping has
   * no maximum concurrency (AWS: the two are mutually exclusive,
   * https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html); this then sets only the
   * local runtime's concurrent invocations.
   * @default 5
   */
  readonly maxConcurrency: number;
  /**
   * Filter criteria of the SQS event source mapping: at most 5 patterns on the `body` key
   * (see {@link FilterPattern}); a message that matches none is deleted from the queue without
   * invoking the function (counted by the mapping's `FilteredOutEventCount`), and the local runtime's
   * poller does the same. A body filter with fields (`{ body: { type: [...] } }`) drops every
   * message whose body is not JSON. Checked at synth and at a local start (`filterCriteriaProblems`;
   * https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html).
   * @default undefined: no filter, every message invokes the function
   */
  readonly filters?: readonly FilterPattern[];
  /**
   * Provisioned mode of the SQS event source mapping: the fewest event pollers (2 to 200). Giving it
   * or {@link FunctionSettings.maximumPollers} turns provisioned mode on (dedicated pollers, billed
   * per event poller unit while they run, https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html),
   * and leaves `maxConcurrency` out of the mapping.
   * @default undefined: standard mode (Lambda scales the pollers; AWS's provisioned default is 2)
   */
  readonly minimumPollers?: number;
  /**
   * Provisioned mode of the SQS event source mapping: the most event pollers (2 to 2,000, at least
   * {@link FunctionSettings.minimumPollers}).
   * @default undefined: standard mode (AWS's provisioned default is 200)
   */
  readonly maximumPollers?: number;
  /**
   * The SQS event source mapping's metrics (`MetricsConfig: { Metrics: ['EventCount'] }`):
   * `PolledEventCount`, `InvokedEventCount`, `FilteredOutEventCount`, `FailedInvokeEventCount`,
   * `DeletedEventCount` in `AWS/Lambda` by `EventSourceMappingUUID`, which the monitoring's
   * dashboard shows. CloudWatch bills them as custom metrics
   * (https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html#event-source-mapping-metrics).
   * @default true
   */
  readonly mappingMetrics?: boolean;
}

/** Whether the SQS event source mapping runs in provisioned mode (either poller bound is set). */
export function sqsProvisionedMode(settings: Pick<ConsumerSettings, 'function'>): boolean {
  return settings.function.minimumPollers !== undefined || settings.function.maximumPollers !== undefined;
}

/**
 * Retries of a message that failed with a retryable error.
 *
 * The consumer counts each real attempt that failed (an attempt record in the inbox table, written
 * only when an attempt fails) and dead-letters the message as `RetriesExhausted`, with its last
 * error, on attempt `maxAttempts`. Between attempts an SQS message is delayed with
 * `ChangeMessageVisibility`: `min(backoffBaseSeconds × 2^(attempt − 1), backoffMaxSeconds)`.
 */
export interface RetrySettings {
  /** Real attempts before a retryable failure is dead-lettered as `RetriesExhausted` (1 to 100). @default 5 */
  readonly maxAttempts: number;
  /** Delay after the first failed attempt, in seconds; 0 turns the backoff off. @default 2 */
  readonly backoffBaseSeconds: number;
  /** Upper bound of the delay, in seconds (at most 43,200: SQS's longest visibility timeout, 12 hours). @default 60 */
  readonly backoffMaxSeconds: number;
  /**
   * Park out-of-order messages (standard queues only): a message whose `decide` throws
   * `PredecessorNotApplied` has its SQS record copied into the inbox table and waits there; the
   * invocation that applies a message of the same ordering key decides it again at once and, once
   * it is settled, deletes it from the queue with the parked receipt handle, so it is not
   * redelivered. Its visibility delay (the backoff above) stays its wake-up: a message whose
   * predecessor never comes is decided again then, and dead-lettered `RetriesExhausted` on attempt
   * `maxAttempts`, as without parking. Costs a read of the batch's ordering keys' park items
   * (strongly consistent, beside the commit: 1 read unit per ordering key, one request more per
   * batch, no round trip more) and 1 write unit per KB of each parked record. Ignored on a FIFO queue (a message group
   * stops at its first message that must come back, so nothing arrives before its predecessor) and
   * on the other sources. See docs/parking.md. @default false
   */
  readonly parkOutOfOrder?: boolean;
}

/** Settings of the DynamoDB inbox and of the side-effect guard. */
export interface IdempotencySettings {
  /**
   * How long an inbox row is kept, in seconds, before DynamoDB's TTL removes it. A duplicate
   * that arrives later than this would be applied again, so the window must cover the source
   * queue's retention plus the dead-letter queue's retention (a redrive replays an old
   * message), and on Kafka the topic's retention plus the dead-letter queue's when
   * `kafka.topicRetentionHours` is given; the settings check both (`settings/windows.ts`).
   * @default 2592000 (30 days)
   */
  readonly inboxTtlSeconds: number;
  /**
   * How long Powertools idempotency keeps the result of a guarded inline side effect, in seconds
   * (`IdempotencyConfig.expiresAfterSeconds`). The effect runs before the inbox commit, so if
   * that commit fails for good and the message is redriven later, only this record stops a second
   * run: the window must cover source + dead-letter retention, like the inbox's.
   * @default 2592000 (30 days)
   */
  readonly sideEffectTtlSeconds: number;
  /**
   * The least remaining invocation time, in milliseconds, with which an inline side effect may
   * start. With less, the message is retried instead (its attempt is not counted): the effect's
   * in-progress lock expires at the invocation's deadline, and an effect that cannot finish
   * before it would be taken over and run twice.
   * @default 5000
   */
  readonly sideEffectMinRemainingMs: number;
  /**
   * Provenance: each applied inbox row also records the keys of the items its message wrote
   * (`wrote`, a list of `<table>:<key as canonical JSON>` strings, at most
   * {@link PROVENANCE_BUDGET_BYTES} of them; beyond it the first ones and `wroteTruncated: true`),
   * so `idempotent-consumer explain --table T --key K` can list the messages behind an item.
   * Off, the inbox row is exactly as without it: a consumer that leaves it off pays nothing.
   * On, each inbox row grows by its keys (at most about 1 KB), which its write units pay.
   * @default false
   */
  readonly provenance?: boolean;
}

/**
 * The most bytes (UTF-8) of item keys an inbox row records under provenance
 * ({@link IdempotencySettings.provenance}); the keys beyond it are left out and the row says so.
 */
export const PROVENANCE_BUDGET_BYTES = 1024;

/**
 * Settings of a Kinesis Data Streams or DynamoDB Streams event source mapping that both the
 * constructs (`KinesisSource`, `DynamoDbStreamSource`) and the local runtime's shard log read, so
 * `cdk deploy` and `npm start -- --source kinesis` batch and filter alike. The constructs' other
 * mapping options (window, starting position, parallelization factor, retries, record age) are
 * their props.
 */
export interface StreamSettings {
  /** Records per invocation, of one shard (1 to 10,000; AWS's default). @default 100 */
  readonly batchSize: number;
  /**
   * Filter criteria of the stream mapping: at most 5 patterns (see {@link FilterPattern}). On
   * Kinesis a pattern filters only on the `data` key (the record's data, decoded from base64: its
   * JSON fields, or the text as a whole); on DynamoDB Streams on the record's own fields
   * (`eventName`, `dynamodb` with `Keys`, `NewImage`, `OldImage` in DynamoDB JSON, e.g.
   * `{ "dynamodb": { "NewImage": { "type": { "S": ["Paid"] } } } }`). A record that matches none is
   * skipped: the shard's checkpoint moves past it without invoking the function, and the local
   * shard log does the same (https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis-filtering.html,
   * https://docs.aws.amazon.com/lambda/latest/dg/with-ddb-filtering.html).
   * @default undefined: no filter
   */
  readonly filters?: readonly FilterPattern[];
}

/** The stream mapping's settings when none are given. */
export const DEFAULT_STREAM_SETTINGS: StreamSettings = { batchSize: 100 };

/** The stream settings of `settings`, with the defaults for what it leaves out. */
export function streamSettingsOf(settings: Pick<ConsumerSettings, 'stream'>): StreamSettings {
  return { ...DEFAULT_STREAM_SETTINGS, ...settings.stream };
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
  /** The topic the mapping reads. @default 'events' */
  readonly topic: string;
  /** Records per invocation, across partitions (1 to 10,000). @default 100 */
  readonly batchSize: number;
  /** Where a new mapping starts reading. @default 'TRIM_HORIZON' */
  readonly startingPosition: 'TRIM_HORIZON' | 'LATEST';
  /**
   * Retries of a failed batch after the first attempt (`MaximumRetryAttempts`, 0 to 10,000).
   * Must be finite: AWS's default, -1, retries a failing record until it leaves the topic and
   * blocks its partition meanwhile. The consumer dead-letters a record itself on its attempt
   * `retry.maxAttempts`; the records of a partition behind a failed one are reported without
   * being run, so each retry of the mapping is not an attempt of every record. Leave it unset
   * for {@link requiredKafkaRetryAttempts}, which leaves room for that.
   * @default requiredKafkaRetryAttempts(settings): maxAttempts × batchSize − 1 + 5, at most 10,000
   */
  readonly retryAttempts?: number;
  /**
   * Oldest record the mapping still sends to the function, in seconds (60 to 604,800), or -1
   * for no limit (`MaximumRecordAgeInSeconds`). Older records go to the on-failure destination
   * as metadata only, unprocessed, so a limit trades lag for loss.
   * @default -1
   */
  readonly maxRecordAgeSeconds: number;
  /**
   * How long the topic keeps records, in hours (the topic's `retention.ms` / the cluster's
   * `log.retention.hours`), or -1 for unlimited. The cluster's retention cannot be read at synth,
   * so this is the user's statement of it: with it, the settings check that the inbox TTL covers it
   * plus the dead-letter queue's retention (`kafkaTopicRetentionProblem`), and warn when it is
   * unlimited and `maxRecordAgeSeconds` does not bound what a mapping re-reads.
   * @default undefined: not known, the check is skipped
   */
  readonly topicRetentionHours?: number;
  /** Split a failed batch in two and retry each half (`BisectBatchOnFunctionError`). @default false */
  readonly bisectBatchOnError: boolean;
  /** Provisioned mode: the fewest event pollers (1 to 200). @default 1 */
  readonly minimumPollers: number;
  /** Provisioned mode: the most event pollers (1 to 2,000, ≥ `minimumPollers`). @default 2 */
  readonly maximumPollers: number;
  /**
   * Filter criteria of the Kafka event source mapping: at most 5 patterns on the `value` key (the
   * record's value, after the schema registry's decoding when there is one; see
   * {@link FilterPattern}). A record that matches none is skipped: its offset is committed without
   * invoking the function, and the local runtime's log does the same. Checked at synth and at a
   * local start (https://docs.aws.amazon.com/lambda/latest/dg/kafka-filtering.html).
   * @default undefined: no filter
   */
  readonly filters?: readonly FilterPattern[];
  /**
   * The consumer's own retry policy for records that fail retryably (see {@link KafkaRetryPolicy}):
   * a delay between attempts, waited within the invocation, and "retry until it succeeds".
   * @default undefined: no delay (the mapping retries at once), attempts capped at `retry.maxAttempts`
   */
  readonly retry?: KafkaRetryPolicy;
}

/**
 * How the consumer retries a Kafka record that failed retryably (a downstream outage, throttling,
 * a predecessor not applied yet). Non-retryable failures (poison: a bad schema, a business rule)
 * are dead-lettered at once whatever the policy.
 *
 * The Kafka event source mapping retries a partially failed batch at once and counts its retries
 * (`MaximumRetryAttempts`): without a delay, a downstream outage of a few seconds spends a record's
 * attempts and dead-letters it. With `delaySeconds`, the handler does not report a failed record at
 * once: it waits the delay (the partition held, the invocation's duration billed) and tries the
 * record, and the rest of its partition in the batch, again within the same invocation, while the
 * invocation's remaining time minus `idempotency.sideEffectMinRemainingMs` allows; then it reports
 * the failure and the mapping retries. Each real attempt is counted once in the attempt log.
 *
 * Kafka Connect's way (`errors.retry.timeout = -1`, a fixed delay): `{ delaySeconds: 30, untilSuccess: true }`.
 *
 * Sources: https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html,
 * https://docs.aws.amazon.com/lambda/latest/dg/with-msk.html. Costs: docs/kafka.md, "Retry policies".
 */
export interface KafkaRetryPolicy {
  /**
   * Seconds to wait between two attempts of a record that failed retryably, within the invocation
   * (0 to 899, an integer; `delaySeconds × 1000 + idempotency.sideEffectMinRemainingMs` must stay
   * below the function timeout, so that one wait fits in an invocation). 0: the mapping retries at once.
   * @default 0
   */
  readonly delaySeconds?: number;
  /**
   * Retry a retryable failure until it succeeds: no `retry.maxAttempts` cap, never `RetriesExhausted`.
   * The mapping's `MaximumRetryAttempts` is then its largest finite value, 10,000 (with an on-failure
   * destination AWS turns -1 into 10), and `kafka.maxRecordAgeSeconds` must be -1: the partition
   * stalls behind the record until the downstream recovers; the lag alarm is the safety net. Needs
   * `delaySeconds` ≥ 1, else the mapping's retries are spent in minutes.
   * @default false
   */
  readonly untilSuccess?: boolean;
}

/** Names of the keys of the tables the library owns: the stack creates them, the engine reads and writes them. */
export const tableKeys = {
  /**
   * Inbox table: partition key `pk` (string); TTL attribute `expiresAt` (epoch seconds). It holds
   * inbox rows (`<consumer>#key#<idempotency key>`), attempt records (`<consumer>#attempt#…`) and
   * outbox items (`<consumer>#outbox#…`).
   */
  inbox: { partitionKey: 'pk', ttlAttribute: 'expiresAt' },
  /** Powertools idempotency persistence layer's default schema (inline side effects). */
  idempotency: { partitionKey: 'id', ttlAttribute: 'expiration' },
} as const;

/** The whole of a consumer's settings. */
export interface ConsumerSettings {
  /**
   * Name of this consumer (1 to 64 letters, digits, `-`, `_`): part of every inbox key, so two
   * consumers can share an inbox table, and the service name of its logs and metrics.
   */
  readonly consumerName: string;
  /** The SQS source queue and its dead-letter queue. */
  readonly queue: QueueSettings;
  /** The Lambda function and its SQS event source mapping. */
  readonly function: FunctionSettings;
  /** The attempt budget of a message and the backoff between its attempts. */
  readonly retry: RetrySettings;
  /** The DynamoDB inbox and the inline side-effect guard. */
  readonly idempotency: IdempotencySettings;
  /** The Kafka event source mapping (Amazon MSK or self-managed), when the consumer reads Kafka. */
  readonly kafka: KafkaSettings;
  /**
   * A Kinesis Data Streams or DynamoDB Streams mapping, when the consumer reads one (optional:
   * settings written before it keep compiling). @default {@link DEFAULT_STREAM_SETTINGS}
   */
  readonly stream?: StreamSettings;
}

/**
 * Receives a source queue message may need without an attempt, beyond those the formula of
 * {@link requiredMaxReceiveCount} counts: retries refused because another invocation holds the
 * side-effect lock, receives too close to the deadline to start, invocations that crashed.
 */
export const RECEIVE_ALLOWANCE = 5;

/**
 * The least `maxReceiveCount` with which the queue's redrive policy never moves a message that
 * still has attempts left: `maxAttempts + 5` on a standard queue; on a FIFO queue every message
 * ahead of it in its group within a batch (up to `batchSize − 1` of them) may fail up to
 * `maxAttempts` times, each failure skipping it, so `maxAttempts × batchSize + 5`.
 */
export function requiredMaxReceiveCount(settings: Pick<ConsumerSettings, 'queue' | 'function' | 'retry'>): number {
  const { maxAttempts } = settings.retry;
  return (settings.queue.fifo ? maxAttempts * settings.function.batchSize : maxAttempts) + RECEIVE_ALLOWANCE;
}

/** The redrive policy's `maxReceiveCount`: the setting, or {@link requiredMaxReceiveCount} when unset. */
export function maxReceiveCount(settings: Pick<ConsumerSettings, 'queue' | 'function' | 'retry'>): number {
  return settings.queue.maxReceiveCount ?? requiredMaxReceiveCount(settings);
}

/**
 * The least Kafka `MaximumRetryAttempts` with which the mapping never gives up on a record that
 * still has attempts left: each record of a partition may fail `maxAttempts` times, and each
 * failure is a retry of the batch for the records behind it, so `maxAttempts × batchSize − 1`;
 * plus {@link RECEIVE_ALLOWANCE} retries that are no attempt of the consumer's (an invocation that
 * crashed or timed out, which the mapping counts and the attempt log cannot). At most 10,000,
 * AWS's limit; exactly that with `kafka.retry.untilSuccess` (the consumer then has no cap of its
 * own, and the mapping's is the one left).
 */
export function requiredKafkaRetryAttempts(settings: Pick<ConsumerSettings, 'kafka' | 'retry'>): number {
  if (settings.kafka.retry?.untilSuccess === true) return MAX_KAFKA_RETRY_ATTEMPTS;
  return Math.min(10_000, settings.retry.maxAttempts * settings.kafka.batchSize - 1 + RECEIVE_ALLOWANCE);
}

/**
 * The largest finite `MaximumRetryAttempts` of a Kafka event source mapping. -1 (infinite) is not
 * finite, and with an on-failure destination AWS applies 10 retries in its place
 * (https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure-destination.html).
 */
export const MAX_KAFKA_RETRY_ATTEMPTS = 10_000;

/** The Kafka mapping's `MaximumRetryAttempts`: the setting, or {@link requiredKafkaRetryAttempts} when unset. */
export function kafkaRetryAttempts(settings: Pick<ConsumerSettings, 'kafka' | 'retry'>): number {
  return settings.kafka.retryAttempts ?? requiredKafkaRetryAttempts(settings);
}

/** The defaults. */
export const defaultSettings: ConsumerSettings = {
  consumerName: 'idempotent-consumer',
  queue: {
    fifo: false,
    visibilityTimeoutSeconds: 180,
    retentionPeriodSeconds: 4 * 24 * 3600,
    deadLetterRetentionPeriodSeconds: 14 * 24 * 3600,
    maxMessageSizeBytes: 262_144,
    deadLetterMaxMessageSizeBytes: 1_048_576,
  },
  function: {
    runtime: 'nodejs24.x',
    timeoutSeconds: 30,
    memorySizeMb: 1024,
    batchSize: 10,
    maxBatchingWindowSeconds: 0,
    maxConcurrency: 5,
  },
  retry: { maxAttempts: 5, backoffBaseSeconds: 2, backoffMaxSeconds: 60 },
  idempotency: {
    inboxTtlSeconds: 30 * 24 * 3600,
    sideEffectTtlSeconds: 30 * 24 * 3600,
    sideEffectMinRemainingMs: 5000,
  },
  kafka: {
    topic: 'events',
    batchSize: 100,
    startingPosition: 'TRIM_HORIZON',
    maxRecordAgeSeconds: -1,
    bisectBatchOnError: false,
    minimumPollers: 1,
    maximumPollers: 2,
  },
};

/** CloudWatch namespace of the consumer's metrics (Powertools Metrics, embedded metric format). */
export const METRICS_NAMESPACE = 'IdempotentConsumer';

/**
 * Base names of the resources the library creates. CDK uses them as construct ids (it generates
 * the physical names in AWS); the local runtime uses them as the table and queue names.
 */
export const resourceNames = {
  queue: 'Queue',
  deadLetterQueue: 'DeadLetterQueue',
  inboxTable: 'Inbox',
  idempotencyTable: 'Idempotency',
  payloadBucket: 'PayloadBucket',
} as const;

/**
 * Names of the Lambda environment variables that carry the settings and the resource names.
 * The construct (or the local runtime) sets them with {@link lambdaEnvironment};
 * `config/runtimeConfig.ts` reads them.
 */
export const environmentVariables = {
  consumerName: 'CONSUMER_NAME',
  inboxTable: 'INBOX_TABLE_NAME',
  idempotencyTable: 'IDEMPOTENCY_TABLE_NAME',
  deadLetterQueueUrl: 'DEAD_LETTER_QUEUE_URL',
  /** Optional: the S3 bucket for dead-letter bodies too large for the DLQ. */
  payloadBucket: 'PAYLOAD_BUCKET_NAME',
  fifo: 'SOURCE_QUEUE_FIFO',
  maxAttempts: 'MAX_ATTEMPTS',
  inboxTtlSeconds: 'INBOX_TTL_SECONDS',
  sideEffectTtlSeconds: 'SIDE_EFFECT_TTL_SECONDS',
  sideEffectMinRemainingMs: 'SIDE_EFFECT_MIN_REMAINING_MS',
  retryBackoffBaseSeconds: 'RETRY_BACKOFF_BASE_SECONDS',
  retryBackoffMaxSeconds: 'RETRY_BACKOFF_MAX_SECONDS',
  /** Optional: `kafka.retry.delaySeconds`, set only when above 0. */
  kafkaRetryDelaySeconds: 'KAFKA_RETRY_DELAY_SECONDS',
  /** Optional: `true` when `retry.parkOutOfOrder`; absent when off. */
  parkOutOfOrder: 'PARK_OUT_OF_ORDER',
  /** Optional: `true` when `kafka.retry.untilSuccess`; absent when off. */
  kafkaRetryUntilSuccess: 'KAFKA_RETRY_UNTIL_SUCCESS',
  deadLetterMaxMessageSizeBytes: 'DEAD_LETTER_MAX_MESSAGE_SIZE_BYTES',
  /** Optional: `true` when inbox rows record the keys their message wrote (`idempotency.provenance`); absent when off. */
  provenance: 'PROVENANCE',
  /** Prefix of one variable per business table: `TABLE_NAME_<LOGICAL NAME IN UPPER SNAKE CASE>` (see `tableEnvironmentVariable`). */
  tablePrefix: 'TABLE_NAME_',
} as const;

/**
 * The environment variable that carries the physical name of the business table whose logical
 * name (the key in the consumer's `tables` option) is `logicalName`: `orders` →
 * `TABLE_NAME_ORDERS`, `stockItems` → `TABLE_NAME_STOCK_ITEMS` (upper snake case). Names that
 * upper snake case would merge (`stock_items`, `stockItems`, `STOCK_ITEMS`, all among the
 * consumer's tables) each keep their own variable, with the name as it is written:
 * `TABLE_NAME_stock_items`, `TABLE_NAME_stockItems`, `TABLE_NAME_STOCK_ITEMS`. So every set of names
 * the library accepts maps one to one onto variables, and the construct, the local runtime and the
 * function agree on them (each passes the consumer's whole set of table names).
 *
 * @param logicalNames - all the consumer's table names (the variable of a name depends on the others); `logicalName` if left out
 * @throws Error when a name is not 1 to 64 letters, digits or `_`, starting with a letter
 */
export function tableEnvironmentVariable(logicalName: string, logicalNames: Iterable<string> = [logicalName]): string {
  const variable = tableEnvironmentVariables([logicalName, ...logicalNames]).get(logicalName);
  return variable!;
}

/**
 * The environment variable of each of a consumer's business tables (see {@link tableEnvironmentVariable}).
 *
 * @returns logical name → variable name, one to one
 * @throws Error when a name is not 1 to 64 letters, digits or `_`, starting with a letter
 */
export function tableEnvironmentVariables(logicalNames: Iterable<string>): Map<string, string> {
  const names = [...new Set(logicalNames)];
  for (const name of names) {
    if (!/^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(name))
      throw new Error(`table name "${name}" must be 1 to 64 letters, digits or '_', starting with a letter`);
  }
  const snake = (name: string) => name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();
  const sharing = new Map<string, number>();
  for (const name of names) sharing.set(snake(name), (sharing.get(snake(name)) ?? 0) + 1);
  return new Map(names.map((name) => [name, `${environmentVariables.tablePrefix}${sharing.get(snake(name))! > 1 ? name : snake(name)}`]));
}

/** Resource names known once the resources exist (generated by CDK, or created locally). */
export interface DeployedResourceNames {
  /** The physical name of the inbox table (inbox rows, attempt records, outbox items). */
  readonly inboxTable: string;
  /** The physical name of the Powertools idempotency table (inline side effects). */
  readonly idempotencyTable: string;
  /** The dead-letter queue's URL (`https://sqs.<region>.amazonaws.com/<account>/<name>`). */
  readonly deadLetterQueueUrl: string;
  /** The business tables: logical name → physical name. @default {} */
  readonly tables?: Readonly<Record<string, string>>;
  /** The bucket for dead-letter bodies too large for the DLQ. @default none: such a body fails its dead-lettering */
  readonly payloadBucket?: string;
}

/**
 * The Lambda environment for these settings and resources: the one place both the construct and
 * the local runtime build it from.
 *
 * @returns a map of environment variable name → string value
 * @throws Error when a business table's logical name is not valid (see {@link tableEnvironmentVariable})
 */
export function lambdaEnvironment(settings: ConsumerSettings, resources: DeployedResourceNames): Record<string, string> {
  const env = environmentVariables;
  const environment: Record<string, string> = {
    [env.consumerName]: settings.consumerName,
    [env.inboxTable]: resources.inboxTable,
    [env.idempotencyTable]: resources.idempotencyTable,
    [env.deadLetterQueueUrl]: resources.deadLetterQueueUrl,
    [env.fifo]: String(settings.queue.fifo),
    [env.maxAttempts]: String(settings.retry.maxAttempts),
    [env.inboxTtlSeconds]: String(settings.idempotency.inboxTtlSeconds),
    [env.sideEffectTtlSeconds]: String(settings.idempotency.sideEffectTtlSeconds),
    [env.sideEffectMinRemainingMs]: String(settings.idempotency.sideEffectMinRemainingMs),
    [env.retryBackoffBaseSeconds]: String(settings.retry.backoffBaseSeconds),
    [env.retryBackoffMaxSeconds]: String(settings.retry.backoffMaxSeconds),
    [env.deadLetterMaxMessageSizeBytes]: String(settings.queue.deadLetterMaxMessageSizeBytes),
  };
  if (resources.payloadBucket !== undefined) environment[env.payloadBucket] = resources.payloadBucket;
  // Only when on: a consumer that leaves provenance off gets the environment it always had.
  if (settings.idempotency.provenance === true) environment[env.provenance] = 'true';
  // Only when set: a consumer without a Kafka retry policy gets the environment it always had.
  const kafkaRetry = settings.kafka.retry;
  if ((kafkaRetry?.delaySeconds ?? 0) > 0) environment[env.kafkaRetryDelaySeconds] = String(kafkaRetry?.delaySeconds);
  if (kafkaRetry?.untilSuccess === true) environment[env.kafkaRetryUntilSuccess] = 'true';
  if (settings.retry.parkOutOfOrder === true) environment[env.parkOutOfOrder] = 'true';
  const variables = tableEnvironmentVariables(Object.keys(resources.tables ?? {}));
  for (const [logicalName, physicalName] of Object.entries(resources.tables ?? {})) {
    environment[variables.get(logicalName)!] = physicalName;
  }
  return environment;
}

/** A settings object with some values replaced (nested objects are merged one level deep). */
export type SettingsOverrides = {
  readonly consumerName?: string;
  readonly queue?: Partial<QueueSettings>;
  readonly function?: Partial<FunctionSettings>;
  readonly retry?: Partial<RetrySettings>;
  readonly idempotency?: Partial<IdempotencySettings>;
  readonly kafka?: Partial<KafkaSettings>;
  readonly stream?: Partial<StreamSettings>;
};

/** Returns `base` with `overrides` applied; neither argument is changed. */
export function withOverrides(overrides: SettingsOverrides = {}, base: ConsumerSettings = defaultSettings): ConsumerSettings {
  return {
    consumerName: overrides.consumerName ?? base.consumerName,
    queue: { ...base.queue, ...overrides.queue },
    function: { ...base.function, ...overrides.function },
    retry: { ...base.retry, ...overrides.retry },
    idempotency: { ...base.idempotency, ...overrides.idempotency },
    kafka: { ...base.kafka, ...overrides.kafka },
    stream: { ...streamSettingsOf(base), ...overrides.stream },
  };
}
