/**
 * A local endpoint of Lambda's `Invoke` API for the function a local run hosts, so that tools
 * made for AWS (the DLQ tool's Kafka redrive, `aws lambda invoke --endpoint-url`) reach the local
 * consumer as they reach the deployed one.
 *
 * @module
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Context } from 'aws-lambda';
import { loopbackHost } from '../freePort.js';
import { invokeWithinTimeout } from '../invokeWithinTimeout.js';
import type { InvocationOutcome } from '../judgeBatchResponse.js';
import { createLambdaContext, newLogStreamName } from '../lambdaContext.js';

/** Options of {@link startLocalFunctionEndpoint}. */
export interface LocalFunctionEndpointOptions {
  /** The function's name: a request for another name (or an ARN naming another) gets `ResourceNotFoundException`. */
  readonly functionName: string;
  /** Runs one invocation of the function with `event` (the request's payload, parsed). Never rejects. */
  readonly invoke: (event: unknown) => Promise<InvocationOutcome>;
}

/** A running {@link startLocalFunctionEndpoint}. */
export interface LocalFunctionEndpoint {
  /** The endpoint's base URL, e.g. `http://127.0.0.1:<port>`: give it as `AWS_ENDPOINT_URL_LAMBDA`. */
  readonly url: string;
  /** Stops listening (invocations under way finish). */
  stop(): Promise<void>;
}

const INVOKE_PATH = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/;

/**
 * Serves `POST /2015-03-31/functions/{FunctionName}/invocations` (Lambda's `Invoke`) on
 * 127.0.0.1, on a free port, as Lambda answers it for a synchronous invocation
 * (`RequestResponse`, the default; `Event` and `DryRun` are refused):
 *
 * - the function returned: status 200, the response as JSON;
 * - it threw or timed out: status 200, header `X-Amz-Function-Error: Unhandled`, body
 *   `{"errorType","errorMessage"}` (a timeout: `Sandbox.Timedout`, "Task timed out after N seconds");
 * - a payload that is not JSON: status 400, `InvalidRequestContentException`; another function:
 *   404, `ResourceNotFoundException`; any other path or method: 404.
 *
 * `FunctionName` may be the name, its ARN or a partial ARN, with or without a qualifier. Requests
 * are not signature-checked (any credentials are accepted, as by the other local emulators).
 *
 * Source: https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html
 *
 * @throws the server's listen error
 */
export async function startLocalFunctionEndpoint(options: LocalFunctionEndpointOptions): Promise<LocalFunctionEndpoint> {
  const server: Server = createServer((request, response) => {
    void handle(options, request, response).catch((error: unknown) => {
      if (!response.headersSent) sendError(response, 500, 'ServiceException', error instanceof Error ? error.message : String(error));
      else response.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: 0, host: loopbackHost }, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${loopbackHost}:${port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}

/** The function name in an `Invoke` path segment: a name, `name:qualifier`, or an ARN (full or partial). */
export function functionNameOf(segment: string): string {
  const parts = segment.split(':');
  const at = parts.indexOf('function');
  if (at >= 0) return parts[at + 1] ?? '';
  return parts[0] ?? '';
}

async function handle(options: LocalFunctionEndpointOptions, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const path = new URL(request.url ?? '/', 'http://local').pathname;
  const match = INVOKE_PATH.exec(path);
  const body = await readBody(request);
  if (request.method !== 'POST' || match === null) {
    sendError(response, 404, 'UnknownOperationException', `the local function endpoint serves only Invoke, not ${request.method} ${path}`);
    return;
  }
  const name = functionNameOf(decodeURIComponent(match[1] ?? ''));
  if (name !== options.functionName) {
    sendError(response, 404, 'ResourceNotFoundException', `Function not found: ${name} (this local run hosts ${options.functionName})`);
    return;
  }
  const invocationType = headerOf(request, 'x-amz-invocation-type') ?? 'RequestResponse';
  if (invocationType !== 'RequestResponse') {
    sendError(
      response,
      400,
      'InvalidParameterValueException',
      `the local function endpoint runs only RequestResponse invocations, not ${invocationType}`,
    );
    return;
  }
  let event: unknown;
  try {
    event = body.length === 0 ? {} : JSON.parse(body.toString('utf8'));
  } catch (error) {
    sendError(response, 400, 'InvalidRequestContentException', `Could not parse request body into json: ${(error as Error).message}`);
    return;
  }
  const outcome = await options.invoke(event);
  const headers = { 'content-type': 'application/json', 'x-amz-executed-version': '$LATEST' };
  if (outcome.kind === 'returned') {
    response.writeHead(200, headers).end(JSON.stringify(outcome.response ?? null));
    return;
  }
  const error =
    outcome.kind === 'threw'
      ? {
          errorType: outcome.error instanceof Error ? outcome.error.name : 'Error',
          errorMessage: outcome.error instanceof Error ? outcome.error.message : String(outcome.error),
        }
      : { errorType: 'Sandbox.Timedout', errorMessage: `Task timed out after ${outcome.timeoutSeconds} seconds` };
  response.writeHead(200, { ...headers, 'x-amz-function-error': 'Unhandled' }).end(JSON.stringify(error));
}

function headerOf(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

async function readBody(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function sendError(response: ServerResponse, status: number, type: string, message: string): void {
  response
    .writeHead(status, { 'content-type': 'application/json', 'x-amzn-errortype': type })
    .end(JSON.stringify({ Type: 'User', message, __type: type }));
}

/** Options of {@link startLocalKafkaFunction}. */
export interface LocalKafkaFunctionOptions {
  /** Creates an execution environment's handler (called at the first invocation, and again after a timeout). */
  readonly createHandler: () => (event: never, context: Context) => unknown;
  /** The function's name (the consumer's name, as the stack names its function). */
  readonly functionName: string;
  /** The function timeout, in seconds. */
  readonly functionTimeoutSeconds: number;
  readonly memorySizeMb: number;
  /** Called after each invocation. */
  readonly onInvocation?: () => void;
}

/**
 * Serves the local run's Kafka consumer at a {@link startLocalFunctionEndpoint}: each `Invoke`
 * runs in an execution environment of its own (made at the first one), beside the local event
 * source mapping's, within the function timeout (`invokeWithinTimeout`), as Lambda runs a direct
 * invocation of a function that a mapping also invokes.
 */
export async function startLocalKafkaFunction(options: LocalKafkaFunctionOptions): Promise<LocalFunctionEndpoint> {
  let handler: ((event: never, context: Context) => unknown) | undefined;
  let logStreamName = newLogStreamName();
  return startLocalFunctionEndpoint({
    functionName: options.functionName,
    invoke: async (event) => {
      handler ??= options.createHandler();
      const context = createLambdaContext({
        functionName: options.functionName,
        region: 'us-east-1',
        accountId: '000000000000',
        timeoutSeconds: options.functionTimeoutSeconds,
        memorySizeMb: options.memorySizeMb,
        logStreamName,
      });
      const outcome = await invokeWithinTimeout(handler, event as never, context, options.functionTimeoutSeconds);
      if (outcome.kind === 'timed-out') {
        handler = undefined; // Lambda replaces an environment that timed out
        logStreamName = newLogStreamName();
      }
      options.onInvocation?.();
      return outcome;
    },
  });
}
