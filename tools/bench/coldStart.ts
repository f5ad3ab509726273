/**
 * Cold start: the café handler (`examples/cafe/handler.ts`) and the baseline
 * (`tools/bench/baselineLambda.ts`) bundled exactly as the stack bundles a consumer
 * (`lib/IdempotentConsumer.ts`: esbuild, ESM, `target` the default runtime's (`node24` for
 * `nodejs24.x`), `platform: node`, minified, with a source map and no sources content, main fields
 * `module,main`, the AWS SDK bundled, the `createRequire` banner), plus the
 * `@idempotent-consumer/source` condition so the in-repo package resolves to its sources (and
 * esbuild's default `module` condition, kept); then each imported in fresh Node.js processes,
 * interleaved (engine, baseline, …), with `--enable-source-maps` as the stack's `NODE_OPTIONS` sets it.
 *
 * **Where.** The imports run on the Node.js of the default Lambda runtime (`tools/node-versions`,
 * installed on first use as `npm run test:node24` does), else, where it cannot be installed, on
 * the Node.js running the benchmark; the report says which (`node`, `nodeIsRuntimes`).
 *
 * **Tracing, like with like.** Both handlers load Powertools' Tracer under the same condition (on
 * Lambda unless `POWERTOOLS_TRACE_ENABLED=false`), so both are measured twice: as deployed with the
 * construct's default, active tracing (the headline figures: `initMs`, `baselineInitMs`, …), and
 * with tracing off (`tracingOff`). Each pass of the loop imports the four in turn.
 *
 * The pairs alternate which side goes first (engine then baseline, then baseline then engine), so
 * neither always runs right after the other's process; the ratio of each pair (engine ÷ baseline)
 * is reported beside the medians, since a drift of the machine's load touches both of a pair.
 * Whether the machine was quiet is judged by `machineLoad.ts`, before and after the imports.
 *
 * The init figure is the time `import()` of the bundle takes inside the process (what Lambda's
 * init phase spends on the handler module; Node.js's own start is the same for both and left
 * out). esbuild's metafile tells what each bundle carries, by package.
 *
 * @module
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type Metafile } from 'esbuild';
import { defaultSettings } from 'idempotent-consumer/settings';
import { judgeLoad, type MachineLoad, sampleLoad } from './machineLoad.js';

/** The median (the mean of the middle two of an even count). */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** The Node.js major version of the default Lambda runtime (`nodejs24.x` → `24`). */
const RUNTIME_MAJOR = defaultSettings.function.runtime.replace(/^nodejs(\d+)\.x$/, '$1');

/** The bundling options of the constructs (`packages/cdk/src/bundling.ts`), in esbuild's terms. */
const STACK_BUNDLING = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: `node${RUNTIME_MAJOR}`,
  minify: true,
  sourcemap: true,
  sourcesContent: false,
  mainFields: ['module', 'main'],
  banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
  // As the stack: the S3 client (dead letters offloaded to S3 only) comes from the Lambda runtime.
  external: ['@aws-sdk/client-s3'],
  // The stack's esbuild resolves with its default custom condition, `module` (the AWS SDK's ES
  // modules). Naming any condition replaces that default, so `module` is named again beside the
  // source condition; without it the SDK resolves to its CommonJS builds (about 135 KiB more).
  conditions: ['@idempotent-consumer/source', 'module'],
  metafile: true,
  logLevel: 'warning',
} as const;

/** One part of a bundle: an npm package, or a folder of the repository. */
export interface BundlePart {
  readonly name: string;
  /** Bytes it takes in the minified output. */
  readonly bytes: number;
}

/** One configuration's import times, engine and baseline. */
export interface ImportFigures {
  /** Median wall time to import the engine's bundle in a fresh process, in milliseconds. */
  readonly initMs: number;
  readonly baselineInitMs: number;
  /** Median CPU time (user + system) of the import, in milliseconds: steadier than wall time on a busy machine. */
  readonly initCpuMs: number;
  readonly baselineInitCpuMs: number;
  /** Median of the pairs' ratios, engine ÷ baseline, of wall time and of CPU time. */
  readonly pairedWallRatio: number;
  readonly pairedCpuRatio: number;
}

