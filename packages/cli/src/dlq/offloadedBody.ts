import type { OffloadedPayload } from 'idempotent-consumer/dlq';
import type { DlqContext } from './context.js';

/**
 * Reads back a body the consumer offloaded to S3, checked against its size and SHA-256.
 *
 * @returns `{ body }`, or `{ error }` saying why it cannot be had (no S3 access configured, the
 *   object is missing or changed); never throws
 */
export async function readOffloadedBody(context: DlqContext, payload: OffloadedPayload): Promise<{ body: string } | { error: string }> {
  if (context.payloads === undefined) {
    return { error: `the body is in s3://${payload.bucket}/${payload.key}, and this command has no S3 access` };
  }
  try {
    return { body: await context.payloads.get(payload) };
  } catch (error) {
    return { error: (error as Error).message };
  }
}
