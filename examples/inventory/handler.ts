/**
 * The inventory consumer's Lambda entry point (SQS and Kafka).
 *
 * @module
 */
import { createIdempotentConsumer } from 'idempotent-consumer';
import { inventoryConsumerOptions } from './consumer.js';

export const handler = createIdempotentConsumer(inventoryConsumerOptions);