/** What {@link measureColdStart} reports: {@link ImportFigures} with the construct's default, active tracing, and more. */
export interface ColdStart extends ImportFigures {
  /** The Node.js version the imports ran on (`v24.…`). */
  readonly node: string;
  /** Whether that is the default Lambda runtime's Node.js major version (else: the benchmark's own Node.js). */
  readonly nodeIsRuntimes: boolean;
  /** The Lambda runtime whose Node.js and esbuild target the figures are for. */
  readonly runtime: string;
  /** The same imports with tracing off on both sides (`POWERTOOLS_TRACE_ENABLED=false`): neither loads its Tracer. */
  readonly tracingOff: ImportFigures;
  /** The café handler's bundle (`index.mjs`, without its source map), in bytes. */
  readonly bundleBytes: number;
  readonly baselineBundleBytes: number;
  /** Imports per side and configuration. */
  readonly runs: number;
  /** The load of the machine before and after the imports, and whether it was quiet. */
  readonly machine: MachineLoad;
  /** Fastest and slowest wall times, with active tracing. */
  readonly initMsRange: readonly [number, number];
  readonly baselineInitMsRange: readonly [number, number];
  /** The source maps' sizes, in bytes (Node.js reads them at import with `--enable-source-maps`). */
  readonly sourceMapBytes: number;
  readonly baselineSourceMapBytes: number;
  /** The engine bundle's largest parts. */
  readonly largestInputs: readonly BundlePart[];
  readonly baselineLargestInputs: readonly BundlePart[];
}

/** Options of {@link measureColdStart}. */
export interface ColdStartOptions {
  /** Fresh-process imports per side (at least 1). */
  readonly runs: number;
  /** The repository's root. @default process.cwd() */
  readonly root?: string;
  /**
   * The Node.js binary the imports run on.
   * @default the default Lambda runtime's, `tools/node-versions/node_modules/node-<major>/bin/node`, when installed; else `process.execPath`
   */
  readonly node?: string;
  readonly log?: (line: string) => void;
}

/** An npm package (`@scope/name` or `name`) or, for the repository's own files, their folder. */
function partOf(input: string): string {
  const at = input.lastIndexOf('node_modules/');
  if (at >= 0) {
    const rest = input.slice(at + 'node_modules/'.length).split('/');
    const name = rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
    // zod's locales are a part of their own: the question is whether a bundle needs them.
    if (name === 'zod' && input.includes('/locales/')) return 'zod (locales)';
    return name;
  }
  const parts = input.split('/');
  return parts.length > 1 ? parts.slice(0, -1).join('/') : input;
}

/** The parts of the bundle's output, largest first. */
export function bundleParts(metafile: Metafile): BundlePart[] {
  const totals = new Map<string, number>();
  for (const output of Object.values(metafile.outputs)) {
    for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
      const part = partOf(input);
      totals.set(part, (totals.get(part) ?? 0) + bytesInOutput);
    }
  }
  return [...totals].map(([name, bytes]) => ({ name, bytes })).sort((a, b) => b.bytes - a.bytes);
}

/** Bundles `entry` into `dir/index.mjs` as the stack does; its size and parts. */
export async function bundleLikeTheStack(
  entry: string,
  dir: string,
  root: string,
): Promise<{ file: string; bytes: number; parts: BundlePart[] }> {
  const file = join(dir, 'index.mjs');
  const result = await build({
    ...STACK_BUNDLING,
    entryPoints: [resolve(root, entry)],
    outfile: file,
    absWorkingDir: root,
    mainFields: [...STACK_BUNDLING.mainFields],
    conditions: [...STACK_BUNDLING.conditions],
    external: [...STACK_BUNDLING.external],
  });
  return { file, bytes: (await stat(file)).size, parts: bundleParts(result.metafile!) };
}

