import type { Logger } from '@aws-lambda-powertools/logger';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import type { SNSClient } from '@aws-sdk/client-sns';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { createOutboxRelay, type OutboxRelayHandler } from 'idempotent-consumer/outbox';
import { defaultOutboxRelaySettings, outboxRelayEnvironment, type OutboxRelaySettings } from 'idempotent-consumer/outbox';
import { outboxFilterPattern } from 'idempotent-consumer/outbox';
import {
  DynamoDbStreamEventSourcePoller,
  type DynamoDbStreamOnFailureRecord,
  type StreamInvocationReport,
} from './DynamoDbStreamEventSourcePoller.js';
import { ensureInboxStream } from './ensureInboxStream.js';

/** Options of {@link startLocalRelay}. */
export interface LocalRelayOptions {
  /** A client of DynamoDB Local (or LocalStack), with its endpoint set. */
  readonly dynamoDb: DynamoDBClient;
  /**
   * A DynamoDB Streams client for the same endpoint.
   * @default one built from `dynamoDb`'s endpoint, region and credentials
   */
  readonly streams?: DynamoDBStreamsClient;
  /** The consumer whose outbox items to publish (`settings.consumerName`). */
  readonly consumerName: string;
  /** The inbox table; its stream is turned on (`NEW_IMAGE`) when it is off. */
  readonly inboxTableName: string;
  /** The Powertools idempotency table (partition key `id`), e.g. the consumer's. */
  readonly idempotencyTableName: string;
  /**
   * The built-in destinations, by logical name: an SNS topic ARN or an SQS queue URL of the local
   * SQS/SNS server, or an event bus ARN of the local EventBridge (`startEventBridgeServer`), e.g.
   * `{ default: queueUrl }` or `{ default: eventBridge.createEventBus('orders') }`.
   * @default {}
   */
  readonly destinations?: Readonly<Record<string, string>>;
  /**
   * Clients of the local servers for those destinations: the SQS/SNS server's, and for an event bus
   * one of the local EventBridge (`new EventBridgeClient(localClientConfig(eventBridge.endpoint))`).
   */
  readonly clients?: { readonly sns?: SNSClient; readonly sqs?: SQSClient; readonly eventBridge?: EventBridgeClient };
  /**
   * The relay to run: `createOutboxRelay(options)` with destinations in code, or one with faults
   * injected. Each execution environment is `relay.withRuntime(...)` with the local clients.
   * @default createOutboxRelay()
   */
  readonly relay?: OutboxRelayHandler;
  /** The relay's settings (batch size, retries, bisect, TTLs, timeout). @default defaultOutboxRelaySettings */
  readonly settings?: OutboxRelaySettings;
  /** The on-failure destination: receives the metadata of each batch given up. @default kept in {@link LocalRelay.gaveUp} only */
  readonly onFailure?: (record: DynamoDbStreamOnFailureRecord) => void | Promise<void>;
  /** Called after each invocation. */
  readonly onInvocation?: (report: StreamInvocationReport) => void;
  /** @default a Powertools Logger per execution environment */
  readonly logger?: Logger;
  /** @default Powertools Metrics per execution environment (EMF on standard output) */
  readonly metrics?: Metrics;
}

