import { createHash } from 'node:crypto';
import type { S3Client } from '@aws-sdk/client-s3';
import type { OffloadedPayload } from 'idempotent-consumer/dlq';
import { PayloadUnavailableError } from './errors.js';
import { isAwsHost, type ResolvedConnection } from './sqsClient.js';

/** Where the bodies the consumer offloaded to S3 are read (and, on replay, written back). */
export interface PayloadStore {
  /**
   * The body stored for a dead-letter message, checked against its size and SHA-256.
   *
   * @throws PayloadUnavailableError when the object cannot be read or does not match
   */
  get(payload: OffloadedPayload): Promise<string>;
  /** Stores a body at its place again (a replay of an archive whose object has expired). */
  put(payload: OffloadedPayload, body: string): Promise<void>;
}

/** How the tool reaches S3. */
export interface PayloadStoreOptions {
  /** The SQS connection: its region, and its endpoint when that is an emulator (fauxqs and LocalStack serve S3 on it too). */
  readonly connection: ResolvedConnection;
  /** The environment: `AWS_ENDPOINT_URL_S3`, then `AWS_ENDPOINT_URL`, name an S3 endpoint. @default `process.env` */
  readonly env?: NodeJS.ProcessEnv;
}

/**
 * The S3 endpoint for offloaded bodies: `AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL` (both
 * ignored when `AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true`), else the SQS endpoint when it is not
 * on an AWS domain (an emulator), else AWS's. Requests to an explicit endpoint are path-style.
 */
export function resolvePayloadEndpoint(connection: ResolvedConnection, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const ignoreEnv = env.AWS_IGNORE_CONFIGURED_ENDPOINT_URLS === 'true';
  const fromEnv = ignoreEnv ? undefined : env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || undefined;
  if (fromEnv !== undefined) return fromEnv;
  if (connection.endpoint !== undefined && !isAwsHost(new URL(connection.endpoint).hostname)) return connection.endpoint;
  return undefined;
}

/**
 * A {@link PayloadStore} on S3. `@aws-sdk/client-s3` is loaded on first use: commands on a DLQ
 * without offloaded bodies never load it. The region is the SQS connection's (the consumer's
 * bucket is in its region; the client follows a bucket's region redirect otherwise).
 */
export function createPayloadStore(options: PayloadStoreOptions): PayloadStore {
  const endpoint = resolvePayloadEndpoint(options.connection, options.env);
  let client: Promise<{ s3: S3Client; sdk: typeof import('@aws-sdk/client-s3') }> | undefined;
  const connect = (): NonNullable<typeof client> =>
    (client ??= import('@aws-sdk/client-s3').then((sdk) => ({
      sdk,
      s3: new sdk.S3Client({
        ...(endpoint !== undefined ? { endpoint, forcePathStyle: true } : {}),
        ...(options.connection.region !== undefined ? { region: options.connection.region } : {}),
        followRegionRedirects: true,
        ...(options.connection.dummyCredentials ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
      }),
    })));
  return {
    async get(payload) {
      const where = `s3://${payload.bucket}/${payload.key}`;
      let body: string;
      try {
        const { s3, sdk } = await connect();
        const output = await s3.send(new sdk.GetObjectCommand({ Bucket: payload.bucket, Key: payload.key }));
        body = (await output.Body?.transformToString('utf-8')) ?? '';
      } catch (error) {
        const e = error as { name?: string; message?: string };
        throw new PayloadUnavailableError(`the body offloaded to ${where} cannot be read: ${e.name ?? 'Error'}: ${e.message ?? ''}`, {
          cause: error,
        });
      }
      return checkPayload(payload, body);
    },
    async put(payload, body) {
      checkPayload(payload, body);
      const { s3, sdk } = await connect();
      await s3.send(
        new sdk.PutObjectCommand({ Bucket: payload.bucket, Key: payload.key, Body: body, ContentType: 'text/plain; charset=utf-8' }),
      );
    },
  };
}

/**
 * Checks a body against the size and SHA-256 the consumer recorded for it.
 *
 * @returns `body`
 * @throws PayloadUnavailableError when it does not match
 */
export function checkPayload(payload: OffloadedPayload, body: string): string {
  const bytes = Buffer.byteLength(body, 'utf8');
  const sha256 = createHash('sha256').update(body, 'utf8').digest('hex');
  if (bytes !== payload.bytes || sha256 !== payload.sha256) {
    throw new PayloadUnavailableError(
      `the body at s3://${payload.bucket}/${payload.key} is not the one the consumer stored ` +
        `(${bytes} bytes, SHA-256 ${sha256}; expected ${payload.bytes} bytes, ${payload.sha256})`,
    );
  }
  return body;
}
