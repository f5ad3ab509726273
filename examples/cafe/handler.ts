/**
 * The café consumer's Lambda entry point: `handler` serves the SQS (standard or FIFO) and the
 * Kafka event source mappings. The CDK stack points its `entry` here; `npm start` runs it locally.
 *
 * It traces with Powertools' Tracer (the construct turns active tracing on): each batch is an
 * X-Ray subsegment `## batch` with its phases under it (`## parse`, `## decide`, `## read`,
 * `## sideEffects`, `## commit`, `## deadLetter`).
 *
 * The Tracer (with the X-Ray SDK under it: about 12 ms of CPU at import) is loaded only where it
 * would record: on Lambda (`AWS_LAMBDA_FUNCTION_NAME` set) unless tracing is off
 * (`POWERTOOLS_TRACE_ENABLED=false`, which the construct sets for `Tracing.DISABLED`). Outside
 * Lambda Powertools' Tracer records nothing, so `npm start` and the bench's imports skip it.
 *
 * @module
 */
import { createIdempotentConsumer } from 'idempotent-consumer';
import { cafeConsumerOptions } from './consumer.js';

const tracing = process.env.AWS_LAMBDA_FUNCTION_NAME !== undefined && process.env.POWERTOOLS_TRACE_ENABLED !== 'false';
/** Its service name is `POWERTOOLS_SERVICE_NAME`, which the construct sets to the consumer's name. */
const tracer = tracing ? new (await import('@aws-lambda-powertools/tracer')).Tracer() : undefined;

export const handler = createIdempotentConsumer(cafeConsumerOptions, tracer === undefined ? {} : { tracer });
