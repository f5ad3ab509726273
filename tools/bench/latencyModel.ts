/**
 * The latencies the benchmark assumes for one AWS request, and Lambda's duration price: what turns
 * round trips (`roundTrips.ts`) into a modeled AWS latency per batch and a Lambda duration cost
 * per million messages. DynamoDB Local's own speed is not used: it is neither AWS's nor steady on
 * a shared machine.
 *
 * Sources, and what is assumed where AWS gives no number:
 * - DynamoDB: "consistent single-digit millisecond performance"
 *   (https://aws.amazon.com/dynamodb/features/; the Developer Guide's "What is Amazon DynamoDB?",
 *   https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Introduction.html, "Single-digit
 *   millisecond performance at any scale"). AWS gives no figure per operation; 5 ms for a
 *   single-item request (`GetItem`, `PutItem`, `UpdateItem`, `DeleteItem`) is an **assumption**
 *   in that range, seen from a Lambda function in the table's Region.
 * - Batches and transactions: AWS publishes no latency for `BatchGetItem`, `BatchWriteItem`,
 *   `TransactGetItems` or `TransactWriteItems`. A transaction reads or writes every item twice
 *   ("one to prepare the transaction and one to commit the transaction",
 *   https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html), so
 *   it is **assumed** to take 3× a single-item write (15 ms), a batch read or write 2× (10 ms).
 * - SQS: AWS gives no latency for `SendMessage` and the other calls; 10 ms per request is an
 *   **assumption** (SQS stores a message in several Availability Zones before it answers,
 *   https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/standard-queues.html).
 * - Lambda: arm64 (the constructs' architecture), US East (N. Virginia), $0.0000133334 per
 *   GB-second for the first 7.5 billion GB-seconds a month (https://aws.amazon.com/lambda/pricing/;
 *   the tiers in https://aws.amazon.com/blogs/compute/introducing-tiered-pricing-for-aws-lambda/),
 *   at the settings' default memory of 1,024 MB.
 *
 * The modeled cost is the duration spent waiting for AWS only: the handler's own CPU time, the
 * invocation charge ($0.20 per million requests) and the free tier are left out.
 *
 * @module
 */
import type { RequestInterval } from './roundTrips.js';

/** Assumed latency of one request, in milliseconds, by operation (see the module comment). */
export const ASSUMED_LATENCY_MS = {
  dynamoDbSingleItem: 5,
  dynamoDbBatch: 10,
  dynamoDbTransaction: 15,
  sqs: 10,
} as const;

const BATCH_OPERATIONS = new Set(['BatchGetItem', 'BatchWriteItem', 'TransactGetItems']);

/** The assumed latency of one request, in milliseconds (see the module comment). */
export function assumedLatencyMs(request: Pick<RequestInterval, 'service' | 'operation'>): number {
  if (request.service === 'sqs') return ASSUMED_LATENCY_MS.sqs;
  if (request.operation === 'TransactWriteItems') return ASSUMED_LATENCY_MS.dynamoDbTransaction;
  if (BATCH_OPERATIONS.has(request.operation)) return ASSUMED_LATENCY_MS.dynamoDbBatch;
  return ASSUMED_LATENCY_MS.dynamoDbSingleItem;
}

/** Lambda's duration price the model uses (see the module comment). */
export const LAMBDA_PRICES = {
  region: 'us-east-1',
  architecture: 'arm64',
  usdPerGbSecond: 0.0000133334,
  memorySizeMb: 1024,
  source: 'https://aws.amazon.com/lambda/pricing/',
} as const;

/**
 * The modeled Lambda duration cost of waiting for AWS, in US dollars per million messages.
 *
 * @param modeledMsPerMessage - modeled AWS latency summed over the invocations, per message, in milliseconds
 * @param memorySizeMb - the function's memory, in MB
 */
export function lambdaUsdPerMillionMessages(modeledMsPerMessage: number, memorySizeMb: number = LAMBDA_PRICES.memorySizeMb): number {
  return (modeledMsPerMessage / 1000) * (memorySizeMb / 1024) * LAMBDA_PRICES.usdPerGbSecond * 1_000_000;
}
