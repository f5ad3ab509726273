import type { DeadLetterRecord } from 'idempotent-consumer/dlq';
import type { ServerClock, Clock } from './serverClock.js';

/**
 * The moment after which a message that turns up in the dead-letter queue is left for a later run
 * (it may be a message this run sent back, failed again by a live consumer), in milliseconds of
 * the SQS server's clock. Call it just before a command's first change.
 *
 * It never reads the local wall clock: it is the server's time ({@link ServerClock}, from the
 * `Date` header of SQS's responses; at most about a second early, so a message sent in the second
 * before is, conservatively, left too), and never earlier than the latest `SentTimestamp` of the
 * messages already received (those were in the queue before anything was sent). With neither (a
 * server without `Date` headers and an empty first scan) there is no cutoff.
 *
 * @param clock - the command's clock; a {@link ServerClock} that has not seen a `Date` header
 *   (or any clock without `synchronized`, such as a test's) counts only when it says so
 * @param received - the messages received before the first change
 */
export function arrivalCutoff(clock: Clock, received: readonly DeadLetterRecord[]): number | undefined {
  const latestSent = Math.max(...received.map((record) => record.sentAt?.getTime() ?? Number.NEGATIVE_INFINITY));
  const synchronized = (clock as Partial<ServerClock>).synchronized;
  const server = synchronized === false ? undefined : clock.now().getTime();
  const candidates = [server, Number.isFinite(latestSent) ? latestSent : undefined].filter((t): t is number => t !== undefined);
  return candidates.length > 0 ? Math.max(...candidates) : undefined;
}
