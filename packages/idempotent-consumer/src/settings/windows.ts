/**
 * The windows of a consumer checked against each other: how long the inbox and the side-effect
 * guard remember a key, how long the queues (and a Kafka topic) keep a message, how long a
 * message may be retried, and how long the payload bucket keeps an offloaded dead-letter body.
 * They are set in different places; when they disagree, a message comes back after its inbox
 * row expired and is applied again, or expires unprocessed, or a dead letter outlives its body.
 *
 * Each rule is a pure function returning one sentence with the numbers and the fix, or
 * `undefined` when it holds. {@link windowProblems} (called by `settingsProblems`) refuses;
 * {@link windowWarnings} only warns (the CDK constructs add them as warning annotations).
 *
 * Not a rule here: SQS's FIFO deduplication window (5 minutes, fixed by AWS). It only ever
 * shortens what the inbox must catch, and nothing relies on it for more than 5 minutes: the
 * inbox window is at least source + dead-letter retention, 2 minutes at the least, and a
 * duplicate inside 5 minutes is dropped by SQS anyway.
 *
 * @module
 */
import { type ConsumerSettings, maxReceiveCount } from './settings.js';

/** Seconds in a day. */
export const SECONDS_PER_DAY = 86_400;

/** SQS's default `MessageRetentionPeriod` (4 days), what a queue created without one keeps. */
export const SQS_DEFAULT_RETENTION_SECONDS = 345_600;

/** SQS's largest `MessageRetentionPeriod` (14 days). */
export const SQS_MAX_RETENTION_SECONDS = 1_209_600;

const SQS_DLQ_PAGE = 'https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html';

/**
 * A duration for a message: `1555200 s (18 days)`, `5400 s (1.5 hours)`, `90 s`.
 *
 * @param seconds - the duration in seconds
 */
export function describeSeconds(seconds: number): string {
  const amount = (value: number, unit: string) => {
    const rounded = Number(value.toFixed(2));
    return `${rounded} ${unit}${rounded === 1 ? '' : 's'}`;
  };
  if (seconds >= SECONDS_PER_DAY) return `${seconds} s (${amount(seconds / SECONDS_PER_DAY, 'day')})`;
  if (seconds >= 3600) return `${seconds} s (${amount(seconds / 3600, 'hour')})`;
  return `${seconds} s`;
}

/**
 * How long after its first send a message can still reach the consumer from the queues: the
 * source queue's retention plus the dead-letter queue's. A message waits in the source up to its
 * retention; the consumer's dead letter is a new message that the DLQ keeps for its own retention
 * from then (one the redrive policy moved keeps its first enqueue time, so it leaves sooner); a
 * redrive on the DLQ's last day sends it back.
 *
 * @returns seconds
 */
export function redeliveryWindowSeconds(settings: Pick<ConsumerSettings, 'queue'>): number {
  return settings.queue.retentionPeriodSeconds + settings.queue.deadLetterRetentionPeriodSeconds;
}

/**
 * Rule: the inbox TTL covers source retention + dead-letter retention ({@link redeliveryWindowSeconds}),
 * so a message redriven on the dead-letter queue's last day still meets its inbox row. Refused:
 * otherwise that message is applied twice, which is what the library exists to prevent.
 * Source: SQS retention (60 s to 14 days) and the DLQ page's note that a moved message keeps its
 * enqueue time (`SQS_DLQ_PAGE`).
 */
export function inboxWindowProblem(settings: Pick<ConsumerSettings, 'queue' | 'idempotency'>): string | undefined {
  const window = redeliveryWindowSeconds(settings);
  const ttl = settings.idempotency.inboxTtlSeconds;
  if (ttl >= window) return undefined;
  return (
    `inbox TTL ${describeSeconds(ttl)} is shorter than source queue retention ${describeSeconds(settings.queue.retentionPeriodSeconds)} + ` +
    `dead-letter queue retention ${describeSeconds(settings.queue.deadLetterRetentionPeriodSeconds)} = ${describeSeconds(window)}: ` +
    `a message redriven on the dead-letter queue's last day would no longer meet its inbox row and be applied again. ` +
    `Fix: idempotency.inboxTtlSeconds ≥ ${window}, or shorter retentions (SQS retention rules: ${SQS_DLQ_PAGE})`
  );
}

/**
 * Rule: the side-effect guard's record (`sideEffectTtlSeconds`) lives as long as the inbox must:
 * the effect runs before the inbox commit, so when that commit fails for good and the message is
 * redriven later, only this record stops a second run. Refused, as {@link inboxWindowProblem}.
 */
