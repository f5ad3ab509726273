/**
 * Runs a Lambda function's bundle as Lambda does: each execution environment is a child process
 * (`lambdaRuntime.mjs`) under the Node.js binary of the function's runtime, with the function's
 * environment variables, that loads the bundle once and is invoked again and again; an
 * environment whose invocation runs past the function timeout, or that crashes, is killed and
 * replaced at its next invocation. What the function writes (its logs and metrics) comes back line
 * by line.
 *
 * @module
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { Context } from 'aws-lambda';
import { newTraceHeader } from '../lambdaInvokeStore.js';

/** The child's end-of-invocation mark on standard output and error (see `lambdaRuntime.mjs`). */
const END_MARK = '\u001eic-invocation-end';

/** Where the runtime interface (`lambdaRuntime.mjs`) is: beside this module, in `src/` as in `dist/`. */
export const lambdaRuntimeScript = fileURLToPath(new URL('./lambdaRuntime.mjs', import.meta.url));

/** Options of {@link FunctionHost}. */
export interface FunctionHostOptions {
  /** The function's name, for messages (the construct path). */
  readonly name: string;
  /** The bundle's directory (`LAMBDA_TASK_ROOT`). */
  readonly codeDirectory: string;
  /** The Node.js binary to run it with. */
  readonly nodeBinary: string;
  /** Every environment variable of the process (the function's, Lambda's and the endpoints): nothing else is passed. */
  readonly environment: Readonly<Record<string, string>>;
  /** Receives each line the function writes, with its stream. */
  readonly onLine: (line: string, stream: 'stdout' | 'stderr') => void;
}

/** A failed invocation or start of an execution environment, named as Lambda names it (`Runtime.ExitError`, the handler's error name, …). */
export class FunctionError extends Error {
  constructor(
    name: string,
    message: string,
    /** The stack trace lines the runtime reported. */
    public readonly trace: readonly string[] = [],
  ) {
    super(message);
    this.name = name;
  }
}

interface Invocation {
  readonly id: string;
  readonly done: (outcome: { response: unknown } | { error: Error }) => void;
  /** The IPC answer, once it came. */
  answer?: { response: unknown } | { error: Error };
  /** The end marks still awaited on standard output and error. */
  marks: Set<'stdout' | 'stderr'>;
}

/**
 * One execution environment: a child process, started at its first invocation. It serves the
 * invocations it is given at once (on Lambda Managed Instances, up to the function's
 * `PerExecutionEnvironmentMaxConcurrency`; the caller decides how many): each is matched to its
 * answer and end marks by id. One that runs past its timeout stops the process, and the others
 * in it fail with `Runtime.ExitError`, as when the process crashes.
 */
class ExecutionEnvironment {
  #child: ChildProcess | undefined;
  #ready: Promise<void> | undefined;
  /** The invocations of the current child not settled yet, by id. */
  readonly #inFlight = new Map<string, Invocation>();

  constructor(private readonly options: FunctionHostOptions) {}

