import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';

/** The only address the local emulators listen on and the local clients talk to. */
export const loopbackHost = '127.0.0.1';

/**
 * Asks the operating system for a TCP port that is free on {@link loopbackHost}: listens on
 * port 0, reads the port it was given, and closes the socket again.
 *
 * Another process may take the port between this call and its use; callers that start a
 * server on it retry with a new port when the bind fails.
 *
 * @returns a port number (1 to 65535)
 */
export async function findFreePort(): Promise<number> {
  return await new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ port: 0, host: loopbackHost, exclusive: true }, () => {
      const { port } = server.address() as AddressInfo;
      server.close((error) => (error ? reject(error) : resolve(port)));
    });
  });
}
