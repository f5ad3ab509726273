/**
 * Errors of the dead-letter writer. Each leaves the failed message where it was: the engine does
 * not acknowledge it, so it is retried (and, on SQS, the queue's redrive policy is the safety net
 * that moves it with its body and attributes intact).
 *
 * @module
 */

/** Base of the dead-letter writer's errors: sets `name` to the subclass's name. */
export abstract class DeadLetterError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * The dead-letter message does not fit the dead-letter queue's maximum message size, and cannot
 * be made to fit without losing something: there is no payload bucket to offload the body to, or
 * the message attributes alone (the producer's and the consumer's) are too large.
 */
export class DeadLetterTooLargeError extends DeadLetterError {
  constructor(
    message: string,
    /** The size the message would have, in bytes (body + attributes, as SQS counts them). */
    public readonly sizeBytes: number,
    /** The dead-letter queue's maximum message size, in bytes. */
    public readonly maxMessageSizeBytes: number,
  ) {
    super(message);
  }
}

/** The failure has no reason, or one that `isValidFailureReason` refuses (a bug of the caller). */
export class InvalidFailureReasonError extends DeadLetterError {}

/** SQS refused one entry of a `SendMessageBatch` (its `Failed` list), or the batch request failed as a whole. */
export class DeadLetterSendError extends DeadLetterError {
  constructor(
    message: string,
    /** SQS's error code, e.g. `InvalidParameterValue`, `ServiceUnavailable`. */
    public readonly code: string,
    /** Whether SQS blamed the request (`SenderFault`); a retry of the same request fails again. */
    public readonly senderFault: boolean,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
