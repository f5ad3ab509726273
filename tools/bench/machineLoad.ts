/**
 * Whether the machine was quiet while the cold start was measured: the load average, and a
 * calibration loop (fixed single-threaded CPU work) timed before and after the imports.
 *
 * On a quiet machine the loop gets a core as soon as it asks, so its wall time equals its CPU
 * time; when other processes want more cores than there are, it waits, and its wall time exceeds
 * its CPU time by the share of time it waited. That ratio needs no reference machine. The load
 * average (Linux: processes running or waiting for a core, and in uninterruptible I/O) tells the
 * same from the operating system's side, over the last minute.
 *
 * **Quiet** means, before and after the imports: a 1-minute load average below half the cores
 * (`os.availableParallelism()`), and the calibration loop's wall time at most 1.10× its CPU time
 * (median of 5 rounds).
 *
 * @module
 */
import { availableParallelism, loadavg } from 'node:os';

/** One sample of the machine's load. */
export interface LoadSample {
  /** The 1-, 5- and 15-minute load averages. */
  readonly loadAverage: readonly [number, number, number];
  /** The calibration loop's wall time ÷ its CPU time (median of the rounds); 1.00 on a quiet machine. */
  readonly calibrationWallToCpu: number;
  /** The calibration loop's CPU time per round, in milliseconds (median). */
  readonly calibrationCpuMs: number;
}

/** The machine around a measurement, and the verdict. */
export interface MachineLoad {
  readonly cores: number;
  readonly before: LoadSample;
  readonly after: LoadSample;
  /** Quiet before and after (see the module comment). */
  readonly quiet: boolean;
  /** Why it was not quiet; empty when it was. */
  readonly reasons: readonly string[];
}

/** The most load per core that still counts as quiet. */
export const QUIET_LOAD_PER_CORE = 0.5;
/** The most wall time per CPU time of the calibration loop that still counts as quiet. */
export const QUIET_WALL_TO_CPU = 1.1;

const median = (values: readonly number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** A fixed amount of single-threaded CPU work (about 20 to 50 ms on a current core). */
function calibrationWork(): number {
  let x = 0;
  for (let i = 0; i < 20_000_000; i += 1) x = (x * 31 + i) % 1_000_003;
  return x;
}

/** Samples the load average and times the calibration loop (`rounds` times). */
export function sampleLoad(rounds = 5): LoadSample {
  const ratios: number[] = [];
  const cpus: number[] = [];
  let sink = 0;
  for (let i = 0; i < rounds; i += 1) {
    const wallStart = performance.now();
    const cpuStart = process.cpuUsage();
    sink += calibrationWork();
    const cpu = process.cpuUsage(cpuStart);
    const cpuMs = (cpu.user + cpu.system) / 1000;
    ratios.push((performance.now() - wallStart) / Math.max(cpuMs, 0.001));
    cpus.push(cpuMs);
  }
  if (sink < 0) throw new Error('unreachable'); // keeps the loop from being optimised away
  const [one, five, fifteen] = loadavg();
  const two = (n: number) => Number(n.toFixed(2));
  return {
    loadAverage: [two(one!), two(five!), two(fifteen!)],
    calibrationWallToCpu: two(median(ratios)),
    calibrationCpuMs: Number(median(cpus).toFixed(1)),
  };
}

/**
 * Judges two samples (see the module comment).
 *
 * @param cores - the cores the machine offers @default os.availableParallelism()
 */
export function judgeLoad(before: LoadSample, after: LoadSample, cores: number = availableParallelism()): MachineLoad {
  const reasons: string[] = [];
  for (const [when, sample] of [
    ['before', before],
    ['after', after],
  ] as const) {
    if (sample.loadAverage[0] >= QUIET_LOAD_PER_CORE * cores)
      reasons.push(
        `1-minute load average ${sample.loadAverage[0]} ${when} (quiet: below ${QUIET_LOAD_PER_CORE * cores} on ${cores} cores)`,
      );
    if (sample.calibrationWallToCpu > QUIET_WALL_TO_CPU)
      reasons.push(
        `calibration loop ${when}: wall time ${sample.calibrationWallToCpu}× its CPU time (quiet: at most ${QUIET_WALL_TO_CPU}×)`,
      );
  }
  return { cores, before, after, quiet: reasons.length === 0, reasons };
}
