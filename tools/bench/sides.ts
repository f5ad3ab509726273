/**
 * The two sides of the benchmark on one DynamoDB Local and one SQS server: the engine (the café
 * handler built with `createIdempotentConsumer(cafeConsumerOptions, runtime)`) and the
 * Powertools baseline, each with its own tables and metered clients, a measured execution
 * environment and a second one for setups.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { CreateTableCommand, DeleteTableCommand, DynamoDBClient, type KeySchemaElement } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, DeleteQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { createIdempotentConsumer, type OutcomeRecord } from 'idempotent-consumer';
import { lambdaEnvironment, maxReceiveCount, tableKeys, withOverrides } from 'idempotent-consumer/settings';
import { cafeConsumerOptions } from '@idempotent-consumer/example-cafe/consumer';
import { cafeSettings, cafeTables } from '@idempotent-consumer/example-cafe/settings';
import { type ConflictTracker, installStrictDynamoDb, type KeySchema, localClientConfig } from '@idempotent-consumer/local/internal';
import { createPowertoolsBaseline } from './powertoolsBaseline.js';
import { ItemSizes, RequestMeter } from './RequestMeter.js';
import { answerSimulatedDeletes } from './simulatedDeletes.js';
import type { SimulatedQueue } from './SimulatedQueue.js';

/** Which side. */
export const SideName = { Engine: 'engine', Baseline: 'baseline' } as const;
export type SideName = (typeof SideName)[keyof typeof SideName];

/** Deliveries of one run by what became of them. */
export interface DeliveryCounts {
  applied: number;
  duplicate: number;
  /** Dead-lettered by the consumer itself (the engine, with a reason). */
  deadLettered: number;
  /** Reported as a batch item failure (it comes back, unless it was parked and is taken up from the park). */
  retried: number;
  /** Dead letters by the consumer's reason (`failureReason`); the engine's only. */
  deadLetterReasons: Record<string, number>;
  /**
   * Retries by the consumer's reason (the engine's), or by the name of the error (the baseline's);
   * a parked retry of the engine's under `<reason>, parked` (docs/parking.md).
   */
  retryReasons: Record<string, number>;
  /** Of the retries, the engine's deliveries that were parked (their outcome's `parked`). */
  parked: number;
  /**
   * Of the engine's outcomes that settled a message (applied, duplicate, dead-lettered), those
   * decided from the park (their `fromPark`): not a receive.
   */
  fromPark: number;
  /**
   * Duplicates of a message settled by another of its deliveries in this run, counted here and not
   * as duplicates (so that applied, duplicate and dead-lettered count messages): a message taken
   * up from the park while it was received again (or while its parking delivery decided it again)
   * is applied by one delivery and found a duplicate by the other, in either order of their
   * outcomes (an invocation reports its outcomes when it ends, not when it commits).
   */
  settledAgain: number;
  /** What each message settled so far ended as (applied, duplicate or dead-lettered), the engine's. */
  readonly settledMessages: Map<string, 'applied' | 'duplicate' | 'dead-lettered'>;
}

