/**
 * The embedded emulators of the local runtime: DynamoDB Local (a Java child process) and the
 * SQS-compatible server fauxqs (in this process, with the strict SQS layer; it serves S3 too).
 * Both listen on 127.0.0.1 on free ports.
 *
 * For clients that behave like AWS, also give the DynamoDB client the strict DynamoDB layer
 * (`installStrictDynamoDb`), and, for chaos runs, fault injection (`installFaults`).
 *
 * @module
 */
import { startDynamoDbLocal } from './dynamoDbLocal.js';
import type { DynamoDbLocal } from './dynamoDbLocal.js';
import { startSqsServer } from './sqsServer.js';
import type { SqsServer } from './sqsServer.js';

export { localClientConfig, localCredentials, localRegion, localS3ClientConfig } from './localClientConfig.js';
export type { LocalClientConfig, LocalS3ClientConfig } from './localClientConfig.js';

/** Options of {@link startEmulators}. */
export interface EmulatorOptions {
  /**
   * Directory for DynamoDB Local's database file, kept between runs (created if missing). The SQS
   * server always keeps its messages in memory.
   * @default undefined (DynamoDB Local in memory)
   */
  readonly dataDir?: string;
  /**
   * The longest DynamoDB Local start-up, in milliseconds: a safety net only; the wait follows the
   * process (see `DynamoDbLocalOptions.startTimeoutMs`).
   * @default 300000
   */
  readonly startTimeoutMs?: number;
  /**
   * How long a starting DynamoDB Local may make no progress (CPU time, output) before it counts
   * as hung, in milliseconds.
   * @default 60000
   */
  readonly stallTimeoutMs?: number;
  /**
   * The strict SQS layer on the SQS server (see `local/aws/strictSqs.ts`).
   * @default true
   */
  readonly strictSqs?: boolean;
  /**
   * Stop the emulators on SIGINT and SIGTERM. Turn it off when the caller handles those signals
   * and stops what uses the emulators first (the local runtime's `--keep-running`), so that
   * nothing still polling finds them gone.
   * @default true
   */
  readonly stopOnSignal?: boolean;
}

/** Running emulators. */
export interface Emulators {
  /** DynamoDB Local's base URL, `http://127.0.0.1:<port>`. */
  readonly dynamoDbEndpoint: string;
  /** The SQS server's base URL, `http://127.0.0.1:<port>`. */
  readonly sqsEndpoint: string;
  /** The S3 base URL (the SQS server's; path-style only, see `localS3ClientConfig`). */
  readonly s3Endpoint: string;
  /** `false` when DynamoDB Local runs in the JRE-only fallback and listens on all interfaces. */
  readonly dynamoDbBoundToLoopback: boolean;
  /**
   * Stops both: DynamoDB Local gets SIGTERM, then SIGKILL after 5 s; resolves once it has exited
   * and the SQS server is closed. Idempotent; also runs on SIGINT/SIGTERM of this process.
   */
  stop(): Promise<void>;
}

const stopSignals = ['SIGINT', 'SIGTERM'] as const;

/**
 * Starts DynamoDB Local and the SQS server, and waits until both answer.
 *
 * On SIGINT or SIGTERM the emulators are stopped (unless `stopOnSignal: false`); when no other listener handles that signal,
 * it is raised again afterwards so the process ends as it would have. If the process exits
 * without `stop()`, DynamoDB Local is killed from the `exit` handler (and, bound to loopback, it
 * also exits by itself when its parent is gone).
 *
 * @throws {JavaNotFoundError} when Java 17+ is missing (install `openjdk-17-jre-headless`)
 * @throws {EmulatorStartError} when DynamoDB Local exits, stalls, or does not answer within
 *   `startTimeoutMs` (with its output in the message); nothing is left running in that case
 *
 * @example
 * const emulators = await startEmulators({ dataDir: '.local-data' });
 * try {
 *   const dynamoDb = new DynamoDBClient(localClientConfig(emulators.dynamoDbEndpoint));
 *   // ...
 * } finally {
 *   await emulators.stop();
 * }
 */
export async function startEmulators(options: EmulatorOptions = {}): Promise<Emulators> {
  const [dynamoDb, sqs] = await Promise.allSettled([
    startDynamoDbLocal({
      ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
      ...(options.startTimeoutMs === undefined ? {} : { startTimeoutMs: options.startTimeoutMs }),
      ...(options.stallTimeoutMs === undefined ? {} : { stallTimeoutMs: options.stallTimeoutMs }),
    }),
    startSqsServer({ strict: options.strictSqs ?? true }),
  ]);
  if (dynamoDb.status === 'rejected' || sqs.status === 'rejected') {
    await Promise.all([
      dynamoDb.status === 'fulfilled' ? dynamoDb.value.stop() : undefined,
      sqs.status === 'fulfilled' ? sqs.value.stop() : undefined,
    ]);
    throw dynamoDb.status === 'rejected' ? dynamoDb.reason : (sqs as PromiseRejectedResult).reason;
  }
  return withSignalHandling(dynamoDb.value, sqs.value, options.stopOnSignal ?? true);
}

function withSignalHandling(dynamoDb: DynamoDbLocal, sqs: SqsServer, stopOnSignal: boolean): Emulators {
  let stopping: Promise<void> | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    void stop().finally(() => {
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    });
  };
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      for (const signal of stopSignals) process.off(signal, onSignal);
      await Promise.all([dynamoDb.stop(), sqs.stop()]);
    })();
    return stopping;
  };
  if (stopOnSignal) for (const signal of stopSignals) process.once(signal, onSignal);
  return {
    dynamoDbEndpoint: dynamoDb.endpoint,
    sqsEndpoint: sqs.endpoint,
    s3Endpoint: sqs.endpoint,
    dynamoDbBoundToLoopback: dynamoDb.boundToLoopback,
    stop,
  };
}
