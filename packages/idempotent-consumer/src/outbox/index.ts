/**
 * The outbox entry point of the package (`idempotent-consumer/outbox`): the relay that publishes
 * the outbox items a consumer's decisions wrote (from the inbox table's DynamoDB stream), its
 * destinations (SNS, SQS, EventBridge), its settings, and the redrive of items the relay gave up on.
 *
 * @module
 */
export {
  createOutboxRelay,
  type OutboxRelayHandler,
  type OutboxRelayOptions,
  type OutboxRelayRuntimeOptions,
  type RelayedMessage,
} from './createOutboxRelay.js';
export { OutboxMetricName } from './outboxMetrics.js';
export {
  MESSAGE_ID_ATTRIBUTE,
  OutboxMessageError,
  type OutboxDestination,
  type OutboxMessage,
  type PublishReceipt,
} from './OutboxDestination.js';
export { snsTopicDestination } from './snsTopicDestination.js';
export { sqsQueueDestination } from './sqsQueueDestination.js';
export {
  eventBridgeDestination,
  eventBridgeDetail,
  eventBridgeEntry,
  putEventsEntrySize,
  PutEventsEntryError,
  ATTRIBUTES_DETAIL_KEY,
  DEFAULT_DETAIL_TYPE,
  MAX_PUT_EVENTS_ENTRY_BYTES,
  RETRYABLE_PUT_EVENTS_ERROR_CODES,
  type EventBridgeDestinationOptions,
} from './eventBridgeDestination.js';
export { redriveOutbox, type RedriveOutboxOptions, type RedriveOutboxResult } from './redriveOutbox.js';
export { outboxMessageId, OUTBOX_KIND } from './outboxItems.js';
export { outboxFilterPattern } from './outboxStreamRecords.js';
export * from './outboxRelaySettings.js';
export type { SegmentTracer, TraceAnnotationValue, TraceSegment, TraceSubsegment } from '../observability/traceSegments.js';
