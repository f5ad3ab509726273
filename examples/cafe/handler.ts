/**
 * The café consumer's Lambda entry point: `handler` serves the SQS (standard or FIFO) and the
 * Kafka event source mappings. The CDK stack points its `entry` here; `npm start` runs it locally.
 *
 * It traces with Powertools' Tracer (the construct turns active tracing on): each batch is an
 * X-Ray subsegment `## batch` with its phases under it (`## parse`, `## decide`, `## read`,
 * `## sideEffects`, `## commit`, `## deadLetter`). Outside Lambda the tracer is off and records
 * nothing.
 *
 * @module
 */
import { Tracer } from '@aws-lambda-powertools/tracer';
import { createIdempotentConsumer } from 'idempotent-consumer';
import { cafeConsumerOptions } from './consumer.js';

/** Its service name is `POWERTOOLS_SERVICE_NAME`, which the construct sets to the consumer's name. */
const tracer = new Tracer();

export const handler = createIdempotentConsumer(cafeConsumerOptions, { tracer });
