import type { KafkaCoordinates } from '../batch/kafkaBatchResponse.js';

/**
 * The failed attempts of one Kafka record, as the attempt log keeps them. Kafka records carry
 * no receive count, so the consumer counts failures itself, by the record's coordinates.
 */
export interface KafkaFailedAttempts extends KafkaCoordinates {
  /** Where the record came from: the MSK cluster ARN, or `SelfManagedKafka:<bootstrapServers>`. */
  readonly source: string;
  /** The identity of the record the count belongs to (see `KafkaRecordFailure.recordIdentity`). */
  readonly recordIdentity: string | undefined;
  /** Failed attempts recorded so far (from 1). */
  readonly attempts: number;
  /** The `name` of the last error, e.g. `PredecessorNotApplied`, `ValidationError`. */
  readonly lastErrorType: string;
  /** The last error's message, truncated to 1,024 characters. */
  readonly lastErrorMessage: string;
  /** The last failure's reason when it was non-retryable (a `FailureReason`); absent when retryable. */
  readonly lastFailureReason: string | undefined;
  /** When the last failure was recorded (ISO 8601, UTC). */
  readonly lastFailedAt: string;
}

/** One failure to record. */
export interface KafkaRecordFailure extends KafkaCoordinates {
  /**
   * The record's identity (`kafkaRecordIdentity`: its timestamp and a hash of key and value).
   * Coordinates can later hold another record (a recreated topic; a fresh local log): a failure
   * whose identity differs from the stored one restarts the count at 1.
   */
  readonly recordIdentity: string;
  readonly source: string;
  readonly errorType: string;
  readonly errorMessage: string;
  /** The failure's reason when it is non-retryable; `undefined` for a retryable failure. */
  readonly reason: string | undefined;
}

/**
 * Counts failed attempts per Kafka record (topic, partition, offset) and keeps the last error,
 * so that (a) an operator finds why a record failed from its coordinates alone (e.g. from the
 * offsets in the event source mapping's on-failure record), and (b) the consumer dead-letters a
 * record as `RetriesExhausted` on the attempt that reaches the configured maximum.
 *
 * `DynamoDBKafkaAttemptLog` is the adapter.
 */
export interface KafkaAttemptLog {
  /**
   * Records one failed attempt atomically. When the coordinates' stored count belongs to another
   * record (a different `recordIdentity`), the count restarts at 1 for this record.
   *
   * @returns the number of failed attempts recorded for this record at these coordinates, this
   *   one included
   * @throws the store's error when the write fails
   */
  recordFailure(failure: KafkaRecordFailure): Promise<number>;
  /** The failures recorded for these coordinates, or `undefined` when none (or they expired). */
  read(coordinates: KafkaCoordinates): Promise<KafkaFailedAttempts | undefined>;
}
