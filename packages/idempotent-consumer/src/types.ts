/**
 * The public types of the runtime API: what a user hands to `createIdempotentConsumer` and what
 * the engine hands back to the user's pure functions.
 *
 * @module
 */
import type { StandardSchemaV1 } from '@standard-schema/spec';
import type { NativeAttributeValue } from '@aws-sdk/util-dynamodb';
import type { DynamoDBDocumentClient, TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';

// Typed names: `createIdempotentConsumer` infers the consumer's logical table names from its
// `tables` option and its side effects from its `sideEffects` option, and the types below take
// them as parameters. Every parameter defaults to the wide form (`string` names, `unknown`
// inputs), which is what each type was before it took one: code that names no parameter is
// checked as before.

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
 * @typeParam TableName - the consumer's logical table names (inferred from `tables`; `string` when they are not known)
 */
export interface ItemKey<TableName extends string = string> {
  /** The table's logical name: a key of the consumer's `tables` option. */
  readonly table: TableName;
  /** The item's primary key: the partition key attribute, and the sort key attribute when the table has one. */
  readonly key: Readonly<Item>;
}

/**
 * The state a decision is made on: the items that `read` named for this event, as of one
 * consistent view, with the effects of the earlier events of the same batch already applied
 * (see "folding" in the README).
 *
 * @typeParam TableName - the consumer's logical table names (inferred from `tables`; `string` when they are not known)
 */
export interface State<TableName extends string = string> {
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
  get<T extends Item = Item>(table: TableName, key: Readonly<Item>): T | undefined;
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
 *
 * With the consumer's table names known (`Write<'stock' | 'reservations'>`, what `decide` returns
 * when `createIdempotentConsumer` inferred them from `tables`), `TableName` accepts only those
 * names: a misspelt one is a compile error. A helper that builds writes outside `decide` says
 * which names it writes: `(item: StockItem): Write<'stock'> => ({ Put: { TableName: 'stock', Item: item } })`.
 *
 * @typeParam TableName - the consumer's logical table names (`string`: any name, checked at run time only)
 */
export type Write<TableName extends string = string> = {
  readonly [Action in 'ConditionCheck' | 'Put' | 'Delete' | 'Update']?:
    | (Omit<NonNullable<SdkWrite[Action]>, 'TableName'> & {
        /** The logical name of the table (a key of the consumer's `tables`), never a physical one. */
        TableName: TableName | undefined;
      })
    | undefined;
};

/** lib-dynamodb's `TransactWriteItem`: one action of a `TransactWriteItems`. */
type SdkWrite = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/**
 * An inline side effect a decision asks for; it runs, guarded, before the commit, and completes at
 * most once per effect key (see {@link SideEffectRequestFields.key}).
 *
 * With the consumer's side effects known (what `decide` returns when `createIdempotentConsumer`
 * inferred them from `sideEffects`), `name` accepts only their names and `input` only the input
 * type of the named handler (required unless the handler accepts `undefined`).
 *
 * @typeParam Handlers - the consumer's side effects by name (`typeof` its `sideEffects` option); by
 *   default any name, with an `unknown` input (checked at run time only)
 * @example
 * sideEffects: [{ name: 'sendReceipt', input: { invoiceId } }]
 * sideEffects: [{ name: 'grantDailyBonus', input: { userId }, key: `${userId}:${event.at.slice(0, 10)}` }]
 */
export type SideEffectRequest<Handlers = Readonly<Record<string, SideEffectHandler>>> = {
  [Name in keyof Handlers & string]: SideEffectRequestFields<Name> &
    (undefined extends SideEffectInput<Handlers[Name]>
      ? {
          /** What the effect needs, as JSON-serializable data: the handler's input (an omitted input arrives as `null`). */
          readonly input?: SideEffectInput<Handlers[Name]>;
        }
      : {
          /** What the effect needs, as JSON-serializable data: the handler's input. */
          readonly input: SideEffectInput<Handlers[Name]>;
        });
}[keyof Handlers & string];

/** The fields of a {@link SideEffectRequest} beside its `input`. */
export interface SideEffectRequestFields<Name extends string = string> {
  /** A key of the consumer's `sideEffects` option. */
  readonly name: Name;
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

/**
 * The input type of a side-effect handler (its first parameter), `unknown` when it has none.
 * @typeParam Handler - a {@link SideEffectHandler}
 */
export type SideEffectInput<Handler> = Handler extends (input: infer Input, ...rest: never[]) => unknown ? Input : unknown;

/**
 * What an inline side effect receives beside its input.
 *
 * @typeParam TableName - the consumer's logical table names (inferred from `tables`; `string` when they are not known)
 */
export interface SideEffectContext<TableName extends string = string> {
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
  tableName(logicalName: TableName): string;
}

/**
 * Runs one inline side effect. It should pass `context.effectKey` downstream. Its result is not
 * kept: a request that finds the effect completed does not run it and gets nothing back.
 *
 * @typeParam Input - what a decision's request hands it (`input`)
 * @typeParam TableName - the consumer's logical table names, for `context.tableName`
 */
export type SideEffectHandler<Input = unknown, TableName extends string = string> = (
  input: Input,
  context: SideEffectContext<TableName>,
) => Promise<unknown>;

/**
 * The `sideEffects` option: the consumer's inline side effects by name. Each handler's input type
 * is what a decision's request for it must give.
 *
 * @typeParam TableName - the consumer's logical table names, for `context.tableName`
 */
// biome-ignore lint/suspicious/noExplicitAny: a handler of any input type is a side effect; `unknown` would refuse a typed input
export type SideEffectHandlers<TableName extends string = string> = Readonly<Record<string, SideEffectHandler<any, TableName>>>;

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

/**
 * What applying an event changes. Every part is optional: an empty decision records only the inbox row.
 *
 * @typeParam TableName - the consumer's logical table names (inferred from `tables`; `string` when they are not known)
 * @typeParam Handlers - the consumer's side effects by name (inferred from `sideEffects`; by default any name)
 */
export interface Decision<TableName extends string = string, Handlers = Readonly<Record<string, SideEffectHandler>>> {
  /** DynamoDB writes, committed with the inbox row in one transaction. */
  readonly writes?: readonly Write<TableName>[];
  /** Inline side effects to run (guarded) before the commit. */
  readonly sideEffects?: readonly SideEffectRequest<Handlers>[];
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
 * `createIdempotentConsumer` infers the last two type parameters from the options themselves, so
 * that a misspelt table or side-effect name is a compile error. Options declared apart from the
 * call name them: `IdempotentConsumerOptions<MyEvent, keyof typeof myTables, typeof mySideEffects>`.
 * Left out, names are `string` and inputs `unknown`: checked at run time only.
 *
 * @typeParam Event - the validated event type (the schema's output)
 * @typeParam TableName - the logical table names: the keys of `tables`
 * @typeParam Handlers - the side effects: the type of `sideEffects`
 */
export interface IdempotentConsumerOptions<
  Event,
  TableName extends string = string,
  Handlers extends SideEffectHandlers<TableName> = Readonly<Record<string, SideEffectHandler<unknown, TableName>>>,
> {
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
  /**
   * The business tables, by logical name. Their physical names come from the environment
   * (`TABLE_NAME_<NAME>`). Its keys are the names `read`, `state.get`, the writes' `TableName` and
   * `context.tableName` accept (declare it `as const satisfies Record<string, TableDefinition>`, or
   * inline, so that they are known).
   * @default {}
   */
  readonly tables?: Readonly<Record<TableName, TableDefinition>>;
  /**
   * The items a decision about `event` needs. The engine reads them for the whole batch (or
   * decides on what it already holds and lets the commit's conditions check it) and hands them
   * to `decide` through {@link State}. Pure.
   * @default () => []
   */
  readonly read?: (event: Event) => readonly ItemKey<NoInfer<TableName>>[];
  /**
   * Decides what `event` does, from `state`. Pure: no I/O, no clock, no randomness (the engine
   * may call it more than once for one delivery, on newer state). Throw a `NonRetryableError`
   * subclass (its `name` is the dead-letter reason) for an event that can never apply, a
   * `RetryableError` subclass for one that may apply later (e.g. its predecessor has not arrived).
   */
  readonly decide: (event: Event, state: State<NoInfer<TableName>>) => Decision<NoInfer<TableName>, NoInfer<Handlers>> | undefined | void;
  /**
   * The inline side effects a decision may ask for, by name (no `#` in a name). Annotate each
   * handler's input (`async (input: { invoiceId: string }, context) => …`): a decision's request for
   * it must give that type.
   * @default {}
   */
  readonly sideEffects?: Handlers;
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
   * Keeps each event's inbox mark on an item of your own, its **home item**, instead of an inbox
   * row of its own: a decision that writes only its home item then commits one item, not two (a
   * transactional write bills 2 write units per item: `fresh` messages cost half). See
   * `docs/inbox-home.md`.
   *
   * - `table`: the logical name of the table that holds home items; `key(event)`: the home item's
   *   primary key, a function of the event alone (the aggregate the event belongs to: the order of
   *   an order's events). Every delivery of one message must give the same key.
   * - The engine reads the home item with the event's `read` items (it adds it when `read` does
   *   not name it), and commits it with every applied event: the mark is a map entry
   *   `<attribute>.<idempotency key>` = `{ h: payload hash, m: message id, x: expiry in epoch
   *   seconds }` (dead letters also `s`, `r`: status and reason), written in the same transaction as
   *   the decision's writes. Marks past the inbox window are removed at the item's next write.
   * - `decide` never sees the attribute; a home item that holds only marks (a **stub**: written when
   *   a decision deletes its home item, or applies an event without creating it) is shown as absent.
   * - A `Put` or `Delete` of an item of `table` that `read` does not name is sent with a condition
   *   that the item holds no marks (on failure the engine reads it and keeps its marks).
   *
   * Choose a home that takes a bounded number of events per inbox window (an order, an account's
   * day; not a global counter): its marks stay on it for the window, and a DynamoDB item holds at
   * most 400 KB. Inbox rows are still written for dead-letter markers (the DLQ tooling reads them),
   * redrives, and under provenance.
   *
   * @default undefined: an inbox row per event
   */
  readonly inboxHome?: InboxHome<NoInfer<TableName>, Event>;
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

/** Where an event's inbox mark lives when it is not an inbox row: see {@link IdempotentConsumerOptions.inboxHome}. */
export interface InboxHome<TableName extends string = string, Event = unknown> {
  /** The logical name of the table of home items (a key of `tables`). */
  readonly table: TableName;
  /**
   * The home item's primary key for `event` (its partition key, and its sort key when the table
   * has one). Pure, and the same for every delivery of a message. Changing it (or `table`) for a
   * consumer that has applied events is a switch: a copy looks for its mark on its new home only.
   * Change it with `rowsUntil` (see docs/inbox-home.md, "Turning it on or off").
   */
  readonly key: (event: Event) => Readonly<Item>;
  /**
   * The map attribute that holds the marks (not a name `decide` may write).
   * @default '_inbox'
   */
  readonly attribute?: string;
  /**
   * Until this instant (a `Date`, or an ISO 8601 string with its offset), each event's inbox
   * **row** is also written (conditionally, as without `inboxHome`) and read, beside its mark: a
   * redelivery of an event applied before `inboxHome` was turned on has a row and no mark, and must
   * still be a duplicate. Set it when you turn `inboxHome` on for a consumer that already applied
   * events, to the deploy's time plus the inbox window (`idempotency.inboxTtlSeconds`, 30 days by
   * default); past it, rows are no longer written. To turn `inboxHome` off, deploy with it one
   * inbox window ahead or more, then, after that window, `marks: false` (see it).
   * See docs/inbox-home.md, "Turning it on or off".
   *
   * @throws ConsumerDefinitionError (from `createIdempotentConsumer`) when it is not a valid date
   * @default undefined (no rows but for dead letters, redrives and provenance)
   */
  readonly rowsUntil?: Date | string;
  /**
   * `false`: write no more marks (nor stubs): each event's inbox row is written and read as
   * without `inboxHome`, while the marks and stubs already on home items are still read (a key
   * marked before is a duplicate) and hidden from `decide` (a stub is absent). The way to turn
   * `inboxHome` off: deploy with `rowsUntil` ahead, and one inbox window later (every key of the
   * window then has its row) deploy `marks: false`, keeping `inboxHome` declared so that the stubs
   * and marks left on your items stay invisible. Removing `inboxHome` altogether shows them to
   * `decide` as attributes and items.
   * @default true
   */
  readonly marks?: boolean;
}
