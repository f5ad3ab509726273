/**
 * The Lambda entry point of the SQS event source mapping (`handler`). Clients, configuration,
 * logger and metrics are created once, at cold start; the handler only wires.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { METRICS_NAMESPACE } from '../../config/settings.js';
import { readRuntimeConfig } from '../config/runtimeConfig.js';
import { createConsumer } from '../createConsumer.js';
import { LogObserver } from '../observability/LogObserver.js';
import { MetricsObserver } from '../observability/MetricsObserver.js';
import { combineObservers } from '../observability/outcomes.js';
import { createSqsHandler } from './createSqsHandler.js';

const config = readRuntimeConfig(process.env);
const logger = new Logger({ serviceName: config.consumerName });
const metrics = new Metrics({ namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? METRICS_NAMESPACE, serviceName: config.consumerName });
const consumer = createConsumer(
  config,
  { dynamoDb: new DynamoDBClient({}), sqs: new SQSClient({}) },
  { observer: combineObservers(new LogObserver(logger), new MetricsObserver(metrics)) },
);

/** The SQS handler: returns `{ batchItemFailures }` for the records to retry. */
export const handler = createSqsHandler(consumer, { logger, metrics });
