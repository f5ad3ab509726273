/**
 * Helpers for the local runtime's AWS SDK v3 middleware (strict DynamoDB layer, fault injection,
 * invocation guard): which service and operation a call is, and error responses shaped as the
 * service sends them, so the SDK's own deserializer turns them into its own exception classes
 * (`TransactionCanceledException` with `CancellationReasons`, `$metadata.httpStatusCode`,
 * `$fault`) and its retry strategy treats them as it treats the real ones.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import type { HandlerExecutionContext, MiddlewareStack } from '@smithy/types';

/** Any AWS SDK v3 client (or a lib-dynamodb document client, which shares its client's stack). */
export interface SdkClient<Input extends object = object, Output extends object = object> {
  readonly middlewareStack: MiddlewareStack<Input, Output>;
}

/** The services the local stack emulates. */
export type LocalService = 'dynamodb' | 'sqs' | 'other';

/** The service of a call, from the SDK's handler context (`clientName`: `DynamoDBClient`, `SQSClient`, …). */
export function serviceOf(context: HandlerExecutionContext): LocalService {
  const clientName = String(context.clientName ?? '');
  if (clientName.startsWith('DynamoDB')) return 'dynamodb';
  if (clientName.startsWith('SQS')) return 'sqs';
  return 'other';
}

/** The operation of a call without its `Command` suffix, e.g. `TransactWriteItems`. */
export function operationOf(context: HandlerExecutionContext): string {
  return String(context.commandName ?? '').replace(/Command$/, '');
}

/** A raw HTTP response, as the SDK's HTTP handler resolves it (`{ response }`). */
export interface RawResponse {
  readonly statusCode: number;
  readonly reason?: string;
  readonly headers: Record<string, string>;
  readonly body: Uint8Array;
}

/** An error the service answers with. */
export interface ServiceErrorShape {
  readonly statusCode: number;
  /** The error code, e.g. `TransactionCanceledException`, `InvalidParameterValue`. */
  readonly code: string;
  readonly message: string;
  /** Extra members of the error body, e.g. `CancellationReasons`. */
  readonly members?: Record<string, unknown>;
  /** SQS: the code of the `x-amzn-query-error` header. @default code */
  readonly queryCode?: string;
}

const dynamoDbNamespace: Record<string, string> = {
  ValidationException: 'com.amazon.coral.validate',
};

/**
 * The HTTP response the service sends for `error`: AWS JSON 1.0 with `__type` (DynamoDB:
 * `com.amazonaws.dynamodb.v20120810#Code`, validation errors `com.amazon.coral.validate#…`; SQS:
 * `com.amazonaws.sqs#Code` plus `x-amzn-query-error: <queryCode>;Sender|Receiver`).
 */
export function errorResponse(service: LocalService, error: ServiceErrorShape): RawResponse {
  const namespace = service === 'sqs' ? 'com.amazonaws.sqs' : (dynamoDbNamespace[error.code] ?? 'com.amazonaws.dynamodb.v20120810');
  // DynamoDB capitalizes `Message` on TransactionCanceledException; its other errors and SQS use `message`.
  const messageKey = error.code === 'TransactionCanceledException' ? 'Message' : 'message';
  const body = { __type: `${namespace}#${error.code}`, [messageKey]: error.message, ...error.members };
  const fault = error.statusCode >= 500 ? 'Receiver' : 'Sender';
  return {
    statusCode: error.statusCode,
    headers: {
      'content-type': 'application/x-amz-json-1.0',
      'x-amzn-requestid': randomUUID(),
      ...(service === 'sqs' ? { 'x-amzn-query-error': `${error.queryCode ?? error.code};${fault}` } : {}),
    },
    body: new TextEncoder().encode(JSON.stringify(body)),
  };
}

/**
 * A client of any service, for lists that mix them (`[dynamoDb, sqs, s3]`): each client's stack
 * is typed by its own input and output unions, which no narrower common type accepts.
 */
// biome-ignore lint/suspicious/noExplicitAny: each client's stack is typed by its own unions; no narrower common type accepts them all.
export type AnySdkClient = SdkClient<any, any>;
