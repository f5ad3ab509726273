/**
 * The subsegment wrapper (`traced`): what it opens, annotates and closes, on every path, with a
 * recording tracer; that it costs nothing without one; and that Powertools' `Tracer` is a
 * `SegmentTracer` (checked by the compiler) that stays silent outside Lambda.
 */
import { Tracer } from '@aws-lambda-powertools/tracer';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type SegmentTracer, TraceSegmentName, traced } from '../../packages/idempotent-consumer/src/observability/traceSegments.js';
import { FakeTracer, INVOCATION_TRACE_HEADER } from '../support/fakeTracer.js';

describe('traced', () => {
  beforeEach(() => {
    vi.stubEnv('_X_AMZN_TRACE_ID', INVOCATION_TRACE_HEADER);
  });
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('runs a phase in a subsegment of the current segment, current while it runs, annotated, then closed', async () => {
    const tracer = new FakeTracer();
    let currentInside: string | undefined;
    const result = await traced(tracer, TraceSegmentName.Commit, async (annotate) => {
      currentInside = tracer.current.name;
      annotate({ transactions: 2, units: 5, skipped: undefined, fifo: true, consumer: 'c' });
      return 'done';
    });
    expect(result).toBe('done');
    expect(currentInside).toBe('## commit');
    const [commit] = tracer.named('## commit');
    expect(commit?.parent).toBe(tracer.root);
    expect(commit?.annotations).toEqual({ transactions: 2, units: 5, fifo: true, consumer: 'c' });
    expect(commit?.closed).toBe(true);
    expect(commit?.errors).toEqual([]);
    expect(tracer.current).toBe(tracer.root);
    expect(tracer.events).toEqual(['open ## commit', 'set ## commit', 'close ## commit', 'set facade']);
  });

  it('nests phases and returns a synchronous phase’s value as it is (no promise)', async () => {
    const tracer = new FakeTracer();
    const value = await traced(tracer, TraceSegmentName.Batch, async () => {
      const parsed = traced(tracer, TraceSegmentName.Parse, () => 3);
      expect(parsed).toBe(3);
      await traced(tracer, TraceSegmentName.Commit, async () => undefined);
      return parsed;
    });
    expect(value).toBe(3);
    expect(tracer.root.tree()).toEqual(['facade', '  ## batch', '    ## parse', '    ## commit']);
    expect(tracer.subsegments().every((segment) => segment.closed)).toBe(true);
    expect(tracer.current).toBe(tracer.root);
  });

  it('adds the error of a phase that rejects, closes its subsegment, restores the previous one and rejects with the same error', async () => {
    const tracer = new FakeTracer();
    const failure = new Error('DynamoDB is unreachable');
    const outer = traced(tracer, TraceSegmentName.Batch, () =>
      traced(tracer, TraceSegmentName.Commit, async (annotate) => {
        annotate({ units: 1 });
        throw failure;
      }),
    );
    await expect(outer).rejects.toBe(failure);
    const [batch] = tracer.named('## batch');
    const [commit] = tracer.named('## commit');
    expect(commit?.errors).toEqual([failure]);
    expect(batch?.errors).toEqual([failure]);
    expect(tracer.events).toEqual([
      'open ## batch',
      'set ## batch',
      'open ## commit',
      'set ## commit',
      'error ## commit',
      'close ## commit',
      'set ## batch',
      'error ## batch',
      'close ## batch',
      'set facade',
    ]);
    expect(tracer.current).toBe(tracer.root);
  });

  it('adds the error of a phase that throws synchronously, closes its subsegment and throws it', () => {
    const tracer = new FakeTracer();
    const failure = new TypeError('a bug');
    expect(() =>
      traced(tracer, TraceSegmentName.Decide, () => {
        throw failure;
      }),
    ).toThrow(failure);
    const [decide] = tracer.named('## decide');
    expect(decide?.errors).toEqual([failure]);
    expect(decide?.closed).toBe(true);
    expect(tracer.current).toBe(tracer.root);
  });

  it('records a thrown value that is not an Error as text', async () => {
    const tracer = new FakeTracer();
    await expect(
      traced(tracer, TraceSegmentName.Read, async () => {
        throw 'a string';
      }),
    ).rejects.toBe('a string');
    expect(tracer.named('## read')[0]?.errors).toEqual(['a string']);
  });

  it('runs the phase without opening anything when there is no tracer, a disabled one, or no trace data', async () => {
    expect(traced(undefined, TraceSegmentName.Parse, (annotate) => (annotate({ n: 1 }), 7))).toBe(7);

    const disabled = new FakeTracer({ enabled: false });
    await expect(traced(disabled, TraceSegmentName.Commit, async () => 8)).resolves.toBe(8);
    expect(disabled.getSegmentCalls).toBe(0);
    expect(disabled.events).toEqual([]);

    vi.stubEnv('_X_AMZN_TRACE_ID', '');
    const noTrace = new FakeTracer();
    await expect(traced(noTrace, TraceSegmentName.Commit, async () => 9)).resolves.toBe(9);
    expect(noTrace.getSegmentCalls).toBe(0);
    expect(noTrace.events).toEqual([]);
  });

  it('runs the phase when the tracer has no current segment', () => {
    const tracer: SegmentTracer = { isTracingEnabled: () => true, getSegment: () => undefined, setSegment: vi.fn() };
    expect(traced(tracer, TraceSegmentName.Parse, () => 'parsed')).toBe('parsed');
    expect(tracer.setSegment).not.toHaveBeenCalled();
  });

  it('never fails a phase for a fault of the tracer (opening, annotating, closing)', async () => {
    const broken = (fault: 'open' | 'annotate' | 'close'): SegmentTracer => ({
      isTracingEnabled: () => true,
      getSegment: () => ({
        addNewSubsegment: () => {
          if (fault === 'open') throw new Error('cannot open');
          return {
            addNewSubsegment: () => {
              throw new Error('unused');
            },
            addAnnotation: () => {
              if (fault === 'annotate') throw new Error('cannot annotate');
            },
            addError: () => undefined,
            close: () => {
              if (fault === 'close') throw new Error('cannot close');
            },
          };
        },
      }),
      setSegment: () => undefined,
    });
    for (const fault of ['open', 'annotate', 'close'] as const) {
      await expect(
        traced(broken(fault), TraceSegmentName.Commit, async (annotate) => {
          annotate({ units: 1 });
          return fault;
        }),
      ).resolves.toBe(fault);
    }
  });
});

describe("Powertools' Tracer as the library's tracer", () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('is a SegmentTracer, off outside Lambda: the phase runs, nothing is printed', async () => {
    vi.stubEnv('_X_AMZN_TRACE_ID', INVOCATION_TRACE_HEADER);
    const errors = vi.spyOn(console, 'error');
    const warnings = vi.spyOn(console, 'warn');
    const tracer: SegmentTracer = new Tracer({ serviceName: 'trace-test' });
    expect(tracer.isTracingEnabled()).toBe(false);
    await expect(
      traced(tracer, TraceSegmentName.Batch, (annotate) => {
        annotate({ deliveries: 1 });
        return traced(tracer, TraceSegmentName.Commit, async () => 'committed');
      }),
    ).resolves.toBe('committed');
    expect(errors).not.toHaveBeenCalled();
    expect(warnings).not.toHaveBeenCalled();
    errors.mockRestore();
    warnings.mockRestore();
  });
});
