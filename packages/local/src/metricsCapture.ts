import { FAILURE_REASON_DIMENSION, MetricName } from 'idempotent-consumer/observability';

/** The consumer's metrics as the local run's embedded-metric-format output added them up. */
export interface MetricTotals {
  /** Messages committed: the sum of `MessagesApplied`. */
  readonly applied: number;
  /** Deliveries acknowledged as duplicates: the sum of `DuplicatesAcknowledged`. */
  readonly duplicates: number;
  /** Deliveries reported for a retry: the sum of `RetryableFailures`. */
  readonly retried: number;
  /** Messages sent to the dead-letter queue: the sum of `DeadLettered` without the `failureReason` dimension. */
  readonly deadLettered: number;
  /** `DeadLettered` by its `failureReason` dimension. */
  readonly deadLetteredByReason: Readonly<Record<string, number>>;
  /** Invocations that got as far as emitting `BatchSize` (one value each, at the end of an invocation that did not fail). */
  readonly invocations: number;
  /** Records those invocations received: the sum of `BatchSize`. */
  readonly records: number;
  /** Every `ProcessingLatency` value, in milliseconds. */
  readonly latenciesMs: readonly number[];
}

interface EmfDocument {
  readonly _aws?: {
    readonly CloudWatchMetrics?: ReadonlyArray<{
      readonly Dimensions?: ReadonlyArray<readonly string[]>;
      readonly Metrics?: ReadonlyArray<{ readonly Name: string }>;
    }>;
  };
  readonly [key: string]: unknown;
}

/**
 * Captures what the consumer writes while a local run is going, as Lambda captures it for
 * CloudWatch: lines in the embedded metric format (EMF) are added up into {@link MetricTotals},
 * the report's figures; every other line (the structured logs: Powertools Logger writes errors
 * and warnings to standard error, the rest to standard output) goes to `onOtherLine`, so standard
 * output stays free for the report.
 *
 * Powertools writes with `process.stdout.write` and `process.stderr.write`; this wraps both
 * between `start()` and `stop()`. Whoever prints while it runs (a progress line) must hold the
 * original `write` functions, taken before `start()`.
 */
export class MetricsCapture {
  readonly #onOtherLine: (line: string) => void;

  /**
   * @param onOtherLine - receives every line that is not a metric (the consumer's logs): by default
   *   written to standard error (its real `write`)
   */
  constructor(onOtherLine?: (line: string) => void) {
    const stderrWrite = process.stderr.write.bind(process.stderr);
    this.#onOtherLine = onOtherLine ?? ((line) => void stderrWrite(`${line}\n`));
  }

  #originals: { readonly stdout: typeof process.stdout.write; readonly stderr: typeof process.stderr.write } | undefined;
  readonly #pending = { stdout: '', stderr: '' };
  #applied = 0;
  #duplicates = 0;
  #retried = 0;
  #deadLettered = 0;
  #byReason: Record<string, number> = {};
  #invocations = 0;
  #records = 0;
  #latencies: number[] = [];

  /** Starts capturing. @throws Error when already started */
  start(): void {
    if (this.#originals !== undefined) throw new Error('MetricsCapture already started');
    this.#originals = { stdout: process.stdout.write, stderr: process.stderr.write };
    for (const name of ['stdout', 'stderr'] as const) {
      process[name].write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
        this.#consume(name, typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
        const callback = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
        callback?.();
        return true;
      }) as typeof process.stdout.write;
    }
  }

  /** Stops capturing and restores standard output and error. Safe to call twice. */
  stop(): void {
    if (this.#originals === undefined) return;
    for (const name of ['stdout', 'stderr'] as const) {
      if (this.#pending[name] !== '') this.#line(this.#pending[name]);
      this.#pending[name] = '';
    }
    process.stdout.write = this.#originals.stdout;
    process.stderr.write = this.#originals.stderr;
    this.#originals = undefined;
  }

  /**
   * Takes one line the consumer wrote elsewhere (a function run in a child process, whose output
   * is read from its pipes): a metric line is added up, any other goes to `onOtherLine`. Needs no
   * `start()`.
   */
  readLine(line: string): void {
    this.#line(line);
  }

  /** The totals so far. */
  totals(): MetricTotals {
    return {
      applied: this.#applied,
      duplicates: this.#duplicates,
      retried: this.#retried,
      deadLettered: this.#deadLettered,
      deadLetteredByReason: { ...this.#byReason },
      invocations: this.#invocations,
      records: this.#records,
      latenciesMs: [...this.#latencies],
    };
  }

  #consume(stream: 'stdout' | 'stderr', text: string): void {
    const lines = (this.#pending[stream] + text).split('\n');
    this.#pending[stream] = lines.pop() ?? '';
    for (const line of lines) this.#line(line);
  }

  #line(line: string): void {
    const document = parseEmf(line);
    if (document === undefined) {
      this.#onOtherLine(line);
      return;
    }
    for (const directive of document._aws?.CloudWatchMetrics ?? []) {
      const dimensions = (directive.Dimensions ?? []).flat();
      for (const { Name } of directive.Metrics ?? []) {
        const values = toNumbers(document[Name]);
        const sum = values.reduce((a, b) => a + b, 0);
        switch (Name) {
          case MetricName.MessagesApplied:
            this.#applied += sum;
            break;
          case MetricName.DuplicatesAcknowledged:
            this.#duplicates += sum;
            break;
          case MetricName.RetryableFailures:
            this.#retried += sum;
            break;
          case MetricName.DeadLettered:
            if (dimensions.includes(FAILURE_REASON_DIMENSION)) {
              const reason = String(document[FAILURE_REASON_DIMENSION]);
              this.#byReason[reason] = (this.#byReason[reason] ?? 0) + sum;
            } else {
              this.#deadLettered += sum;
            }
            break;
          case MetricName.BatchSize:
            this.#invocations += values.length;
            this.#records += sum;
            break;
          case MetricName.ProcessingLatency:
            this.#latencies.push(...values);
            break;
        }
      }
    }
  }
}

function parseEmf(line: string): EmfDocument | undefined {
  if (!line.startsWith('{') || !line.includes('"_aws"')) return undefined;
  try {
    const value = JSON.parse(line) as EmfDocument;
    return value._aws?.CloudWatchMetrics === undefined ? undefined : value;
  } catch {
    return undefined;
  }
}

function toNumbers(value: unknown): number[] {
  if (Array.isArray(value)) return value.map(Number).filter(Number.isFinite);
  const n = Number(value);
  return Number.isFinite(n) ? [n] : [];
}
