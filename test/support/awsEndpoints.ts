/**
 * Where the test run's DynamoDB and SQS are: the embedded emulators started by
 * `test/setup/emulators.ts`, endpoints given by the environment (e.g. LocalStack after
 * `cdklocal deploy`), or AWS itself; and, with `IC_OUTPUTS_FILE`, the deployed stack whose
 * resources `testResources()` hands out instead of creating its own.
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import { inject } from 'vitest';
import { type ConsumerResources, parseStackOutputs, selectConsumer, StackOutputsError } from '../../packages/cli/src/stackOutputs.js';
import { localRegion } from '../../packages/local/src/localClientConfig.js';

/** Endpoints of the run, provided by the global setup as `inject('awsEndpoints')`. */
export interface AwsEndpoints {
  readonly dynamoDbEndpoint: string;
  readonly sqsEndpoint: string;
  readonly region: string;
  /**
   * `embedded`: started by the global setup; `environment`: taken from environment variables;
   * `aws`: AWS's own regional endpoints (a deployed stack named by `IC_OUTPUTS_FILE`, no endpoint
   * variable set), reached with the SDK's default credentials.
   */
  readonly source: 'embedded' | 'environment' | 'aws';
}

declare module 'vitest' {
  export interface ProvidedContext {
    awsEndpoints: AwsEndpoints;
  }
}

/**
 * Endpoints named by the environment, or `undefined` when it names none. Per service, the first
 * set of: `AWS_ENDPOINT_URL_DYNAMODB` / `AWS_ENDPOINT_URL_SQS` (the SDK's own variables),
 * `DYNAMODB_ENDPOINT` / `SQS_ENDPOINT`, then `AWS_ENDPOINT_URL` for both. The region is
 * `AWS_REGION`, `AWS_DEFAULT_REGION` or `us-east-1`.
 *
 * @throws {Error} when only one of the two services has an endpoint
 */
export function endpointsFromEnvironment(env: NodeJS.ProcessEnv = process.env): AwsEndpoints | undefined {
  const shared = env['AWS_ENDPOINT_URL'] || undefined;
  const dynamoDbEndpoint = env['AWS_ENDPOINT_URL_DYNAMODB'] || env['DYNAMODB_ENDPOINT'] || shared;
  const sqsEndpoint = env['AWS_ENDPOINT_URL_SQS'] || env['SQS_ENDPOINT'] || shared;
  if (dynamoDbEndpoint === undefined && sqsEndpoint === undefined) {
    const deployed = deployedStackFromEnvironment(env);
    if (deployed === undefined) return undefined;
    const region =
      env['AWS_REGION'] ||
      env['AWS_DEFAULT_REGION'] ||
      /^https:\/\/sqs\.([a-z0-9-]+)\.amazonaws\.com\//.exec(deployed.deadLetterQueueUrl)?.[1];
    if (region === undefined)
      throw new Error(
        `IC_OUTPUTS_FILE names a stack on AWS, but its region is unknown: set AWS_REGION (or AWS_ENDPOINT_URL for LocalStack)`,
      );
    return {
      dynamoDbEndpoint: `https://dynamodb.${region}.amazonaws.com`,
      sqsEndpoint: `https://sqs.${region}.amazonaws.com`,
      region,
      source: 'aws',
    };
  }
  if (dynamoDbEndpoint === undefined || sqsEndpoint === undefined) {
    throw new Error(
      'Set endpoints for both DynamoDB and SQS (DYNAMODB_ENDPOINT and SQS_ENDPOINT, or AWS_ENDPOINT_URL), or for neither ' +
        'to let the test run start the embedded emulators.',
    );
  }
  return {
    dynamoDbEndpoint,
    sqsEndpoint,
    region: env['AWS_REGION'] || env['AWS_DEFAULT_REGION'] || localRegion,
    source: 'environment',
  };
}

/**
 * The run's endpoints, inside a test file.
 * @throws {Error} when the global setup did not run (vitest.config.ts must list test/setup/emulators.ts)
 */
export function awsEndpoints(): AwsEndpoints {
  const endpoints = inject('awsEndpoints');
  if (endpoints === undefined) {
    throw new Error('No endpoints: vitest.config.ts must list test/setup/emulators.ts under test.globalSetup.');
  }
  return endpoints;
}

/**
 * The deployed consumer the run targets: the one `IC_OUTPUTS_FILE` (the file `cdk deploy
 * --outputs-file` or `cdklocal deploy --outputs-file` wrote) names, picked with `IC_STACK` and
 * `IC_CONSUMER` when it holds several; `undefined` when `IC_OUTPUTS_FILE` is unset or empty.
 *
 * @throws StackOutputsError when the file is missing, not an outputs file, or does not name one
 *   consumer (the message lists what it holds)
 */
export function deployedStackFromEnvironment(env: NodeJS.ProcessEnv = process.env): ConsumerResources | undefined {
  const file = env['IC_OUTPUTS_FILE'];
  if (file === undefined || file === '') return undefined;
  let content: unknown;
  try {
    content = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new StackOutputsError(
      `IC_OUTPUTS_FILE=${file}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message}`,
      { cause: error },
    );
  }
  const stack = env['IC_STACK'] || undefined;
  const consumer = env['IC_CONSUMER'] || undefined;
  return selectConsumer(
    parseStackOutputs(content, file),
    { ...(stack === undefined ? {} : { stack }), ...(consumer === undefined ? {} : { consumer }) },
    file,
  );
}
