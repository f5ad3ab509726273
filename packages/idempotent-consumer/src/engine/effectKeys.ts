/**
 * The key of an inline side effect: what its Powertools idempotency record is keyed on (hashed,
 * under the consumer's name) and what the effect receives as `context.effectKey`. Pure.
 *
 * - **By default** `<idempotency key>#<name>#<position>`: once per message. A name holds no `#`
 *   and a position is digits, so the key ends in `#<name>#<digits>` and holds at least two `#`.
 * - **With a chosen key** (`{ name, input, key }`) `<name>#<key>`: once per key, shared by every
 *   message of the consumer that asks for that effect with that key. Neither the name nor the key
 *   holds a `#`, so it holds exactly one: no chosen effect key can equal a default one, whatever
 *   the idempotency keys.
 *
 * @module
 */
import { ConsumerDefinitionError, ValidationError } from '../errors.js';

/**
 * Longest chosen key, in UTF-8 bytes. The guard's record is keyed on a hash of the effect key, so
 * the idempotency table's key limits do not bound it; this keeps `<name>#<key>` usable downstream
 * (a DynamoDB sort key takes 1,024 bytes, an HTTP idempotency header a few hundred).
 */
export const MAX_CHOSEN_KEY_BYTES = 512;

/** What an effect key is made of: the request's name and chosen key. */
interface KeyedRequest {
  readonly name: string;
  readonly key?: string | undefined;
}

/** The effect key of a decision's `position`-th side-effect request (see the module comment). */
export function effectKeyOf(idempotencyKey: string, request: KeyedRequest, position: number): string {
  return request.key === undefined ? `${idempotencyKey}#${request.name}#${position}` : `${request.name}#${request.key}`;
}

/**
 * How a dead letter names an effect that completed before its message was dead-lettered:
 * `<name>#<position>` for one of its own, `<name>#<key>` (its effect key) for a chosen key.
 */
export function effectLabelOf(request: KeyedRequest, position: number): string {
  return request.key === undefined ? `${request.name}#${position}` : `${request.name}#${request.key}`;
}

/**
 * Checks the chosen keys of a decision's side-effect requests, and that no two of its requests
 * share an effect key.
 *
 * @throws ConsumerDefinitionError when a `key` is given but is not a string, or two requests of the
 *   decision share an effect key (the second could only find the first completed)
 * @throws ValidationError when a chosen key is empty or blank, holds `#`, is not well-formed
 *   Unicode or is longer than {@link MAX_CHOSEN_KEY_BYTES} (its value comes from the message)
 */
export function checkEffectKeys(idempotencyKey: string, requests: readonly KeyedRequest[]): void {
  const seen = new Set<string>();
  requests.forEach((request, position) => {
    const key: unknown = request.key;
    if (key !== undefined) {
      const what = `side effect ${position} (${request.name})`;
      if (typeof key !== 'string') throw new ConsumerDefinitionError(`${what} has a key that is a ${typeof key}, not a string`);
      if (key.trim() === '') throw new ValidationError(`${what}: its key is empty`);
      if (key.includes('#')) throw new ValidationError(`${what}: its key holds '#' (the separator of effect keys)`);
      if (!key.isWellFormed()) throw new ValidationError(`${what}: its key is not well-formed Unicode`);
      if (Buffer.byteLength(key, 'utf8') > MAX_CHOSEN_KEY_BYTES)
        throw new ValidationError(`${what}: its key is longer than ${MAX_CHOSEN_KEY_BYTES} bytes`);
    }
    const effectKey = effectKeyOf(idempotencyKey, request, position);
    if (seen.has(effectKey))
      throw new ConsumerDefinitionError(
        `decide() asked twice for side effect ${request.name} with one key; an effect completes once per key, so ask once`,
      );
    seen.add(effectKey);
  });
}
