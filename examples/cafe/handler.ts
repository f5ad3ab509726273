/**
 * The café consumer's Lambda entry point: `handler` serves the SQS (standard or FIFO) and the
 * Kafka event source mappings. The CDK stack points its `entry` here; `npm start` runs it locally.
 *
 * @module
 */
import { createIdempotentConsumer } from 'idempotent-consumer';
import { cafeConsumerOptions } from './consumer.js';

export const handler = createIdempotentConsumer(cafeConsumerOptions);