/** A running local relay. */
export interface LocalRelay {
  /** The inbox table's stream. */
  readonly streamArn: string;
  /** The stream poller (invocations, `pollOnce` for tests). */
  readonly poller: DynamoDbStreamEventSourcePoller;
  /** Messages the relay sent to a destination so far (a second send after a crash counts again). */
  published(): number;
  /** On-failure records of the batches given up so far. */
  gaveUp(): readonly DynamoDbStreamOnFailureRecord[];
  /**
   * Resolves once every outbox item committed before the call has been relayed (or given up).
   * @throws PollerIdleTimeoutError after `timeoutMs` (default 60,000 ms)
   */
  drain(options?: { readonly timeoutMs?: number }): Promise<void>;
  /** Stops polling after the invocation in flight. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Runs the outbox relay on the inbox table's stream in DynamoDB Local, as the `OutboxRelay`
 * construct runs it in AWS: the same handler (`createOutboxRelay`), the same environment
 * (`outboxRelayEnvironment`), the same filter (`outboxFilterPattern`: outbox inserts of this
 * consumer) and the same event source settings (batch size, finite retries, bisect on error,
 * function timeout), through {@link DynamoDbStreamEventSourcePoller}. It turns the table's stream
 * on first, if it is off.
 *
 * @throws ProvisioningError when the table's stream has a view type without new images
 * @example
 * const relay = await startLocalRelay({ dynamoDb, consumerName, inboxTableName, idempotencyTableName,
 *   destinations: { default: outboxQueueUrl }, clients: { sqs } });
 * // … run the consumer …
 * await relay.drain();
 * const { written, published } = await countOutboxItems(dynamoDb, inboxTableName, consumerName);
 * await relay.stop();
 */
export async function startLocalRelay(options: LocalRelayOptions): Promise<LocalRelay> {
  const settings = options.settings ?? defaultOutboxRelaySettings;
  const streamArn = await ensureInboxStream(options.dynamoDb, options.inboxTableName);
  const streams = options.streams ?? (await streamsClientFor(options.dynamoDb));
  const environment = outboxRelayEnvironment(settings, {
    consumerName: options.consumerName,
    inboxTable: options.inboxTableName,
    idempotencyTable: options.idempotencyTableName,
    destinations: options.destinations ?? {},
  });
  const relay = options.relay ?? createOutboxRelay();
  let sent = 0;
  const gaveUp: DynamoDbStreamOnFailureRecord[] = [];
  const poller = new DynamoDbStreamEventSourcePoller({
    streams,
    streamArn,
    createHandler: () =>
      relay.withRuntime({
        environment,
        clients: { dynamoDb: options.dynamoDb, ...options.clients },
        ...(options.logger === undefined ? {} : { logger: options.logger }),
        ...(options.metrics === undefined ? {} : { metrics: options.metrics }),
        onRelayed: (relayed) => {
          if (relayed.sent) sent += 1;
        },
      }),
    batchSize: settings.batchSize,
    retryAttempts: settings.retryAttempts,
    bisectBatchOnError: settings.bisectBatchOnError,
    filters: [outboxFilterPattern(options.consumerName)],
    functionTimeoutSeconds: settings.timeoutSeconds,
    memorySizeMb: settings.memorySizeMb,
    functionName: `${options.consumerName}-outbox-relay`,
    onFailure: async (record) => {
      gaveUp.push(record);
      await options.onFailure?.(record);
    },
    ...(options.onInvocation === undefined ? {} : { onInvocation: options.onInvocation }),
  });
  poller.start();
  return {
    streamArn,
    poller,
    published: () => sent,
    gaveUp: () => [...gaveUp],
    drain: (drainOptions) => poller.drain(drainOptions),
    stop: async () => {
      await poller.stop();
      if (options.streams === undefined) streams.destroy();
    },
  };
}

/** A DynamoDB Streams client with the endpoint, region and credentials of `dynamoDb`. */
async function streamsClientFor(dynamoDb: DynamoDBClient): Promise<DynamoDBStreamsClient> {
  const endpoint = await dynamoDb.config.endpoint?.();
  if (endpoint === undefined) throw new Error('the DynamoDB client has no endpoint set: pass a DynamoDB Streams client as `streams`');
  const port = endpoint.port === undefined ? '' : `:${endpoint.port}`;
  return new DynamoDBStreamsClient({
    endpoint: `${endpoint.protocol}//${endpoint.hostname}${port}${endpoint.path}`,
    region: await dynamoDb.config.region(),
    credentials: dynamoDb.config.credentials,
  });
}
