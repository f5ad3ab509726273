/**
 * Runs the SQS-compatible server `fauxqs` in this process, on 127.0.0.1.
 *
 * `startFauxqs()` always listens on 0.0.0.0, so this module builds the same Fastify app with the
 * package's exported `buildApp()` and listens on 127.0.0.1 itself. Queue URLs have the form
 * `http://sqs.us-east-1.localhost:<port>/000000000000/<name>`; give every SQS client the
 * endpoint explicitly (see `localClientConfig`), so the SDK never resolves the URL's host.
 *
 * @module
 */
import type { AddressInfo } from 'node:net';
import { buildApp } from 'fauxqs';
import { loopbackHost } from './freePort.js';
import { localRegion } from './localClientConfig.js';

/** A running in-process SQS server. */
export interface SqsServer {
  /** Base URL, `http://127.0.0.1:<port>`. */
  readonly endpoint: string;
  /** Closes the server (and ends pending long polls). Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts fauxqs on a free port of 127.0.0.1, in memory, with request logging off.
 *
 * @throws the listen error when the server cannot bind
 */
export async function startSqsServer(): Promise<SqsServer> {
  const app = buildApp({ logger: false, defaultRegion: localRegion });
  await app.listen({ port: 0, host: loopbackHost });
  const { port } = app.server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    endpoint: `http://${loopbackHost}:${port}`,
    stop: () => (closing ??= app.close()),
  };
}