export function sideEffectWindowProblem(settings: Pick<ConsumerSettings, 'queue' | 'idempotency'>): string | undefined {
  const window = redeliveryWindowSeconds(settings);
  const ttl = settings.idempotency.sideEffectTtlSeconds;
  if (ttl >= window) return undefined;
  return (
    `side-effect idempotency window ${describeSeconds(ttl)} is shorter than source queue retention ${describeSeconds(settings.queue.retentionPeriodSeconds)} + ` +
    `dead-letter queue retention ${describeSeconds(settings.queue.deadLetterRetentionPeriodSeconds)} = ${describeSeconds(window)}: ` +
    `a message redriven after its record expired could send its side effect again. Fix: idempotency.sideEffectTtlSeconds ≥ ${window}`
  );
}

/**
 * Rule: the side-effect record outlives the invocation that holds its lock. Powertools writes the
 * record's expiry (`expiresAfterSeconds` = `sideEffectTtlSeconds`) when it takes the in-progress
 * lock, and the lock itself lasts until the holder's deadline (up to the function timeout). A
 * record that expires first looks absent to a concurrent copy of the message, which runs the
 * effect a second time while the first still runs. Refused. Sources: Lambda function timeout
 * (https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html) and Powertools
 * idempotency's `expiresAfterSeconds` and in-progress expiry
 * (https://docs.powertools.aws.dev/lambda/typescript/latest/features/idempotency/).
 */
export function sideEffectLockProblem(settings: Pick<ConsumerSettings, 'function' | 'idempotency'>): string | undefined {
  const ttl = settings.idempotency.sideEffectTtlSeconds;
  const timeout = settings.function.timeoutSeconds;
  if (ttl > timeout) return undefined;
  return (
    `side-effect idempotency window ${describeSeconds(ttl)} is not longer than the function timeout ${describeSeconds(timeout)}: ` +
    `the side-effect record would expire while the invocation holding its lock still runs, and a concurrent copy of the ` +
    `message would run the effect again. Fix: idempotency.sideEffectTtlSeconds > ${timeout}`
  );
}

/**
 * The least time a message needs in the source queue to reach the dead-letter queue: every one of
 * its `maxReceiveCount` receives may hide it for the visibility timeout (an invocation that
 * crashed or timed out) or for the function timeout plus the longest backoff (a retryable
 * failure delayed with `ChangeMessageVisibility`; a lock held elsewhere delays it to the lock's
 * expiry, at most the function timeout). Time waiting to be polled comes on top.
 *
 * @returns seconds
 */
export function retryBudgetSeconds(settings: Pick<ConsumerSettings, 'queue' | 'function' | 'retry'>): number {
  const perReceive = Math.max(
    settings.queue.visibilityTimeoutSeconds,
    settings.function.timeoutSeconds + Math.max(settings.retry.backoffMaxSeconds, settings.function.timeoutSeconds),
  );
  return maxReceiveCount(settings) * perReceive;
}

/**
 * Rule: the source queue keeps a message long enough for all its receives
 * ({@link retryBudgetSeconds}). Otherwise SQS deletes a message that keeps failing before its
 * redrive policy moves it: it is lost with no dead letter. Refused. Source: SQS retention
 * (a message is deleted when its retention ends, whatever its receive count), `SQS_DLQ_PAGE`.
 */
export function retryBudgetProblem(settings: Pick<ConsumerSettings, 'queue' | 'function' | 'retry'>): string | undefined {
  const receives = maxReceiveCount(settings);
  if (!Number.isInteger(receives) || receives < 1) return undefined; // refused by its own rule
  const budget = retryBudgetSeconds(settings);
  const retention = settings.queue.retentionPeriodSeconds;
  if (retention >= budget) return undefined;
  return (
    `source queue retention ${describeSeconds(retention)} is shorter than the time a failing message needs to reach the dead-letter queue, ` +
    `${describeSeconds(budget)} = maxReceiveCount ${receives} × max(visibility timeout ${settings.queue.visibilityTimeoutSeconds} s, ` +
    `function timeout ${settings.function.timeoutSeconds} s + max(backoffMaxSeconds ${settings.retry.backoffMaxSeconds} s, function timeout)): ` +
    `SQS would delete it before its redrive policy moves it, with no dead letter. Fix: queue.retentionPeriodSeconds ≥ ${budget}, ` +
    `or fewer receives or shorter timeouts`
  );
}

/**
 * How long a Kafka record can still reach the function: the topic's retention
 * (`kafka.topicRetentionHours`; a mapping created or reset at `TRIM_HORIZON` reads every record
 * still there), cut to `kafka.maxRecordAgeSeconds` when that is set (older records are not sent to
 * the function). `undefined` when neither bounds it: the retention not given or unlimited (-1),
 * and no maximum record age.
 *
 * @returns seconds, or `undefined`
 */
