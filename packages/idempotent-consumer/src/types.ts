/**
 * The public types of the runtime API: what a user hands to `createIdempotentConsumer` and what
 * the engine hands back to the user's pure functions.
 *
 * @module
 */
import type { StandardSchemaV1 } from '@standard-schema/spec';
import type { NativeAttributeValue } from '@aws-sdk/util-dynamodb';
import type { DynamoDBDocumentClient, TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';

/** A DynamoDB attribute value in its JavaScript form (lib-dynamodb's `NativeAttributeValue`). */
export type AttributeValue = NativeAttributeValue;

/** A DynamoDB item or key in its JavaScript form: attribute name → value. */
export type Item = Record<string, AttributeValue>;

/**
 * The key schema of one business table, as the table was created (both keys are strings,
 * numbers or binary, as DynamoDB allows).
 *
 * @example
 * { partitionKey: 'accountId', sortKey: 'sk' }
 */
export interface TableDefinition {
  /** Name of the partition key attribute. */
  readonly partitionKey: string;
  /** Name of the sort key attribute, when the table has one. */
  readonly sortKey?: string;
}

/**
 * Where an item lives: the logical name of a business table (a key of the consumer's `tables`
 * option, never a physical table name) and the item's primary key.
 *
 * @example
 * { table: 'accounts', key: { accountId: 'A-1', sk: 'BALANCE' } }
 */
export interface ItemKey {
  /** The table's logical name: a key of the consumer's `tables` option. */
  readonly table: string;
  /** The item's primary key: the partition key attribute, and the sort key attribute when the table has one. */
  readonly key: Readonly<Item>;
}

/**
 * The state a decision is made on: the items that `read` named for this event, as of one
 * consistent view, with the effects of the earlier events of the same batch already applied
 * (see "folding" in the README).
 */
export interface State {
  /**
   * The item of `table` with this primary key, or `undefined` when it does not exist: a copy
   * (changing it changes nothing). Values are the document client's forms: strings, booleans,
   * `null`, lists, maps, sets, binary as `Uint8Array`; a number as a `number` when one holds it
   * exactly, a `bigint` for a larger integer, a `NumberValue` (from `@aws-sdk/lib-dynamodb`)
   * otherwise, so that no digit is lost on the way back.
   *
   * @param table - a logical table name (a key of `tables`)
   * @param key - the item's primary key
   * @throws ConsumerDefinitionError when the key was not named by `read(event)`: a decision may
   *   only depend on what the engine read for it
   */
  get<T extends Item = Item>(table: string, key: Readonly<Item>): T | undefined;
}

/**
 * One write of a decision, in lib-dynamodb's `TransactWriteItem` shape (`Put`, `Update`,
 * `Delete` or `ConditionCheck`), with `TableName` set to a **logical** table name. The engine
 * maps it to the physical name and commits it in one `TransactWriteItems` with the inbox row.
 *
 * - A write to an item that `read` named needs no condition: the engine adds one that the item is
 *   still as it was read (its version attribute, or its absence).
 * - `Put` and `Delete` of such an item are folded: when several events of one batch touch it,
 *   each decides on the item as the previous one left it, and the item is written once.
 * - An `Update`, or a write with a condition of its own, cannot be folded: the next event of the
 *   batch that reads the item waits for the commit.
 * - A write to an item that `read` did not name is sent as given ("blind"); if its own condition
 *   fails, the event is dead-lettered as `ConditionalWriteFailed`.
 */
export type Write = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/**
 * An inline side effect a decision asks for; it runs, guarded, before the commit, and completes at
 * most once per effect key (see {@link SideEffectRequest.key}).
 */
export interface SideEffectRequest {
  /** A key of the consumer's `sideEffects` option. */
  readonly name: string;
  /** What the effect needs, as JSON-serializable data (it is also what Powertools stores). */
  readonly input?: unknown;
  /**
   * The effect's own key, when it must complete once per something other than this message: a
   * grant once per `userId:day`, a welcome mail once per account. Leave it out (the default) and
   * the effect completes once per message: its effect key is `<idempotency key>#<name>#<position>`.
   *
   * Given, the effect key is `<name>#<key>`, the same for every message that asks for this effect
   * with this key, so the effect **completes at most once per key** (within
   * `idempotency.sideEffectTtlSeconds`, per consumer), whichever message asks first:
   * - a later message (or a redelivery, or a redrive) that asks for it finds it completed and does
   *   not run it again; its decision commits as usual;
   * - two messages of one batch that ask for it are run one after the other: the first runs it, the
   *   second finds it completed;
   * - a message that asks for it while another invocation runs it is retried when that
   *   invocation's lock expires (not counted as an attempt), and then finds it completed, or runs
   *   it if the other did not complete it;
   * - one decision asking twice for one effect key is a `ConsumerDefinitionError`.
   *
   * Derive it from the event alone (ids, the event's own date), never from state or the clock: a
   * message decided again (on newer state, or delivered twice) must ask for the same key, or its
   * effect may complete once per key it asked for. The effect receives the effect key
   * (`context.effectKey`) and the idempotency key of the message whose request ran it.
   *
   * It is 1 to 512 UTF-8 bytes of well-formed Unicode without `#` (so that no chosen effect key can
   * equal another consumer message's `<idempotency key>#<name>#<position>`, which holds two); a key
   * that breaks this is a `ValidationError` (dead-lettered: it comes from the message), one that
   * is not a string a `ConsumerDefinitionError`.
   */
  readonly key?: string;
}

/** What an inline side effect receives beside its input. */
export interface SideEffectContext {
  /**
   * The idempotency key of the message whose request runs the effect (with a chosen `key`, the
   * first message that asked for it).
   */
  readonly idempotencyKey: string;
  /**
   * A key for this one effect, stable across redeliveries and deployments: by default
   * `<idempotency key>#<effect name>#<position>` (once per message); with a chosen key
   * (`{ name, input, key }`), `<effect name>#<key>` (once per key, whichever message asks). Pass it
   * downstream so that the receiver can deduplicate: the library guarantees that the effect
   * *completes* at most once per key, but a crash between the effect and its completion record
   * makes it run again.
   */
  readonly effectKey: string;
  /** Milliseconds left in this invocation (Lambda's `getRemainingTimeInMillis()`). */
  readonly remainingTimeMs: () => number;
  /**
   * The consumer's DynamoDB document client, for an effect that records something in DynamoDB
   * (e.g. a receipt written conditionally on `effectKey`). Using it keeps the effect on the
   * consumer's configured client (endpoint, retries).
   */
  readonly documentClient: DynamoDBDocumentClient;
  /**
   * The physical name of one of the consumer's business tables.
   * @throws ConsumerDefinitionError when `logicalName` is not a key of `tables`
   */
  readonly tableName: (logicalName: string) => string;
}

/** Runs one inline side effect. It should pass `context.effectKey` downstream. */
export type SideEffectHandler = (input: unknown, context: SideEffectContext) => Promise<unknown>;

/**
 * A message to publish after the state change commits (the outbox). It is written as an item in
 * the same `TransactWriteItems` as the inbox row and the writes, and published by the relay.
 */
export interface OutgoingMessage {
  /** The message body: a string as is, anything else as JSON. */
  readonly body: unknown;
  /** The destination's logical name, when the relay has several. @default 'default' */
  readonly destination?: string;
  /** Message group, for a FIFO destination. @default the event's ordering key */
  readonly messageGroupId?: string;
  /** String message attributes. */
  readonly attributes?: Readonly<Record<string, string>>;
}

/** What applying an event changes. Every part is optional: an empty decision records only the inbox row. */
export interface Decision {
  /** DynamoDB writes, committed with the inbox row in one transaction. */
  readonly writes?: readonly Write[];
  /** Inline side effects to run (guarded) before the commit. */
  readonly sideEffects?: readonly SideEffectRequest[];
  /** Messages to publish through the outbox once the commit is done. */
  readonly outbox?: readonly OutgoingMessage[];
}

/** How a user's own error is to be handled, from {@link IdempotentConsumerOptions.classifyError}. */
export type ErrorClassification =
  /** No retry can fix it: dead-letter it with this reason (1 to 64 letters, digits, `_`, `-`, `.`). */
  | { readonly retryable: false; readonly reason: string }
  /** A later attempt may succeed. */
  | { readonly retryable: true };

/** A Standard Schema (zod 4, valibot, arktype, …) whose output is the event type. */
export type EventSchema<Event> = StandardSchemaV1<unknown, Event>;

/**
 * The user's pure pieces. Everything else (inbox, batch reads and commits, classification,
 * dead-letter queue, partial batch responses, backoff, attempt counting, logs, metrics) is the
 * library's.
 *
 * @typeParam Event - the validated event type (the schema's output)
 */
export interface IdempotentConsumerOptions<Event> {
  /**
   * Validates a message body (parsed as JSON first). Any Standard Schema works; zod 4 schemas are
   * Standard Schemas. A body that is not JSON, or fails the schema, is dead-lettered as
   * `ValidationError` with the issues' paths and messages (never the body's values).
   */
  readonly schema?: EventSchema<Event>;
  /**
   * Instead of `schema`: turns the parsed JSON body into an event, or throws. A thrown
   * `NonRetryableError` (e.g. `UnknownMessageType`) is dead-lettered with its name as the reason;
   * anything else as `ValidationError`. Give exactly one of `schema` and `parse`.
   */
  readonly parse?: (json: unknown) => Event;
  /**
   * The idempotency key: the name of a top-level string field of the body (checked before the
   * schema, so a missing key is reported as `MissingIdempotencyKey`), or a function of the event.
   * It must be a non-empty, well-formed Unicode string of at most 1,024 UTF-8 bytes.
   */
  readonly idempotencyKey: string | ((event: Event) => string);
  /**
   * The ordering key: events with the same key are decided one after another in batch order;
   * others independently. Use the aggregate's id (the FIFO message group, the Kafka record key).
   * A field name or a function, like `idempotencyKey`.
   * @default the idempotency key (no ordering between events)
   */
  readonly orderingKey?: string | ((event: Event) => string);
  /**
   * Safe fields for logs and for the local report, e.g. `{ kind: event.kind, sku: event.sku }`.
   * Values are cut to 256 characters; never put personal data here.
   * @default {}
   */
  readonly logFields?: (event: Event) => Readonly<Record<string, string | number | boolean | undefined>>;
  /** The business tables, by logical name. Their physical names come from the environment (`TABLE_NAME_<NAME>`). @default {} */
  readonly tables?: Readonly<Record<string, TableDefinition>>;
  /**
   * The items a decision about `event` needs. The engine reads them for the whole batch (or
   * decides on what it already holds and lets the commit's conditions check it) and hands them
   * to `decide` through {@link State}. Pure.
   * @default () => []
   */
  readonly read?: (event: Event) => readonly ItemKey[];
  /**
   * Decides what `event` does, from `state`. Pure: no I/O, no clock, no randomness (the engine
   * may call it more than once for one delivery, on newer state). Throw a `NonRetryableError`
   * subclass (its `name` is the dead-letter reason) for an event that can never apply, a
   * `RetryableError` subclass for one that may apply later (e.g. its predecessor has not arrived).
   */
  readonly decide: (event: Event, state: State) => Decision | undefined | void;
  /** The inline side effects a decision may ask for, by name. @default {} */
  readonly sideEffects?: Readonly<Record<string, SideEffectHandler>>;
  /**
   * Classifies errors that are not the library's own (`NonRetryableError`, `RetryableError` and
   * their subclasses are classified by their `retryable` flag). Return `undefined` to leave the
   * default: an unknown error is retryable (a deploy or a dependency may fix it; when attempts
   * run out it is dead-lettered as `RetriesExhausted` with its type and message).
   */
  readonly classifyError?: (error: unknown) => ErrorClassification | undefined;
  /**
   * The attribute in which the engine keeps the version of the items it writes (optimistic
   * concurrency): a random token (16 characters) that every write of the library renews, so that
   * what an execution environment remembers of an item is only trusted while the item is that
   * incarnation. Do not write it in `decide` (an `Update` that names it is refused). Code outside
   * the consumer that writes an item the consumer decides on must write a new value of it (e.g.
   * `SET #v = :uuid`); otherwise an environment's memory of the item may pass the commit's condition
   * and overwrite that write.
   * @default '_version'
   */
  readonly versionAttribute?: string;
  /**
   * How the values (and keys) of Kafka records are decoded; SQS messages are not affected. Leave
   * it out for JSON values (the default, unchanged). See `KafkaDecodingOptions` (`idempotent-consumer/kafka`) and
   * `docs/kafka.md`.
   *
   * @example
   * kafka: { value: kafkaAvroFormat(readFileSync('order.avsc', 'utf8')) }
   * @default { value: { type: 'json' }, key: { type: 'json' } }
   */
  readonly kafka?: KafkaDecodingOptions;
}

/**
 * The default Kafka record format: the bytes are UTF-8 text, strictly (a value that is not UTF-8,
 * or holds a character SQS refuses, is dead-lettered as `ValidationError` with its bytes in
 * base64), and a value is parsed as JSON by the engine like an SQS body. Powertools' JSON
 * deserializer is not used: it replaces invalid UTF-8 silently and hands on text that is not JSON.
 */
export interface KafkaJsonFormat {
  /** Always `'json'`. */
  readonly type: 'json';
}

/**
 * One encoded Kafka value (or key) as the event source mapping delivers it, for
 * {@link KafkaSchemaFormat.decode}.
 */
export interface KafkaEncodedValue {
  /** The bytes, in base64 (never empty). */
  readonly base64: string;
  /**
   * The record's `valueSchemaMetadata` (or `keySchemaMetadata`), present when the event source
   * mapping has a schema registry: `dataFormat` (`AVRO`, `PROTOBUF`, `JSON`) and `schemaId` (a
   * Confluent numeric id, or an AWS Glue schema version UUID).
   */
  readonly schemaMetadata?: { readonly dataFormat: string; readonly schemaId?: string };
}

/** What {@link KafkaSchemaFormat.decode} made of one value: a JSON-compatible value, or why it could not. */
export type KafkaDecodedValue =
  /** `value` is JSON-compatible: `null`, booleans, finite numbers, strings, arrays and plain objects of these. */
  | { readonly ok: true; readonly value: unknown }
  /** `reason` says why, in words safe for logs (never the bytes). */
  | { readonly ok: false; readonly reason: string };

/**
 * A binary record format decoded with a schema, by `@aws-lambda-powertools/kafka`'s
 * deserializers: build one with `kafkaAvroFormat(schema)` or `kafkaProtobufFormat(messageType)`
 * (exported by `idempotent-consumer/kafka`), which load Powertools' deserializer and the format's
 * library (`avro-js`, `protobufjs`: optional peer dependencies to install) at the first Kafka
 * batch, never on the SQS path.
 */
export interface KafkaSchemaFormat {
  /** Powertools' `SchemaType`: `avro` or `protobuf`. */
  readonly type: 'avro' | 'protobuf';
  /**
   * Decodes a batch of values, one result per value, in order. Rejects only when no value can be
   * decoded for a reason that is not the values' (the format's library is not installed): the
   * records are then retried, not dead-lettered.
   */
  readonly decode: (values: readonly KafkaEncodedValue[]) => Promise<readonly KafkaDecodedValue[]>;
}

/** How a Kafka record's value or key is encoded: JSON text (the default), Avro or Protobuf. */
export type KafkaRecordFormat = KafkaJsonFormat | KafkaSchemaFormat;

/**
 * How the consumer decodes Kafka records (Amazon MSK and self-managed Kafka event sources).
 *
 * What the records become:
 * - **value**: the event that the schema (or `parse`) receives, in place of the parsed JSON
 *   body. With a schema format it is the decoded value made JSON-compatible (bytes as base64
 *   strings; Avro unions as Avro's JSON encoding, `{ "string": "x" }`; Protobuf as protobufjs's
 *   `toJSON()`: 64-bit integers and enums as strings, fields at their default value left out);
 *   the payload hash is taken from it. A value that cannot be decoded (wrong schema, truncated
 *   bytes, a `NaN`) is dead-lettered as `ValidationError` on its first attempt, and so is a
 *   tombstone (no value). The dead-letter body of a record with a schema format is always its
 *   bytes, in base64 (`bodyEncoding: base64`), byte for byte.
 * - **key**: written to the dead-letter coordinates. With a schema format, the decoded key is
 *   added as `decodedKey` (its JSON, cut to 512 characters) beside the raw `key`; a key that
 *   cannot be decoded is left out of `decodedKey` and does not fail the record.
 *
 * Schema registries (Confluent, AWS Glue): with the event source mapping's schema registry in
 * `SOURCE` format, Lambda removes the schema id from each value; Powertools then removes what
 * remains of the framing from Protobuf values (the Confluent message indexes, the Glue header
 * byte) from the record's `valueSchemaMetadata.schemaId`. In `JSON` format the values arrive as
 * JSON: keep the default format. A value framed by a registry serializer that reaches the
 * function without the mapping's registry integration is not unframed.
 * (https://docs.aws.amazon.com/lambda/latest/dg/services-consume-kafka-events.html)
 */
export interface KafkaDecodingOptions {
  /** How record values are decoded. @default { type: 'json' } */
  readonly value?: KafkaRecordFormat;
  /** How record keys are decoded (for the dead-letter coordinates only). @default { type: 'json' } (the key as UTF-8 text) */
  readonly key?: KafkaRecordFormat;
}
