import { EnvironmentError } from '../config/runtimeConfig.js';
import { defaultOutboxRelaySettings, outboxEnvironmentVariables as env } from './outboxRelaySettings.js';

/** A built-in destination, as named in the environment. */
export type DestinationTarget =
  /** An SNS topic; FIFO when its name ends in `.fifo`. */
  | { readonly kind: 'sns'; readonly topicArn: string; readonly fifo: boolean }
  /** An SQS queue; FIFO when its name ends in `.fifo`. */
  | { readonly kind: 'sqs'; readonly queueUrl: string; readonly fifo: boolean }
  /** An EventBridge event bus, by its ARN. */
  | { readonly kind: 'eventBridge'; readonly eventBusArn: string };

const SNS_TOPIC_ARN = /^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$/;
const SQS_QUEUE_URL = /^https?:\/\/[^/\s]+\/\d{12}\/[A-Za-z0-9_-]{1,80}(\.fifo)?$/;
/** An event bus ARN: https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_EventBus.html (names: `[/\.\-_A-Za-z0-9]+`, at most 256). */
const EVENT_BUS_ARN = /^arn:aws[a-z-]*:events:[a-z0-9-]+:\d{12}:event-bus\/[/.\-_A-Za-z0-9]{1,256}$/;

/**
 * Reads a destination target: an SNS topic ARN (`arn:aws:sns:<region>:<account>:<name>`), an
 * SQS queue URL (`https://sqs.<region>.amazonaws.com/<account>/<name>`, or an emulator's
 * `http://…/<account>/<name>`) or an EventBridge event bus ARN
 * (`arn:aws:events:<region>:<account>:event-bus/<name>`).
 *
 * @throws Error saying what is wrong, e.g. a queue ARN instead of its URL, or an EventBridge ARN
 *   that is not a bus's
 */
export function parseDestinationTarget(value: string): DestinationTarget {
  if (SNS_TOPIC_ARN.test(value)) return { kind: 'sns', topicArn: value, fifo: value.endsWith('.fifo') };
  if (SQS_QUEUE_URL.test(value)) return { kind: 'sqs', queueUrl: value, fifo: value.endsWith('.fifo') };
  if (EVENT_BUS_ARN.test(value)) return { kind: 'eventBridge', eventBusArn: value };
  if (/^arn:aws[a-z-]*:events:/.test(value)) {
    throw new Error(
      `${JSON.stringify(value)} is an EventBridge ARN but not an event bus's (arn:aws:events:<region>:<account>:event-bus/<name>)`,
    );
  }
  if (/^arn:aws[a-z-]*:sqs:/.test(value)) throw new Error(`${JSON.stringify(value)} is a queue ARN: give the queue URL instead`);
  throw new Error(`${JSON.stringify(value)} is neither an SNS topic ARN, an SQS queue URL nor an EventBridge event bus ARN`);
}

/** The relay's configuration at run time, read from the environment that `outboxRelayEnvironment()` built. */
export interface OutboxRelayConfig {
  /** The consumer whose outbox items the relay publishes (the Powertools key prefix too). */
  readonly consumerName: string;
  /** The inbox table, where the relay marks published items. */
  readonly inboxTable: string;
  /** The Powertools idempotency table that guards each publish. */
  readonly idempotencyTable: string;
  /** Lifetime of a published item, in seconds. */
  readonly publishedTtlSeconds: number;
  /** Lifetime of a publish's completion record, in seconds. */
  readonly idempotencyTtlSeconds: number;
  /** The destinations named in the environment: environment variable (`OUTBOX_DESTINATION_<NAME>`) → target. */
  readonly destinations: Readonly<Record<string, DestinationTarget>>;
}

/**
 * Reads the relay's configuration from the environment.
 *
 * @param environment - usually `process.env`
 * @throws EnvironmentError naming every missing or malformed variable, so a bad deploy fails at
 *   its first invocation with a clear message. The TTLs may be unset (their defaults apply);
 *   destinations may be absent here when they are given in code.
 */
export function readOutboxRelayConfig(environment: Readonly<Record<string, string | undefined>>): OutboxRelayConfig {
  const problems: string[] = [];
  const text = (name: string): string => {
    const value = environment[name];
    if (value === undefined || value.trim() === '') {
      problems.push(`${name} is not set`);
      return '';
    }
    return value;
  };
  const seconds = (name: string, fallback: number): number => {
    const raw = environment[name];
    if (raw === undefined || raw.trim() === '') return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < 1) {
      problems.push(`${name} must be a whole number of seconds ≥ 1, got ${JSON.stringify(raw)}`);
      return fallback;
    }
    return value;
  };
  const destinations: Record<string, DestinationTarget> = {};
  for (const [name, value] of Object.entries(environment)) {
    if (!name.startsWith(env.destinationPrefix) || value === undefined) continue;
    try {
      destinations[name] = parseDestinationTarget(value.trim());
    } catch (error) {
      problems.push(`${name}: ${(error as Error).message}`);
    }
  }
  const config: OutboxRelayConfig = {
    consumerName: text(env.consumerName),
    inboxTable: text(env.inboxTable),
    idempotencyTable: text(env.idempotencyTable),
    publishedTtlSeconds: seconds(env.publishedTtlSeconds, defaultOutboxRelaySettings.publishedTtlSeconds),
    idempotencyTtlSeconds: seconds(env.idempotencyTtlSeconds, defaultOutboxRelaySettings.idempotencyTtlSeconds),
    destinations,
  };
  if (config.consumerName !== '' && !/^[A-Za-z0-9_-]{1,64}$/.test(config.consumerName)) {
    problems.push(`${env.consumerName} must be 1 to 64 letters, digits, '-' or '_', got ${JSON.stringify(config.consumerName)}`);
  }
  if (problems.length > 0) throw new EnvironmentError(problems);
  return config;
}