/** An execution environment of {@link Side.newEnvironment}. */
export interface SeparateEnvironment {
  readonly handler: (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;
  /** Its own meter (the item sizes shared with the side's): set its `tally` and `intervals` per run and invocation. */
  readonly meter: RequestMeter;
  /** Milliseconds the consumer chose to wait so far (the engine's backoff after a contended commit or read); 0 for the baseline. */
  readonly waits: { ms: number };
}

/** One side: the handler measured, another for setups, and where its requests and outcomes are counted. */
export interface Side {
  readonly name: SideName;
  /** The measured execution environment: one for the whole benchmark, as a warm Lambda. */
  readonly handler: (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;
  /** Another execution environment (its own caches), for setups. */
  readonly setupHandler: (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;
  /** A new execution environment, as after a cold start (empty caches), counted like `handler`. */
  readonly newHandler: () => (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;
  /**
   * A new execution environment with AWS SDK clients of its own (a separate Lambda execution
   * environment: its own connections and caches), counted like `handler`, its DynamoDB client
   * behind the strict DynamoDB layer of the local runtime: requests in flight at the same moment
   * conflict as on AWS (`TransactionConflict`), tracked by `conflictTracker`, which the
   * environments of one run share. Its clients are destroyed by {@link Sides.dispose}.
   */
  readonly newEnvironment: (conflictTracker: ConflictTracker) => SeparateEnvironment;
  readonly meter: RequestMeter;
  /**
   * The simulated queues being drained for this side: the engine's SQS clients answer a
   * `DeleteMessage(Batch)` of their receipt handles from them (`simulatedDeletes.ts`). Whoever
   * drains a queue adds it here, and removes it when done.
   */
  readonly simulatedQueues: Set<SimulatedQueue>;
  /** The redrive policy of this side's queue. */
  readonly maxReceiveCount: number;
  /** Where outcomes are counted now; replaced by the benchmark for each run. */
  counts: DeliveryCounts;
}

/** The benchmark's resources and both sides. */
export interface Sides {
  readonly engine: Side;
  readonly baseline: Side;
  /** The source queue's ARN (records carry it; the engine's retry backoff looks the queue up by it). */
  readonly queueArn: string;
  /** Whether the engine parks out-of-order messages (`retry.parkOutOfOrder`, docs/parking.md). */
  readonly parking: boolean;
  /** Whether the engine keeps each event's inbox mark on its order (`inboxHome`, docs/inbox-home.md). */
  readonly inboxHome: boolean;
  /** Deletes the tables and queues and destroys the clients. */
  dispose(): Promise<void>;
}

export const emptyCounts = (): DeliveryCounts => ({
  applied: 0,
  duplicate: 0,
  deadLettered: 0,
  retried: 0,
  deadLetterReasons: {},
  retryReasons: {},
  parked: 0,
  fromPark: 0,
  settledAgain: 0,
  settledMessages: new Map(),
});

/** Options of {@link createSides}. */
export interface CreateSidesOptions {
  /**
   * Whether the engine parks out-of-order messages (`retry.parkOutOfOrder`): `true` runs it as the
   * café's settings ship it, `false` overrides them. The baseline never parks.
   * @default false
   */
  readonly parking?: boolean;
  /**
   * Whether the engine keeps each event's inbox mark on its order (`inboxHome`,
   * docs/inbox-home.md): `true` runs the café's consumer as it ships, `false` without `inboxHome`
   * (an inbox row per event). The baseline is unaffected.
   * @default true
   */
  readonly inboxHome?: boolean;
}

/**
 * The maxReceiveCount of the baseline's queue: 5, AWS's recommended least value
 * (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html), which gives
 * each message the same 5 attempts the engine's retry budget (`retry.maxAttempts`) gives it.
 */
export const BASELINE_MAX_RECEIVE_COUNT = 5;

/**
 * Creates both sides' tables (on demand) and the engine's queues, under a unique prefix.
 *
 * @param endpoints - DynamoDB and SQS endpoints (the embedded emulators, or others)
 */
export async function createSides(
  endpoints: { readonly dynamoDb: string; readonly sqs: string },
  options: CreateSidesOptions = {},
): Promise<Sides> {
  const parking = options.parking ?? false;
  const inboxHome = options.inboxHome ?? true;
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  const prefix = `bench-${randomUUID().slice(0, 8)}-`;
  const sizes = new ItemSizes();
  const clients: { destroy(): void }[] = [];
  const dynamoDbClient = () => {
    const client = new DynamoDBClient(localClientConfig(endpoints.dynamoDb));
    clients.push(client);
    return client;
  };
  const sqsClient = () => {
    const client = new SQSClient(localClientConfig(endpoints.sqs));
    clients.push(client);
    return client;
  };
  const admin = { dynamoDb: dynamoDbClient(), sqs: sqsClient() };

  const names = {
    inbox: `${prefix}engine-Inbox`,
    engineIdempotency: `${prefix}engine-Idempotency`,
    engineOrders: `${prefix}engine-orders`,
    baselineIdempotency: `${prefix}baseline-Idempotency`,
    baselineOrders: `${prefix}baseline-orders`,
    baselineOutbox: `${prefix}baseline-Outbox`,
  };
  const orderKeys = [cafeTables.orders.partitionKey, cafeTables.orders.sortKey];
  const tables: [string, readonly string[]][] = [
    [names.inbox, [tableKeys.inbox.partitionKey]],
    [names.engineIdempotency, [tableKeys.idempotency.partitionKey]],
    [names.engineOrders, orderKeys],
    [names.baselineIdempotency, [tableKeys.idempotency.partitionKey]],
    [names.baselineOrders, orderKeys],
    [names.baselineOutbox, [tableKeys.inbox.partitionKey]],
  ];
  await Promise.all(tables.map(([name, keys]) => createTable(admin.dynamoDb, name, keys)));
  for (const [name, keys] of tables) sizes.registerTable(name, keys);
  // Every table's key schema for the strict layer, so that it never sends a DescribeTable of its own.
  const keySchemas: Record<string, KeySchema> = Object.fromEntries(
    tables.map(([name, [partitionKey, sortKey]]) => [name, { partitionKey: partitionKey!, ...(sortKey === undefined ? {} : { sortKey }) }]),
  );
  const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
  const strictDynamoDbClient = (meter: RequestMeter, conflictTracker: ConflictTracker) => {
    const client = dynamoDbClient();
    meter.instrumentDynamoDb(client);
    installStrictDynamoDb(client, { conflictTracker, keySchemas });
    return client;
  };
  const dlq = await admin.sqs.send(
    new CreateQueueCommand({
      QueueName: `${prefix}DeadLetterQueue`,
      Attributes: { MaximumMessageSize: String(cafeSettings.queue.deadLetterMaxMessageSizeBytes) },
    }),
  );
  const queue = await admin.sqs.send(new CreateQueueCommand({ QueueName: `${prefix}Queue` }));
  const queueArn = (await admin.sqs.send(new GetQueueAttributesCommand({ QueueUrl: queue.QueueUrl, AttributeNames: ['QueueArn'] })))
    .Attributes!.QueueArn!;

  // The engine: the café handler on the public API, with metered clients.
  const engineMeter = new RequestMeter(sizes);
  const engineQueues = new Set<SimulatedQueue>();
  // The engine's SQS clients: metered, and a delete by a simulated queue's receipt handle (a parked
  // message settled from the park) answered by that queue, after the meter has counted it.
  const engineSqsClient = (meter: RequestMeter) => {
    const client = sqsClient();
    meter.instrumentSqs(client);
    answerSimulatedDeletes(client, engineQueues);
    return client;
  };
  const engineClients = { dynamoDb: dynamoDbClient(), sqs: engineSqsClient(engineMeter) };
  engineMeter.instrumentDynamoDb(engineClients.dynamoDb);
  // The café's settings with parking off (the library's default), or as the café ships them (`--parking on`).
  const engineSettings = parking ? cafeSettings : withOverrides({ retry: { parkOutOfOrder: false } }, cafeSettings);
  const environment = lambdaEnvironment(engineSettings, {
    inboxTable: names.inbox,
    idempotencyTable: names.engineIdempotency,
    deadLetterQueueUrl: dlq.QueueUrl!,
    tables: { orders: names.engineOrders },
  });
  const engineRuntime = (side: () => Side, clients: { dynamoDb: DynamoDBClient; sqs: SQSClient } = engineClients) => ({
    environment,
    clients,
    logger: new Logger({ serviceName: cafeSettings.consumerName, logLevel: 'SILENT' }),
    metrics: new Metrics({ namespace: 'Benchmark', serviceName: cafeSettings.consumerName }),
    observer: { onOutcome: (record: OutcomeRecord) => countEngineOutcome(side().counts, record) },
  });
  // The café's consumer as it ships (each event's inbox mark on its order), or with an inbox row per event (`--inbox-home off`).
  const engineOptions = inboxHome ? cafeConsumerOptions : { ...cafeConsumerOptions, inboxHome: undefined };
  const engineHandler = createIdempotentConsumer(
    engineOptions,
    engineRuntime(() => engine),
  );
  const engine: Side = {
    name: SideName.Engine,
    handler: engineHandler.sqs,
    setupHandler: engineHandler.withRuntime(engineRuntime(() => engine)).sqs,
    newHandler: () => engineHandler.withRuntime(engineRuntime(() => engine)).sqs,
    newEnvironment: (conflictTracker) => {
      const meter = new RequestMeter(sizes);
      const clients = { dynamoDb: strictDynamoDbClient(meter, conflictTracker), sqs: engineSqsClient(meter) };
      const waits = { ms: 0 };
      const sleep = async (ms: number) => {
        waits.ms += ms;
        await pause(ms);
      };
      return {
        handler: createIdempotentConsumer(engineOptions, { ...engineRuntime(() => engine, clients), sleep }).sqs,
        meter,
        waits,
      };
    },
    meter: engineMeter,
    simulatedQueues: engineQueues,
    maxReceiveCount: maxReceiveCount(engineSettings),
    counts: emptyCounts(),
  };

  // The baseline: the same business code the typical Powertools way.
  const baselineMeter = new RequestMeter(sizes);
  const baselineDynamoDb = dynamoDbClient();
  baselineMeter.instrumentDynamoDb(baselineDynamoDb);
  const baselineHandler = (dynamoDb: DynamoDBClient = baselineDynamoDb) =>
    createPowertoolsBaseline({
      dynamoDb,
      ordersTable: names.baselineOrders,
      idempotencyTable: names.baselineIdempotency,
      outboxTable: names.baselineOutbox,
      consumerName: cafeSettings.consumerName,
      outboxTtlSeconds: cafeSettings.idempotency.inboxTtlSeconds,
      onOutcome: (_messageId, outcome, errorName) => {
        const counts = baseline.counts;
        if (outcome === 'applied') counts.applied += 1;
        else if (outcome === 'duplicate') counts.duplicate += 1;
        else {
          counts.retried += 1;
          increment(counts.retryReasons, errorName ?? 'unknown');
        }
      },
    });
  const baseline: Side = {
    name: SideName.Baseline,
    handler: baselineHandler(),
    setupHandler: baselineHandler(),
    newHandler: () => baselineHandler(),
    newEnvironment: (conflictTracker) => {
      const meter = new RequestMeter(sizes);
      return { handler: baselineHandler(strictDynamoDbClient(meter, conflictTracker)), meter, waits: { ms: 0 } };
    },
    meter: baselineMeter,
    simulatedQueues: new Set(),
    maxReceiveCount: BASELINE_MAX_RECEIVE_COUNT,
    counts: emptyCounts(),
  };

  return {
    engine,
    baseline,
    queueArn,
    parking,
    inboxHome,
    dispose: async () => {
      try {
        await Promise.allSettled([
          ...tables.map(([TableName]) => admin.dynamoDb.send(new DeleteTableCommand({ TableName }))),
          ...[queue.QueueUrl, dlq.QueueUrl].map((QueueUrl) => admin.sqs.send(new DeleteQueueCommand({ QueueUrl }))),
        ]);
      } finally {
        for (const client of clients) client.destroy();
      }
    },
  };
}

/** The reason of a retry or dead letter: `RetriesExhausted (TransactionConflict)` when the last error differs from the reason. */
function reasonOf(record: OutcomeRecord): string {
  const reason = record.reason ?? record.errorType ?? 'unknown';
  return record.errorType === undefined || record.errorType === reason ? reason : `${reason} (${record.errorType})`;
}

function increment(counts: Record<string, number>, key: string): void {
  counts[key] = (counts[key] ?? 0) + 1;
}

/** Counts one of the engine's outcomes into `counts` (see {@link DeliveryCounts}: parked, from the park, settled again). */
export function countEngineOutcome(counts: DeliveryCounts, record: OutcomeRecord): void {
  if (record.outcome === 'retried') {
    counts.retried += 1;
    if (record.parked === true) counts.parked += 1;
    increment(counts.retryReasons, record.parked === true ? `${reasonOf(record)}, parked` : reasonOf(record));
    return;
  }
  if (record.fromPark === true) counts.fromPark += 1;
  // A message settled by two deliveries, one applying it and the other finding it a duplicate,
  // counts once, as applied (see `settledAgain`); a message applied or dead-lettered twice is
  // counted twice, and the run's checks report it.
  const before = counts.settledMessages.get(record.messageId);
  if (before !== undefined && record.outcome === 'duplicate') {
    counts.settledAgain += 1;
    return;
  }
  if (before === 'duplicate' && record.outcome === 'applied') {
    counts.settledAgain += 1;
    counts.duplicate -= 1;
  }
  counts.settledMessages.set(record.messageId, record.outcome);
  switch (record.outcome) {
    case 'applied':
      counts.applied += 1;
      return;
    case 'duplicate':
      counts.duplicate += 1;
      return;
    case 'dead-lettered':
      counts.deadLettered += 1;
      increment(counts.deadLetterReasons, reasonOf(record));
      return;
  }
}

async function createTable(dynamoDb: DynamoDBClient, name: string, keys: readonly string[]): Promise<void> {
  const schema: KeySchemaElement[] = keys.map((AttributeName, i) => ({ AttributeName, KeyType: i === 0 ? 'HASH' : 'RANGE' }));
  await dynamoDb.send(
    new CreateTableCommand({
      TableName: name,
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: schema,
      AttributeDefinitions: keys.map((AttributeName) => ({ AttributeName, AttributeType: 'S' })),
    }),
  );
}