/** The import timer run in each fresh process: prints the wall and CPU milliseconds `import()` took. */
const TIMER = `const started = performance.now();
const cpu = process.cpuUsage();
await import(process.argv[2]);
const used = process.cpuUsage(cpu);
process.stdout.write(JSON.stringify({ wallMs: performance.now() - started, cpuMs: (used.user + used.system) / 1000 }));
`;

interface ImportTime {
  readonly wallMs: number;
  readonly cpuMs: number;
}

function importOnce(node: string, timer: string, bundle: string, tracing: boolean): Promise<ImportTime> {
  return new Promise((resolvePromise, reject) => {
    execFile(
      node,
      ['--enable-source-maps', timer, pathToFileURL(bundle).href],
      {
        // What a Lambda environment has at init; the handlers read nothing else at import. The AWS
        // SDK's warning about Node.js 20 is turned off: Lambda runs Node.js 22, where it is not
        // emitted, and a warning's stack trace costs a source-mapped stack under --enable-source-maps.
        env: {
          PATH: process.env.PATH ?? '',
          AWS_REGION: 'us-east-1',
          AWS_LAMBDA_FUNCTION_NAME: 'benchmark',
          TABLE_NAME_ORDERS: 'orders',
          IDEMPOTENCY_TABLE_NAME: 'idempotency',
          AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
          // What the construct sets for `Tracing.DISABLED`; unset, both handlers load their Tracer.
          ...(tracing ? {} : { POWERTOOLS_TRACE_ENABLED: 'false' }),
          NODE_OPTIONS: '',
        },
        timeout: 60_000,
      },
      (error, stdout, stderr) => {
        let time: ImportTime | undefined;
        try {
          time = JSON.parse(stdout) as ImportTime;
        } catch {
          time = undefined;
        }
        if (error !== null || time === undefined || !Number.isFinite(time.wallMs))
          reject(new Error(`importing ${bundle} failed: ${error?.message ?? ''} ${stderr.slice(0, 500)}`));
        else resolvePromise(time);
      },
    );
  });
}

/**
 * The default Lambda runtime's Node.js binary from `tools/node-versions`, installed there on first
 * use as `npm run test:node24` does (`npm ci --prefix tools/node-versions`: the binaries pinned in
 * its lock file, from the npm registry, Linux x64 only); else, when it cannot be installed, the
 * benchmark's own Node.js (the report says so).
 */
export function runtimeNode(root: string, log?: (line: string) => void): { node: string; version: string; isRuntimes: boolean } {
  const folder = join(root, 'tools', 'node-versions');
  const installed = join(folder, 'node_modules', `node-${RUNTIME_MAJOR}`, 'bin', 'node');
  if (!existsSync(installed) && process.platform === 'linux' && process.arch === 'x64' && existsSync(join(folder, 'package-lock.json'))) {
    log?.(`Installing the Lambda runtime's Node.js ${RUNTIME_MAJOR} into tools/node-versions (npm ci) for the cold start…`);
    // Into a folder of its own, then renamed into place at once: a test that runs the binaries
    // meanwhile (they are used when present) never meets a half-written one.
    const staging = join(folder, `.install-${process.pid}`);
    try {
      mkdirSync(staging, { recursive: true });
      for (const file of ['package.json', 'package-lock.json']) copyFileSync(join(folder, file), join(staging, file));
      const npm = spawnSync('npm', ['ci', '--prefix', staging, '--no-audit', '--no-fund', '--silent'], {
        stdio: 'ignore',
        timeout: 300_000,
      });
      if (npm.status === 0 && !existsSync(join(folder, 'node_modules')))
        renameSync(join(staging, 'node_modules'), join(folder, 'node_modules'));
    } catch {
      // Left to the fallback below: the benchmark's own Node.js, which the report names.
    } finally {
      rmSync(staging, { recursive: true, force: true });
    }
  }
  const node = existsSync(installed) ? installed : process.execPath;
  const version = node === process.execPath ? process.version : execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
  return { node, version, isRuntimes: version.startsWith(`v${RUNTIME_MAJOR}.`) };
}

