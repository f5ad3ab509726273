import type { LambdaClient } from '@aws-sdk/client-lambda';
import { isLoopback, type ResolvedConnection } from './sqsClient.js';

/** What a synchronous invocation (`RequestResponse`) returned. */
export interface FunctionResponse {
  /** Lambda's HTTP status: 200 when the function ran (also when it threw). */
  readonly statusCode: number;
  /** `Unhandled` when the function threw or timed out (Lambda's `X-Amz-Function-Error`); `undefined` when it returned. */
  readonly functionError: string | undefined;
  /** The function's response, parsed as JSON (`null` for an empty one; the text itself when it is not JSON). */
  readonly payload: unknown;
}

/** Invokes a Lambda function synchronously with one event. */
export interface FunctionInvoker {
  /**
   * @param functionName - the function's name, ARN or partial ARN (with a version or alias, if wanted)
   * @param event - the event, sent as JSON
   * @throws the Lambda client's errors (`ResourceNotFoundException`, throttling, ...)
   */
  invoke(functionName: string, event: unknown): Promise<FunctionResponse>;
}

/** How the tool reaches Lambda. */
export interface FunctionInvokerOptions {
  /** The SQS connection: its region, and its credentials choice (dummy ones for a loopback emulator). */
  readonly connection: ResolvedConnection;
  /**
   * The environment: `AWS_ENDPOINT_URL_LAMBDA`, then `AWS_ENDPOINT_URL`, name a Lambda endpoint
   * (`local --keep-running` prints `AWS_ENDPOINT_URL_LAMBDA` for its function). @default `process.env`
   */
  readonly env?: NodeJS.ProcessEnv;
}

/**
 * The Lambda endpoint: `AWS_ENDPOINT_URL_LAMBDA`, else `AWS_ENDPOINT_URL` (both ignored when
 * `AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true`), else AWS's. The SQS endpoint is never used for it:
 * the local SQS server (fauxqs) serves no Lambda API; the local run serves its function on an
 * endpoint of its own.
 */
export function resolveLambdaEndpoint(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.AWS_IGNORE_CONFIGURED_ENDPOINT_URLS === 'true') return undefined;
  return env.AWS_ENDPOINT_URL_LAMBDA || env.AWS_ENDPOINT_URL || undefined;
}

/**
 * A {@link FunctionInvoker} on Lambda's `Invoke` API (`InvocationType: RequestResponse`), the way
 * an event source mapping invokes a function. `@aws-sdk/client-lambda` is loaded on first use: a
 * redrive of SQS dead letters never loads it. The region is the SQS connection's.
 *
 * Source: https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html
 */
export function createFunctionInvoker(options: FunctionInvokerOptions): FunctionInvoker {
  const env = options.env ?? process.env;
  const endpoint = resolveLambdaEndpoint(env);
  // As for SQS: a loopback endpoint with no credentials in the environment gets dummy ones.
  const dummyCredentials =
    options.connection.dummyCredentials ||
    (endpoint !== undefined && isLoopback(endpoint) && (env.AWS_ACCESS_KEY_ID ?? '') === '' && (env.AWS_PROFILE ?? '') === '');
  const region = options.connection.region ?? (endpoint !== undefined && isLoopback(endpoint) ? 'us-east-1' : undefined);
  let client: Promise<{ lambda: LambdaClient; sdk: typeof import('@aws-sdk/client-lambda') }> | undefined;
  const connect = (): NonNullable<typeof client> =>
    (client ??= import('@aws-sdk/client-lambda').then((sdk) => ({
      sdk,
      lambda: new sdk.LambdaClient({
        ...(endpoint !== undefined ? { endpoint } : {}),
        ...(region !== undefined ? { region } : {}),
        ...(dummyCredentials ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
      }),
    })));
  return {
    async invoke(functionName, event) {
      const { lambda, sdk } = await connect();
      const output = await lambda.send(
        new sdk.InvokeCommand({
          FunctionName: functionName,
          InvocationType: 'RequestResponse',
          Payload: Buffer.from(JSON.stringify(event), 'utf8'),
        }),
      );
      const text = output.Payload === undefined ? '' : Buffer.from(output.Payload).toString('utf8');
      let payload: unknown = null;
      if (text !== '') {
        try {
          payload = JSON.parse(text);
        } catch {
          payload = text;
        }
      }
      return { statusCode: output.StatusCode ?? 200, functionError: output.FunctionError, payload };
    },
  };
}
