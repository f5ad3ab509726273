/**
 * The dead-letter entry point of the package (`idempotent-consumer/dlq`): the format of a
 * dead-letter message (its `ic.*` attributes, the producer's attributes kept beside them, bodies
 * offloaded to S3) and how a received one is read back; what the DLQ tool and the local run use.
 *
 * @module
 */
export * from './deadLetterMessage.js';
export * from './deadLetterRecord.js';
export * from './failureReasons.js';
export * from './kafkaOnFailureRecord.js';
export * from './payloadPointer.js';
export { REDRIVE_ATTRIBUTE } from '../batch/sqsDeliveries.js';
export * from './deadLetterErrors.js';