/** The medians and paired ratios of one configuration's imports. */
function figuresOf(engine: readonly ImportTime[], baseline: readonly ImportTime[]): ImportFigures {
  const ratio = (of: (t: ImportTime) => number) => Number(median(engine.map((t, i) => of(t) / of(baseline[i]!))).toFixed(3));
  const ms = (of: (t: ImportTime) => number, times: readonly ImportTime[]) => Number(median(times.map(of)).toFixed(1));
  const wall = (t: ImportTime) => t.wallMs;
  const cpu = (t: ImportTime) => t.cpuMs;
  return {
    initMs: ms(wall, engine),
    baselineInitMs: ms(wall, baseline),
    initCpuMs: ms(cpu, engine),
    baselineInitCpuMs: ms(cpu, baseline),
    pairedWallRatio: ratio(wall),
    pairedCpuRatio: ratio(cpu),
  };
}

/**
 * Bundles both handlers and imports each `runs` times in fresh processes, interleaved, with
 * active tracing and with tracing off.
 *
 * @throws Error when a bundle cannot be built or imported
 */
export async function measureColdStart(options: ColdStartOptions): Promise<ColdStart> {
  const root = options.root ?? process.cwd();
  const runtime = runtimeNode(root, options.log);
  const node = options.node ?? runtime.node;
  const version = options.node === undefined ? runtime.version : execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
  const dir = await mkdtemp(join(tmpdir(), 'bench-cold-start-'));
  try {
    const engineDir = join(dir, 'engine');
    const baselineDir = join(dir, 'baseline');
    const [engine, baseline] = await Promise.all([
      bundleLikeTheStack('examples/cafe/handler.ts', engineDir, root),
      bundleLikeTheStack('tools/bench/baselineLambda.ts', baselineDir, root),
    ]);
    const timer = join(dir, 'timer.mjs');
    await writeFile(timer, TIMER);
    options.log?.(
      `Cold start on Node.js ${version}: engine bundle ${engine.bytes} B, baseline ${baseline.bytes} B; ` +
        `${options.runs} imports each, tracing on and off, interleaved…`,
    );
    const importOf = (bundle: string, tracing: boolean) => importOnce(node, timer, bundle, tracing);
    // One import each first, not counted: the operating system's file cache.
    await importOf(engine.file, true);
    await importOf(baseline.file, true);
    const before = sampleLoad();
    const traced = { engine: [] as ImportTime[], baseline: [] as ImportTime[] };
    const untraced = { engine: [] as ImportTime[], baseline: [] as ImportTime[] };
    for (let i = 0; i < options.runs; i += 1) {
      for (const [times, tracing] of [
        [traced, true],
        [untraced, false],
      ] as const) {
        if (i % 2 === 0) {
          times.engine.push(await importOf(engine.file, tracing));
          times.baseline.push(await importOf(baseline.file, tracing));
        } else {
          times.baseline.push(await importOf(baseline.file, tracing));
          times.engine.push(await importOf(engine.file, tracing));
        }
      }
    }
    const machine = judgeLoad(before, sampleLoad());
    const ms = (n: number) => Number(n.toFixed(1));
    const wall = (times: ImportTime[]) => times.map((t) => t.wallMs);
    return {
      node: version,
      nodeIsRuntimes: version.startsWith(`v${RUNTIME_MAJOR}.`),
      runtime: defaultSettings.function.runtime,
      ...figuresOf(traced.engine, traced.baseline),
      tracingOff: figuresOf(untraced.engine, untraced.baseline),
      bundleBytes: engine.bytes,
      baselineBundleBytes: baseline.bytes,
      runs: options.runs,
      machine,
      initMsRange: [ms(Math.min(...wall(traced.engine))), ms(Math.max(...wall(traced.engine)))],
      baselineInitMsRange: [ms(Math.min(...wall(traced.baseline))), ms(Math.max(...wall(traced.baseline)))],
      sourceMapBytes: (await stat(`${engine.file}.map`)).size,
      baselineSourceMapBytes: (await stat(`${baseline.file}.map`)).size,
      largestInputs: engine.parts.slice(0, 15),
      baselineLargestInputs: baseline.parts.slice(0, 15),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
