/** Region of every local client and of the ARNs the emulators report. */
export const localRegion = 'us-east-1';

/** Fake static credentials: the emulators accept any, and real ones are never needed locally. */
export const localCredentials = { accessKeyId: 'local', secretAccessKey: 'local' } as const;

/** Configuration of an AWS SDK v3 client that talks to a local emulator. */
export interface LocalClientConfig {
  /** The emulator's base URL, e.g. `http://127.0.0.1:41234`. */
  readonly endpoint: string;
  /** Always {@link localRegion}. */
  readonly region: string;
  /** Always {@link localCredentials}, so the SDK never looks for real ones (no IMDS call). */
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
}

/**
 * Client configuration for an emulator endpoint: `{ endpoint, region, credentials }`, to spread
 * into `new DynamoDBClient(...)` or `new SQSClient(...)`. An explicit `endpoint` also keeps the
 * SQS client from sending requests to the host inside a queue URL.
 *
 * @example
 * const sqs = new SQSClient(localClientConfig(emulators.sqsEndpoint));
 */
export function localClientConfig(endpoint: string): LocalClientConfig {
  return { endpoint, region: localRegion, credentials: { ...localCredentials } };
}
