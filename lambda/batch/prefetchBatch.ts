import type { Logger } from '@aws-lambda-powertools/logger';
import type { Inbox } from '../inbox/Inbox.js';
import { peekIds } from '../observability/outcomes.js';

/**
 * Reads ahead the inbox rows and order states of a batch's messages (`Inbox.prefetch`), so the
 * records of a batch cost one read request instead of two each. Bodies without a usable
 * `eventId` and `orderId` are left out (they fail parsing anyway). Never throws: if the read
 * fails, it is logged and each record reads for itself.
 *
 * @param bodies - the batch's message bodies (SQS `body`, decoded Kafka `value`)
 */
export async function prefetchBatch(
  inbox: Pick<Inbox, 'prefetch' | 'forget'>,
  bodies: readonly string[],
  logger?: Logger,
): Promise<void> {
  if (inbox.prefetch === undefined) return;
  const keys = bodies.flatMap((body) => {
    const { eventId, orderId } = peekIds(body);
    return eventId !== undefined && orderId !== undefined && eventId !== '' && orderId !== '' ? [{ idempotencyKey: eventId, orderId }] : [];
  });
  if (keys.length === 0) return;
  try {
    await inbox.prefetch(keys);
  } catch (error) {
    inbox.forget?.();
    logger?.warn('could not read the batch ahead; each record reads for itself', { error });
  }
}
