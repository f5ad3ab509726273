/**
 * Runs a replay of the proof suite (a schedule it found and shrank) as a normal test: one
 * session on the run's emulators, the suite's clock restored afterwards.
 *
 * @module
 */
import { afterAll, beforeAll } from 'vitest';
import { createProveSession, type ProveSession } from '../../../tools/prove/runProve.js';
import { runSchedule, type ScheduleResult } from '../../../tools/prove/runSchedule.js';
import type { Schedule } from '../../../tools/prove/schedule.js';
import { uninstallVirtualClock } from '../../../tools/prove/virtualClock.js';
import { awsEndpoints } from '../../support/awsEndpoints.js';

/** Registers the session's set-up and tear-down in the calling file; returns the replay runner. */
export function replaySession(): (schedule: Schedule) => Promise<ScheduleResult> {
  let session: ProveSession | undefined;
  const trace: string[] = [];
  beforeAll(() => {
    session = createProveSession(awsEndpoints(), { trace: (line) => trace.push(line) });
  });
  afterAll(async () => {
    await session?.dispose();
    uninstallVirtualClock();
  });
  return async (schedule) => {
    trace.length = 0;
    const result = await runSchedule(schedule, session!);
    if (result.violations.length > 0) console.info(`invocations of the replay:\n${trace.join('\n')}`);
    return result;
  };
}
