/**
 * What the library's own tools (the local runtime, the command line, the proof suite, the
 * benchmark) use of the runtime beside its public entry points. Internal: no stability promise;
 * do not import it in a consumer.
 *
 * @internal
 * @module
 */
export { defineConsumer, type ConsumerDefinition } from './engine/ConsumerDefinition.js';
export { classify, type Classification } from './classifier.js';
export { canonicalJson, payloadHash } from './engine/canonicalJson.js';
export { inboxKey, InboxStatus } from './inbox/inboxItems.js';
export { isNotAttempted } from './errors.js';
export { effectKeyOf } from './engine/effectKeys.js';
