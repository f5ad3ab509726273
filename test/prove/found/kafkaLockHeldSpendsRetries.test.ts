/**
 * Found by `npm run prove` (Kafka schedules with a kill between the side-effect lock and its
 * completion; e.g. seed 2, kafka schedule 15, shrunk), kept as its replay. Fails until the engine
 * is fixed.
 *
 * An invocation dies (crashes: out of memory, the runtime exits) after Powertools wrote the
 * side effect's in-progress lock. The lock expires at that invocation's deadline (up to the
 * function timeout later). The Kafka event source mapping retries the batch at once; each retry
 * finds the lock held, so the engine reports the record as not attempted
 * (`IdempotencyAlreadyInProgressError`, `countsAsAttempt: false`) and does not count it. Kafka
 * has no visibility delay: the retries come back to back and spend the mapping's whole
 * `MaximumRetryAttempts` (`requiredKafkaRetryAttempts` = maxAttempts × batchSize − 1) long before
 * the lock expires. The mapping then gives the records up: only their metadata reaches the
 * on-failure destination. The payment is neither applied nor dead-lettered.
 *
 * Expected: the order is placed and paid once (or the record is dead-lettered with a reason);
 * no record is given up by the mapping.
 */
import { describe, expect, it } from 'vitest';
import type { Schedule } from '../../../scripts/prove/schedule.js';
import { replaySession } from './replaySession.js';

const replay: Schedule = {
  version: 1,
  source: 'kafka',
  workload: { kind: 'cafe', orders: [{ path: 'paid', points: 10, duplicates: [] }], strayPoison: [] },
  sendOrder: [],
  batchSize: 2,
  environments: 1,
  kafka: { partitions: 1, retryReading: 'resume-from-lowest-offset' },
  receiveSeed: 0,
  staleReceiptDeletes: false,
  invocations: [{ environment: 0, remainingMs: 30_000, callCostMs: 0, kill: { before: 'side effect' }, faults: [] }],
};

describe('found: on Kafka, a side-effect lock left by a crashed invocation spends the mapping\'s retries', () => {
  const replayed = replaySession();

  it('applies OrderPlaced and OrderPaid once; the mapping gives nothing up', async () => {
    const result = await replayed(replay);
    expect(result.violations).toEqual([]);
  });
});
