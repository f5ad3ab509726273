import {
  BatchProcessor,
  EventType,
  processPartialResponse,
  SqsFifoPartialProcessorAsync,
} from '@aws-lambda-powertools/batch';
import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { prefetchBatch } from '../batch/prefetchBatch.js';
import { serializeByKey } from '../batch/serializeByKey.js';
import { sqsDelivery } from '../batch/sqsDelivery.js';
import type { Consumer } from '../createConsumer.js';
import { MetricName } from '../observability/MetricsObserver.js';
import { peekIds } from '../observability/outcomes.js';

/** Observability of the handler; both optional so a test can leave them out. */
export interface SqsHandlerObservability {
  readonly logger?: Logger;
  /** Flushed once per invocation with `publishStoredMetrics()`. */
  readonly metrics?: Metrics;
}

/** The Lambda handler of an SQS event source mapping with `ReportBatchItemFailures`. */
export type SqsHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;

/**
 * Builds the SQS handler: Powertools batch processing with partial batch responses.
 *
 * - Standard queue: `BatchProcessor` runs the records in parallel, but those of one order
 *   (`orderId`, read leniently from the body) one after another in batch order.
 * - FIFO queue: `SqsFifoPartialProcessorAsync` with `skipGroupOnError`: the first retryable
 *   failure of a message group stops that group; it and every later message of the group are
 *   reported, not run; other groups go on.
 *
 * Before the records run, the inbox reads the batch's inbox rows and order states in one
 * request (`prefetch`); a failure there only means each record reads for itself.
 *
 * It returns exactly AWS's contract, `{"batchItemFailures":[{"itemIdentifier":"<messageId>"}]}`
 * (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html), and does not
 * throw when the whole batch fails (`throwOnFullBatchFailure: false`): every record is
 * reported instead. Failed records' redelivery is then delayed with `ChangeMessageVisibility`
 * (see `RetryBackoff`); an error there is logged, never thrown.
 */
export function createSqsHandler(consumer: Consumer, observability: SqsHandlerObservability = {}): SqsHandler {
  const { config, inbox, messageConsumer, notifier, retryBackoff } = consumer;
  const { logger, metrics } = observability;
  const processor = config.fifo ? new SqsFifoPartialProcessorAsync() : new BatchProcessor(EventType.SQS);

  return async (event, context) => {
    notifier.registerLambdaContext(context);
    logger?.addContext(context);
    await prefetchBatch(inbox, event.Records.map((record) => record.body), logger);
    const consume = (record: SQSRecord) => messageConsumer.consume(sqsDelivery(record, config.maxReceiveCount));

    let response: SQSBatchResponse;
    try {
      if (config.fifo) {
        response = await processPartialResponse(event, consume, processor as SqsFifoPartialProcessorAsync, {
          context,
          skipGroupOnError: true,
          throwOnFullBatchFailure: false,
        });
      } else {
        const inOrderOf = serializeByKey();
        const orderKey = (record: SQSRecord) => peekIds(record.body).orderId ?? `message:${record.messageId}`;
        response = await processPartialResponse(
          event,
          (record: SQSRecord) => inOrderOf(orderKey(record), () => consume(record)),
          processor as BatchProcessor,
          { context, processInParallel: true, throwOnFullBatchFailure: false },
        );
      }
    } finally {
      inbox.forget?.();
    }
    const failed = new Set(response.batchItemFailures.map((failure) => failure.itemIdentifier));
    if (failed.size > 0) {
      try {
        await retryBackoff.delay(event.Records.filter((record) => failed.has(record.messageId)));
      } catch (error) {
        logger?.warn('could not delay the retries; they return after the visibility timeout', { error });
      }
    }
    if (metrics !== undefined) {
      metrics.addMetric(MetricName.BatchSize, MetricUnit.Count, event.Records.length);
      metrics.publishStoredMetrics();
    }
    return { batchItemFailures: response.batchItemFailures.map(({ itemIdentifier }) => ({ itemIdentifier })) };
  };
}

