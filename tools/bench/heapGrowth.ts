/**
 * Heap growth of a new execution environment of each side (as after a cold start, its caches
 * empty) over a long run: `fresh` at batch size 10,
 * the heap used after a forced garbage collection once `from` messages were processed and again
 * after `to` (the messages of each stretch are made just before it, so none still waiting is
 * counted). The meters are off meanwhile (their item-size records would be counted otherwise).
 * Growth that stays is what an execution environment keeps per message; the engine's item cache
 * keeps up to 10,000 items by design (`lambda/engine/ItemCache.ts`).
 *
 * @module
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { drain } from './runScenarios.js';
import { ScenarioName, scenarioMessages } from './scenarios.js';
import type { Side, Sides } from './sides.js';

/** What {@link measureHeapGrowth} reports. */
export interface HeapGrowth {
  readonly scenario: 'fresh';
  readonly batchSize: 10;
  readonly from: number;
  readonly to: number;
  readonly engineGrowthMiB: number;
  readonly baselineGrowthMiB: number;
  /** Growth ÷ (to − from), in bytes. */
  readonly engineBytesPerMessage: number;
  readonly baselineBytesPerMessage: number;
}

/** `gc()`, exposed at run time (the process was not started with `--expose-gc`). */
function forcedGc(): () => void {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (exposed !== undefined) return exposed;
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

async function growthOf(side: Side, sides: Sides, from: number, to: number): Promise<number> {
  const gc = forcedGc();
  const heapUsed = () => {
    gc();
    gc();
    return process.memoryUsage().heapUsed;
  };
  // Two queues, each made just before it is drained, so that no message still waiting is counted in either figure.
  side.meter.enabled = false;
  const handler = side.newHandler();
  let atFrom: number;
  try {
    await drain(side, handler, scenarioMessages(ScenarioName.Fresh, `heap-${side.name}-a`, from, []).messages, 10, sides.queueArn);
    atFrom = heapUsed();
    await drain(side, handler, scenarioMessages(ScenarioName.Fresh, `heap-${side.name}-b`, to - from, []).messages, 10, sides.queueArn);
  } finally {
    side.meter.enabled = true;
  }
  return heapUsed() - atFrom;
}

/**
 * Measures both sides, the engine first.
 * @param log - progress lines
 */
export async function measureHeapGrowth(
  sides: Sides,
  range: { readonly from: number; readonly to: number },
  log: (line: string) => void,
): Promise<HeapGrowth> {
  log(`Heap growth: fresh@10, ${range.from} → ${range.to} messages per side…`);
  const engine = await growthOf(sides.engine, sides, range.from, range.to);
  const baseline = await growthOf(sides.baseline, sides, range.from, range.to);
  const mib = (bytes: number) => Number((bytes / 1024 / 1024).toFixed(2));
  const per = (bytes: number) => Math.round(bytes / (range.to - range.from));
  return {
    scenario: 'fresh',
    batchSize: 10,
    from: range.from,
    to: range.to,
    engineGrowthMiB: mib(engine),
    baselineGrowthMiB: mib(baseline),
    engineBytesPerMessage: per(engine),
    baselineBytesPerMessage: per(baseline),
  };
}
