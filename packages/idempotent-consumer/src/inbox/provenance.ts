/**
 * Provenance (`settings.idempotency.provenance`): the keys of the items a message wrote, as an
 * applied inbox row records them (`wrote`), and the one spelling of a key that both the engine
 * (writing the row) and `idempotent-consumer explain` (looking for it with `contains`) use.
 *
 * @module
 */
import { canonicalNumber, isNumberValue } from '../engine/values.js';
import { PROVENANCE_BUDGET_BYTES } from '../settings/settings.js';

/** What an applied inbox row records under provenance. */
export interface ProvenanceAttributes {
  /** The keys the message wrote, as {@link provenanceKey} spells them, in the order it wrote them. */
  readonly wrote: string[];
  /** Present (`true`) when keys beyond {@link PROVENANCE_BUDGET_BYTES} were left out of `wrote`. */
  readonly wroteTruncated?: true;
}

/** A key attribute value as canonical JSON text; `undefined` when it is not a key type. */
function keyValueJson(value: unknown): string | undefined {
  if (typeof value === 'string') return JSON.stringify(value);
  if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'bigint') return canonicalNumber(String(value));
  if (isNumberValue(value)) return canonicalNumber(value.value);
  if (value instanceof Uint8Array) return `{"B":${JSON.stringify(Buffer.from(value).toString('base64'))}}`;
  return undefined;
}

/**
 * The compact spelling of an item's key: `<logical table>:<key as JSON, attributes sorted by name>`,
 * numbers in the engine's canonical form (`1` is `1e0`), binary values as `{"B":"<base64>"}`. `accounts` with `{ accountId: 'A-1' }`
 * is `accounts:{"accountId":"A-1"}`; `1`, `1n` and `NumberValue('1.0')` spell alike.
 *
 * @throws TypeError when a value is not a string, number or binary (not a key)
 */
export function provenanceKey(table: string, key: Readonly<Record<string, unknown>>): string {
  const parts = Object.keys(key)
    .sort()
    .map((name) => {
      const value = keyValueJson(key[name]);
      if (value === undefined) throw new TypeError(`key attribute ${name} of table ${table} is not a string, number or binary`);
      return `${JSON.stringify(name)}:${value}`;
    });
  return `${table}:{${parts.join(',')}}`;
}

/**
 * The provenance attributes of an inbox row: the spelled keys, each once, in order, while their
 * UTF-8 bytes stay within `budgetBytes`; the first key that does not fit ends the list and sets
 * `wroteTruncated`.
 */
export function provenanceAttributes(
  keys: Iterable<{ readonly table: string; readonly key: Readonly<Record<string, unknown>> }>,
  budgetBytes: number = PROVENANCE_BUDGET_BYTES,
): ProvenanceAttributes {
  const wrote: string[] = [];
  const seen = new Set<string>();
  let bytes = 0;
  for (const { table, key } of keys) {
    const spelled = provenanceKey(table, key);
    if (seen.has(spelled)) continue;
    const size = Buffer.byteLength(spelled, 'utf8');
    if (bytes + size > budgetBytes) return { wrote, wroteTruncated: true };
    seen.add(spelled);
    wrote.push(spelled);
    bytes += size;
  }
  return { wrote };
}
