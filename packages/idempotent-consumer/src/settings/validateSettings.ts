import {
  type ConsumerSettings,
  kafkaRetryAttempts,
  lambdaNodeRuntimes,
  maxReceiveCount,
  RECEIVE_ALLOWANCE,
  requiredKafkaRetryAttempts,
  requiredMaxReceiveCount,
} from './settings.js';
import { windowProblems } from './windows.js';
import { filterCriteriaProblems } from './filterCriteria.js';

/** Thrown when the settings break an AWS rule; `problems` lists every rule broken. */
export class InvalidSettingsError extends Error {
  constructor(
    /** Every rule broken, one sentence each, in the order they were checked. */
    public readonly problems: readonly string[],
  ) {
    super(`Invalid consumer settings:\n- ${problems.join('\n- ')}`);
    this.name = 'InvalidSettingsError';
  }
}

const MAX_SQS_RETENTION_SECONDS = 1_209_600;

/** Room the dead-letter queue needs beyond the source's maximum size for the reason attributes, in bytes. */
export const DEAD_LETTER_ATTRIBUTE_ALLOWANCE_BYTES = 16_384;

/**
 * Checks the settings against the AWS rules for an SQS-driven Lambda consumer and returns one
 * sentence per broken rule (an empty array when all hold). The stack calls it at synth time,
 * the local runtime at start, so neither can run settings that AWS would misbehave with.
 *
 * Rules and their sources:
 * - visibility timeout ≥ 6 × function timeout + maximum batching window
 *   (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html#events-sqs-queueconfig)
 * - `maxReceiveCount` ≥ 5 (same page: "set the maxReceiveCount on the source queue's redrive
 *   policy to at least 5")
 * - batch size 1 to 10,000 (10 for FIFO), above 10 only with a batching window ≥ 1 s;
 *   window 0 to 300 s; maximum concurrency 2 to 1,000; function timeout 1 to 900 s
 *   (https://docs.aws.amazon.com/lambda/latest/api/API_CreateEventSourceMapping.html)
 * - retention 60 s to 14 days; the dead-letter queue keeps messages at least as long as the
 *   source (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html)
 * - the function's runtime is one of {@link lambdaNodeRuntimes} (`nodejs22.x`, `nodejs24.x`): the
 *   ones the library is tested on
 * - the windows agree with each other (`settings/windows.ts`, {@link windowProblems}): the
 *   inbox keeps its rows, and the side-effect guard its records, at least as long as a message
 *   can come back (source retention + dead-letter retention; on Kafka the topic's retention +
 *   dead-letter retention), else a redriven duplicate would be applied, or its side effect sent,
 *   twice; the side-effect record outlives the function timeout; the source queue keeps a
 *   message long enough for all its receives.
 * - Kafka: retries finite (0 to 10,000; AWS's -1 means infinite), record age -1 or 60 to
 *   604,800 s, batch size 1 to 10,000, provisioned pollers 1 to 200 / 1 to 2,000 with
 *   minimum ≤ maximum, a legal topic name; filter criteria of both mappings and the SQS mapping's
 *   provisioned pollers (see `eventSourceMappingProblems`); a retry policy (`kafka.retry`) whose delay fits in the
 *   function timeout, and with `untilSuccess` a delay, no maximum record age and 10,000 retries
 *   (https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html,
 *   https://docs.aws.amazon.com/lambda/latest/api/API_ProvisionedPollerConfig.html)
 */
