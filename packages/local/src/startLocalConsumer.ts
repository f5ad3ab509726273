/**
 * A consumer's resources on the embedded emulators, ready for its handler: the data directory
 * locked, DynamoDB Local and the SQS/SNS/S3 server started (unless endpoints are given), the
 * clients made, the tables, queues and bucket provisioned from the settings and the handler's
 * `tables`. What `runLocal` and the command line's `invoke` start with.
 *
 * @module
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { type ConsumerSettings, lambdaEnvironment, METRICS_NAMESPACE } from 'idempotent-consumer/settings';
import type { ConsumerRuntimeOptions, IdempotentConsumerHandler } from 'idempotent-consumer';
import type { OutcomeObserver } from 'idempotent-consumer/observability';
import { createLocalClients, type LocalClients } from './aws/localClients.js';
import { lockDataDir } from './dataDirLock.js';
import { startEmulators } from './emulators.js';
import type { FaultOptions } from './faultInjection.js';
import { type LocalResources, provisionResources } from './provision.js';

/** Options of {@link startLocalConsumer}. */
export interface LocalConsumerOptions {
  /** The handler: its `tables` option names the business tables to create. */
  readonly handler: IdempotentConsumerHandler;
  /** The consumer's settings (the same object its CDK stack uses). */
  readonly settings: ConsumerSettings;
  /** Keep DynamoDB Local's data in this directory (locked while it runs). @default in memory */
  readonly dataDir?: string;
  /** Use these running emulators instead of starting new ones (tests); `prefix` keeps names apart. */
  readonly endpoints?: { readonly dynamoDb: string; readonly sqs: string; readonly s3?: string; readonly prefix?: string };
  /** Fault injection on the consumer's clients. @default none */
  readonly faults?: FaultOptions;
  /** Give the inbox table its stream (for the outbox relay). @default false */
  readonly inboxStream?: boolean;
  /** Told each start-up step, in a few words. */
  readonly onStep?: (step: string) => void;
  /** Stop the emulators on SIGINT/SIGTERM by themselves (see `EmulatorOptions.stopOnSignal`). @default true */
  readonly stopOnSignal?: boolean;
}

/** A consumer's running local resources. */
export interface LocalConsumer {
  /**
   * The emulators' base URLs (`http://127.0.0.1:<port>`): DynamoDB Local, and the SQS server, which
   * serves S3 too (`s3` is `sqs` when the given `endpoints` name no S3 endpoint).
   */
  readonly endpoints: { readonly dynamoDb: string; readonly sqs: string; readonly s3: string };
  /** The tools' clients (provisioning, inspection): no faults, no strict layer, no invocation guard. */
  readonly admin: LocalClients;
  /** The consumer's clients: the strict DynamoDB layer, invocation deadlines, the faults asked for. */
  readonly consumer: LocalClients;
  /** The physical names of the provisioned tables, queues (URLs and ARNs) and bucket. */
  readonly resources: LocalResources;
  /** The consumer's Lambda environment for these resources (`lambdaEnvironment()` and the metrics namespace). */
  readonly environment: Readonly<Record<string, string>>;
  /**
   * The runtime of a new execution environment (`handler.withRuntime(…)`): the environment, the
   * consumer's clients, `observer`, and a Powertools Logger (`logLevel`) and Metrics named after
   * the consumer.
   */
  runtime(options: { readonly observer?: OutcomeObserver; readonly logLevel: string }): ConsumerRuntimeOptions;
  /** Destroys the clients, stops the emulators this started and unlocks the data directory. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Locks `dataDir`, starts the emulators on 127.0.0.1 (unless `endpoints`), makes the clients
 * and provisions the consumer's resources (`provisionResources`). On an error, whatever was
 * started is stopped again.
 *
 * @throws DataDirError when `dataDir` is not a directory or another run holds it
 * @throws the emulators' start errors (`JavaNotFoundError`, `EmulatorStartError`) and
 *   `ProvisioningError`
 */
export async function startLocalConsumer(options: LocalConsumerOptions): Promise<LocalConsumer> {
  const stops: (() => Promise<void> | void)[] = [];
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      for (const step of stops) {
        try {
          await step();
        } catch {
          // stopping what is left goes on
        }
      }
    })());
  try {
    if (options.dataDir !== undefined) {
      const unlock = await lockDataDir(options.dataDir);
      stops.unshift(unlock);
    }
    let endpoints: LocalConsumer['endpoints'];
    if (options.endpoints === undefined) {
      options.onStep?.('starting DynamoDB Local and the SQS/SNS/S3 server');
      const emulators = await startEmulators({
        ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
        ...(options.stopOnSignal === undefined ? {} : { stopOnSignal: options.stopOnSignal }),
      });
      stops.unshift(() => emulators.stop());
      endpoints = { dynamoDb: emulators.dynamoDbEndpoint, sqs: emulators.sqsEndpoint, s3: emulators.s3Endpoint };
    } else {
      endpoints = { dynamoDb: options.endpoints.dynamoDb, sqs: options.endpoints.sqs, s3: options.endpoints.s3 ?? options.endpoints.sqs };
    }
    const admin = createLocalClients({
      dynamoDbEndpoint: endpoints.dynamoDb,
      sqsEndpoint: endpoints.sqs,
      s3Endpoint: endpoints.s3,
      strictDynamoDb: false,
    });
    stops.unshift(() => admin.destroy());
    const consumer = createLocalClients({
      dynamoDbEndpoint: endpoints.dynamoDb,
      sqsEndpoint: endpoints.sqs,
      s3Endpoint: endpoints.s3,
      ...(options.faults ? { faults: options.faults } : {}),
    });
    stops.unshift(() => consumer.destroy());

    options.onStep?.('creating the tables, queues and bucket');
    const resources = await provisionResources({
      dynamoDb: admin.dynamoDb,
      sqs: admin.sqs,
      ...(admin.s3 ? { s3: admin.s3 } : {}),
      settings: options.settings,
      tables: options.handler.options.tables ?? {},
      prefix: options.endpoints?.prefix ?? '',
      inboxStream: options.inboxStream === true,
    });
    const environment = { ...lambdaEnvironment(options.settings, resources), POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE };
    const serviceName = options.settings.consumerName;
    return {
      endpoints,
      admin,
      consumer,
      resources,
      environment,
      runtime: ({ observer, logLevel }) => ({
        environment,
        clients: { dynamoDb: consumer.dynamoDb, sqs: consumer.sqs, ...(consumer.s3 ? { s3: consumer.s3 } : {}) },
        ...(observer === undefined ? {} : { observer }),
        logger: new Logger({ serviceName, logLevel: logLevel.toUpperCase() as 'ERROR' }),
        metrics: new Metrics({ namespace: METRICS_NAMESPACE, serviceName }),
      }),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
