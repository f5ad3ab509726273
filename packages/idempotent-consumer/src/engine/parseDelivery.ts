import { ConsumerDefinitionError, isConsumerError, MissingIdempotencyKey, ValidationError } from '../errors.js';
import { payloadHash } from './canonicalJson.js';
import { checkKey, type ConsumerDefinition, MAX_READS_PER_EVENT } from './ConsumerDefinition.js';
import type { Delivery } from './Delivery.js';
import { type ResolvedKey, resolveKey } from './itemKeys.js';

/** A delivery whose body was parsed into an event: a unit of work for the engine. */
export interface ParsedDelivery<Event = unknown> {
  readonly ok: true;
  readonly delivery: Delivery;
  readonly event: Event;
  readonly idempotencyKey: string;
  readonly orderingKey: string;
  /** SHA-256 (hex) of the body's canonical JSON. */
  readonly payloadHash: string;
  /** The items `read(event)` named, resolved (with the home item first under `inboxHome`, when `read` did not name it). */
  readonly reads: readonly ResolvedKey[];
  /** Under `inboxHome`: the event's home item, where its inbox mark is written. */
  readonly home?: ResolvedKey;
  readonly fields: Record<string, string | number | boolean>;
}

/** A delivery that could not be parsed, and why (a `NonRetryableError`, or a retryable error from the user's code). */
export interface UnparsedDelivery {
  readonly ok: false;
  readonly delivery: Delivery;
  readonly error: unknown;
  /** The idempotency key, when it could be read before the failure. */
  readonly idempotencyKey: string | undefined;
  readonly payloadHash: string | undefined;
}

/**
 * Parses and checks one delivery, in the order that gives the most useful reason: a failure known
 * before parsing, an empty body, JSON (or the body a Kafka schema format decoded), the idempotency key field (when given by name), the schema
 * (or `parse`), the idempotency and ordering keys, then the items `read` names.
 *
 * Error messages never quote the body: a JSON error gives only its position.
 */
export function parseDelivery<Event>(
  delivery: Delivery,
  definition: ConsumerDefinition<Event>,
  tableNames: Readonly<Record<string, string>>,
): ParsedDelivery<Event> | UnparsedDelivery {
  let idempotencyKey: string | undefined;
  let hash: string | undefined;
  try {
    if (delivery.rejection !== undefined) throw delivery.rejection;
    if (delivery.body === '') throw new ValidationError('the body is empty');
    let json: unknown;
    try {
      json = delivery.parsedBody !== undefined ? delivery.parsedBody.value : JSON.parse(delivery.body);
    } catch (error) {
      const position = /position (\d+)/.exec(error instanceof Error ? error.message : '')?.[1];
      throw new ValidationError(
        `the body is not valid JSON${position === undefined ? '' : ` (at position ${position})`}; ${delivery.body.length} characters`,
      );
    }
    const field = definition.idempotencyKeyField;
    if (field !== undefined) {
      if (json === null || typeof json !== 'object' || Array.isArray(json)) {
        throw new ValidationError(
          `the body must be a JSON object, got ${Array.isArray(json) ? 'an array' : json === null ? 'null' : typeof json}`,
        );
      }
      const value = (json as Record<string, unknown>)[field];
      if (typeof value !== 'string' || value.trim() === '') {
        throw new MissingIdempotencyKey(`the body has no "${field}" (the idempotency key), or it is not a non-empty string`);
      }
    }
    hash = payloadHash(json);
    const event = definition.parseEvent(json);
    idempotencyKey = checkKey(definition.idempotencyKeyOf(event), 'idempotency key');
    const orderingKey = checkKey(definition.orderingKeyOf(event), 'ordering key');
    const itemKeys = definition.read(event);
    if (!Array.isArray(itemKeys)) throw new ConsumerDefinitionError('read() must return an array of { table, key }');
    if (itemKeys.length > MAX_READS_PER_EVENT)
      throw new ConsumerDefinitionError(`read() named ${itemKeys.length} items; at most ${MAX_READS_PER_EVENT} per event`);
    const seen = new Set<string>();
    const reads: ResolvedKey[] = [];
    let home: ResolvedKey | undefined;
    if (definition.home !== undefined) {
      const homeKey = definition.home.keyOf(event);
      if (homeKey === null || typeof homeKey !== 'object')
        throw new ConsumerDefinitionError("inboxHome.key() must return the home item's key");
      home = resolveKey(definition.tables, tableNames, definition.home.table, homeKey, 'inboxHome.key()');
      reads.push(home);
      seen.add(home.id);
    }
    for (const itemKey of itemKeys) {
      const resolved = resolveKey(definition.tables, tableNames, itemKey.table, itemKey.key, 'read()');
      if (!seen.has(resolved.id)) reads.push(resolved);
      seen.add(resolved.id);
    }
    if (reads.length > MAX_READS_PER_EVENT)
      throw new ConsumerDefinitionError(`read() and the home item make ${reads.length} items; at most ${MAX_READS_PER_EVENT} per event`);
    return {
      ok: true,
      delivery,
      event,
      idempotencyKey,
      orderingKey,
      payloadHash: hash,
      reads,
      ...(home === undefined ? {} : { home }),
      fields: definition.logFieldsOf(event),
    };
  } catch (error) {
    // A schema or parse function that throws something else than our errors is the body's fault.
    const known = isConsumerError(error) || error instanceof ConsumerDefinitionError;
    const reason = known
      ? error
      : new ValidationError(`the body could not be validated (${error instanceof Error ? error.name : typeof error})`, [], {
          cause: error,
        });
    return { ok: false, delivery, error: reason, idempotencyKey, payloadHash: hash };
  }
}
