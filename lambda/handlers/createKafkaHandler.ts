import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import type { KafkaBatchResponse } from '../batch/kafkaBatchResponse.js';
import { kafkaDelivery, kafkaMessageId } from '../batch/kafkaDelivery.js';
import { type KafkaEvent, type KafkaRecord, kafkaEventSource } from '../batch/kafkaEvent.js';
import { KafkaPartialBatchProcessor } from '../batch/KafkaPartialBatchProcessor.js';
import type { Consumer } from '../createConsumer.js';
import type { KafkaAttemptLog } from '../inbox/KafkaAttemptLog.js';
import { prefetchBatch } from '../batch/prefetchBatch.js';
import { MetricName } from '../observability/MetricsObserver.js';
import { RetryableFailure } from '../processing/MessageConsumer.js';

/** What the Kafka handler needs beyond the consumer. */
export interface KafkaHandlerOptions {
  /**
   * Where failed attempts are counted by coordinates (`DynamoDBKafkaAttemptLog` on the inbox
   * table): Kafka records have no receive count.
   */
  readonly attemptLog: KafkaAttemptLog;
  readonly logger?: Logger;
  /** Flushed once per invocation with `publishStoredMetrics()`. */
  readonly metrics?: Metrics;
}

/** The Lambda handler of an Amazon MSK or self-managed Kafka event source mapping with `ReportBatchItemFailures`. */
export type KafkaHandler = (event: KafkaEvent, context: Context) => Promise<KafkaBatchResponse>;

/**
 * Builds the Kafka handler: the same consumer as the SQS path (`MessageConsumer`: inbox,
 * guarded side effect, classifier, dead-letter queue), driven by the
 * {@link KafkaPartialBatchProcessor}.
 *
 * - Records of one partition are consumed in offset order; the first that must be retried
 *   stops its partition and is its only batch item failure; other partitions go on.
 * - Non-retryable records are dead-lettered to the SQS dead-letter queue with their reason and
 *   original coordinates (topic, partition, offset, timestamp, key) and acknowledged, so a
 *   poison record never blocks its partition (case C8).
 * - Each failure is counted in the attempt log by coordinates; the failure that reaches
 *   `config.kafkaMaxAttempts` is dead-lettered as `RetriesExhausted` and acknowledged.
 *
 * It returns `{"batchItemFailures":[{"itemIdentifier":{"partition":"<topic>-<partition>","offset":<n>}}]}`
 * (see `kafkaBatchResponse.ts`) and never throws for a failed record, also when every
 * partition fails.
 */
export function createKafkaHandler(consumer: Consumer, options: KafkaHandlerOptions): KafkaHandler {
  const { config, inbox, messageConsumer, notifier } = consumer;
  const { attemptLog, logger, metrics } = options;
  const processor = new KafkaPartialBatchProcessor<KafkaRecord>({
    onRecordFailure: (record, error) => {
      // Planned retries are logged by the consumer's observer; anything else is a fault here.
      if (!(error instanceof RetryableFailure)) {
        logger?.error('record failed outside the consumer; its partition will be retried', { messageId: kafkaMessageId(record), error });
      }
    },
  });
  const onAttemptLogError = (error: unknown, record: KafkaRecord) =>
    logger?.warn('could not count the failed attempt; the event source mapping retry limit applies', {
      messageId: kafkaMessageId(record),
      error,
    });

  return async (event, context) => {
    notifier.registerLambdaContext(context);
    logger?.addContext(context);
    const source = kafkaEventSource(event);
    const values = Object.values(event.records ?? {}).flatMap((group) => group.map((record) => Buffer.from(record.value ?? '', 'base64').toString('utf8')));
    await prefetchBatch(inbox, values, logger);
    let response: KafkaBatchResponse;
    try {
      response = await processor.process(event.records, (record) =>
        messageConsumer.consume(kafkaDelivery(record, { source, maxAttempts: config.kafkaMaxAttempts, attemptLog, onAttemptLogError })),
      );
    } finally {
      inbox.forget?.();
    }
    if (metrics !== undefined) {
      const records = Object.values(event.records ?? {}).reduce((sum, group) => sum + group.length, 0);
      metrics.addMetric(MetricName.BatchSize, MetricUnit.Count, records);
      metrics.publishStoredMetrics();
    }
    return response;
  };
}
