import type { MessageAttributeValue } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import type { Classification } from '../classifier.js';

/** How a source counts a message's attempts. */
export type AttemptSource =
  /** SQS: the receive count, minus the receives in which it was not attempted (the attempt log's skips). */
  | { readonly kind: 'receive-count'; readonly receiveCount: number; readonly sourceId: string }
  /** Kafka: no count of its own; failed attempts are counted in the attempt log by coordinates and record identity. */
  | { readonly kind: 'log'; readonly sourceId: string; readonly recordIdentity: string; readonly source: string };

/** What the dead-letter queue needs to know of a message's origin. */
export interface DeadLetterOrigin {
  /** The source queue's ARN, or the Kafka event source. */
  readonly source: string;
  /** Original coordinates, written as JSON: the FIFO message group, or Kafka topic/partition/offset/timestamp/key. */
  readonly coordinates?: Readonly<Record<string, string | number | null>>;
  /** The message group, for a FIFO dead-letter queue. */
  readonly messageGroupId?: string;
  /** The producer's message attributes (SQS `SendMessage` form), kept on the dead letter. */
  readonly originalAttributes?: Readonly<Record<string, MessageAttributeValue>>;
  /** `base64` when the body is a value SQS could not take as text (a Kafka value that is not UTF-8). */
  readonly bodyEncoding?: 'base64';
}

/** One delivery of one message, from any event source: what the engine works on. */
export interface Delivery {
  /** The source's id of the message (SQS `messageId`, Kafka `<topic>-<partition>@<offset>`). */
  readonly messageId: string;
  /** The body as received (a decoded Kafka value; its base64 when `deadLetter.bodyEncoding` says so). */
  readonly body: string;
  /**
   * The body already decoded, used instead of parsing `body` as JSON: a Kafka value decoded with
   * a schema format (Avro, Protobuf), JSON-compatible. `body` then holds the value's bytes in base64.
   */
  readonly parsedBody?: { readonly value: unknown };
  /** A failure known before parsing (a Kafka value that is not UTF-8, a tombstone): it is dead-lettered. */
  readonly rejection?: Error;
  /**
   * Deliveries with the same scope stop at the first one that must be retried: the FIFO message
   * group, the Kafka topic-partition. `undefined` on a standard queue.
   */
  readonly scope?: string;
  readonly attempts: AttemptSource;
  readonly deadLetter: DeadLetterOrigin;
  /**
   * The source's id of the dead-lettered message this one redrives (an SQS message attribute or a
   * Kafka record header `ic.redrive`, added by `dlq redrive`): only a redrive applies a key that
   * the inbox holds as dead-lettered; any other copy of it is acknowledged as a duplicate.
   */
  readonly redriveOf?: string;
  /**
   * The X-Ray trace header the message came with (SQS's `AWSTraceHeader` system attribute), which
   * its dead letter and its outbox messages carry on; `undefined` when it came with none (a Kafka
   * record): `processDeliveries` then gives them the invocation's own (`_X_AMZN_TRACE_ID`).
   */
  readonly traceHeader?: string;
  /**
   * The SQS record it came as, on a standard queue: what parking stores (see `ParkedMessages`).
   * `undefined` on a FIFO queue and on the other sources, which are never parked.
   */
  readonly sqsRecord?: SQSRecord;
  /** `true` when it was read from the park (a parked record decided again), not received from the source. */
  readonly fromPark?: true;
}

/** What became of one delivery. */
export type Verdict =
  /** Its state change committed now. */
  | { readonly kind: 'applied' }
  /** The inbox already had its idempotency key (same payload); nothing was written. */
  | { readonly kind: 'duplicate' }
  /** It is in the dead-letter queue with its reason. */
  | { readonly kind: 'dead-lettered'; readonly failure: Classification; readonly attempt: number | undefined }
  /** It must come back: report it as a batch item failure. */
  | { readonly kind: 'retry'; readonly failure: Classification; readonly attempt: number | undefined; readonly retryAt?: number };

/** One delivery's result, as the engine hands it to the source's response and to the observers. */
export interface DeliveryResult {
  readonly delivery: Delivery;
  readonly verdict: Verdict;
  /** Whether the source must redeliver it (a batch item failure): every verdict but `applied`/`duplicate`/`dead-lettered`, and every delivery of its scope after one that must come back. */
  readonly reported: boolean;
  readonly idempotencyKey: string | undefined;
  readonly orderingKey: string | undefined;
  readonly fields: Readonly<Record<string, string | number | boolean>>;
  /** Time from the start of the batch to this delivery's verdict, in milliseconds. */
  readonly durationMs: number;
  /** A retry whose record was parked (see `ParkedMessages`). */
  readonly parked?: true;
}
