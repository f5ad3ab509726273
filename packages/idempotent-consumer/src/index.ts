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
  isConsumerError,
  isNotAttempted,
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
export {
  createOutboxRelay,
  OutboxMetricName,
  type OutboxRelayHandler,
  type OutboxRelayOptions,
  type OutboxRelayRuntimeOptions,
  type RelayedMessage,
} from './outbox/createOutboxRelay.js';
export { MESSAGE_ID_ATTRIBUTE, OutboxMessageError, type OutboxDestination, type OutboxMessage, type PublishReceipt } from './outbox/OutboxDestination.js';
export { snsTopicDestination } from './outbox/snsTopicDestination.js';
export { sqsQueueDestination } from './outbox/sqsQueueDestination.js';
export { redriveOutbox, type RedriveOutboxOptions, type RedriveOutboxResult } from './outbox/redriveOutbox.js';
export { inboxKey, InboxStatus } from './inbox/inboxItems.js';
export type { KafkaEvent, KafkaRecord } from './batch/kafkaEvent.js';
export { kafkaAvroFormat, kafkaProtobufFormat, type ProtobufMessageType } from './batch/kafkaValueDecoder.js';
export type { KafkaBatchResponse } from './batch/kafkaBatchResponse.js';
