import { z } from 'zod';
import { defaultSettings, environmentVariables as env, kafkaMaxAttempts } from '../../config/settings.js';

/** The consumer's configuration at run time, read from the Lambda environment. */
export interface RuntimeConfig {
  readonly consumerName: string;
  readonly inboxTable: string;
  readonly ordersTable: string;
  readonly idempotencyTable: string;
  readonly deadLetterQueueUrl: string;
  /** Whether the source queue is FIFO (records are then processed per message group, in order). */
  readonly fifo: boolean;
  /** The redrive policy's `maxReceiveCount`: the attempt on which a retryable failure is dead-lettered. */
  readonly maxReceiveCount: number;
  /** Inbox row lifetime, in seconds. */
  readonly inboxTtlSeconds: number;
  /** Side-effect idempotency record lifetime, in seconds. */
  readonly sideEffectTtlSeconds: number;
  /** Retry delay after the first failed receive, in seconds (0: no backoff). */
  readonly retryBackoffBaseSeconds: number;
  /** Upper bound of the retry delay, in seconds. */
  readonly retryBackoffMaxSeconds: number;
  /** The dead-letter queue's maximum message size, in bytes. */
  readonly deadLetterMaxMessageSizeBytes: number;
  /**
   * Kafka only: the attempt on which a retryable failure is dead-lettered as `RetriesExhausted`
   * (the event source mapping's `MaximumRetryAttempts` + 1). Defaults to the shipped settings'
   * value when `KAFKA_MAX_ATTEMPTS` is not set, so an SQS-only environment needs no change.
   */
  readonly kafkaMaxAttempts: number;
}

const text = z.string().min(1);
const seconds = z.coerce.number().int().nonnegative();
const schema = z.object({
  [env.consumerName]: text,
  [env.inboxTable]: text,
  [env.ordersTable]: text,
  [env.idempotencyTable]: text,
  [env.deadLetterQueueUrl]: z.url(),
  [env.fifo]: z.enum(['true', 'false']),
  [env.maxReceiveCount]: z.coerce.number().int().min(1),
  [env.inboxTtlSeconds]: seconds,
  [env.sideEffectTtlSeconds]: seconds,
  [env.retryBackoffBaseSeconds]: seconds,
  [env.retryBackoffMaxSeconds]: seconds,
  [env.deadLetterMaxMessageSizeBytes]: z.coerce.number().int().min(1024),
  [env.kafkaMaxAttempts]: z.coerce.number().int().min(1).default(kafkaMaxAttempts(defaultSettings)),
});

/**
 * Reads the configuration the stack (or the local runtime) put in the environment; both build
 * it with `lambdaEnvironment()` in `config/settings.ts`.
 *
 * @param environment - usually `process.env`
 * @throws Error naming every missing or malformed variable, so a bad deploy fails at cold start
 */
export function readRuntimeConfig(environment: Readonly<Record<string, string | undefined>>): RuntimeConfig {
  const result = schema.safeParse(environment);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw new Error(`The consumer's environment is incomplete or malformed:\n- ${problems.join('\n- ')}`);
  }
  const values = result.data as Record<string, string | number>;
  return {
    consumerName: String(values[env.consumerName]),
    inboxTable: String(values[env.inboxTable]),
    ordersTable: String(values[env.ordersTable]),
    idempotencyTable: String(values[env.idempotencyTable]),
    deadLetterQueueUrl: String(values[env.deadLetterQueueUrl]),
    fifo: values[env.fifo] === 'true',
    maxReceiveCount: Number(values[env.maxReceiveCount]),
    inboxTtlSeconds: Number(values[env.inboxTtlSeconds]),
    sideEffectTtlSeconds: Number(values[env.sideEffectTtlSeconds]),
    retryBackoffBaseSeconds: Number(values[env.retryBackoffBaseSeconds]),
    retryBackoffMaxSeconds: Number(values[env.retryBackoffMaxSeconds]),
    deadLetterMaxMessageSizeBytes: Number(values[env.deadLetterMaxMessageSizeBytes]),
    kafkaMaxAttempts: Number(values[env.kafkaMaxAttempts]),
  };
}
