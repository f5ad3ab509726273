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
// What `dlq redrive --dry-run --handler` decides a dead letter with, as the engine would, writing nothing.
export { parseDelivery, type ParsedDelivery, type UnparsedDelivery } from './engine/parseDelivery.js';
export type { Delivery } from './engine/Delivery.js';
export type { Unit } from './engine/Unit.js';
export { inboxId, readSnapshot, type ReadResult, type StateReadDeps } from './engine/stateReads.js';
export { foldDecision, writeKind } from './engine/foldDecision.js';
export { resolveKey, type ResolvedKey } from './engine/itemKeys.js';
export { cloneValue, MARSHALL_OPTIONS, UNMARSHALL_OPTIONS } from './engine/values.js';
export { newVersion } from './engine/conditions.js';
export { toInboxRow, type InboxRow } from './inbox/inboxItems.js';
export { homeView, markRow, marksOf, markKey, type StoredMark } from './inbox/homeMarks.js';
// What `explain` looks for in the inbox rows that provenance fills.
export { provenanceKey } from './inbox/provenance.js';
