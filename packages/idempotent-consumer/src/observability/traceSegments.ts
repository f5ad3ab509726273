/**
 * X-Ray subsegments around the phases of a batch (`## parse`, `## read`, `## decide`,
 * `## sideEffects`, `## commit`, `## deadLetter`, inside `## batch`) and around each publish of the
 * outbox relay (`## publish`), when the consumer is given a tracer.
 *
 * The tracer is typed by the few members the library calls ({@link SegmentTracer}), which a
 * Powertools `Tracer` (`@aws-lambda-powertools/tracer`) has: the library never imports the tracer
 * package (an optional peer), so a function that does not trace neither installs nor loads it, nor
 * the X-Ray SDK it brings.
 *
 * @module
 */
import { invocationTraceHeader } from './traceHeader.js';

/** The value of an annotation: X-Ray indexes strings, numbers and booleans. */
export type TraceAnnotationValue = string | number | boolean;

/** An X-Ray segment or subsegment, as far as the library uses it (`aws-xray-sdk-core`'s `Segment` and `Subsegment`). */
export interface TraceSegment {
  /** Opens a subsegment of this (sub)segment. */
  addNewSubsegment(name: string): TraceSubsegment;
}

/** An X-Ray subsegment, as far as the library uses it (`aws-xray-sdk-core`'s `Subsegment`). */
export interface TraceSubsegment extends TraceSegment {
  /** Adds an annotation (indexed, searchable with a filter expression such as `annotation.deadLettered > 0`). */
  addAnnotation(key: string, value: TraceAnnotationValue): void;
  /** Records an error on the subsegment (its `cause`) and marks it faulted. */
  addError(error: Error | string, remote?: boolean): void;
  /** Ends the subsegment. */
  close(): void;
}

/**
 * What the library needs of a tracer: a Powertools `Tracer` is one
 * (`new Tracer({ serviceName })` from `@aws-lambda-powertools/tracer`).
 *
 * Only these members are called: `isTracingEnabled()` (a disabled tracer costs nothing more: no
 * subsegment is opened), `getSegment()` (the invocation's current segment: Lambda's facade
 * segment, or the subsegment Powertools' `captureLambdaHandler` opened) and `setSegment()` (each
 * phase's subsegment is made current while it runs, so the AWS SDK calls of a client captured with
 * `tracer.captureAWSv3Client` appear under it, and the previous one restored after).
 */
export interface SegmentTracer {
  /** Whether the tracer records anything (Powertools: off outside Lambda, or with `POWERTOOLS_TRACE_ENABLED=false`). */
  isTracingEnabled(): boolean;
  /** The current segment or subsegment; `undefined` when there is none (outside a traced invocation). */
  getSegment(): TraceSegment | undefined;
  /** Makes `segment` the current one. */
  setSegment(segment: TraceSegment): void;
}

/** Adds annotations to the subsegment of a phase; does nothing when the phase is not traced. */
export type Annotate = (annotations: Readonly<Record<string, TraceAnnotationValue | undefined>>) => void;

/** The names of the subsegments the library opens. */
export const TraceSegmentName = {
  /** One batch of one invocation, around every phase below (annotations: `consumer`, `source`, counts by outcome). */
  Batch: '## batch',
  /** Parsing the bodies and computing the keys of a batch (`deliveries`, `parsed`, `rejected`). */
  Parse: '## parse',
  /** A read of state and inbox rows before deciding again (`units`, `consistent`, `snapshot`). */
  Read: '## read',
  /** Deciding a round: the user's `decide` over the believed state, folded and packed (`units`, `planned`, `round`). */
  Decide: '## decide',
  /** The guarded inline side effects of a round, and the conditions checked before them (`units`, `effects`). */
  SideEffects: '## sideEffects',
  /** The `TransactWriteItems` of a round (`transactions`, `units`, `actions`). */
  Commit: '## commit',
  /** Dead-letter markers and sends (`messages`, `sent`, `failed`). */
  DeadLetter: '## deadLetter',
  /** The outbox relay's publish of one message (`consumer`, `destination`, `sent`). */
  Publish: '## publish',
} as const;
/** One of the `TraceSegmentName` values. */
export type TraceSegmentName = (typeof TraceSegmentName)[keyof typeof TraceSegmentName];

const ignore: Annotate = () => undefined;

/**
 * Runs `phase` in a new subsegment `name` of the tracer's current segment, made current while it
 * runs; `phase` may annotate it. The subsegment is closed on every path: when `phase` throws or
 * rejects, the error is added to it first (`addError`), then it is closed and the error passed on;
 * the previous segment is current again in every case.
 *
 * Without a tracer or with a disabled one, `phase` just runs, with an `annotate` that does
 * nothing: the cost is a branch. So it does outside an invocation that Lambda gave trace data
 * (`_X_AMZN_TRACE_ID`, or the invocation store on Managed Instances), or without a current segment:
 * there is no trace to add to, and asking the X-Ray SDK for a segment there makes it print
 * "Missing AWS Lambda trace data" (a local run of a bundle with Lambda's variables). A fault of the
 * tracer itself (opening, annotating or closing) never fails the phase.
 *
 * Callers must pass only values that hold no message body: counts, outcomes, names of the
 * consumer, source and destination (every call in the library does; `test/unit/traceSegments.test.ts`
 * checks it).
 *
 * @returns what `phase` returns (a promise when it returns one)
 * @throws what `phase` throws
 */
export function traced<T>(tracer: SegmentTracer | undefined, name: TraceSegmentName, phase: (annotate: Annotate) => T): T {
  if (tracer === undefined || !tracer.isTracingEnabled() || invocationTraceHeader() === undefined) return phase(ignore);
  let parent: TraceSegment | undefined;
  let subsegment: TraceSubsegment;
  try {
    parent = tracer.getSegment();
    if (parent === undefined) return phase(ignore);
    subsegment = parent.addNewSubsegment(name);
    tracer.setSegment(subsegment);
  } catch {
    return phase(ignore);
  }
  const current = subsegment;
  const previous = parent;
  const annotate: Annotate = (annotations) => {
    for (const [key, value] of Object.entries(annotations)) {
      if (value === undefined) continue;
      try {
        current.addAnnotation(key, value);
      } catch {
        // a tracer's fault never fails the phase
      }
    }
  };
  const end = (error?: unknown): void => {
    try {
      if (error !== undefined) current.addError(error instanceof Error ? error : String(error));
      current.close();
    } catch {
      // as above
    }
    try {
      tracer.setSegment(previous);
    } catch {
      // as above
    }
  };
  let result: T;
  try {
    result = phase(annotate);
  } catch (error) {
    end(error ?? new Error('undefined thrown'));
    throw error;
  }
  if (isPromiseLike(result)) {
    return result.then(
      (value) => {
        end();
        return value;
      },
      (error: unknown) => {
        end(error ?? new Error('undefined rejected'));
        throw error;
      },
    ) as T;
  }
  end();
  return result;
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as PromiseLike<unknown>).then === 'function'
  );
}
