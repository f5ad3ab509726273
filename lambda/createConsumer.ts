import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { RetryBackoff } from './batch/retryBackoff.js';
import type { RuntimeConfig } from './config/runtimeConfig.js';
import { DeadLetterQueue } from './dlq/DeadLetterQueue.js';
import { DynamoDBInbox } from './inbox/DynamoDBInbox.js';
import type { Inbox } from './inbox/Inbox.js';
import type { OutcomeObserver } from './observability/outcomes.js';
import { MessageConsumer } from './processing/MessageConsumer.js';
import { OrderEventProcessor } from './processing/OrderEventProcessor.js';
import { createGuardedNotifier, type GuardedNotifier } from './sideEffects/guardedNotifier.js';
import { DynamoDBNotificationLog, type Notifier } from './sideEffects/Notifier.js';

/** The AWS clients the consumer uses: created once per execution environment. */
export interface ConsumerClients {
  readonly dynamoDb: DynamoDBClient;
  readonly sqs: SQSClient;
}

/** Everything an event source handler needs, built once at cold start. */
export interface Consumer {
  readonly config: RuntimeConfig;
  /** The inbox, for the handlers' batch prefetch (`prefetch` / `forget`). */
  readonly inbox: Pick<Inbox, 'prefetch' | 'forget'>;
  readonly messageConsumer: MessageConsumer;
  /** Call `registerLambdaContext` at the start of every invocation. */
  readonly notifier: GuardedNotifier;
  readonly retryBackoff: RetryBackoff;
}

/** Optional parts of {@link createConsumer}, for tests and the local runtime. */
export interface ConsumerOverrides {
  /** Receives every outcome (logs, metrics, the local report). */
  readonly observer?: OutcomeObserver;
  /** Replaces the unguarded notifier (the guard stays). */
  readonly notifier?: Notifier;
  /** Wraps the processor, e.g. to count or delay calls in a test. */
  readonly wrapProcessor?: (processor: OrderEventProcessor) => Pick<OrderEventProcessor, 'process'>;
  /** The clock. */
  readonly now?: () => Date;
}

/**
 * The composition root: wires the DynamoDB inbox, the guarded notifier, the processor, the
 * dead-letter queue and the retry backoff from the runtime configuration and the clients.
 */
export function createConsumer(config: RuntimeConfig, clients: ConsumerClients, overrides: ConsumerOverrides = {}): Consumer {
  const documentClient = DynamoDBDocumentClient.from(clients.dynamoDb, {
    marshallOptions: { removeUndefinedValues: true },
  });
  const now = overrides.now ?? (() => new Date());
  const inbox = new DynamoDBInbox({
    client: documentClient,
    inboxTable: config.inboxTable,
    ordersTable: config.ordersTable,
    consumerName: config.consumerName,
    ttlSeconds: config.inboxTtlSeconds,
    now,
  });
  const notifier = createGuardedNotifier({
    notifier: overrides.notifier ?? new DynamoDBNotificationLog(documentClient, config.ordersTable),
    persistenceStore: new DynamoDBPersistenceLayer({ tableName: config.idempotencyTable, awsSdkV3Client: clients.dynamoDb }),
    expiresAfterSeconds: config.sideEffectTtlSeconds,
  });
  const processor = new OrderEventProcessor({ inbox, notifier });
  const messageConsumer = new MessageConsumer({
    processor: overrides.wrapProcessor?.(processor) ?? processor,
    deadLetterQueue: new DeadLetterQueue({
      sqs: clients.sqs,
      queueUrl: config.deadLetterQueueUrl,
      maxMessageSizeBytes: config.deadLetterMaxMessageSizeBytes,
    }),
    observer: overrides.observer ?? { onOutcome: () => undefined },
    now,
  });
  const retryBackoff = new RetryBackoff({
    sqs: clients.sqs,
    baseSeconds: config.retryBackoffBaseSeconds,
    maxSeconds: config.retryBackoffMaxSeconds,
  });
  return { config, inbox, messageConsumer, notifier, retryBackoff };
}
