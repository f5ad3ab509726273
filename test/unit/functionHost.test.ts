/**
 * A function's bundle run as Lambda runs it, each execution environment a child process
 * (`lambdaRuntime.mjs`): the handler named by `_HANDLER`, loaded once; the context's remaining
 * time; errors named as Lambda names them; a timed-out or crashed environment replaced; bare
 * imports the bundle leaves out found through `NODE_PATH`; every line written before the answer
 * read before the invocation ends; many invocations at once in one environment (Lambda Managed
 * Instances), each in Lambda's per-invocation store. Small bundles written here, no emulators.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FunctionError, FunctionHost } from '../../packages/local/src/app/functionHost.js';
import { createLambdaContext } from '../../packages/local/src/lambdaContext.js';

const bundle = `
import { lookup } from 'node:dns/promises';
let invocations = 0;
let active = 0;
let mostActive = 0;
export const handler = async (event, context) => {
  invocations += 1;
  console.log(JSON.stringify({ level: 'INFO', message: 'invoked', n: invocations }));
  process.stderr.write('a line on stderr\\n');
  switch (event.kind) {
    case 'echo':
      return { event, invocations, remaining: context.getRemainingTimeInMillis(), requestId: context.awsRequestId, env: process.env.GREETING, pid: process.pid };
    case 'throw':
      throw Object.assign(new Error('it failed'), { name: 'DownstreamUnavailable' });
    case 'hang':
      return new Promise(() => undefined);
    case 'exit':
      process.exit(3);
    case 'import':
      return (await import('provided-by-the-runtime')).value;
    case 'lookup':
      return (await lookup('sqs.us-east-1.localhost')).address;
    case 'overlap': {
      // What Lambda's per-invocation store says before and after waiting while others run.
      active += 1;
      mostActive = Math.max(mostActive, active);
      const store = globalThis.awslambda.InvokeStore;
      const before = { requestId: store.getRequestId(), traceId: store.getXRayTraceId(), envTraceId: process.env._X_AMZN_TRACE_ID };
      await new Promise((resolve) => setTimeout(resolve, event.waitMs));
      active -= 1;
      return { before, after: { requestId: store.getRequestId(), traceId: store.getXRayTraceId() }, contextRequestId: context.awsRequestId, mostActive, pid: process.pid };
    }
    case 'lines':
      for (let i = 0; i < 200; i += 1) process.stdout.write(JSON.stringify({ i }) + '\\n');
      return 'done';
  }
};
`;

describe('FunctionHost (a bundle in child processes, as Lambda runs it)', () => {
  let dir: string;
  let code: string;
  let runtimeFolder: string;
  const lines: { line: string; stream: string }[] = [];
  let host: FunctionHost;
  const context = (timeoutSeconds = 10) =>
    createLambdaContext({
      functionName: 'f',
      region: 'us-east-1',
      accountId: '000000000000',
      timeoutSeconds,
      memorySizeMb: 128,
      logStreamName: 's',
    });
  const hostFor = (handler: string, environment: Record<string, string> = {}) =>
    new FunctionHost({
      name: 'Test/Function',
      codeDirectory: code,
      nodeBinary: process.execPath,
      environment: { PATH: process.env.PATH ?? '', LAMBDA_TASK_ROOT: code, _HANDLER: handler, NODE_PATH: runtimeFolder, ...environment },
      onLine: (line, stream) => lines.push({ line, stream }),
    });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'function-host-'));
    code = join(dir, 'asset');
    runtimeFolder = join(dir, 'runtime', 'node_modules');
    await mkdir(code, { recursive: true });
    await writeFile(join(code, 'index.mjs'), bundle);
    await mkdir(join(runtimeFolder, 'provided-by-the-runtime'), { recursive: true });
    await writeFile(
      join(runtimeFolder, 'provided-by-the-runtime', 'package.json'),
      JSON.stringify({ name: 'provided-by-the-runtime', type: 'module', main: 'index.js' }),
    );
    await writeFile(join(runtimeFolder, 'provided-by-the-runtime', 'index.js'), "export const value = 'from NODE_PATH';");
    host = hostFor('index.handler', { GREETING: 'hello' });
  });
  afterAll(async () => {
    await host.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("invokes the bundle's handler with the event and a context counting down, in a process that stays for the next invocation", async () => {
    const handler = host.createHandler();
    const first = (await handler({ kind: 'echo', n: 1 }, context())) as Record<string, unknown>;
    const second = (await handler({ kind: 'echo', n: 2 }, context())) as Record<string, unknown>;
    expect(first).toMatchObject({ event: { kind: 'echo', n: 1 }, invocations: 1, env: 'hello' });
    expect(first.remaining).toBeGreaterThan(0);
    expect(first.remaining).toBeLessThanOrEqual(10_000);
    expect(second).toMatchObject({ invocations: 2, pid: first.pid });
    expect(lines).toContainEqual({ line: JSON.stringify({ level: 'INFO', message: 'invoked', n: 1 }), stream: 'stdout' });
    expect(lines).toContainEqual({ line: 'a line on stderr', stream: 'stderr' });
  });

  it('gives each execution environment its own process', async () => {
    const a = (await host.createHandler()({ kind: 'echo' }, context())) as { pid: number };
    const b = (await host.createHandler()({ kind: 'echo' }, context())) as { pid: number };
    expect(a.pid).not.toBe(b.pid);
  });

  it("rejects with the handler's error, named as Lambda reports it", async () => {
    const error = await host
      .createHandler()({ kind: 'throw' }, context())
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FunctionError);
    expect(error).toMatchObject({ name: 'DownstreamUnavailable', message: 'it failed' });
  });

  it('kills an environment at its timeout, and starts a new process at its next invocation', async () => {
    const handler = host.createHandler();
    const { pid } = (await handler({ kind: 'echo' }, context())) as { pid: number };
    const error = await handler({ kind: 'hang' }, context(1)).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'Sandbox.Timedout' });
    const after = (await handler({ kind: 'echo' }, context())) as { pid: number; invocations: number };
    expect(after.pid).not.toBe(pid);
    expect(after.invocations).toBe(1);
  });

  it('reports a process that exits as Runtime.ExitError, and starts again', async () => {
    const handler = host.createHandler();
    await expect(handler({ kind: 'exit' }, context())).rejects.toMatchObject({
      name: 'Runtime.ExitError',
      message: expect.stringContaining('code 3'),
    });
    await expect(handler({ kind: 'echo' }, context())).resolves.toMatchObject({ invocations: 1 });
  });

  it('reports a handler the bundle does not export as Runtime.HandlerNotFound', async () => {
    const missing = hostFor('index.nothing');
    try {
      await expect(missing.createHandler()({}, context())).rejects.toMatchObject({ name: 'Runtime.HandlerNotFound' });
    } finally {
      await missing.stop();
    }
  });

  it('resolves a bare import the bundle leaves out from NODE_PATH, and .localhost names to 127.0.0.1', async () => {
    const handler = host.createHandler();
    await expect(handler({ kind: 'import' }, context())).resolves.toBe('from NODE_PATH');
    await expect(handler({ kind: 'lookup' }, context())).resolves.toBe('127.0.0.1');
  });

  it('has read every line the invocation wrote when it ends', async () => {
    lines.length = 0;
    await host.createHandler()({ kind: 'lines' }, context());
    expect(lines.filter((l) => l.line.startsWith('{"i":')).length).toBe(200);
  });
  it("runs each invocation in Lambda's per-invocation store, with _X_AMZN_TRACE_ID, one at a time by default", async () => {
    const handler = host.createHandler();
    const result = (await handler({ kind: 'overlap', waitMs: 0 }, context())) as Overlap;
    expect(result.before.requestId).toBe(result.contextRequestId);
    expect(result.before.traceId).toMatch(/^Root=1-[0-9a-f]{8}-[0-9a-f]{24};Parent=[0-9a-f]{16};Sampled=0$/);
    expect(result.before.envTraceId).toBe(result.before.traceId);
  });

  it('serves many invocations at once in one environment (AWS_LAMBDA_MAX_CONCURRENCY), each reading its own request id and trace', async () => {
    const shared = hostFor('index.handler', { AWS_LAMBDA_MAX_CONCURRENCY: '8' });
    try {
      const handler = shared.createHandler();
      const results = (await Promise.all(
        Array.from({ length: 8 }, (_, i) => handler({ kind: 'overlap', waitMs: 200 + 20 * (i % 3) }, context())),
      )) as Overlap[];
      expect(new Set(results.map((r) => r.pid)).size).toBe(1);
      expect(Math.max(...results.map((r) => r.mostActive))).toBeGreaterThan(1);
      for (const result of results) {
        expect(result.before.requestId).toBe(result.contextRequestId);
        expect(result.after.requestId).toBe(result.contextRequestId);
        expect(result.after.traceId).toBe(result.before.traceId);
      }
      expect(new Set(results.map((r) => r.before.traceId)).size).toBe(8);
      expect(shared.running).toBe(1);
    } finally {
      await shared.stop();
    }
  });

  it("fails the other invocations of an environment stopped at one invocation's timeout", async () => {
    const shared = hostFor('index.handler', { AWS_LAMBDA_MAX_CONCURRENCY: '2' });
    try {
      const handler = shared.createHandler();
      const [hung, waiting] = await Promise.all([
        handler({ kind: 'hang' }, context(1)).catch((e: unknown) => e),
        handler({ kind: 'overlap', waitMs: 5_000 }, context()).catch((e: unknown) => e),
      ]);
      expect(hung).toMatchObject({ name: 'Sandbox.Timedout' });
      expect(waiting).toMatchObject({ name: 'Runtime.ExitError', message: expect.stringContaining('stopped') });
      await expect(handler({ kind: 'echo' }, context())).resolves.toMatchObject({ invocations: 1 });
    } finally {
      await shared.stop();
    }
  });
});

interface Overlap {
  readonly before: { readonly requestId: string; readonly traceId: string; readonly envTraceId: string | undefined };
  readonly after: { readonly requestId: string; readonly traceId: string };
  readonly contextRequestId: string;
  readonly mostActive: number;
  readonly pid: number;
}