export function kafkaRecordReachSeconds(settings: Pick<ConsumerSettings, 'kafka'>): number | undefined {
  const hours = settings.kafka.topicRetentionHours;
  const retention = hours === undefined || hours === -1 ? undefined : Math.ceil(hours * 3600);
  const age = settings.kafka.maxRecordAgeSeconds === -1 ? undefined : settings.kafka.maxRecordAgeSeconds;
  if (retention === undefined) return age;
  return age === undefined ? retention : Math.min(retention, age);
}

/**
 * Rule (Kafka): the inbox TTL covers how long a record can reach the function
 * ({@link kafkaRecordReachSeconds}) + the dead-letter queue's retention (a Kafka dead letter can
 * be redriven to an SQS queue of the consumer). Refused, as for SQS: the numbers are the user's
 * own settings, as much a fact as a queue's retention. The cluster's retention cannot be read at
 * synth: without `kafka.topicRetentionHours` (and without `kafka.maxRecordAgeSeconds`) the rule is
 * skipped. Sources: Kafka's `retention.ms`
 * (https://kafka.apache.org/documentation/#topicconfigs_retention.ms), Lambda's Kafka
 * `StartingPosition` and `MaximumRecordAgeInSeconds`
 * (https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html).
 */
export function kafkaTopicRetentionProblem(settings: Pick<ConsumerSettings, 'kafka' | 'queue' | 'idempotency'>): string | undefined {
  const hours = settings.kafka.topicRetentionHours;
  if (hours !== undefined && hours !== -1 && !(Number.isFinite(hours) && hours > 0)) {
    return `Kafka topic retention ${hours} hours must be a positive number of hours, or -1 (unlimited, Kafka's retention.ms = -1)`;
  }
  const reach = kafkaRecordReachSeconds(settings);
  if (reach === undefined) return undefined;
  const dlq = settings.queue.deadLetterRetentionPeriodSeconds;
  const window = reach + dlq;
  const ttl = settings.idempotency.inboxTtlSeconds;
  if (ttl >= window) return undefined;
  const retention = hours === undefined || hours === -1 ? undefined : Math.ceil(hours * 3600);
  const what =
    retention === reach ? `Kafka topic retention ${hours} hours` : `the Kafka mapping's maximum record age ${describeSeconds(reach)}`;
  return (
    `inbox TTL ${describeSeconds(ttl)} is shorter than ${what} + dead-letter queue retention ${describeSeconds(dlq)} = ` +
    `${describeSeconds(window)}: a record read again (a mapping created or reset at TRIM_HORIZON) or redriven from the ` +
    `dead-letter queue after its inbox row expired would be applied again. ` +
    `Fix: idempotency.inboxTtlSeconds ≥ ${window}, or a shorter topic retention or kafka.maxRecordAgeSeconds`
  );
}

/**
 * Warning (Kafka, `kafka.topicRetentionHours` -1): no inbox TTL covers a topic that keeps records
 * forever. Only a warning: a compacted or unlimited topic is a legitimate choice, and a record
 * comes back only when a mapping re-reads the topic (a new mapping or a reset consumer group at
 * `TRIM_HORIZON`); `kafka.maxRecordAgeSeconds` bounds it.
 */
export function kafkaUnlimitedRetentionWarning(settings: Pick<ConsumerSettings, 'kafka' | 'idempotency'>): string | undefined {
  if (settings.kafka.topicRetentionHours !== -1 || settings.kafka.maxRecordAgeSeconds !== -1) return undefined;
  return (
    `Kafka topic retention is unlimited (topicRetentionHours -1) and the inbox TTL is ${describeSeconds(settings.idempotency.inboxTtlSeconds)}: ` +
    `a mapping that re-reads the topic from TRIM_HORIZON (a new mapping, a reset consumer group) delivers records older than the ` +
    `inbox window, and they are applied again. Set kafka.maxRecordAgeSeconds (at most 604800 s) to bound it, or start new mappings at LATEST`
  );
}

/**
 * Warning (Kafka, `kafka.retry.untilSuccess` with a known `kafka.topicRetentionHours`): a partition
 * held behind a record that keeps failing retryably does not move while the topic's retention runs:
 * when the hold lasts longer than the retention, Kafka deletes the records behind it and the
 * mapping, which retries "until the record expires in the event source"
 * (https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html), never delivers
 * them. Only a warning: the lag alarm is there to be answered within the retention.
 */
