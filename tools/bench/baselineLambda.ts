/**
 * The baseline's Lambda entry point, bundled by the benchmark for its cold-start figures the way
 * the stack bundles the café handler. Like typical Powertools code it creates its clients at
 * module scope. Table names come from `TABLE_NAME_ORDERS`, `IDEMPOTENCY_TABLE_NAME` and
 * `OUTBOX_TABLE_NAME`.
 *
 * It traces as the café handler does (`examples/cafe/handler.ts`), like with like: a function
 * deployed with the construct's default (`Tracing.ACTIVE`) that uses Powertools loads its Tracer,
 * and a Powertools user captures the DynamoDB client with it
 * (https://docs.powertools.aws.dev/lambda/typescript/latest/core/tracer/#patching-aws-sdk-clients).
 * The same condition loads it: on Lambda (`AWS_LAMBDA_FUNCTION_NAME` set) unless
 * `POWERTOOLS_TRACE_ENABLED=false`; the benchmark's cold start measures both ways.
 *
 * @module
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createPowertoolsBaseline } from './powertoolsBaseline.js';

const tracing = process.env.AWS_LAMBDA_FUNCTION_NAME !== undefined && process.env.POWERTOOLS_TRACE_ENABLED !== 'false';
const tracer = tracing ? new (await import('@aws-lambda-powertools/tracer')).Tracer() : undefined;
const dynamoDb = new DynamoDBClient({});

export const handler = createPowertoolsBaseline({
  dynamoDb: tracer === undefined ? dynamoDb : tracer.captureAWSv3Client(dynamoDb),
  ordersTable: process.env.TABLE_NAME_ORDERS ?? 'orders',
  idempotencyTable: process.env.IDEMPOTENCY_TABLE_NAME ?? 'idempotency',
  outboxTable: process.env.OUTBOX_TABLE_NAME ?? 'outbox',
});
