/**
 * A Powertools `Metrics` whose metrics the proof suite can read: every metric the consumer adds
 * (on it, or on a `singleMetric()` of it, with that metric's dimensions) is also kept in a list,
 * so that the `outcome-agrees` invariant can count what an invocation emitted.
 *
 * @module
 */
import { Metrics } from '@aws-lambda-powertools/metrics';

/** One metric the consumer added. */
export interface MetricPoint {
  readonly name: string;
  readonly value: number;
  /** The dimensions added to the instance it was added on (not the service's default one). */
  readonly dimensions: Readonly<Record<string, string>>;
}

/** See the module comment. */
export class RecordingMetrics extends Metrics {
  /** Where the metrics go (shared with its single metrics). */
  declare sink: MetricPoint[];
  /** Dimensions added to this instance (assigned lazily: `Metrics`' constructor may add some first). */
  declare added: Record<string, string> | undefined;

  /** @param sink - the list every metric is appended to */
  constructor(sink: MetricPoint[], options: ConstructorParameters<typeof Metrics>[0] = {}) {
    super(options);
    this.sink = sink;
  }

  override addDimension(name: string, value: string): this {
    this.added = { ...(this.added ?? {}), [name]: value };
    return super.addDimension(name, value);
  }

  override addMetric(
    name: string,
    unit: Parameters<Metrics['addMetric']>[1],
    value: number,
    resolution?: Parameters<Metrics['addMetric']>[3],
  ): this {
    this.sink?.push({ name, value, dimensions: { ...(this.added ?? {}) } });
    return resolution === undefined ? super.addMetric(name, unit, value) : super.addMetric(name, unit, value, resolution);
  }

  override singleMetric(): Metrics {
    return new RecordingMetrics(this.sink, { namespace: 'IdempotentConsumerProve', singleMetric: true });
  }
}
