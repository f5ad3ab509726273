/**
 * The one source of the outbox relay's settings: the `OutboxRelay` construct builds the relay
 * function and its DynamoDB Stream event source mapping from them, the local relay polls the
 * stream with them, and the relay reads the ones it needs at run time from the environment that
 * {@link outboxRelayEnvironment} builds.
 *
 * Units are in the property names: `...Seconds` is seconds, `...Mb` mebibytes.
 *
 * @module
 */
import { environmentVariables } from '../settings/settings.js';

/** Settings of the outbox relay and of its DynamoDB Stream event source mapping. */
export interface OutboxRelaySettings {
  /**
   * How long a published outbox item is kept, in seconds: the relay sets its `expiresAt` to the
   * publish time plus this, and DynamoDB's TTL deletes it (typically within a few days of that
   * time). An unpublished item keeps the inbox's TTL. The item is not needed after its publish
   * (the inbox row guards the event); keeping it a day lets an operator see what left.
   * @default 86400 (1 day)
   */
  readonly publishedTtlSeconds: number;
  /**
   * How long Powertools idempotency remembers a completed publish, in seconds
   * (`expiresAfterSeconds`). It must cover the stream's retries (records live 24 hours in a
   * DynamoDB stream) and a redrive of the relay's on-failure destination.
   * @default 604800 (7 days)
   */
  readonly idempotencyTtlSeconds: number;
  /** Stream records per invocation (`BatchSize`, 1 to 10,000). @default 100 */
  readonly batchSize: number;
  /** Maximum batching window, in seconds (`MaximumBatchingWindowInSeconds`, 0 to 300). @default 1 */
  readonly maxBatchingWindowSeconds: number;
  /**
   * Retries of a failed batch (`MaximumRetryAttempts`, 0 to 10,000). Finite, so a record that can
   * never be published does not block its shard until it leaves the stream (24 hours): after the
   * retries its batch's metadata goes to the on-failure destination.
   * @default 10
   */
  readonly retryAttempts: number;
  /** Split a batch in two on a function error and retry each half (`BisectBatchOnFunctionError`). @default true */
  readonly bisectBatchOnError: boolean;
  /**
   * Oldest record the mapping still sends, in seconds (`MaximumRecordAgeInSeconds`: -1 for no
   * limit, else 60 to 604,800). Older records go to the on-failure destination unpublished.
   * @default -1
   */
  readonly maxRecordAgeSeconds: number;
  /**
   * Concurrent batches per shard (`ParallelizationFactor`, 1 to 10). Above 1, records of one shard
   * may be published out of stream order.
   * @default 1
   */
  readonly parallelizationFactor: number;
  /** Relay function timeout in seconds (1 to 900). @default 30 */
  readonly timeoutSeconds: number;
  /** Relay function memory in MB (128 to 10,240). @default 256 */
  readonly memorySizeMb: number;
}

/** The defaults. */
export const defaultOutboxRelaySettings: OutboxRelaySettings = {
  publishedTtlSeconds: 24 * 3600,
  idempotencyTtlSeconds: 7 * 24 * 3600,
  batchSize: 100,
  maxBatchingWindowSeconds: 1,
  retryAttempts: 10,
  bisectBatchOnError: true,
  maxRecordAgeSeconds: -1,
  parallelizationFactor: 1,
  timeoutSeconds: 30,
  memorySizeMb: 256,
};

/** The defaults with `overrides` applied; neither argument is changed. */
export function outboxRelaySettings(
  overrides: Partial<OutboxRelaySettings> = {},
  base: OutboxRelaySettings = defaultOutboxRelaySettings,
): OutboxRelaySettings {
  return { ...base, ...overrides };
}

/** Thrown when the relay's settings break a rule; `problems` lists every rule broken. */
export class InvalidOutboxRelaySettingsError extends Error {
  constructor(
    /** Every rule broken, one sentence each (see {@link outboxRelaySettingsProblems}). */
    public readonly problems: readonly string[],
  ) {
    super(`Invalid outbox relay settings:\n- ${problems.join('\n- ')}`);
    this.name = 'InvalidOutboxRelaySettingsError';
  }
}

/**
 * Checks the settings against the limits of a DynamoDB Stream event source mapping
 * (https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-params.html) and of Lambda
 * (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html); one sentence per
 * broken rule, an empty array when all hold.
 */
