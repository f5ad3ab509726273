/**
 * The Lambda entry point (`handler`) of the consumer's function. One function serves both
 * event source mappings, SQS and (optionally) Kafka; the event's shape says which one invoked
 * it. Clients, configuration, logger and metrics are created once, at cold start; the handler
 * only wires.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { METRICS_NAMESPACE } from '../../config/settings.js';
import type { KafkaBatchResponse } from '../batch/kafkaBatchResponse.js';
import type { KafkaEvent } from '../batch/kafkaEvent.js';
import { readRuntimeConfig } from '../config/runtimeConfig.js';
import { createConsumer } from '../createConsumer.js';
import { DynamoDBKafkaAttemptLog } from '../inbox/DynamoDBKafkaAttemptLog.js';
import { LogObserver } from '../observability/LogObserver.js';
import { MetricsObserver } from '../observability/MetricsObserver.js';
import { combineObservers } from '../observability/outcomes.js';
import { createKafkaHandler } from './createKafkaHandler.js';
import { createSqsHandler } from './createSqsHandler.js';

const config = readRuntimeConfig(process.env);
const logger = new Logger({ serviceName: config.consumerName });
const metrics = new Metrics({
  namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? METRICS_NAMESPACE,
  serviceName: config.consumerName,
});
const dynamoDb = new DynamoDBClient({});
const consumer = createConsumer(
  config,
  { dynamoDb, sqs: new SQSClient({}) },
  { observer: combineObservers(new LogObserver(logger), new MetricsObserver(metrics)) },
);
const sqsHandler = createSqsHandler(consumer, { logger, metrics });
const kafkaHandler = createKafkaHandler(consumer, {
  attemptLog: DynamoDBKafkaAttemptLog.fromConfig(config, dynamoDb),
  logger,
  metrics,
});

/**
 * Dispatches by the event's shape: an SQS event (`Records`) to the SQS handler, an MSK or
 * self-managed Kafka event (`eventSource` `aws:kafka` or `SelfManagedKafka`) to the Kafka
 * handler. Each returns its source's partial batch response.
 *
 * @throws Error for any other event (nothing is acknowledged: the source retries it)
 */
export async function handler(event: SQSEvent | KafkaEvent, context: Context): Promise<SQSBatchResponse | KafkaBatchResponse> {
  if ('Records' in event && Array.isArray(event.Records)) return sqsHandler(event, context);
  if ('eventSource' in event && (event.eventSource === 'aws:kafka' || event.eventSource === 'SelfManagedKafka')) {
    return kafkaHandler(event, context);
  }
  throw new Error('unsupported event: expected an SQS event (Records) or a Kafka event (eventSource aws:kafka or SelfManagedKafka)');
}
