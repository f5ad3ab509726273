/**
 * The settings entry point of the package (`idempotent-consumer/settings`): a consumer's settings,
 * their defaults and the AWS rules they must follow. Light (no AWS CDK), so a handler's tests and
 * the local runtime can import it too.
 *
 * @module
 */
export * from './settings.js';
export * from './validateSettings.js';
export * from './windows.js';
export * from './metricNames.js';
export * from './outputKeys.js';
export * from './filterCriteria.js';
export { EnvironmentError } from '../config/runtimeConfig.js';
