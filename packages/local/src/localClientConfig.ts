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

/** Configuration of an S3 client for the embedded server's S3 (fauxqs): path-style addressing, as it requires. */
export interface LocalS3ClientConfig extends LocalClientConfig {
  /** Always `true`: bucket names go in the path (`http://127.0.0.1:<port>/<bucket>/<key>`), never in the host. */
  readonly forcePathStyle: true;
}

/**
 * Client configuration for the S3 of the embedded SQS server (fauxqs serves S3 on the same
 * endpoint), to spread into `new S3Client(...)`.
 *
 * @example
 * const s3 = new S3Client(localS3ClientConfig(emulators.s3Endpoint));
 */
export function localS3ClientConfig(endpoint: string): LocalS3ClientConfig {
  return { ...localClientConfig(endpoint), forcePathStyle: true };
}