export function settingsProblems(settings: ConsumerSettings): string[] {
  const problems: string[] = [];
  const { queue, function: fn, retry, idempotency } = settings;

  const minimumVisibility = 6 * fn.timeoutSeconds + fn.maxBatchingWindowSeconds;
  if (queue.visibilityTimeoutSeconds < minimumVisibility) {
    problems.push(
      `visibility timeout ${queue.visibilityTimeoutSeconds} s is below 6 × function timeout ` +
        `${fn.timeoutSeconds} s + batching window ${fn.maxBatchingWindowSeconds} s = ${minimumVisibility} s ` +
        `(AWS rule: visibility timeout ≥ 6 × function timeout + maximum batching window)`,
    );
  }
  if (queue.visibilityTimeoutSeconds > 43_200) {
    problems.push(`visibility timeout ${queue.visibilityTimeoutSeconds} s exceeds the SQS maximum of 43200 s (12 hours)`);
  }
  const receives = maxReceiveCount(settings);
  const requiredReceives = requiredMaxReceiveCount(settings);
  if (!Number.isInteger(receives) || receives < 5 || receives > 1000) {
    problems.push(
      `maxReceiveCount ${receives} must be an integer from 5 to 1000 ` +
        `(AWS rule: at least 5, so a throttled or briefly failing batch is not dead-lettered)`,
    );
  } else if (receives < requiredReceives) {
    problems.push(
      `maxReceiveCount ${receives} is below ${requiredReceives} = ` +
        (queue.fifo
          ? `maxAttempts ${settings.retry.maxAttempts} × batch size ${fn.batchSize} + ${requiredReceives - settings.retry.maxAttempts * fn.batchSize}`
          : `maxAttempts ${settings.retry.maxAttempts} + ${requiredReceives - settings.retry.maxAttempts}`) +
        ` (rule: the redrive policy must never move a message that still has attempts left; ` +
        `${queue.fifo ? 'a FIFO message is received, not run, each time one ahead of it in its group fails, and ' : ''}` +
        `a receive refused for a side-effect lock or too close to the deadline is not an attempt). Leave maxReceiveCount unset to use ${requiredReceives}`,
    );
  }
  if (!Number.isInteger(settings.retry.maxAttempts) || settings.retry.maxAttempts < 1 || settings.retry.maxAttempts > 100) {
    problems.push(`maxAttempts ${settings.retry.maxAttempts} must be an integer from 1 to 100`);
  }
  if (!(lambdaNodeRuntimes as readonly string[]).includes(fn.runtime)) {
    problems.push(
      `function runtime ${JSON.stringify(fn.runtime)} must be one of ${lambdaNodeRuntimes.join(', ')} (the Lambda Node.js runtimes the library is tested on)`,
    );
  }
  if (!Number.isInteger(fn.timeoutSeconds) || fn.timeoutSeconds < 1 || fn.timeoutSeconds > 900) {
    problems.push(`function timeout ${fn.timeoutSeconds} s must be an integer from 1 to 900 s`);
  }
  // Lambda's memory range: https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html
  if (!Number.isInteger(fn.memorySizeMb) || fn.memorySizeMb < 128 || fn.memorySizeMb > 10_240) {
    problems.push(`function memory ${fn.memorySizeMb} MB must be an integer from 128 to 10240 MB`);
  }
  const maxBatch = queue.fifo ? 10 : 10_000;
  if (!Number.isInteger(fn.batchSize) || fn.batchSize < 1 || fn.batchSize > maxBatch) {
    problems.push(`batch size ${fn.batchSize} must be an integer from 1 to ${maxBatch}${queue.fifo ? ' for a FIFO queue' : ''}`);
  }
  if (fn.batchSize > 10 && fn.maxBatchingWindowSeconds < 1) {
    problems.push(`batch size ${fn.batchSize} above 10 needs a maximum batching window of at least 1 s (AWS rule)`);
  }
  if (fn.maxBatchingWindowSeconds < 0 || fn.maxBatchingWindowSeconds > 300) {
    problems.push(`maximum batching window ${fn.maxBatchingWindowSeconds} s must be from 0 to 300 s`);
  }
  if (queue.fifo && fn.maxBatchingWindowSeconds > 0) {
    problems.push('a FIFO queue does not support a maximum batching window: set it to 0');
  }
  if (!Number.isInteger(fn.maxConcurrency) || fn.maxConcurrency < 2 || fn.maxConcurrency > 1000) {
    problems.push(`maximum concurrency ${fn.maxConcurrency} must be an integer from 2 to 1000 (AWS rule)`);
  }
  for (const [name, value] of [
    ['source queue retention', queue.retentionPeriodSeconds],
    ['dead-letter queue retention', queue.deadLetterRetentionPeriodSeconds],
  ] as const) {
    if (value < 60 || value > MAX_SQS_RETENTION_SECONDS) {
      problems.push(`${name} ${value} s must be from 60 to ${MAX_SQS_RETENTION_SECONDS} s`);
    }
  }
  if (queue.deadLetterRetentionPeriodSeconds < queue.retentionPeriodSeconds) {
    problems.push(
      `dead-letter queue retention ${queue.deadLetterRetentionPeriodSeconds} s is shorter than the source ` +
        `queue's ${queue.retentionPeriodSeconds} s: a message keeps its first enqueue time, so it could expire in the DLQ at once`,
    );
  }
  if (queue.maxMessageSizeBytes < 1024 || queue.deadLetterMaxMessageSizeBytes > 1_048_576) {
    problems.push('message sizes must be from 1024 to 1048576 bytes (SQS limits)');
  }
  if (queue.deadLetterMaxMessageSizeBytes < queue.maxMessageSizeBytes + DEAD_LETTER_ATTRIBUTE_ALLOWANCE_BYTES) {
    problems.push(
      `dead-letter queue maximum message size ${queue.deadLetterMaxMessageSizeBytes} bytes must exceed the source's ` +
        `${queue.maxMessageSizeBytes} bytes by at least ${DEAD_LETTER_ATTRIBUTE_ALLOWANCE_BYTES} bytes, so the largest body still fits beside its reason`,
    );
  }
  problems.push(...windowProblems(settings));
  if (retry.backoffBaseSeconds < 0 || retry.backoffMaxSeconds < retry.backoffBaseSeconds) {
    problems.push(
      `retry backoff must have 0 ≤ backoffBaseSeconds (${retry.backoffBaseSeconds}) ≤ backoffMaxSeconds (${retry.backoffMaxSeconds})`,
    );
  }
  if (retry.backoffMaxSeconds > 43_200) {
    problems.push(`retry backoffMaxSeconds ${retry.backoffMaxSeconds} exceeds the SQS visibility maximum of 43200 s`);
  }
  if (retry.parkOutOfOrder !== undefined && typeof retry.parkOutOfOrder !== 'boolean') {
    problems.push(`retry parkOutOfOrder must be true or false, got ${JSON.stringify(retry.parkOutOfOrder)}`);
  }
  const minRemaining = idempotency.sideEffectMinRemainingMs;
  if (!Number.isInteger(minRemaining) || minRemaining < 1 || minRemaining >= fn.timeoutSeconds * 1000) {
    problems.push(
      `sideEffectMinRemainingMs ${minRemaining} ms must be an integer from 1 to below the function timeout (${fn.timeoutSeconds * 1000} ms): ` +
        `an inline side effect never starts with less time left, so a larger value would never let one start`,
    );
  }
  if (idempotency.provenance !== undefined && typeof idempotency.provenance !== 'boolean') {
    problems.push(`idempotency.provenance must be true or false, got ${JSON.stringify(idempotency.provenance)}`);
  }
  problems.push(...kafkaSettingsProblems(settings));
  problems.push(...eventSourceMappingProblems(settings));
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(settings.consumerName)) {
    problems.push(`consumer name "${settings.consumerName}" must be 1 to 64 letters, digits, '-' or '_'`);
  }
  return problems;
}

