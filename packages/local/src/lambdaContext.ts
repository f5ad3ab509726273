import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';

/** Options of {@link createLambdaContext}. */
export interface LambdaContextOptions {
  /** The function's name: `functionName`, and part of `invokedFunctionArn` and `logGroupName` (`/aws/lambda/<name>`). */
  readonly functionName: string;
  /** The AWS Region for `invokedFunctionArn`, e.g. `us-east-1`. */
  readonly region: string;
  /** Account id for `invokedFunctionArn` (locally, the queue ARN's account). */
  readonly accountId: string;
  /** Function timeout in seconds: `getRemainingTimeInMillis()` counts down from it. */
  readonly timeoutSeconds: number;
  /** Memory in MB, reported as `memoryLimitInMB`. */
  readonly memorySizeMb: number;
  /** Log stream of the execution environment, e.g. `2025/01/31/[$LATEST]<32 hex>`. */
  readonly logStreamName: string;
  /** @default a random UUID */
  readonly awsRequestId?: string;
  /** Clock in epoch milliseconds, for tests. @default Date.now */
  readonly now?: () => number;
}

/**
 * A Lambda `Context` for one invocation, as the Node.js runtime gives it: the function's name,
 * version `$LATEST`, ARN, memory, request id, log group and stream, and
 * `getRemainingTimeInMillis()` (milliseconds until the function timeout, never below 0, counted
 * from this call). The deprecated `done`/`fail`/`succeed` throw: the local runtime runs async
 * handlers only.
 */
export function createLambdaContext(options: LambdaContextOptions): Context {
  const now = options.now ?? Date.now;
  const deadline = now() + options.timeoutSeconds * 1_000;
  const unsupported = (name: string) => (): never => {
    throw new Error(`context.${name}() is not supported by the local runtime: return (or resolve) the result instead`);
  };
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: options.functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${options.region}:${options.accountId}:function:${options.functionName}`,
    memoryLimitInMB: String(options.memorySizeMb),
    awsRequestId: options.awsRequestId ?? randomUUID(),
    logGroupName: `/aws/lambda/${options.functionName}`,
    logStreamName: options.logStreamName,
    getRemainingTimeInMillis: () => Math.max(0, deadline - now()),
    done: unsupported('done'),
    fail: unsupported('fail'),
    succeed: unsupported('succeed'),
  };
}

/** A log stream name in Lambda's format for a new execution environment: `YYYY/MM/DD/[$LATEST]<32 hex>`. */
export function newLogStreamName(date = new Date()): string {
  const day = date.toISOString().slice(0, 10).replaceAll('-', '/');
  return `${day}/[$LATEST]${randomUUID().replaceAll('-', '')}`;
}
