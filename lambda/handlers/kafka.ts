/**
 * The Lambda entry point of the Kafka event source mapping (Amazon MSK or self-managed Apache
 * Kafka), `handler`. Clients, configuration, logger and metrics are created once, at cold
 * start; the handler only wires. Same consumer as `sqs.ts`; the event source differs.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { METRICS_NAMESPACE } from '../../config/settings.js';
import { readRuntimeConfig } from '../config/runtimeConfig.js';
import { createConsumer } from '../createConsumer.js';
import { DynamoDBKafkaAttemptLog } from '../inbox/DynamoDBKafkaAttemptLog.js';
import { LogObserver } from '../observability/LogObserver.js';
import { MetricsObserver } from '../observability/MetricsObserver.js';
import { combineObservers } from '../observability/outcomes.js';
import { createKafkaHandler } from './createKafkaHandler.js';

const config = readRuntimeConfig(process.env);
const logger = new Logger({ serviceName: config.consumerName });
const metrics = new Metrics({ namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? METRICS_NAMESPACE, serviceName: config.consumerName });
const dynamoDb = new DynamoDBClient({});
const consumer = createConsumer(
  config,
  { dynamoDb, sqs: new SQSClient({}) },
  { observer: combineObservers(new LogObserver(logger), new MetricsObserver(metrics)) },
);

/** The Kafka handler: returns `{ batchItemFailures: [{ itemIdentifier: { partition, offset } }] }` for the partitions to resume. */
export const handler = createKafkaHandler(consumer, {
  attemptLog: DynamoDBKafkaAttemptLog.fromConfig(config, dynamoDb),
  logger,
  metrics,
});
