/**
 * The consumer's side of the `kafka` option ({@link KafkaDecodingOptions}): checks it when the
 * handler is built, and runs a batch's values and keys through their schema formats before the
 * records become deliveries. The formats' decoders (Powertools, `avro-js`, `protobufjs`) live in
 * `kafkaValueDecoder.ts` and are reached only through the formats the user built, so this module
 * loads nothing of them.
 *
 * @module
 */
import { ConsumerDefinitionError, ValidationError } from '../errors.js';
import type { KafkaDecodingOptions, KafkaEncodedValue, KafkaRecordFormat, KafkaSchemaFormat } from '../types.js';
import type { KafkaRecord } from './kafkaEvent.js';

/** Longest `decodedKey` kept in the dead-letter coordinates, in characters. */
export const MAX_DECODED_KEY_LENGTH = 512;

/** What a schema format made of one record. */
export interface DecodedKafkaRecord {
  /**
   * The value, when a schema format decoded it: the JSON-compatible event input, or the error the
   * record fails with (`ValidationError` for a value that is not of the format;
   * `ConsumerDefinitionError`, retried, when the decoder could not be loaded). Absent for a
   * record without a value (the default path rejects it as a tombstone).
   */
  readonly value?: { readonly ok: true; readonly json: unknown } | { readonly ok: false; readonly error: Error };
  /** The key decoded by a schema format, as JSON cut to {@link MAX_DECODED_KEY_LENGTH} characters. */
  readonly decodedKey?: string;
}

const FORMAT_NAMES = { avro: 'Avro', protobuf: 'Protobuf' } as const;

/**
 * Checks the `kafka` option when the handler is built.
 *
 * @throws ConsumerDefinitionError when it is not `{ value?, key? }` of formats: `{ type: 'json' }`,
 *   or a format built by `kafkaAvroFormat(schema)` / `kafkaProtobufFormat(messageType)`
 */
export function checkKafkaDecodingOptions(kafka: unknown): asserts kafka is KafkaDecodingOptions | undefined {
  if (kafka === undefined) return;
  if (kafka === null || typeof kafka !== 'object' || Array.isArray(kafka)) {
    throw new ConsumerDefinitionError('the kafka option must be an object { value?, key? } of record formats');
  }
  const unknown = Object.keys(kafka).filter((name) => name !== 'value' && name !== 'key');
  if (unknown.length > 0) {
    throw new ConsumerDefinitionError(
      `the kafka option has unknown field(s) ${unknown.map((n) => JSON.stringify(n)).join(', ')}: it takes value and key`,
    );
  }
  for (const part of ['value', 'key'] as const) {
    const format = (kafka as Record<string, unknown>)[part];
    if (format === undefined) continue;
    const type = (format as { type?: unknown } | null)?.type;
    if (type === 'json') continue;
    if (type === 'avro' || type === 'protobuf') {
      if (typeof (format as { decode?: unknown }).decode === 'function') continue;
      throw new ConsumerDefinitionError(
        `kafka.${part} { type: '${type}' } has no decoder: build it with ${type === 'avro' ? 'kafkaAvroFormat(schema)' : 'kafkaProtobufFormat(messageType)'} from 'idempotent-consumer/kafka'`,
      );
    }
    throw new ConsumerDefinitionError(
      `kafka.${part} must be { type: 'json' }, kafkaAvroFormat(schema) or kafkaProtobufFormat(messageType); got type ${JSON.stringify(type) ?? 'undefined'}`,
    );
  }
}

/**
 * Decodes the values and keys of a batch's records that have a schema format, each format's
 * values in one call to its decoder. Never rejects: a decoder that cannot be loaded fails each of
 * its records with a retryable `ConsumerDefinitionError` (a deploy that installs the library fixes
 * it; their attempts run out as `RetriesExhausted` otherwise).
 *
 * @param records - the batch's records
 * @param options - the consumer's `kafka` option
 * @returns each record's decoding, by record; empty when neither value nor key has a schema format
 */
export async function decodeKafkaRecords(
  records: readonly KafkaRecord[],
  options: KafkaDecodingOptions | undefined,
): Promise<Map<KafkaRecord, DecodedKafkaRecord>> {
  const decoded = new Map<KafkaRecord, { value?: DecodedKafkaRecord['value']; decodedKey?: string }>();
  const entry = (record: KafkaRecord) => {
    let found = decoded.get(record);
    if (found === undefined) decoded.set(record, (found = {}));
    return found;
  };
  const valueFormat = schemaFormat(options?.value);
  const keyFormat = schemaFormat(options?.key);
  const [values, keys] = await Promise.all([
    valueFormat === undefined ? undefined : decodeAll(records, valueFormat, 'value'),
    keyFormat === undefined ? undefined : decodeAll(records, keyFormat, 'key'),
  ]);
  values?.forEach((result, record) => {
    entry(record).value = result.ok
      ? { ok: true, json: result.value }
      : {
          ok: false,
          error: result.loadFailure
            ? new ConsumerDefinitionError(
                `the Kafka value format ${valueFormat!.type} could not decode (${result.reason}); install its library (avro-js or protobufjs)`,
              )
            : new ValidationError(
                `the record value could not be decoded as ${FORMAT_NAMES[valueFormat!.type]}: ${result.reason}; the dead-letter body holds it in base64`,
              ),
        };
  });
  keys?.forEach((result, record) => {
    if (!result.ok) return;
    const json = JSON.stringify(result.value);
    entry(record).decodedKey = json.length <= MAX_DECODED_KEY_LENGTH ? json : `${json.slice(0, MAX_DECODED_KEY_LENGTH - 1)}…`;
  });
  return decoded;
}

function schemaFormat(format: KafkaRecordFormat | undefined): KafkaSchemaFormat | undefined {
  return format === undefined || format.type === 'json' ? undefined : format;
}

type Decoding =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly reason: string; readonly loadFailure: boolean };

/** Decodes the non-empty values (or keys) of `records` with `format`, by record. */
async function decodeAll(
  records: readonly KafkaRecord[],
  format: KafkaSchemaFormat,
  part: 'value' | 'key',
): Promise<Map<KafkaRecord, Decoding>> {
  const inputs: { record: KafkaRecord; input: KafkaEncodedValue }[] = [];
  for (const record of records) {
    const base64 = record[part];
    if (base64 === null || base64 === undefined || base64 === '') continue;
    const schemaMetadata = part === 'value' ? record.valueSchemaMetadata : record.keySchemaMetadata;
    inputs.push({ record, input: { base64, ...(schemaMetadata !== undefined && schemaMetadata !== null ? { schemaMetadata } : {}) } });
  }
  const results = new Map<KafkaRecord, Decoding>();
  if (inputs.length === 0) return results;
  let outputs: readonly Decoding[];
  try {
    const decoded = await format.decode(inputs.map(({ input }) => input));
    if (decoded.length !== inputs.length) throw new Error(`the decoder returned ${decoded.length} results for ${inputs.length} values`);
    outputs = decoded.map((result) => (result.ok ? result : { ok: false, reason: result.reason, loadFailure: false }));
  } catch (error) {
    const reason = error instanceof Error ? `${error.name}: ${error.message.slice(0, 300)}` : String(error);
    outputs = inputs.map(() => ({ ok: false, reason, loadFailure: true }));
  }
  inputs.forEach(({ record }, index) => results.set(record, outputs[index]!));
  return results;
}
