import { environmentVariables as env, tableEnvironmentVariables } from '../settings/settings.js';

/** A consumer's configuration at run time, read from the Lambda environment that `lambdaEnvironment()` built. */
export interface RuntimeConfig {
  readonly consumerName: string;
  readonly inboxTable: string;
  readonly idempotencyTable: string;
  readonly deadLetterQueueUrl: string;
  /** The bucket for dead-letter bodies too large for the DLQ; `undefined` when none. */
  readonly payloadBucket: string | undefined;
  /** Whether the source queue is FIFO. */
  readonly fifo: boolean;
  /** Real attempts before a retryable failure is dead-lettered as `RetriesExhausted`. */
  readonly maxAttempts: number;
  /** Inbox row lifetime, in seconds. */
  readonly inboxTtlSeconds: number;
  /** Side-effect idempotency record lifetime, in seconds. */
  readonly sideEffectTtlSeconds: number;
  /** The least remaining time, in milliseconds, with which an inline side effect may start. */
  readonly sideEffectMinRemainingMs: number;
  /** Retry delay after the first failed attempt, in seconds (0: no backoff). */
  readonly retryBackoffBaseSeconds: number;
  /** Upper bound of the retry delay, in seconds. */
  readonly retryBackoffMaxSeconds: number;
  /** The dead-letter queue's maximum message size, in bytes. */
  readonly deadLetterMaxMessageSizeBytes: number;
  /**
   * Whether applied inbox rows record the keys their message wrote (`PROVENANCE=true`).
   * @default false
   */
  readonly provenance?: boolean;
  /**
   * Kafka: seconds to wait, within the invocation, before trying a record that failed retryably
   * again (`KAFKA_RETRY_DELAY_SECONDS`, `kafka.retry.delaySeconds`); 0: report it at once.
   * @default 0
   */
  readonly kafkaRetryDelaySeconds?: number;
  /** Kafka: retry a retryable failure until it succeeds, without `maxAttempts` (`KAFKA_RETRY_UNTIL_SUCCESS=true`). @default false */
  readonly kafkaRetryUntilSuccess?: boolean;
  /**
   * `retry.parkOutOfOrder`: on a standard queue, a message that fails `PredecessorNotApplied` is
   * parked in the inbox table and decided again when a message of its ordering key is applied
   * (`PARK_OUT_OF_ORDER`; off when unset).
   */
  readonly parkOutOfOrder?: boolean;
  /** The business tables: logical name → physical name. */
  readonly tables: Readonly<Record<string, string>>;
}

/** Thrown at cold start when the environment lacks a variable or holds a malformed one. */
export class EnvironmentError extends Error {
  constructor(
    /** Each problem, one sentence naming the variable (`TABLE_NAME_ORDERS is not set`). */
    public readonly problems: readonly string[],
  ) {
    super(`The consumer's environment is incomplete or malformed:\n- ${problems.join('\n- ')}`);
    this.name = 'EnvironmentError';
  }
}

/**
 * Reads the configuration the construct (or the local runtime) put in the environment with
 * `lambdaEnvironment()` (`settings/settings.ts`).
 *
 * @param environment - usually `process.env`
 * @param tableNames - the logical names of the consumer's business tables (its `tables` option);
 *   each needs `TABLE_NAME_<NAME>`
 * @throws EnvironmentError naming every missing or malformed variable, so a bad deploy fails at
 *   its first invocation with a clear message
 */
