import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type {
  Context,
  DynamoDBBatchResponse,
  DynamoDBRecord,
  DynamoDBStreamEvent,
  KinesisStreamBatchResponse,
  KinesisStreamEvent,
  KinesisStreamRecord,
} from 'aws-lambda';
import type { Delivery } from '../engine/Delivery.js';
import { invocationClock } from '../engine/invocationClock.js';
import { processDeliveries, type ProcessDeliveriesDeps } from '../engine/processDeliveries.js';
import { MetricName } from '../observability/MetricsObserver.js';
import { dynamoDbStreamEntries, kinesisEntries, type StreamEntry } from './streamDeliveries.js';

/**
 * The sequence numbers to report for a stream batch: every record the engine reported, and in each
 * shard every record after the first reported one (also those the consumer does not process, a
 * DynamoDB `REMOVE`): Lambda resumes the shard from the lowest reported sequence number, and every
 * record from there on comes back whatever else is listed.
 *
 * @param entries - the batch's records in shard order ({@link kinesisEntries}, {@link dynamoDbStreamEntries})
 * @param reported - the message ids of the deliveries the engine reported
 */
export function reportedSequenceNumbers(entries: readonly StreamEntry[], reported: ReadonlySet<string>): Set<string> {
  const result = new Set<string>();
  const stopped = new Set<string>();
  for (const entry of entries) {
    if (stopped.has(entry.scope) || (entry.delivery !== undefined && reported.has(entry.delivery.messageId))) {
      stopped.add(entry.scope);
      result.add(entry.sequenceNumber);
    }
  }
  return result;
}

/** Runs a stream batch's deliveries through the engine; the sequence numbers to report. */
async function settleStreamBatch<Event>(
  entries: readonly StreamEntry[],
  context: Context,
  deps: ProcessDeliveriesDeps<Event>,
  metrics: Metrics,
): Promise<Set<string>> {
  const deliveries = entries.flatMap((entry): Delivery[] => (entry.delivery === undefined ? [] : [entry.delivery]));
  const results = deliveries.length === 0 ? [] : await processDeliveries(deliveries, deps, invocationClock(context));
  const reported = new Set(results.filter((result) => result.reported).map((result) => result.delivery.messageId));
  metrics.addMetric(MetricName.BatchSize, MetricUnit.Count, entries.length);
  metrics.publishStoredMetrics();
  return reportedSequenceNumbers(entries, reported);
}

/**
 * The Kinesis Data Streams path, loaded only when a Kinesis event arrives: the records become
 * deliveries shard by shard in sequence-number order ({@link kinesisEntries}), the engine settles
 * them, and Powertools' `BatchProcessor` (`EventType.KinesisDataStreams`) writes the partial batch
 * response `{"batchItemFailures":[{"itemIdentifier":"<kinesis.sequenceNumber>"}]}`. A shard stops
 * at its first record that must come back, and that record and every later one of the shard in the
 * batch are reported: Lambda resumes the shard from the lowest reported sequence number. A failure
 * of every record is reported, never thrown.
 *
 * Needs `FunctionResponseTypes: ["ReportBatchItemFailures"]` on the mapping
 * (https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-batchfailurereporting.html).
 */
export async function handleKinesisEvent<Event>(
  event: KinesisStreamEvent,
  context: Context,
  deps: ProcessDeliveriesDeps<Event>,
  metrics: Metrics,
): Promise<KinesisStreamBatchResponse> {
  const failed = await settleStreamBatch(kinesisEntries(event.Records), context, deps, metrics);
  const { BatchProcessor, EventType, processPartialResponse } = await import('@aws-lambda-powertools/batch');
  const response = await processPartialResponse(
    event,
    async (record: KinesisStreamRecord) => {
      if (failed.has(record.kinesis.sequenceNumber)) throw new Error(`record ${record.eventID} must be retried`);
    },
    new BatchProcessor(EventType.KinesisDataStreams),
    { context, throwOnFullBatchFailure: false },
  );
  return { batchItemFailures: response.batchItemFailures.map(({ itemIdentifier }) => ({ itemIdentifier })) };
}

/**
 * The DynamoDB Streams path, loaded only when a DynamoDB stream event arrives: the records become
 * deliveries in sequence-number order ({@link dynamoDbStreamEntries}: the event is the record's
 * `NewImage`; a `REMOVE` is acknowledged unprocessed), the engine settles them, and Powertools'
 * `BatchProcessor` (`EventType.DynamoDBStreams`) writes the partial batch response
 * `{"batchItemFailures":[{"itemIdentifier":"<dynamodb.SequenceNumber>"}]}`. The shard stops at its
 * first record that must come back, and that record and every later one in the batch are
 * reported: Lambda resumes the shard from the lowest reported sequence number. A failure of every
 * record is reported, never thrown.
 *
 * Needs `FunctionResponseTypes: ["ReportBatchItemFailures"]` on the mapping
 * (https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-batchfailurereporting.html).
 */
export async function handleDynamoDbStreamEvent<Event>(
  event: DynamoDBStreamEvent,
  context: Context,
  deps: ProcessDeliveriesDeps<Event>,
  metrics: Metrics,
): Promise<DynamoDBBatchResponse> {
  const failed = await settleStreamBatch(dynamoDbStreamEntries(event.Records), context, deps, metrics);
  const { BatchProcessor, EventType, processPartialResponse } = await import('@aws-lambda-powertools/batch');
  const response = await processPartialResponse(
    event,
    async (record: DynamoDBRecord) => {
      if (failed.has(record.dynamodb?.SequenceNumber ?? '')) throw new Error(`record ${record.eventID} must be retried`);
    },
    new BatchProcessor(EventType.DynamoDBStreams),
    { context, throwOnFullBatchFailure: false },
  );
  return { batchItemFailures: response.batchItemFailures.map(({ itemIdentifier }) => ({ itemIdentifier })) };
}
