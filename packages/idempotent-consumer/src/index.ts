/**
 * The runtime entry point of the package (`idempotent-consumer`): build a Lambda handler from your
 * own events and a pure decision function.
 *
 * ```ts
 * import { createIdempotentConsumer, NonRetryableError } from 'idempotent-consumer';
 * export const handler = createIdempotentConsumer({ schema, idempotencyKey: 'eventId', decide, … });
 * ```
 *
 * The rest lives under subpaths: `idempotent-consumer/settings` (the settings the stack, the
 * function and the local runtime share), `/kafka` (Kafka events and record formats), `/outbox`
 * (the outbox relay), `/observability` (outcomes and metric names), `/dlq` (the dead-letter
 * message format).
 *
 * @module
 */
export type {
  AttributeValue,
  Decision,
  ErrorClassification,
  EventSchema,
  IdempotentConsumerOptions,
  InboxHome,
  Item,
  ItemKey,
  OutgoingMessage,
  SideEffectContext,
  SideEffectHandler,
  SideEffectHandlers,
  SideEffectInput,
  SideEffectRequest,
  SideEffectRequestFields,
  State,
  TableDefinition,
  Write,
} from './types.js';
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
  MissingIdempotencyKey,
  NonRetryableError,
  NotAttempted,
  PredecessorNotApplied,
  RetryableError,
  TransactionConflict,
  UnknownMessageType,
  ValidationError,
} from './errors.js';
export type { OutcomeObserver, OutcomeRecord } from './observability/outcomes.js';
export type { SegmentTracer, TraceAnnotationValue, TraceSegment, TraceSubsegment } from './observability/traceSegments.js';
