/**
 * Found by `npm run prove` (Kafka schedules with a kill between the side-effect lock and its
 * completion, e.g. seed 2, kafka schedule 15; or a failed completion write, seed 1000, kafka
 * schedule 85), kept as two replays. Fixed: on Kafka the engine waits in the invocation for the
 * lock's expiry, read from its record (`SideEffectRunner`, `BatchEngine.#waitForLock`).
 *
 * An invocation dies (crashes: out of memory, the runtime exits) after Powertools wrote the
 * side effect's in-progress lock — or, with no crash at all, Powertools cannot write the
 * completion record once (throttled three times, a `TransactionConflict`: case C16 on Kafka).
 * The lock expires at that invocation's deadline (up to the function timeout later). On SQS the
 * engine delays such a retry until the lock expires (`ChangeMessageVisibility`, C16); on Kafka
 * nothing can delay it: the event source mapping retries the batch at once; each retry
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
import type { Schedule } from '../../../tools/prove/schedule.js';
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

/**
 * The same without a crash: the completion record's write fails once (case C16, on Kafka), and so
 * does the commit sent beside it (alone, a failed completion no longer fails the record: its commit
 * lands and nothing comes back to meet the lock).
 */
const completionFailedOnce: Schedule = {
  ...replay,
  invocations: [
    {
      environment: 0,
      remainingMs: 30_000,
      callCostMs: 0,
      faults: [
        { at: 'side-effect completion', kind: 'conflict' },
        { at: 'commit', kind: 'conflict' },
      ],
    },
  ],
};

describe("found: on Kafka, a side-effect lock held by an earlier invocation spends the mapping's retries", () => {
  const replayed = replaySession();

  it('after a crash that left the lock: applies OrderPlaced and OrderPaid once; the mapping gives nothing up', async () => {
    const result = await replayed(replay);
    expect(result.violations).toEqual([]);
  });

  it('after the completion record could not be written once (C16): the same', async () => {
    const result = await replayed(completionFailedOnce);
    expect(result.violations).toEqual([]);
  });
});