/** The Kafka event source mapping's rules (see {@link settingsProblems}). */
function kafkaSettingsProblems(settings: ConsumerSettings): string[] {
  const problems: string[] = [];
  const kafka = settings.kafka;
  const isInteger = (value: number, min: number, max: number) => Number.isInteger(value) && value >= min && value <= max;
  const retries = kafkaRetryAttempts(settings);
  const requiredRetries = requiredKafkaRetryAttempts(settings);
  if (!isInteger(retries, 0, 10_000)) {
    problems.push(
      `Kafka retry attempts ${retries} must be an integer from 0 to 10000 ` +
        `(rule: Kafka retries must be finite, so a failing record cannot block its partition; AWS's -1 means infinite)`,
    );
  } else if (retries < requiredRetries && kafka.retry?.untilSuccess === true) {
    problems.push(
      `Kafka retry attempts ${retries} are below ${requiredRetries} (rule: with kafka.retry.untilSuccess the mapping's retries are the only limit left, ` +
        `so they are the most AWS allows short of infinite, which an on-failure destination turns into 10). Leave kafka.retryAttempts unset to use ${requiredRetries}`,
    );
  } else if (retries < requiredRetries) {
    problems.push(
      `Kafka retry attempts ${retries} are below ${requiredRetries} = maxAttempts ${settings.retry.maxAttempts} × batch size ${kafka.batchSize} − 1 + ${RECEIVE_ALLOWANCE} ` +
        `(rule: the mapping must not give up on a record that still has attempts left; records behind a failed one are reported without running, and an invocation that crashes spends a retry). ` +
        `Leave kafka.retryAttempts unset to use ${requiredRetries}`,
    );
  }
  problems.push(...kafkaRetryPolicyProblems(settings));
  if (kafka.maxRecordAgeSeconds !== -1 && !isInteger(kafka.maxRecordAgeSeconds, 60, 604_800)) {
    problems.push(`Kafka maximum record age ${kafka.maxRecordAgeSeconds} s must be -1 (no limit) or an integer from 60 to 604800 s`);
  }
  if (!isInteger(kafka.batchSize, 1, 10_000)) {
    problems.push(`Kafka batch size ${kafka.batchSize} must be an integer from 1 to 10000`);
  }
  if (
    !isInteger(kafka.minimumPollers, 1, 200) ||
    !isInteger(kafka.maximumPollers, 1, 2000) ||
    kafka.minimumPollers > kafka.maximumPollers
  ) {
    problems.push(
      `Kafka provisioned pollers must be integers with 1 ≤ minimum (${kafka.minimumPollers}) ≤ 200, ` +
        `1 ≤ maximum (${kafka.maximumPollers}) ≤ 2000 and minimum ≤ maximum`,
    );
  }
  if (!/^[A-Za-z0-9._-]{1,249}$/.test(kafka.topic) || kafka.topic === '.' || kafka.topic === '..') {
    problems.push(`Kafka topic "${kafka.topic}" must be 1 to 249 letters, digits, '.', '_' or '-' (Kafka's rule)`);
  }
  return problems;
}

