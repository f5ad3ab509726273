/**
 * Vitest global setup: gives the whole test run one DynamoDB and one SQS endpoint.
 *
 * - When the environment names endpoints (`AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_DYNAMODB` /
 *   `AWS_ENDPOINT_URL_SQS`, or `DYNAMODB_ENDPOINT` / `SQS_ENDPOINT`; e.g. LocalStack after
 *   `cdklocal deploy`), it starts nothing and uses those.
 * - Otherwise it starts the embedded emulators (DynamoDB Local, and fauxqs with the strict SQS
 *   layer, on 127.0.0.1) once, and stops them in the teardown it returns (vitest also calls it
 *   when the run is aborted). The start-up wait follows DynamoDB Local's process, not a fixed
 *   clock, so it holds on a loaded machine (see `startDynamoDbLocal`).
 *
 * Tests read the endpoints with `inject('awsEndpoints')` (see `test/support/awsEndpoints.ts` and
 * `testResources()`). For the embedded emulators it also sets, when unset, `AWS_REGION`,
 * `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` (fake values) and `AWS_EC2_METADATA_DISABLED`,
 * so no SDK client in a worker looks for real credentials or calls the instance metadata
 * service; the teardown restores them. It deliberately does not set `AWS_ENDPOINT_URL_SQS` /
 * `AWS_ENDPOINT_URL_DYNAMODB`: the SDK prefers them over `AWS_ENDPOINT_URL`, so a test that
 * points a child process at its own server through `AWS_ENDPOINT_URL` would silently talk to
 * the shared emulators instead.
 */
import type { TestProject } from 'vitest/node';
import { startEmulators } from '../../packages/local/src/emulators.js';
import { localCredentials, localRegion } from '../../packages/local/src/localClientConfig.js';
import { endpointsFromEnvironment } from '../support/awsEndpoints.js';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const fromEnvironment = endpointsFromEnvironment(process.env);
  if (fromEnvironment) {
    project.provide('awsEndpoints', fromEnvironment);
    return async () => undefined;
  }

  const startedAt = Date.now();
  const emulators = await startEmulators();
  console.info(
    `[emulators] DynamoDB Local ${emulators.dynamoDbEndpoint}, SQS and S3 ${emulators.sqsEndpoint} (strict SQS layer; ready in ${Date.now() - startedAt} ms)`,
  );
  project.provide('awsEndpoints', {
    dynamoDbEndpoint: emulators.dynamoDbEndpoint,
    sqsEndpoint: emulators.sqsEndpoint,
    region: localRegion,
    source: 'embedded',
  });

  const previous = new Map<string, string | undefined>();
  const setVariable = (name: string, value: string, onlyIfUnset = false): void => {
    if (onlyIfUnset && process.env[name] !== undefined) return;
    previous.set(name, process.env[name]);
    process.env[name] = value;
  };
  if (process.env['AWS_ACCESS_KEY_ID'] === undefined && process.env['AWS_PROFILE'] === undefined) {
    setVariable('AWS_ACCESS_KEY_ID', localCredentials.accessKeyId);
    setVariable('AWS_SECRET_ACCESS_KEY', localCredentials.secretAccessKey);
  }
  setVariable('AWS_REGION', localRegion, true);
  setVariable('AWS_EC2_METADATA_DISABLED', 'true', true);

  return async () => {
    for (const [name, value] of previous) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    await emulators.stop();
  };
}
