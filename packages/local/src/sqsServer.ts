/**
 * Runs the SQS-compatible server `fauxqs` in this process, on 127.0.0.1, with the strict SQS
 * layer (`local/aws/strictSqs.ts`) so that it accepts and refuses what Amazon SQS does.
 *
 * `startFauxqs()` always listens on 0.0.0.0, so this module builds the same Fastify app with the
 * package's exported `buildApp()` and listens on 127.0.0.1 itself. Queue URLs have the form
 * `http://sqs.us-east-1.localhost:<port>/000000000000/<name>`; give every SQS client the
 * endpoint explicitly (see `localClientConfig`), so the SDK never resolves the URL's host.
 *
 * The same server answers S3 requests (fauxqs emulates S3 too), path-style only: give S3 clients
 * `localS3ClientConfig(endpoint)`.
 *
 * @module
 */
import type { AddressInfo } from 'node:net';
import { buildApp } from 'fauxqs';
import type { BuildAppOptions } from 'fauxqs';
import { loadFauxqsInternals } from './aws/fauxqsInternals.js';
import { acceptSqsCharacterSet, installStrictSqsHooks, makeSqsStoreStrict } from './aws/strictSqs.js';
import { loopbackHost } from './freePort.js';
import { localRegion } from './localClientConfig.js';

/** Options of {@link startSqsServer}. */
export interface SqsServerOptions {
  /**
   * Apply SQS's rules where fauxqs is lenient or stricter (see `local/aws/strictSqs.ts`). Turn it
   * off only to show what fauxqs alone does.
   * @default true
   */
  readonly strict?: boolean;
  /**
   * Clock of the 12-hour visibility limit, in epoch milliseconds (tests move it). @default Date.now
   */
  readonly clock?: () => number;
}

/** A running in-process SQS (and S3) server. */
export interface SqsServer {
  /** Base URL, `http://127.0.0.1:<port>`, for SQS and (path-style) S3 clients. */
  readonly endpoint: string;
  /** Whether the strict SQS layer is on. */
  readonly strict: boolean;
  /** Closes the server (and ends pending long polls). Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts fauxqs on a free port of 127.0.0.1, in memory, with request logging off and, unless
 * `strict: false`, the strict SQS layer.
 *
 * @throws the listen error when the server cannot bind
 * @throws Error when the installed fauxqs is not a version the strict layer supports
 */
export async function startSqsServer(options: SqsServerOptions = {}): Promise<SqsServer> {
  const strict = options.strict ?? true;
  let app: ReturnType<typeof buildApp>;
  if (strict) {
    const internals = await loadFauxqsInternals();
    const stores = internals.newStores();
    const strictOptions = options.clock === undefined ? {} : { clock: options.clock };
    const receiptTimes = makeSqsStoreStrict(stores.sqsStore, strictOptions);
    app = buildApp({ logger: false, defaultRegion: localRegion, stores: stores as unknown as NonNullable<BuildAppOptions['stores']> });
    installStrictSqsHooks(app, stores.sqsStore, receiptTimes, strictOptions);
    acceptSqsCharacterSet(internals);
  } else {
    app = buildApp({ logger: false, defaultRegion: localRegion });
  }
  await app.listen({ port: 0, host: loopbackHost });
  const { port } = app.server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    endpoint: `http://${loopbackHost}:${port}`,
    strict,
    stop: () => (closing ??= app.close()),
  };
}
