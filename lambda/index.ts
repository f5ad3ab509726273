/**
 * The runtime entry point of the package (`idempotent-consumer`).
 *
 * @module
 */
export type * from './types.js';
export const placeholder = 'engine under construction';
