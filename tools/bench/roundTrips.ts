/**
 * Sequential round trips on an invocation's critical path, from the start and end times of its
 * DynamoDB and SQS requests (recorded by `RequestMeter`).
 *
 * **Definition.** A request's *trigger* is the request of the same invocation that ended last
 * before it started (none when no request had ended yet: the invocation's start triggered it). Its
 * *depth* is 1 + its trigger's depth (1 without a trigger). The invocation's **round trips** are
 * the greatest depth of its requests (0 without requests). So requests in flight together (each
 * started before any of them ended) share a trigger and count once; a request sent after another's
 * response counts one more.
 *
 * Why the trigger is the *last* response before the request, not any earlier one: Node.js runs
 * the code after a response (the SDK's middleware, the caller's continuation, up to its next
 * `send`) as promise reactions, which all run before the next I/O callback — the next response —
 * is handled. A request sent after a response therefore starts before any later response is
 * seen, and the last response before it is the one it waited for. Counting instead the longest
 * chain of pairwise non-overlapping requests would take a server that is slow to answer requests
 * sent together (DynamoDB Local on two busy cores answers them one after another) for round
 * trips that AWS would serve in parallel: with 10 records in flight, one record's next request
 * may start after another record's first one ended, and the chain would grow with the server's
 * queue, not with the code. The trigger rule counts what the code waits for; it depends on the
 * machine only where code after a response waits on something other than a request (a timer, a
 * file), which neither side does on its commit path.
 *
 * The same walk gives a **modeled AWS latency**: each request costs an assumed latency by
 * operation (`latencyModel.ts`), a request's modeled end is its trigger's modeled end plus its
 * own latency, and the invocation's modeled latency is the latest modeled end.
 *
 * @module
 */

/** One request of an invocation, as the meter saw it. */
export interface RequestInterval {
  /** `dynamodb` or `sqs`. */
  readonly service: string;
  /** The operation, e.g. `TransactWriteItems`, `SendMessage`. */
  readonly operation: string;
  /** When the caller sent it (`performance.now()`, milliseconds). */
  readonly startMs: number;
  /** When its response (or error) reached the caller, in milliseconds; ≥ `startMs`. */
  readonly endMs: number;
}

/** An invocation's critical path. */
export interface CriticalPath {
  /** Sequential round trips (see the module comment); 0 for an invocation without requests. */
  readonly roundTrips: number;
  /** The modeled AWS latency of the critical path, in milliseconds (0 without a latency model or requests). */
  readonly modeledMs: number;
}

/**
 * The round trips and modeled latency of one invocation's requests (see the module comment).
 *
 * @param requests - the invocation's requests, in any order
 * @param latencyMs - assumed latency of one request, in milliseconds, by service and operation
 * @example
 * // Two requests in flight together, then one sent after the first response: 2 round trips.
 * criticalPath([
 *   { service: 'dynamodb', operation: 'PutItem', startMs: 0, endMs: 5 },
 *   { service: 'dynamodb', operation: 'PutItem', startMs: 1, endMs: 9 },
 *   { service: 'dynamodb', operation: 'GetItem', startMs: 6, endMs: 8 },
 * ]).roundTrips; // 2
 */
export function criticalPath(
  requests: readonly RequestInterval[],
  latencyMs: (request: RequestInterval) => number = () => 0,
): CriticalPath {
  const byStart = [...requests].sort((a, b) => a.startMs - b.startMs || a.endMs - b.endMs);
  // The requests that have ended, in order of their end, with their depth and modeled end.
  const ended: { endMs: number; depth: number; modeledEnd: number }[] = [];
  const byEnd = [...byStart].sort((a, b) => a.endMs - b.endMs);
  const done = new Map<RequestInterval, { depth: number; modeledEnd: number }>();
  let roundTrips = 0;
  let modeledMs = 0;
  let next = 0; // the next request of byEnd to move into `ended`
  for (const request of byStart) {
    if (request.endMs < request.startMs) throw new RangeError(`a request ends before it starts: ${JSON.stringify(request)}`);
    // Every request that ended at or before this one's start, and whose own place is known, may be its trigger.
    while (next < byEnd.length && byEnd[next]!.endMs <= request.startMs && done.has(byEnd[next]!)) {
      const finished = byEnd[next]!;
      ended.push({ endMs: finished.endMs, ...done.get(finished)! });
      next += 1;
    }
    const trigger = lastEnded(ended);
    const depth = (trigger?.depth ?? 0) + 1;
    const modeledEnd = (trigger?.modeledEnd ?? 0) + latencyMs(request);
    done.set(request, { depth, modeledEnd });
    roundTrips = Math.max(roundTrips, depth);
    modeledMs = Math.max(modeledMs, modeledEnd);
  }
  return { roundTrips, modeledMs };
}

/** The request that ended last (of several that ended at the same moment, the deepest). */
function lastEnded(ended: readonly { endMs: number; depth: number; modeledEnd: number }[]) {
  const last = ended.at(-1);
  if (last === undefined) return undefined;
  let best = last;
  for (let i = ended.length - 2; i >= 0 && ended[i]!.endMs === last.endMs; i -= 1) {
    if (ended[i]!.depth > best.depth || (ended[i]!.depth === best.depth && ended[i]!.modeledEnd > best.modeledEnd)) best = ended[i]!;
  }
  return best;
}
