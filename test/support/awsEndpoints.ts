/**
 * Where the test run's DynamoDB and SQS are: the embedded emulators started by
 * `test/setup/emulators.ts`, or endpoints given by the environment (e.g. LocalStack after
 * `cdklocal deploy`).
 *
 * @module
 */
import { inject } from 'vitest';
import { localRegion } from '../../local/localClientConfig.js';

/** Endpoints of the run, provided by the global setup as `inject('awsEndpoints')`. */
export interface AwsEndpoints {
  readonly dynamoDbEndpoint: string;
  readonly sqsEndpoint: string;
  readonly region: string;
  /** `embedded`: started by the global setup; `environment`: taken from environment variables. */
  readonly source: 'embedded' | 'environment';
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
  if (dynamoDbEndpoint === undefined && sqsEndpoint === undefined) return undefined;
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
