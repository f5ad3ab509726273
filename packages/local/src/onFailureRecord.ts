/**
 * What every on-failure record of an event source mapping (Kafka, DynamoDB Streams, Kinesis)
 * carries beside its source's batch info: the invocation Lambda gave up after and why.
 *
 * Sources: https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure.html,
 * https://docs.aws.amazon.com/lambda/latest/dg/services-dynamodb-errors.html
 *
 * @module
 */

/** The invocation part of an on-failure record (the source adds its own `…BatchInfo`). */
export interface OnFailureInvocation {
  readonly requestContext: {
    /** The last invocation's request id. */
    readonly requestId: string;
    readonly functionArn: string;
    /** AWS also uses `RecordAgeExceeded` and `MaximumPayloadSizeExceeded`; the local emulations only give up on retries. */
    readonly condition: 'RetryAttemptsExhausted';
    /** Invocations of these records, the first included. */
    readonly approximateInvokeCount: number;
  };
  readonly responseContext: {
    readonly statusCode: number;
    readonly executedVersion: string;
    /** `Unhandled` when the last invocation threw or timed out; absent when it reported failures. */
    readonly functionError?: string;
  };
  readonly version: '1.0';
  /** When Lambda gave up (ISO 8601). */
  readonly timestamp: string;
}
