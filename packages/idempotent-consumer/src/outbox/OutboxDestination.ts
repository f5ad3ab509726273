/**
 * Where the outbox relay publishes: the small interface every destination implements (an SNS
 * topic, an SQS queue and an EventBridge bus are built in; anything else is one object with a
 * `publish` method, see `docs/outbox.md`).
 *
 * @module
 */
import { createHash } from 'node:crypto';

/** One outbox item as the relay hands it to its destination. */
export interface OutboxMessage {
  /**
   * The stable id of the message: SHA-256 (hex, 64 characters) of consumer name, idempotency key
   * and position (`outboxMessageId()`). Every redelivery of the event that emitted it, and every
   * retry of the relay, carries the same id: pass it to the destination as its deduplication id,
   * and downstream as {@link MESSAGE_ID_ATTRIBUTE}.
   */
  readonly messageId: string;
  /** The consumer that wrote the item. */
  readonly consumer: string;
  /** The idempotency key of the event whose decision emitted the message. */
  readonly idempotencyKey: string;
  /** The message's position among the outgoing messages of that decision (from 0). */
  readonly position: number;
  /** The destination's logical name (`OutgoingMessage.destination`, `'default'` when unset). */
  readonly destination: string;
  /** The message group (`OutgoingMessage.messageGroupId`, else the event's ordering key). */
  readonly messageGroupId: string;
  /** The body, as the decision gave it (a string as is, anything else as JSON). */
  readonly body: string;
  /** The decision's string message attributes (without {@link MESSAGE_ID_ATTRIBUTE}). */
  readonly attributes: Readonly<Record<string, string>>;
  /** When the item was committed (ISO 8601, the consumer's clock). */
  readonly createdAt: string;
  /**
   * The X-Ray trace header of the message whose decision emitted it (its SQS `AWSTraceHeader`, or
   * the consumer invocation's for a Kafka record), for the destination to carry on: the built-in SQS
   * destination sends it as the `AWSTraceHeader` message system attribute, the SNS one as the
   * `Publish` request's `X-Amzn-Trace-Id` header. `undefined` for items written without one (before
   * the consumer stored it, or outside Lambda).
   */
  readonly traceHeader?: string;
}

/** What a destination reports about one publish (for logs). */
export interface PublishReceipt {
  /** The id the destination gave the message (SNS or SQS `MessageId`), when it gives one. */
  readonly destinationMessageId?: string;
}

/**
 * A destination of the outbox relay. `publish` sends one message and resolves once the
 * destination has accepted it; it throws when it did not (the relay reports the record as a
 * batch item failure and the stream retries it).
 *
 * A destination should:
 * - use `message.messageId` as its deduplication id when it has one (FIFO SNS and SQS:
 *   `MessageDeduplicationId`; EventBridge has none: the built-in destination puts it in the
 *   event's detail);
 * - pass `message.messageId` downstream, under {@link MESSAGE_ID_ATTRIBUTE} where there are
 *   message attributes, so a receiver can deduplicate (the relay publishes at least once).
 */
export interface OutboxDestination {
  /** What the destination is, for logs and errors: a topic ARN, a queue URL, a bus name. */
  readonly target: string;
  /** Publishes one message. @throws when the destination did not accept it */
  publish(message: OutboxMessage): Promise<PublishReceipt>;
}

/**
 * The message attribute that carries the outbox message id on every published message. Named so
 * that it cannot collide with a decision's own attributes: an outgoing message that sets it is
 * refused ({@link OutboxMessageError}).
 */
export const MESSAGE_ID_ATTRIBUTE = 'outboxMessageId';

/**
 * The most attributes an outgoing message may carry itself: SNS delivers at most 10 message
 * attributes to an SQS subscriber and SQS accepts at most 10 per message
 * (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-message-metadata.html),
 * and the relay adds {@link MESSAGE_ID_ATTRIBUTE}.
 */
export const MAX_OUTGOING_ATTRIBUTES = 9;

/** An outbox item the relay cannot publish as it is (malformed, or an attribute it refuses). */
export class OutboxMessageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OutboxMessageError';
  }
}

/**
 * The message attributes of `message` in the shape SNS and SQS take: the decision's string
 * attributes and {@link MESSAGE_ID_ATTRIBUTE}.
 *
 * @throws OutboxMessageError when the message sets {@link MESSAGE_ID_ATTRIBUTE} itself or has
 *   more than {@link MAX_OUTGOING_ATTRIBUTES} attributes
 */
export function messageAttributes(message: OutboxMessage): Record<string, { DataType: 'String'; StringValue: string }> {
  const names = Object.keys(message.attributes);
  if (names.includes(MESSAGE_ID_ATTRIBUTE)) {
    throw new OutboxMessageError(`outbox message ${message.messageId} sets the reserved attribute ${MESSAGE_ID_ATTRIBUTE}`);
  }
  if (names.length > MAX_OUTGOING_ATTRIBUTES) {
    throw new OutboxMessageError(
      `outbox message ${message.messageId} has ${names.length} attributes; at most ${MAX_OUTGOING_ATTRIBUTES} fit beside ${MESSAGE_ID_ATTRIBUTE} (SNS and SQS allow 10)`,
    );
  }
  const attributes: Record<string, { DataType: 'String'; StringValue: string }> = {};
  for (const name of names) attributes[name] = { DataType: 'String', StringValue: message.attributes[name]! };
  attributes[MESSAGE_ID_ATTRIBUTE] = { DataType: 'String', StringValue: message.messageId };
  return attributes;
}

/**
 * The `MessageGroupId` for a FIFO topic or queue. SNS and SQS accept 1 to 128 characters of
 * `a-z`, `A-Z`, `0-9` and ASCII punctuation
 * (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html);
 * a group the item carries that breaks the rule (an ordering key with spaces or non-ASCII
 * letters, or a longer one) is replaced by `sha256-<hex of the group>`, so the same group always
 * maps to the same FIFO group and keeps its order.
 */
export function fifoMessageGroupId(messageGroupId: string): string {
  if (/^[\x21-\x7e]{1,128}$/.test(messageGroupId)) return messageGroupId;
  return `sha256-${createHash('sha256').update(messageGroupId).digest('hex')}`;
}
