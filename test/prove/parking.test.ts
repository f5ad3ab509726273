/**
 * The proof suite with the park of out-of-order messages on (`retry.parkOutOfOrder`, standard
 * queues, issue 19): a few seeded fault schedules on a standard queue whose consumer parks every
 * delivery that fails `PredecessorNotApplied`, with the park's await points (park read, park
 * write, park release, the parked message's delete) killed at like the others, and every
 * invariant of exactly-once processing checked against what is stored. A message applied from
 * the park is deleted from the queue by the invocation that applied its predecessor: it must be
 * settled (applied once, never lost), and the run must take at least one message up from the park.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KillPoint } from '../../tools/prove/killPoints.js';
import { createProveSession, formatReport, type ProveSession, runProve } from '../../tools/prove/runProve.js';
import { uninstallVirtualClock } from '../../tools/prove/virtualClock.js';
import { awsEndpoints } from '../support/awsEndpoints.js';

/** The run's seed: the same schedules every time. */
const SEED = 4242;
/** Random schedules (targeted ones are added for the await points they meet but never kill at). */
const SCHEDULES = 12;

/** The park's await points: each is met and killed at at least once. */
const parkPoints: readonly KillPoint[] = [KillPoint.parkRead, KillPoint.parkWrite, KillPoint.parkRelease, KillPoint.parkedDelete];

describe('exactly-once with out-of-order messages parked (standard queue)', () => {
  let session: ProveSession;
  beforeAll(() => {
    session = createProveSession(awsEndpoints());
  });
  afterAll(async () => {
    await session?.dispose();
    uninstallVirtualClock();
  });

  it('every invariant holds, messages are applied from the park, and every park await point is killed at', async () => {
    const report = await runProve(session, {
      schedules: SCHEDULES,
      seed: SEED,
      sources: ['sqs'],
      workload: 'all',
      parkOutOfOrder: true,
      coverKillPoints: true,
      shrinkSeconds: 0,
      log: () => undefined,
    });
    console.info(formatReport(report));
    const failures = report.failures.map(
      (failure) => `${failure.invariant}: ${failure.violations[0]?.detail ?? ''}\n  replay: ${JSON.stringify(failure.replay)}`,
    );
    expect(failures, "violations (replay each with npm run prove -- --replay '<json>')").toEqual([]);
    expect(report.violations).toBe(0);
    expect(report.totals.parkingSchedules).toBe(report.schedules);
    expect(report.totals.parked).toBeGreaterThan(0);
    expect(report.totals.appliedFromPark).toBeGreaterThanOrEqual(1);
    expect(report.totals.deletedFromPark).toBeGreaterThanOrEqual(1);
    expect(report.killPoints.sqs!.killed).toEqual(expect.arrayContaining([...parkPoints]));
  }, 240_000);
});
