/**
 * The per-invocation store Lambda's Node.js runtime keeps (`@aws/lambda-invoke-store`), kept by the
 * local runtime as Lambda keeps it: each invocation runs inside the store's context, with its
 * request id and X-Ray trace header, so Powertools (Logger, Metrics, Tracer 2.34+) and the engine
 * read that invocation's values when many run in one process. The in-process local runtime always
 * runs many invocations in one process (one per worker), so its store is the multi-invocation kind
 * (`AsyncLocalStorage`); Powertools reads it when `AWS_LAMBDA_MAX_CONCURRENCY` is set, as Lambda
 * Managed Instances set it (https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-nodejs-runtime.html).
 * The store is asked for when this module loads.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import { InvokeStore, InvokeStoreBase } from '@aws/lambda-invoke-store';

/**
 * An X-Ray trace header for a new invocation, in the form Lambda gives `_X_AMZN_TRACE_ID`:
 * `Root=1-<epoch seconds, 8 hex digits>-<24 hex digits>;Parent=<16 hex digits>;Sampled=0`
 * (https://docs.aws.amazon.com/xray/latest/devguide/xray-concepts.html#xray-concepts-tracingheader).
 * Not sampled: nothing is sent to X-Ray locally.
 *
 * @param nowMs - the time, in milliseconds since the epoch; @default Date.now()
 */
export function newTraceHeader(nowMs: number = Date.now()): string {
  const epochSeconds = Math.floor(nowMs / 1_000)
    .toString(16)
    .padStart(8, '0');
  return `Root=1-${epochSeconds}-${randomBytes(12).toString('hex')};Parent=${randomBytes(8).toString('hex')};Sampled=0`;
}

const REQUEST_ID = InvokeStoreBase.PROTECTED_KEYS.REQUEST_ID;

/**
 * The process's store, asked for when this module loads: before the AWS SDK's first request,
 * which makes the single-invocation kind when nothing asked before (its recursion-detection
 * middleware reads the trace id from the store), as Lambda's runtime makes it before the handler.
 * The package keeps the first answer for every later caller; the store itself is ready a few
 * microtasks later. (No top-level `await`: a CommonJS caller can still `require` this package.)
 */
const storeReady = InvokeStore.getInstanceAsync(true);
let readyStore: InvokeStoreBase | undefined;
let perInvocation = false;
void storeReady.then((store) => {
  readyStore = store;
  perInvocation = keepsContextPerInvocation(store);
});

/** Whether `store` keeps a context per async call chain (the multi-invocation kind), found by a probe that leaves no trace. */
function keepsContextPerInvocation(store: InvokeStoreBase): boolean {
  const before = store.getContext();
  const probe = '\u0000probe';
  store.run({ [REQUEST_ID]: probe }, () => undefined);
  const leaked = store.getRequestId() === probe;
  if (leaked) store.run(before ?? {}, () => undefined);
  return !leaked;
}

/**
 * Runs `fn` as one invocation in Lambda's per-invocation store: inside it,
 * `globalThis.awslambda.InvokeStore.getRequestId()` is `awsRequestId` and `getXRayTraceId()` is
 * `traceHeader`.
 *
 * @returns what `fn` returns
 * @throws Error when `AWS_LAMBDA_MAX_CONCURRENCY` is set (Powertools then keeps its state in the
 *   store) but the process's store keeps one context for all invocations: something made it
 *   before this module loaded (an AWS SDK request before `@idempotent-consumer/local` was imported)
 */
export async function runInInvocationStore<T>(awsRequestId: string, traceHeader: string, fn: () => T): Promise<Awaited<T>> {
  const store = await storeReady;
  if (!perInvocation && process.env.AWS_LAMBDA_MAX_CONCURRENCY !== undefined) {
    throw new Error(
      "Lambda's per-invocation store of this process keeps one context for all invocations: it was made before @idempotent-consumer/local was loaded (an AWS SDK request before the import?). Import @idempotent-consumer/local first to run invocations concurrently with AWS_LAMBDA_MAX_CONCURRENCY.",
    );
  }
  return await store.run({ [REQUEST_ID]: awsRequestId, [InvokeStoreBase.PROTECTED_KEYS.X_RAY_TRACE_ID]: traceHeader }, fn);
}

/**
 * Runs `fn` in a context of Lambda's per-invocation store that belongs to no invocation, as an
 * execution environment's init: Powertools' `Metrics` (2.35) touches the store when it is made, and
 * with `AWS_LAMBDA_MAX_CONCURRENCY` set it throws ("No context available") outside a context.
 *
 * @returns what `fn` returns
 */
export function runInInitContext<T>(fn: () => T): T {
  // The store is ready long before an environment is made (a run starts its emulators first).
  return readyStore === undefined ? fn() : readyStore.run({}, fn);
}