  /** Invokes the handler once; rejects with a {@link FunctionError} as Lambda reports a function error. */
  async invoke(event: unknown, context: Context): Promise<unknown> {
    const deadlineMs = Date.now() + context.getRemainingTimeInMillis();
    if (this.#child === undefined) this.#start();
    const child = this.#child!;
    // The trace header of the invocation: the local event source's (Lambda's per-invocation store), else a new one.
    const traceHeader = globalThis.awslambda?.InvokeStore?.getXRayTraceId() ?? newTraceHeader();
    let timer: NodeJS.Timeout | undefined;
    try {
      return await new Promise<unknown>((resolve, reject) => {
        const id = randomUUID();
        const settle = (outcome: { response: unknown } | { error: Error }) => {
          if (!this.#inFlight.delete(id)) return;
          if ('error' in outcome) reject(outcome.error);
          else resolve(outcome.response);
        };
        this.#inFlight.set(id, { id, done: settle, marks: new Set(['stdout', 'stderr']) });
        timer = setTimeout(
          () => {
            // Lambda stops the function at its timeout: nothing it would still do reaches the stores.
            settle({ error: new FunctionError('Sandbox.Timedout', `${this.options.name}: the invocation ran past its timeout`) });
            this.kill();
          },
          Math.max(0, deadlineMs - Date.now()),
        );
        this.#ready!.then(
          () => {
            if (!this.#inFlight.has(id)) return;
            const { getRemainingTimeInMillis: _, done: _d, fail: _f, succeed: _s, ...plain } = context;
            child.send({ type: 'invoke', id, event, deadlineMs, context: plain, traceHeader });
          },
          (error: unknown) => settle({ error: error as Error }),
        );
      });
    } finally {
      clearTimeout(timer);
    }
  }

  #start(): void {
    const child = spawn(this.options.nodeBinary, [lambdaRuntimeScript], {
      cwd: this.options.codeDirectory,
      env: { ...this.options.environment },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      serialization: 'json',
    });
    this.#child = child;
    // Lines not yet ended by a newline, per stream, of this process.
    const pending = { stdout: '', stderr: '' };
    const mine = () => this.#child === child;
    let ready: () => void;
    let failed: (error: Error) => void;
    this.#ready = new Promise<void>((resolve, reject) => {
      ready = resolve;
      failed = reject;
    });
    // A rejected start is reported to the invocation waiting for it, not as an unhandled rejection.
    this.#ready.catch(() => undefined);
    child.stdout!.on('data', (chunk: Buffer) => this.#read(pending, 'stdout', chunk.toString('utf8'), mine()));
    child.stderr!.on('data', (chunk: Buffer) => this.#read(pending, 'stderr', chunk.toString('utf8'), mine()));
    child.on('message', (message: RuntimeMessage) => {
      if (message.type === 'ready') ready();
      else if (message.type === 'init-error') {
        const error = new FunctionError(
          message.error.errorType,
          `${this.options.name}: ${message.error.errorMessage}`,
          message.error.trace,
        );
        failed(error);
      } else if (message.type === 'result' || message.type === 'error') {
        const invocation = this.#inFlight.get(message.id);
        if (!mine() || invocation === undefined) return;
        invocation.answer =
          message.type === 'result'
            ? { response: JSON.parse(message.response) as unknown }
            : { error: new FunctionError(message.error.errorType, message.error.errorMessage, message.error.trace) };
        this.#settleIfRead(invocation);
      }
    });
    child.on('error', (error) => failed(error));
    // 'close', not 'exit': the lines the process wrote are all read by then.
    child.on('close', (code, signal) => {
      for (const stream of ['stdout', 'stderr'] as const) {
        if (pending[stream] !== '') this.options.onLine(pending[stream], stream);
        pending[stream] = '';
      }
      const error = new FunctionError(
        'Runtime.ExitError',
        `${this.options.name}: the runtime exited (${signal === null ? `code ${String(code)}` : `signal ${signal}`})`,
      );
      failed(error);
      if (!mine()) return;
      this.#child = undefined;
      this.#failInFlight(error);
    });
  }

  #read(pending: Record<'stdout' | 'stderr', string>, stream: 'stdout' | 'stderr', text: string, current: boolean): void {
    const lines = (pending[stream] + text).split('\n');
    pending[stream] = lines.pop() ?? '';
    for (const line of lines) {
      const at = line.indexOf(END_MARK);
      if (at < 0) {
        this.options.onLine(line, stream);
        continue;
      }
      if (at > 0) this.options.onLine(line.slice(0, at), stream);
      const invocation = current ? this.#inFlight.get(line.slice(at + END_MARK.length + 1)) : undefined;
      if (invocation !== undefined) {
        invocation.marks.delete(stream);
        this.#settleIfRead(invocation);
      }
    }
  }

  /** Settles an invocation once its answer came and every line it wrote before has been read. */
  #settleIfRead(invocation: Invocation): void {
    if (invocation.answer !== undefined && invocation.marks.size === 0) invocation.done(invocation.answer);
  }

  /** Fails every invocation of the stopped process that has no answer yet (an answered one waits for nothing more). */
  #failInFlight(error: Error): void {
    for (const invocation of [...this.#inFlight.values()]) invocation.done(invocation.answer ?? { error });
  }

  /** Kills the child process, if any. */
  kill(): void {
    const child = this.#child;
    this.#child = undefined;
    if (child !== undefined && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    if (child !== undefined) {
      this.#failInFlight(new FunctionError('Runtime.ExitError', `${this.options.name}: the execution environment was stopped`));
    }
  }

  /** Whether the child is still running. */
  get running(): boolean {
    return this.#child !== undefined;
  }
}

type RuntimeError = { readonly errorType: string; readonly errorMessage: string; readonly trace: readonly string[] };
type RuntimeMessage =
  | { readonly type: 'ready' }
  | { readonly type: 'init-error'; readonly error: RuntimeError }
  | { readonly type: 'result'; readonly id: string; readonly response: string }
  | { readonly type: 'error'; readonly id: string; readonly error: RuntimeError };

/**
 * A function's execution environments. `createHandler()` is what a local event source mapping
 * calls for each new environment; the handler it returns invokes that environment's child
 * process.
 *
 * @example
 * const host = new FunctionHost({ name, codeDirectory, nodeBinary, environment, onLine });
 * new SqsEventSourcePoller({ …, createHandler: () => host.createHandler() });
 * // …
 * await host.stop();
 */
export class FunctionHost {
  readonly #environments = new Set<ExecutionEnvironment>();

  constructor(private readonly options: FunctionHostOptions) {}

  /** A new execution environment's handler: `(event, context) => Promise<response>`; its process starts at its first invocation. */
  createHandler(): (event: unknown, context: Context) => Promise<unknown> {
    const environment = new ExecutionEnvironment(this.options);
    this.#environments.add(environment);
    return (event, context) => environment.invoke(event, context);
  }

  /** Execution environments whose process runs now. */
  get running(): number {
    return [...this.#environments].filter((environment) => environment.running).length;
  }

  /** Kills every execution environment's process. */
  async stop(): Promise<void> {
    for (const environment of this.#environments) environment.kill();
    this.#environments.clear();
  }
}
