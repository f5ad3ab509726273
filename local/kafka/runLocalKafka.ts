/**
 * `npm start -- --source kafka`: the local run of the Kafka path, on the same emulators,
 * resources, consumer, report and exactly-once check as the SQS run (`runLocal.ts`), with the
 * in-process {@link PartitionedLog} and {@link KafkaEventSourcePoller} in place of a broker and
 * Lambda's Kafka event source mapping.
 *
 * @module
 */
import { kafkaMessageId } from '../../lambda/batch/kafkaDelivery.js';
import { createKafkaHandler } from '../../lambda/handlers/createKafkaHandler.js';
import { DynamoDBKafkaAttemptLog } from '../../lambda/inbox/DynamoDBKafkaAttemptLog.js';
import { type OutcomeRecord, peekIds } from '../../lambda/observability/outcomes.js';
import type { InputMessage } from '../inputFile.js';
import { MetricsCapture } from '../metricsCapture.js';
import { buildReport, type RunReport, type SentMessage } from '../report.js';
import { countEffects, executionEnvironments, type LocalRunOptions, progress, readDeadLetterQueue, runLocal, type SourceRun } from '../runLocal.js';
import {
  KafkaEventSourcePoller,
  type KafkaInvocationReport,
  type KafkaOnFailureRecord,
  kafkaPollerOptionsFromSettings,
} from './KafkaEventSourcePoller.js';
import { PartitionedLog } from './PartitionedLog.js';
import { inProducerOrder } from '../producerOrder.js';

/** Partitions of the local topic when the run does not say. */
export const DEFAULT_LOCAL_PARTITIONS = 3;

/** Options of {@link runLocalKafka}: those of `runLocal`, plus the topic's shape. */
export interface LocalKafkaRunOptions extends LocalRunOptions {
  /** Partitions of the local topic (`settings.kafka.topic`). @default 3 */
  readonly partitions?: number;
  /** Called after each invocation (tests, debugging). */
  readonly onInvocation?: (report: KafkaInvocationReport) => void;
  /** Receives the metadata record of each batch the event source gives up on. @default kept for the report only */
  readonly onFailure?: (record: KafkaOnFailureRecord) => void;
  /**
   * The order in which the input is appended to the log (see {@link inProducerOrder}):
   * `producer` puts each order's events in the order they occurred, `file` appends the lines
   * exactly as written.
   * @default 'producer'
   */
  readonly appendOrder?: 'producer' | 'file';
}

/**
 * `runLocal` with the Kafka source: the same emulators, resources, consumer, report and
 * exactly-once check as the SQS run; the input is appended to a local topic keyed by each
 * body's `orderId` (bodies without one are spread over the partitions) in producer order (see
 * {@link inProducerOrder}), and the Kafka event source poller runs the real Kafka handler until
 * every record is committed.
 *
 * Record ids are `<topic>-<partition>@<offset>`; an empty body becomes an empty Kafka value
 * (dead-lettered as `ValidationError`). Batches the event source gives up on
 * (retries exhausted; the consumer dead-letters first, so this means a fault) fail the check.
 *
 * @throws as `runLocal`
 */
export function runLocalKafka(options: LocalKafkaRunOptions): Promise<RunReport> {
  return runLocal(options, (run) => runKafkaSource({ ...options, ...run }));
}

/** What {@link runKafkaSource} needs: the run's options and provisioned resources. */
export interface KafkaSourceRun extends LocalKafkaRunOptions, SourceRun {}

/**
 * The Kafka run on resources that already exist: appends the input, polls until idle, reports.
 * `runLocalKafka` calls it after starting and provisioning; tests may call it directly.
 */
export async function runKafkaSource(run: KafkaSourceRun): Promise<RunReport> {
  const started = performance.now();
  const startedAt = new Date();
  const outcomes: OutcomeRecord[] = [];
  const environments = executionEnvironments(run, { onOutcome: (record) => outcomes.push(record) });
  const onFailureRecords: KafkaOnFailureRecord[] = [];

  const log = new PartitionedLog({ topic: run.settings.kafka.topic, partitions: run.partitions ?? DEFAULT_LOCAL_PARTITIONS });
  const sent: SentMessage[] = appendInput(log, run.appendOrder === 'file' ? run.input : inProducerOrder(run.input));

  const capture = new MetricsCapture();
  capture.start();
  const progressOf = () => progress(capture.totals(), run.input.length, poller.invocations, started);
  const poller = new KafkaEventSourcePoller({
    log,
    ...kafkaPollerOptionsFromSettings(run.settings),
    createHandler: () => {
      const { consumer, logger, metrics } = environments();
      return createKafkaHandler(consumer, { attemptLog: DynamoDBKafkaAttemptLog.fromConfig(run.config, run.dynamoDb), logger, metrics });
    },
    onFailure: (record) => {
      onFailureRecords.push(record);
      run.onFailure?.(record);
    },
    ...(run.onInvocation !== undefined ? { onInvocation: run.onInvocation } : {}),
  });
  const progressTimer = setInterval(() => run.onProgress?.(progressOf()), 1000);
  try {
    await poller.runUntilIdle({ timeoutMs: run.timeoutMs ?? 600_000 });
  } finally {
    clearInterval(progressTimer);
    capture.stop();
  }
  run.onProgress?.(progressOf());

  const [deadLetters, effects] = await Promise.all([
    readDeadLetterQueue(run, startedAt),
    countEffects(run.dynamoDb, run.resources.ordersTable),
  ]);
  const report = buildReport({
    source: 'kafka',
    sent,
    outcomes,
    deadLetters,
    effects,
    metrics: capture.totals(),
    remainingInSource: poller.lag(),
    durationMs: performance.now() - started,
  });
  if (onFailureRecords.length === 0) return report;
  const given = onFailureRecords.map((r) => Object.entries(r.KafkaBatchInfo.recordsInfo).map(([p, i]) => `${p}@${i.firstRecordOffset}..${i.lastRecordOffset}`));
  return {
    ...report,
    check: {
      ok: false,
      problems: [
        ...report.check.problems,
        `${onFailureRecords.length} batch(es) went to the on-failure destination (metadata only, records not processed): ${given.flat().join(', ')}`,
      ],
    },
  };
}


/**
 * Appends each input body to the log as a producer would: UTF-8 value, key = the body's
 * `orderId` (none when it has none), in input order.
 *
 * @returns the sent messages as the report knows them, with the id `<topic>-<partition>@<offset>`
 */
export function appendInput(log: PartitionedLog, input: readonly InputMessage[]): SentMessage[] {
  return input.map((message) => {
    const { partition, offset } = log.append({ key: peekIds(message.body).orderId ?? null, value: message.body });
    return {
      messageId: kafkaMessageId({ topic: log.topic, partition, offset }),
      line: message.line,
      body: message.body,
    };
  });
}
