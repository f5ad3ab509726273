/**
 * Reads a replay the proof suite shrank (a schedule as JSON, kept under
 * `test/prove/found/replays/`), through the schedule reader a `--replay` uses.
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import { parseSchedule, type Schedule } from '../../../tools/prove/schedule.js';

/**
 * The schedule of `replays/<name>.json`.
 *
 * @throws ScheduleError when the file is not a schedule
 */
export function replayFile(name: string): Schedule {
  return parseSchedule(JSON.parse(readFileSync(new URL(`replays/${name}.json`, import.meta.url), 'utf8')) as unknown);
}
