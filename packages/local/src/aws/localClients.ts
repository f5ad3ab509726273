/**
 * The AWS SDK clients of a local run, prepared the way the local runtime needs them: the strict
 * DynamoDB layer, the invocation guard, and optional fault injection on the consumer's clients;
 * a separate, fault-free SQS client for the event source poller (on AWS the event source mapping
 * is AWS's own machinery, not the function's code).
 *
 * @module
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { installFaults } from '../faultInjection.js';
import type { FaultInjector, FaultOptions } from '../faultInjection.js';
import { localClientConfig, localS3ClientConfig } from '../localClientConfig.js';
import { guardInvocations } from './invocationGuard.js';
import { installStrictDynamoDb } from './strictDynamoDb.js';
import type { StrictDynamoDbOptions } from './strictDynamoDb.js';

/** Options of {@link createLocalClients}. */
export interface LocalClientsOptions {
  readonly dynamoDbEndpoint: string;
  readonly sqsEndpoint: string;
  /** The S3 endpoint (the embedded SQS server's); without it there is no S3 client. */
  readonly s3Endpoint?: string;
  /**
   * The strict DynamoDB layer on the consumer's DynamoDB client (`true`, or its options).
   * @default true
   */
  readonly strictDynamoDb?: boolean | StrictDynamoDbOptions;
  /** Fault injection on the consumer's DynamoDB and SQS clients (`--fault`, `--seed`). @default none */
  readonly faults?: FaultOptions;
}

/** What {@link createLocalClients} returns. */
export interface LocalClients {
  /** The consumer's DynamoDB client: strict layer, invocation guard, faults. */
  readonly dynamoDb: DynamoDBClient;
  /** The consumer's SQS client (dead-letter queue, backoff): invocation guard, faults. */
  readonly sqs: SQSClient;
  /** The consumer's S3 client (payload bucket), path-style, guarded; when `s3Endpoint` was given. */
  readonly s3?: S3Client;
  /** The event source poller's SQS client: no faults, no guard. */
  readonly eventSourceSqs: SQSClient;
  /** The injectors, when `faults` was given (their `counts()` feed a report). */
  readonly faults?: { readonly dynamoDb: FaultInjector; readonly sqs: FaultInjector };
  /** Every client above, for the pollers' `guardedClients`. */
  readonly guarded: ReadonlyArray<DynamoDBClient | SQSClient | S3Client>;
  /** Destroys every client. */
  destroy(): void;
}

/**
 * Creates the clients of a local run.
 *
 * @example
 * const clients = createLocalClients({
 *   dynamoDbEndpoint: emulators.dynamoDbEndpoint, sqsEndpoint: emulators.sqsEndpoint, s3Endpoint: emulators.s3Endpoint,
 *   faults: { rates: faultRatesFromFlags(['throttle=0.02']), seed: 7 },
 * });
 * new SqsEventSourcePoller({ sqs: clients.eventSourceSqs, guardedClients: clients.guarded, ... });
 * @throws RangeError for fault options `installFaults` refuses
 */
export function createLocalClients(options: LocalClientsOptions): LocalClients {
  const dynamoDb = new DynamoDBClient(localClientConfig(options.dynamoDbEndpoint));
  const sqs = new SQSClient(localClientConfig(options.sqsEndpoint));
  const s3 = options.s3Endpoint === undefined ? undefined : new S3Client(localS3ClientConfig(options.s3Endpoint));
  const eventSourceSqs = new SQSClient(localClientConfig(options.sqsEndpoint));
  const clients = [dynamoDb, sqs, eventSourceSqs, ...(s3 ? [s3] : [])];
  try {
    const strict = options.strictDynamoDb ?? true;
    if (strict !== false) installStrictDynamoDb(dynamoDb, strict === true ? {} : strict);
    const faults =
      options.faults === undefined
        ? undefined
        : { dynamoDb: installFaults(dynamoDb, options.faults), sqs: installFaults(sqs, options.faults) };
    guardInvocations(dynamoDb);
    guardInvocations(sqs);
    if (s3) guardInvocations(s3);
    return {
      dynamoDb,
      sqs,
      ...(s3 ? { s3 } : {}),
      eventSourceSqs,
      ...(faults ? { faults } : {}),
      guarded: s3 ? [dynamoDb, sqs, s3] : [dynamoDb, sqs],
      destroy: () => {
        for (const client of clients) client.destroy();
      },
    };
  } catch (error) {
    for (const client of clients) client.destroy();
    throw error;
  }
}
