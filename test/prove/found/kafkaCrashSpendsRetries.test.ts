/**
 * Found by `npm run prove` (a Kafka schedule with batch size 1, a record that keeps failing and
 * one crashed invocation), kept as its replay. Fixed: `requiredKafkaRetryAttempts` adds
 * `RECEIVE_ALLOWANCE` (5) retries for invocations that crash or time out.
 *
 * The stack sets the Kafka mapping's `MaximumRetryAttempts` to `requiredKafkaRetryAttempts` =
 * maxAttempts × batchSize − 1 (4 for a batch of 1): room for each record's own attempts and
 * for the skips behind a failed record, but none for an invocation that crashed (or timed out):
 * the consumer never counted that attempt (its attempt record was not written), the mapping did.
 * Here the `OrderPaid` waits for an `OrderPlaced` that was sent malformed (so it can never
 * apply): one crash and four counted failures later, the mapping gives it up after its fifth
 * failing invocation, while the consumer would dead-letter it (`RetriesExhausted`) only on its
 * fifth counted attempt. The record is lost: neither applied nor dead-lettered. SQS leaves room
 * for such receives (`RECEIVE_ALLOWANCE` in `maxReceiveCount`); Kafka's retries do not.
 *
 * Expected: the `OrderPaid` ends in the dead-letter queue as `RetriesExhausted`; no record is
 * given up by the mapping.
 */
import { describe, expect, it } from 'vitest';
import type { Schedule } from '../../../tools/prove/schedule.js';
import { replaySession } from './replaySession.js';

const replay: Schedule = {
  version: 1,
  source: 'kafka',
  workload: { kind: 'cafe', orders: [{ path: 'paid', points: 10, duplicates: [], poisonAt: 0, poisonKind: 'bad-field' }], strayPoison: [] },
  sendOrder: [],
  batchSize: 1,
  environments: 1,
  kafka: { partitions: 1, retryReading: 'resume-from-lowest-offset' },
  receiveSeed: 0,
  staleReceiptDeletes: false,
  invocations: [
    { environment: 0, remainingMs: 30_000, callCostMs: 0, faults: [] },
    { environment: 0, remainingMs: 30_000, callCostMs: 0, kill: { afterCalls: 0 }, faults: [] },
  ],
};

describe('found: on Kafka, a crashed invocation spends a retry the consumer does not count', () => {
  const replayed = replaySession();

  it('dead-letters the payment that can never apply as RetriesExhausted; the mapping gives nothing up', async () => {
    const result = await replayed(replay);
    expect(result.violations).toEqual([]);
  });
});
