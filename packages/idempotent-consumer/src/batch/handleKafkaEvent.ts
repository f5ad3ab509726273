import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import { invocationClock } from '../engine/invocationClock.js';
import type { ProcessDeliveriesDeps } from '../engine/processDeliveries.js';
import { MetricName } from '../observability/MetricsObserver.js';
import { type KafkaBatchResponse, type KafkaCoordinates, kafkaBatchResponse } from './kafkaBatchResponse.js';
import type { KafkaDecodingOptions } from '../types.js';
import { kafkaDeliveries } from './kafkaDeliveries.js';
import { kafkaRetryRun, settleKafkaDeliveries } from './kafkaRetryPolicy.js';
import { type KafkaEvent, kafkaEventSource } from './kafkaEvent.js';
import { decodeKafkaRecords } from './kafkaRecordDecoding.js';

/**
 * The Kafka path (Amazon MSK or self-managed Apache Kafka), loaded only when a Kafka event
 * arrives: the records become deliveries partition by partition, the engine settles them, and
 * every reported record goes in the partial batch response. A partition stops at its first record
 * that must come back, and that record **and every later record of the partition in the batch**
 * are reported (those did not run): correct whether Lambda resumes the partition from the lowest
 * reported offset or retries only the reported records (case C12). Other partitions go on. A
 * failure of every record is reported, never thrown.
 *
 * With a schema format in `kafka` (Avro, Protobuf), the batch's values (and keys) are decoded
 * first, by Powertools' deserializers (`decodeKafkaRecords`).
 *
 * With a retry policy (`kafka.retry` in the settings: `KAFKA_RETRY_DELAY_SECONDS`,
 * `KAFKA_RETRY_UNTIL_SUCCESS`), a partition whose record failed retryably is tried again after the
 * delay within this invocation while its time allows, and a retryable failure may have no attempt
 * cap (`settleKafkaDeliveries`).
 *
 * @param sleep - waits the given milliseconds between attempts (a test's virtual clock advances
 *   here) @default setTimeout
 */
export async function handleKafkaEvent<Event>(
  event: KafkaEvent,
  context: Context,
  deps: ProcessDeliveriesDeps<Event>,
  metrics: Metrics,
  kafka?: KafkaDecodingOptions,
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
): Promise<KafkaBatchResponse> {
  const decoded = kafka === undefined ? undefined : await decodeKafkaRecords(Object.values(event.records ?? {}).flat(), kafka);
  const deliveries = kafkaDeliveries(event.records, kafkaEventSource(event), decoded);
  const { results, held } = await settleKafkaDeliveries(deliveries, deps, invocationClock(context), kafkaRetryRun(deps.config), sleep);
  const failed: KafkaCoordinates[] = [];
  for (const delivery of [...results.filter((result) => result.reported).map((result) => result.delivery), ...held]) {
    const coordinates = delivery.deadLetter.coordinates;
    failed.push({ topic: String(coordinates?.topic), partition: Number(coordinates?.partition), offset: Number(coordinates?.offset) });
  }
  metrics.addMetric(MetricName.BatchSize, MetricUnit.Count, deliveries.length);
  metrics.publishStoredMetrics();
  return kafkaBatchResponse(failed);
}