/**
 * The rules of `kafka.retry` (see `KafkaRetryPolicy`): a whole delay from 0 to 899 s that fits, with
 * the time an attempt needs after it (`idempotency.sideEffectMinRemainingMs`), in the function
 * timeout; a maximum record age above the time the policy may hold a record before it
 * dead-letters it ((maxAttempts − 1) × delay); `untilSuccess` a boolean, with a delay (else the
 * mapping's retries, which come at once, are spent in minutes) and no maximum record age (else the
 * mapping skips the record it holds). Sources: https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html,
 * https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure-destination.html.
 */
function kafkaRetryPolicyProblems(settings: ConsumerSettings): string[] {
  const policy = settings.kafka.retry;
  if (policy === undefined) return [];
  const problems: string[] = [];
  const delaySeconds = policy.delaySeconds ?? 0;
  const timeoutMs = settings.function.timeoutSeconds * 1000;
  const marginMs = settings.idempotency.sideEffectMinRemainingMs;
  if (!Number.isInteger(delaySeconds) || delaySeconds < 0 || delaySeconds > 899) {
    problems.push(`kafka.retry.delaySeconds ${delaySeconds} must be a whole number of seconds from 0 to 899`);
  } else if (delaySeconds > 0 && delaySeconds * 1000 + marginMs >= timeoutMs) {
    problems.push(
      `kafka.retry.delaySeconds ${delaySeconds} s + sideEffectMinRemainingMs ${marginMs} ms must stay below the function timeout ` +
        `${settings.function.timeoutSeconds} s (rule: the delay is waited within the invocation, and an attempt needs that much time after it). ` +
        `Fix: a function timeout of at least ${Math.ceil((delaySeconds * 1000 + marginMs) / 1000) + 1} s, or a shorter delay`,
    );
  }
  const heldSeconds = (settings.retry.maxAttempts - 1) * delaySeconds;
  if (
    policy.untilSuccess !== true &&
    delaySeconds > 0 &&
    settings.kafka.maxRecordAgeSeconds !== -1 &&
    heldSeconds >= settings.kafka.maxRecordAgeSeconds
  ) {
    problems.push(
      `Kafka maximum record age ${settings.kafka.maxRecordAgeSeconds} s is not above (maxAttempts ${settings.retry.maxAttempts} − 1) × kafka.retry.delaySeconds ${delaySeconds} = ${heldSeconds} s ` +
        `(rule: the mapping would give a failing record up, as metadata only, before the consumer dead-letters it with its reason and body). ` +
        `Fix: kafka.maxRecordAgeSeconds -1 or above ${heldSeconds}, or a shorter delay`,
    );
  }
  if (policy.untilSuccess !== undefined && typeof policy.untilSuccess !== 'boolean') {
    problems.push(`kafka.retry.untilSuccess must be true or false, got ${JSON.stringify(policy.untilSuccess)}`);
  }
  if (policy.untilSuccess === true) {
    if (delaySeconds === 0) {
      problems.push(
        'kafka.retry.untilSuccess needs kafka.retry.delaySeconds ≥ 1 (rule: the mapping retries at once, ' +
          'so without a delay its 10000 retries are spent in minutes and the record is given up)',
      );
    }
    if (settings.kafka.maxRecordAgeSeconds !== -1) {
      problems.push(
        `kafka.retry.untilSuccess needs kafka.maxRecordAgeSeconds -1, got ${settings.kafka.maxRecordAgeSeconds} s ` +
          `(rule: a record older than the maximum age is skipped by the mapping, unprocessed, which untilSuccess promises never to do)`,
      );
    }
  }
  return problems;
}

