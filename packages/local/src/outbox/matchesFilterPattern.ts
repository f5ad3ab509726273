/**
 * Lambda's event filtering for the local stream poller: moved to `../matchesFilterPattern.ts`,
 * which the SQS and Kafka pollers share; this module re-exports it for its earlier importers.
 *
 * @module
 */
export { assertFilterPattern, type FilterPattern, matchesFilterPattern, UnsupportedFilterRuleError } from '../matchesFilterPattern.js';
