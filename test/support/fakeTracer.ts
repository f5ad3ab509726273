/**
 * A tracer for the tests: what the library needs of Powertools' `Tracer` (`SegmentTracer`), recording
 * every subsegment opened (its name, parent, annotations, errors, whether it was closed) and every
 * change of the current segment, so a test can check the tree, the annotations and the clean-up.
 *
 * @module
 */
import type {
  SegmentTracer,
  TraceAnnotationValue,
  TraceSegment,
  TraceSubsegment,
} from '../../packages/idempotent-consumer/src/observability/traceSegments.js';

/** A trace header as Lambda sets `_X_AMZN_TRACE_ID` (the tests' invocation). */
export const INVOCATION_TRACE_HEADER = 'Root=1-6a1b2c3d-0123456789abcdef01234567;Parent=0123456789abcdef;Sampled=1';

/** One recorded (sub)segment. */
export class FakeSegment implements TraceSubsegment {
  readonly children: FakeSegment[] = [];
  readonly annotations: Record<string, TraceAnnotationValue> = {};
  readonly errors: (Error | string)[] = [];
  /** Anything given as metadata (the library gives none: a test checks it stays empty). */
  readonly metadata: unknown[] = [];
  closed = false;

  constructor(
    readonly name: string,
    readonly parent: FakeSegment | undefined,
    readonly tracer: FakeTracer,
  ) {}

  addNewSubsegment(name: string): FakeSegment {
    const child = new FakeSegment(name, this, this.tracer);
    this.children.push(child);
    this.tracer.events.push(`open ${name}`);
    return child;
  }

  addAnnotation(key: string, value: TraceAnnotationValue): void {
    if (this.closed) throw new Error(`annotation ${key} on closed ${this.name}`);
    this.annotations[key] = value;
  }

  addMetadata(key: string, value: unknown): void {
    this.metadata.push([key, value]);
  }

  addError(error: Error | string): void {
    this.errors.push(error);
    this.tracer.events.push(`error ${this.name}`);
  }

  close(): void {
    if (this.closed) throw new Error(`${this.name} closed twice`);
    this.closed = true;
    this.tracer.events.push(`close ${this.name}`);
  }

  /** This segment and every one under it, depth first. */
  all(): FakeSegment[] {
    return [this, ...this.children.flatMap((child) => child.all())];
  }

  /** `name` and the names under it, indented: a readable tree. */
  tree(depth = 0): string[] {
    return [`${'  '.repeat(depth)}${this.name}`, ...this.children.flatMap((child) => child.tree(depth + 1))];
  }
}

/** A tracer that records; enabled unless `enabled: false`. */
export class FakeTracer implements SegmentTracer {
  readonly root: FakeSegment;
  current: FakeSegment;
  /** `open <name>`, `error <name>`, `close <name>`, `set <name>`, in order. */
  readonly events: string[] = [];
  getSegmentCalls = 0;
  enabled: boolean;

  constructor(options: { readonly enabled?: boolean } = {}) {
    this.enabled = options.enabled ?? true;
    this.root = new FakeSegment('facade', undefined, this);
    this.current = this.root;
  }

  isTracingEnabled(): boolean {
    return this.enabled;
  }

  getSegment(): TraceSegment | undefined {
    this.getSegmentCalls += 1;
    return this.current;
  }

  setSegment(segment: TraceSegment): void {
    this.current = segment as FakeSegment;
    this.events.push(`set ${this.current.name}`);
  }

  /** Every subsegment opened (the root left out). */
  subsegments(): FakeSegment[] {
    return this.root.all().slice(1);
  }

  /** The subsegments named `name`. */
  named(name: string): FakeSegment[] {
    return this.subsegments().filter((segment) => segment.name === name);
  }
}