/**
 * The filter criteria, provisioned mode and metrics of the event source mappings: filters of the
 * SQS mapping on `body`, of the Kafka mapping on `value`, of a stream mapping on Kinesis' `data` or
 * a DynamoDB Streams record's fields, each at most 5 patterns of Lambda's
 * grammar (`filterCriteriaProblems`, https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html);
 * SQS provisioned pollers 2 to 200 (minimum) and 2 to 2,000 (maximum), minimum ≤ maximum
 * (https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-lambda-eventsourcemapping-provisionedpollerconfig.html);
 * `mappingMetrics` a boolean.
 */
function eventSourceMappingProblems(settings: ConsumerSettings): string[] {
  const fn = settings.function;
  const problems = [
    ...filterCriteriaProblems(fn.filters, 'sqs', 'function.filters'),
    ...filterCriteriaProblems(settings.kafka.filters, 'kafka', 'kafka.filters'),
    ...filterCriteriaProblems(settings.stream?.filters, 'stream', 'stream.filters'),
  ];
  const streamBatchSize = settings.stream?.batchSize;
  if (streamBatchSize !== undefined && !(Number.isInteger(streamBatchSize) && streamBatchSize >= 1 && streamBatchSize <= 10_000)) {
    problems.push(
      `stream.batchSize ${streamBatchSize} must be an integer from 1 to 10000 (AWS rule for Kinesis and DynamoDB Streams mappings)`,
    );
  }
  const { minimumPollers: minimum, maximumPollers: maximum } = fn;
  const isInteger = (value: number | undefined, min: number, max: number) =>
    value === undefined || (Number.isInteger(value) && value >= min && value <= max);
  if (!isInteger(minimum, 2, 200) || !isInteger(maximum, 2, 2000) || (minimum ?? 2) > (maximum ?? 200)) {
    problems.push(
      `SQS provisioned pollers must be integers with 2 ≤ function.minimumPollers (${minimum ?? 'unset: 2'}) ≤ 200, ` +
        `2 ≤ function.maximumPollers (${maximum ?? 'unset: 200'}) ≤ 2000 and minimum ≤ maximum (AWS rule for SQS provisioned mode)`,
    );
  }
  if (fn.mappingMetrics !== undefined && typeof fn.mappingMetrics !== 'boolean') {
    problems.push(`function.mappingMetrics must be true or false, got ${JSON.stringify(fn.mappingMetrics)}`);
  }
  return problems;
}

/**
 * Throws {@link InvalidSettingsError} listing every broken rule, or returns the settings.
 *
 * @throws InvalidSettingsError when {@link settingsProblems} finds any problem
 */
export function assertValidSettings(settings: ConsumerSettings): ConsumerSettings {
  const problems = settingsProblems(settings);
  if (problems.length > 0) throw new InvalidSettingsError(problems);
  return settings;
}
