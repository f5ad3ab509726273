/**
 * The observability entry point of the package (`idempotent-consumer/observability`): the outcome
 * of each delivery as logs, metrics and the local report see it, the metric names, the X-Ray
 * subsegments a tracer gets and where the trace header goes.
 *
 * @module
 */
export { Outcome, combineObservers, type OutcomeObserver, type OutcomeRecord } from './outcomes.js';
export { MetricName, FAILURE_REASON_DIMENSION } from './MetricsObserver.js';
export {
  TraceSegmentName,
  type SegmentTracer,
  type TraceAnnotationValue,
  type TraceSegment,
  type TraceSubsegment,
} from './traceSegments.js';
export { TRACE_HEADER_ATTRIBUTE, TRACE_HEADER_HTTP_HEADER, isTraceHeader } from './traceHeader.js';