export function readRuntimeConfig(
  environment: Readonly<Record<string, string | undefined>>,
  tableNames: readonly string[] = [],
): RuntimeConfig {
  const problems: string[] = [];
  const text = (name: string): string => {
    const value = environment[name];
    if (value === undefined || value.trim() === '') {
      problems.push(`${name} is not set`);
      return '';
    }
    return value;
  };
  const integer = (name: string, min: number): number => {
    const raw = text(name);
    if (raw === '') return min;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min) {
      problems.push(`${name} must be an integer ≥ ${min}, got ${JSON.stringify(raw)}`);
      return min;
    }
    return value;
  };
  const fifo = text(env.fifo);
  if (fifo !== '' && fifo !== 'true' && fifo !== 'false')
    problems.push(`${env.fifo} must be "true" or "false", got ${JSON.stringify(fifo)}`);
  const provenance = environment[env.provenance] ?? '';
  if (provenance !== '' && provenance !== 'true' && provenance !== 'false')
    problems.push(`${env.provenance} must be "true" or "false" (or unset), got ${JSON.stringify(provenance)}`);
  const untilSuccess = environment[env.kafkaRetryUntilSuccess] ?? '';
  if (untilSuccess !== '' && untilSuccess !== 'true' && untilSuccess !== 'false')
    problems.push(`${env.kafkaRetryUntilSuccess} must be "true" or "false" (or unset), got ${JSON.stringify(untilSuccess)}`);
  const park = environment[env.parkOutOfOrder] ?? '';
  if (park !== '' && park !== 'true' && park !== 'false')
    problems.push(`${env.parkOutOfOrder} must be "true" or "false" (or unset), got ${JSON.stringify(park)}`);
  const delayText = environment[env.kafkaRetryDelaySeconds] ?? '';
  const kafkaRetryDelaySeconds = delayText === '' ? 0 : Number(delayText);
  if (!Number.isInteger(kafkaRetryDelaySeconds) || kafkaRetryDelaySeconds < 0)
    problems.push(`${env.kafkaRetryDelaySeconds} must be an integer ≥ 0 (or unset), got ${JSON.stringify(delayText)}`);
  const deadLetterQueueUrl = text(env.deadLetterQueueUrl);
  if (deadLetterQueueUrl !== '' && !/^https?:\/\/[^/]+\/.+/.test(deadLetterQueueUrl)) {
    problems.push(`${env.deadLetterQueueUrl} must be a queue URL, got ${JSON.stringify(deadLetterQueueUrl)}`);
  }
  const tables: Record<string, string> = {};
  for (const [logical, variable] of tableEnvironmentVariables(tableNames)) tables[logical] = text(variable);
  const payloadBucket = environment[env.payloadBucket];
  const config: RuntimeConfig = {
    consumerName: text(env.consumerName),
    inboxTable: text(env.inboxTable),
    idempotencyTable: text(env.idempotencyTable),
    deadLetterQueueUrl,
    payloadBucket: payloadBucket === undefined || payloadBucket === '' ? undefined : payloadBucket,
    fifo: fifo === 'true',
    maxAttempts: integer(env.maxAttempts, 1),
    inboxTtlSeconds: integer(env.inboxTtlSeconds, 0),
    sideEffectTtlSeconds: integer(env.sideEffectTtlSeconds, 0),
    sideEffectMinRemainingMs: integer(env.sideEffectMinRemainingMs, 1),
    retryBackoffBaseSeconds: integer(env.retryBackoffBaseSeconds, 0),
    retryBackoffMaxSeconds: integer(env.retryBackoffMaxSeconds, 0),
    deadLetterMaxMessageSizeBytes: integer(env.deadLetterMaxMessageSizeBytes, 1024),
    provenance: provenance === 'true',
    kafkaRetryDelaySeconds: Number.isInteger(kafkaRetryDelaySeconds) && kafkaRetryDelaySeconds > 0 ? kafkaRetryDelaySeconds : 0,
    kafkaRetryUntilSuccess: untilSuccess === 'true',
    parkOutOfOrder: park === 'true',
    tables,
  };
  if (config.consumerName !== '' && !/^[A-Za-z0-9_-]{1,64}$/.test(config.consumerName)) {
    problems.push(`${env.consumerName} must be 1 to 64 letters, digits, '-' or '_', got ${JSON.stringify(config.consumerName)}`);
  }
  if (problems.length > 0) throw new EnvironmentError(problems);
  return config;
}
