import { SQSClient } from '@aws-sdk/client-sqs';
import { UsageError } from './errors.js';
import { serverClockOf } from './serverClock.js';

/** How the tool reaches SQS. */
export interface SqsConnectionOptions {
  /** The queue the command works on; its host gives the region and, for a local emulator, the endpoint. */
  readonly queueUrl: string;
  /** An explicit endpoint (`--endpoint`). @default `AWS_ENDPOINT_URL_SQS`, then `AWS_ENDPOINT_URL`, then none */
  readonly endpoint?: string;
  /** An explicit region (`--region`). @default the region in the queue URL, then the SDK's default chain */
  readonly region?: string;
  /** The environment to read `AWS_*` variables from. @default `process.env` */
  readonly env?: NodeJS.ProcessEnv;
}

/** What {@link resolveConnection} decided. */
export interface ResolvedConnection {
  readonly endpoint: string | undefined;
  readonly region: string | undefined;
  /** Whether dummy credentials are used (a loopback endpoint and no credentials in the environment). */
  readonly dummyCredentials: boolean;
}

/**
 * Decides endpoint, region and credentials for a queue (throws UsageError when the endpoint is
 * not an http(s) URL):
 *
 * - endpoint: `endpoint`, else `AWS_ENDPOINT_URL_SQS`, else `AWS_ENDPOINT_URL` (both ignored when
 *   `AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true`), else, for a queue URL that is not on an AWS
 *   domain, the queue URL's own origin, with a `*.localhost` host (fauxqs's
 *   `http://sqs.us-east-1.localhost:4566/...`, which DNS does not resolve) mapped to `127.0.0.1`,
 *   where the local emulators listen;
 * - region: `region`, else the one in the queue URL (`sqs.<region>.…`), else the SDK's default
 *   chain (`AWS_REGION`, the profile);
 * - credentials: the SDK's default chain, except that a loopback endpoint with no credentials in
 *   the environment (`AWS_ACCESS_KEY_ID`, `AWS_PROFILE`) gets dummy ones: emulators accept any.
 */
export function resolveConnection(options: SqsConnectionOptions): ResolvedConnection {
  const env = options.env ?? process.env;
  const queueUrl = new URL(options.queueUrl);
  const ignoreEnv = env.AWS_IGNORE_CONFIGURED_ENDPOINT_URLS === 'true';
  let endpoint = options.endpoint ?? (ignoreEnv ? undefined : (env.AWS_ENDPOINT_URL_SQS ?? env.AWS_ENDPOINT_URL));
  if (endpoint === '') endpoint = undefined;
  if (endpoint !== undefined) {
    if (!isHttpUrl(endpoint)) {
      throw new UsageError(`the endpoint must be an http(s) URL such as http://localhost:4566, not "${endpoint}"`);
    }
  } else if (!isAwsHost(queueUrl.hostname)) {
    const local = new URL(queueUrl.origin);
    if (local.hostname === 'localhost' || local.hostname.endsWith('.localhost')) local.hostname = '127.0.0.1';
    endpoint = local.origin;
  }
  const regionMatch = /^sqs\.([a-z0-9-]+)\./.exec(queueUrl.hostname) ?? /^([a-z]{2}(?:-[a-z]+)+-\d)\.queue\./.exec(queueUrl.hostname);
  const region =
    options.region ?? regionMatch?.[1] ?? (endpoint !== undefined && isLoopback(endpoint) ? (envRegion(env) ?? 'us-east-1') : undefined);
  const dummyCredentials =
    endpoint !== undefined &&
    isLoopback(endpoint) &&
    (env.AWS_ACCESS_KEY_ID === undefined || env.AWS_ACCESS_KEY_ID === '') &&
    (env.AWS_PROFILE === undefined || env.AWS_PROFILE === '');
  return { endpoint, region, dummyCredentials };
}

/**
 * Creates the SQS client for a queue (see {@link resolveConnection} for endpoint, region and
 * credentials), its server clock attached (see `serverClockOf`). The SDK retries throttling and
 * network errors itself (3 attempts).
 *
 * @throws UsageError when the endpoint is not an http(s) URL
 */
export function createSqsClient(options: SqsConnectionOptions): { sqs: SQSClient; connection: ResolvedConnection } {
  const connection = resolveConnection(options);
  const sqs = new SQSClient({
    ...(connection.endpoint !== undefined ? { endpoint: connection.endpoint } : {}),
    ...(connection.region !== undefined ? { region: connection.region } : {}),
    ...(connection.dummyCredentials ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
  });
  serverClockOf(sqs);
  return { sqs, connection };
}

/** Whether a host name is one of AWS's service domains. */
export function isAwsHost(hostname: string): boolean {
  return (
    /\.amazonaws\.com(\.cn)?$/.test(hostname) ||
    hostname.endsWith('.api.aws') ||
    hostname.endsWith('.c2s.ic.gov') ||
    hostname.endsWith('.sc2s.sgov.gov')
  );
}

/** Whether an endpoint URL points at this machine (`localhost`, `*.localhost`, `127.x.x.x`, `::1`). */
export function isLoopback(endpoint: string): boolean {
  const host = new URL(endpoint).hostname;
  return host === 'localhost' || host.endsWith('.localhost') || host === '[::1]' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

function envRegion(env: NodeJS.ProcessEnv): string | undefined {
  const region = env.AWS_REGION ?? env.AWS_DEFAULT_REGION;
  return region === '' ? undefined : region;
}

/** Whether `text` is an absolute `http:` or `https:` URL (an endpoint the AWS SDK can send to). */
export function isHttpUrl(text: string): boolean {
  try {
    const { protocol } = new URL(text);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}
