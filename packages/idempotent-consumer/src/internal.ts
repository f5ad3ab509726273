/**
 * What the library's own tools (the local runtime, the command line) use of the runtime beside
 * its public entry points. Internal: no stability promise; do not import it in a consumer.
 *
 * @internal
 * @module
 */
export { defineConsumer, type ConsumerDefinition } from './engine/ConsumerDefinition.js';
