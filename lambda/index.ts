/**
 * The runtime entry point of the package (`idempotent-consumer`): build a Lambda handler from your
 * own events and a pure decision function.
 *
 * ```ts
 * import { createIdempotentConsumer, NonRetryableError } from 'idempotent-consumer';
 * export const handler = createIdempotentConsumer({ schema, idempotencyKey: 'eventId', decide, … });
 * ```
 *
 * @module
 */
export type * from './types.js';
export {
  createIdempotentConsumer,
  createRecordHandler,
  type ConsumerRuntimeOptions,
  type IdempotentConsumerHandler,
} from './createIdempotentConsumer.js';
export {
  BusinessRuleViolation,
  ConditionalWriteFailed,
  ConsumerDefinitionError,
  ConsumerError,
  FailureReason,
  IdempotencyConflict,
  InvalidWrite,
  MissingIdempotencyKey,
  NonRetryableError,
  NotAttempted,
  PredecessorNotApplied,
  RetryableError,
  TransactionConflict,
  UnknownMessageType,
  ValidationError,
} from './errors.js';
export { classify, type Classification } from './classifier.js';
export { canonicalJson, payloadHash } from './engine/canonicalJson.js';
export { Outcome, combineObservers, type OutcomeObserver, type OutcomeRecord } from './observability/outcomes.js';
export { MetricName, FAILURE_REASON_DIMENSION } from './observability/MetricsObserver.js';
export { outboxMessageId, OUTBOX_KIND } from './outbox/outboxItems.js';
export { inboxKey, InboxStatus } from './inbox/inboxItems.js';
export type { KafkaEvent, KafkaRecord } from './batch/kafkaEvent.js';
export type { KafkaBatchResponse } from './batch/kafkaBatchResponse.js';