export function kafkaRetryStallWarning(settings: Pick<ConsumerSettings, 'kafka' | 'function'>): string | undefined {
  const hours = settings.kafka.topicRetentionHours;
  if (settings.kafka.retry?.untilSuccess !== true || hours === undefined || !(hours > 0)) return undefined;
  const holdSeconds = 10_000 * settings.function.timeoutSeconds;
  const retentionSeconds = hours * 3600;
  if (holdSeconds <= retentionSeconds) return undefined;
  return (
    `kafka.retry.untilSuccess holds a partition behind a failing record for up to ${describeSeconds(holdSeconds)} ` +
    `(10000 retries of the mapping × function timeout ${settings.function.timeoutSeconds} s), longer than the topic retention of ${hours} hours: ` +
    `a downstream outage longer than the retention loses the records behind the held one (Kafka deletes them unread). ` +
    `Answer the Kafka offset lag alarm within the retention, or keep the topic longer`
  );
}

/**
 * The payload bucket's lifecycle expiration, in whole days (S3 expires objects by days): source
 * retention + dead-letter retention, rounded up, plus 1 day. An offloaded body is written when
 * its message is dead-lettered; the dead letter lives the DLQ's retention from then, and a copy of
 * it redriven as a pointer (a move task) the source's retention after that.
 */
export function payloadExpirationDays(settings: Pick<ConsumerSettings, 'queue'>): number {
  return Math.ceil(redeliveryWindowSeconds(settings) / SECONDS_PER_DAY) + 1;
}

/**
 * Rule: a dead letter never outlives its body. An offloaded body is an object in the payload
 * bucket; it must stay at least as long as the dead-letter queue keeps the pointer to it.
 * Refused (the construct derives the days with {@link payloadExpirationDays}, so this guards that
 * derivation and any bucket whose lifecycle is given). Sources: S3 lifecycle expiration
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/lifecycle-expire-general-considerations.html),
 * SQS retention (`SQS_DLQ_PAGE`).
 *
 * @param expirationDays - the bucket's lifecycle expiration of dead-letter bodies, in days
 * @param deadLetterRetentionSeconds - the dead-letter queue's retention, in seconds
 */
export function payloadLifecycleProblem(expirationDays: number, deadLetterRetentionSeconds: number): string | undefined {
  if (expirationDays * SECONDS_PER_DAY >= deadLetterRetentionSeconds) return undefined;
  const needed = Math.ceil(deadLetterRetentionSeconds / SECONDS_PER_DAY);
  return (
    `payload bucket lifecycle expiration ${expirationDays} days (${expirationDays * SECONDS_PER_DAY} s) is shorter than dead-letter queue retention ` +
    `${describeSeconds(deadLetterRetentionSeconds)}: a dead letter whose body was offloaded would outlive its body, and could no longer be ` +
    `shown or redriven. Fix: expire dead-letter bodies after at least ${needed} days`
  );
}

/**
 * Rule: a queue given to the construct keeps messages no longer than the settings say, since the
 * window rules are checked on the settings. Refused.
 *
 * @param what - the prop: `existingQueue` or `existingDeadLetterQueue`
 * @param actualSeconds - the queue's `MessageRetentionPeriod` (SQS's default, 4 days, when it sets none)
 * @param settingSeconds - the settings' retention of that queue
 * @param setting - the setting's name, for the fix
 */
export function existingQueueRetentionProblem(
  what: string,
  actualSeconds: number,
  settingSeconds: number,
  setting: string,
): string | undefined {
  if (actualSeconds <= settingSeconds) return undefined;
  return (
    `${what} keeps messages ${describeSeconds(actualSeconds)}, longer than ${setting} ${describeSeconds(settingSeconds)}: ` +
    `the inbox and side-effect windows are checked against the settings. Fix: ${setting} = ${actualSeconds} (or the queue's retention ≤ ${settingSeconds})`
  );
}

/** Every window rule that refuses the settings (see the module comment); one sentence each. */
export function windowProblems(settings: ConsumerSettings): string[] {
  return [
    inboxWindowProblem(settings),
    sideEffectWindowProblem(settings),
    sideEffectLockProblem(settings),
    retryBudgetProblem(settings),
    kafkaTopicRetentionProblem(settings),
  ].filter((problem): problem is string => problem !== undefined);
}

/**
 * The window rules that only warn. The constructs add them as CDK warning annotations.
 *
 * @param options.kafka - whether the consumer has a Kafka source (the Kafka warnings apply only then)
 */
export function windowWarnings(settings: ConsumerSettings, options: { readonly kafka: boolean }): string[] {
  return [
    options.kafka ? kafkaUnlimitedRetentionWarning(settings) : undefined,
    options.kafka ? kafkaRetryStallWarning(settings) : undefined,
  ].filter((warning): warning is string => warning !== undefined);
}
