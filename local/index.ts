/**
 * The local runtime's entry point (`idempotent-consumer/local`): run any handler built with the
 * library on embedded emulators, and the types a consumer's `--check` module implements.
 *
 * @module
 */
export type { LocalCheck, LocalCheckContext } from './check.js';