export function outboxRelaySettingsProblems(settings: OutboxRelaySettings): string[] {
  const problems: string[] = [];
  const integerIn = (name: string, value: number, min: number, max: number, why = ''): void => {
    if (!Number.isInteger(value) || value < min || value > max)
      problems.push(`${name} ${value} must be an integer from ${min} to ${max}${why}`);
  };
  integerIn('publishedTtlSeconds', settings.publishedTtlSeconds, 1, 366 * 24 * 3600);
  integerIn(
    'idempotencyTtlSeconds',
    settings.idempotencyTtlSeconds,
    24 * 3600,
    366 * 24 * 3600,
    ' (at least the stream retention, 24 hours)',
  );
  integerIn('batchSize', settings.batchSize, 1, 10_000);
  integerIn('maxBatchingWindowSeconds', settings.maxBatchingWindowSeconds, 0, 300);
  integerIn('retryAttempts', settings.retryAttempts, 0, 10_000, ' (finite: -1, AWS default, retries until the record leaves the stream)');
  if (settings.maxRecordAgeSeconds !== -1)
    integerIn('maxRecordAgeSeconds', settings.maxRecordAgeSeconds, 60, 604_800, ' (or -1 for no limit)');
  integerIn('parallelizationFactor', settings.parallelizationFactor, 1, 10);
  integerIn('timeoutSeconds', settings.timeoutSeconds, 1, 900);
  integerIn('memorySizeMb', settings.memorySizeMb, 128, 10_240);
  return problems;
}

/**
 * Names of the relay's environment variables. The consumer name and the table names are the
 * consumer's own variables (`environmentVariables` in `settings/settings.ts`), so the relay and its
 * consumer cannot disagree on them.
 */
export const outboxEnvironmentVariables = {
  consumerName: environmentVariables.consumerName,
  inboxTable: environmentVariables.inboxTable,
  idempotencyTable: environmentVariables.idempotencyTable,
  /** Prefix of one variable per destination: `OUTBOX_DESTINATION_<LOGICAL NAME IN UPPER SNAKE CASE>`. */
  destinationPrefix: 'OUTBOX_DESTINATION_',
  publishedTtlSeconds: 'OUTBOX_PUBLISHED_TTL_SECONDS',
  idempotencyTtlSeconds: 'OUTBOX_IDEMPOTENCY_TTL_SECONDS',
} as const;

/** The logical name of the destination of an outgoing message that names none. */
export const DEFAULT_DESTINATION = 'default';

/**
 * The environment variable that carries the target of the destination with logical name
 * `logicalName` (`OutgoingMessage.destination`): `default` → `OUTBOX_DESTINATION_DEFAULT`,
 * `auditTrail` → `OUTBOX_DESTINATION_AUDIT_TRAIL`.
 *
 * @throws Error when `logicalName` is not 1 to 64 letters, digits or `_`, starting with a letter
 */
export function destinationEnvironmentVariable(logicalName: string): string {
  if (!/^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(logicalName)) {
    throw new Error(`outbox destination name "${logicalName}" must be 1 to 64 letters, digits or '_', starting with a letter`);
  }
  return `${outboxEnvironmentVariables.destinationPrefix}${logicalName.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()}`;
}

/** Resource names the relay's environment needs, once the resources exist. */
export interface OutboxRelayResourceNames {
  /** The consumer's name: the `consumer` of the outbox items the relay publishes, and its Powertools key prefix. */
  readonly consumerName: string;
  /** The inbox table (it holds the outbox items). */
  readonly inboxTable: string;
  /** The Powertools idempotency table (partition key `id`, TTL attribute `expiration`). */
  readonly idempotencyTable: string;
  /**
   * The destinations: logical name → target, an SNS topic ARN or an SQS queue URL (FIFO when the
   * name ends in `.fifo`), or an EventBridge event bus ARN. Destinations given in code (`createOutboxRelay({ destinations })`)
   * need no entry. @default {}
   */
  readonly destinations?: Readonly<Record<string, string>>;
}

/**
 * The relay function's environment for these settings and resources: the one place the
 * construct and the local relay build it from.
 *
 * @returns a map of environment variable name → string value
 * @throws Error when a destination's logical name is not valid (see {@link destinationEnvironmentVariable})
 */
export function outboxRelayEnvironment(settings: OutboxRelaySettings, resources: OutboxRelayResourceNames): Record<string, string> {
  const env = outboxEnvironmentVariables;
  const environment: Record<string, string> = {
    [env.consumerName]: resources.consumerName,
    [env.inboxTable]: resources.inboxTable,
    [env.idempotencyTable]: resources.idempotencyTable,
    [env.publishedTtlSeconds]: String(settings.publishedTtlSeconds),
    [env.idempotencyTtlSeconds]: String(settings.idempotencyTtlSeconds),
  };
  for (const [logicalName, target] of Object.entries(resources.destinations ?? {})) {
    environment[destinationEnvironmentVariable(logicalName)] = target;
  }
  return environment;
}
