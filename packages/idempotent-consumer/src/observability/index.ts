/**
 * The observability entry point of the package (`idempotent-consumer/observability`): the outcome
 * of each delivery as logs, metrics and the local report see it, and the metric names.
 *
 * @module
 */
export { Outcome, combineObservers, type OutcomeObserver, type OutcomeRecord } from './outcomes.js';
export { MetricName, FAILURE_REASON_DIMENSION } from './MetricsObserver.js';
