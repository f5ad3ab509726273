/**
 * One local invocation of a Lambda handler against its function timeout, as Lambda runs it.
 *
 * @module
 */
import type { Context } from 'aws-lambda';
import { createInvocationGuard } from './aws/invocationGuard.js';
import type { InvocationOutcome } from './judgeBatchResponse.js';
import { newTraceHeader, runInInvocationStore } from './lambdaInvokeStore.js';

/**
 * Calls `handler(event, context)` inside an invocation guard (`local/aws/invocationGuard.ts`)
 * that is killed when `timeoutSeconds` run out, so the calls it makes afterwards on clients
 * prepared with `guardInvocations` are refused, as Lambda stops a function at its timeout. It
 * runs in Lambda's per-invocation store (`lambdaInvokeStore.ts`) with the context's request id and
 * a new trace header, as Lambda's Node.js runtime runs each invocation. The response is passed
 * through JSON, as the Node.js runtime sends it (a response JSON cannot carry counts as a throw).
 * Never rejects.
 *
 * @param timeoutSeconds - the function timeout, in seconds
 */
export async function invokeWithinTimeout<E>(
  handler: (event: E, context: Context) => unknown,
  event: E,
  context: Context,
  timeoutSeconds: number,
): Promise<InvocationOutcome> {
  const guard = createInvocationGuard({ deadlineMs: Date.now() + timeoutSeconds * 1_000 });
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<InvocationOutcome>((resolve) => {
    timer = setTimeout(() => {
      guard.kill(`function timeout of ${timeoutSeconds} s`);
      resolve({ kind: 'timed-out', timeoutSeconds });
    }, timeoutSeconds * 1_000);
  });
  const finished = Promise.resolve()
    .then(() => guard.run(() => runInInvocationStore(context.awsRequestId, newTraceHeader(), () => handler(event, context))))
    .then(
      (response): InvocationOutcome => {
        try {
          const json = JSON.stringify(response);
          return { kind: 'returned', response: json === undefined ? null : (JSON.parse(json) as unknown) };
        } catch (error) {
          return { kind: 'threw', error };
        }
      },
      (error: unknown): InvocationOutcome => ({ kind: 'threw', error }),
    );
  try {
    return await Promise.race([finished, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}
