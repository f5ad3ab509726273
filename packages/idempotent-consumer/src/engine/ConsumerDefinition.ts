import { ConsumerDefinitionError, isConsumerError, MissingIdempotencyKey, ValidationError } from '../errors.js';
import { DEFAULT_MARK_ATTRIBUTE, type HomeSettings, stubAttributeOf } from '../inbox/homeMarks.js';
import type {
  Decision,
  ErrorClassification,
  IdempotentConsumerOptions,
  ItemKey,
  SideEffectHandler,
  State,
  TableDefinition,
} from '../types.js';

/** Longest idempotency or ordering key, in UTF-8 bytes (the inbox key must fit DynamoDB's 2,048-byte partition key). */
export const MAX_KEY_BYTES = 1024;
/** Most items `read` may name for one event (the event's commit must also fit a 100-action transaction). */
export const MAX_READS_PER_EVENT = 50;
/** Longest value of a log field, in characters. */
const MAX_LOG_FIELD_LENGTH = 256;

/**
 * The options of any consumer, whatever its table names and side effects: what the engine takes
 * (a consumer's typed options are checked against its own names where it is built).
 */
// biome-ignore lint/suspicious/noExplicitAny: the side effects of any consumer (their inputs are checked where the consumer is built)
export type AnyConsumerOptions<Event> = IdempotentConsumerOptions<Event, string, any>;

/** The user's options, checked and normalized: what the engine calls. */
export interface ConsumerDefinition<Event = unknown> {
  /** Turns the parsed JSON body into an event. @throws NonRetryableError (e.g. `ValidationError`) */
  parseEvent(json: unknown): Event;
  /** The top-level body field holding the idempotency key, when it was given as a field name. */
  readonly idempotencyKeyField: string | undefined;
  idempotencyKeyOf(event: Event): string;
  orderingKeyOf(event: Event): string;
  logFieldsOf(event: Event): Record<string, string | number | boolean>;
  readonly tables: Readonly<Record<string, TableDefinition>>;
  read(event: Event): readonly ItemKey[];
  decide(event: Event, state: State): Decision | undefined | void;
  readonly sideEffects: Readonly<Record<string, SideEffectHandler>>;
  readonly classifyError: ((error: unknown) => ErrorClassification | undefined) | undefined;
  readonly versionAttribute: string;
  /** Where inbox marks live when not in inbox rows (`inboxHome`); `undefined`: inbox rows. */
  readonly home:
    | (HomeSettings & {
        keyOf(event: Event): Readonly<ItemKey['key']>;
        /** `inboxHome.rowsUntil` in epoch milliseconds: until then, inbox rows are written and read beside the marks. */
        readonly rowsUntilMs?: number;
      })
    | undefined;
}

/**
 * Checks the user's options and returns the normalized definition.
 *
 * @throws ConsumerDefinitionError naming what is wrong (no schema and no parse, both, a bad table
 *   name, a bad version attribute)
 */
export function defineConsumer<Event>(options: AnyConsumerOptions<Event>): ConsumerDefinition<Event> {
  const problems: string[] = [];
  if ((options.schema === undefined) === (options.parse === undefined)) problems.push('give exactly one of `schema` and `parse`');
  if (options.schema !== undefined && typeof options.schema['~standard']?.validate !== 'function') {
    problems.push('`schema` is not a Standard Schema (zod 4, valibot, arktype…): it has no `~standard.validate`');
  }
  if (typeof options.decide !== 'function') problems.push('`decide` must be a function');
  const tables = options.tables ?? {};
  for (const [name, table] of Object.entries(tables)) {
    if (!/^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(name))
      problems.push(`table name ${JSON.stringify(name)} must be 1 to 64 letters, digits or '_', starting with a letter`);
    if (typeof table?.partitionKey !== 'string' || table.partitionKey === '') problems.push(`table ${name} needs a partitionKey`);
  }
  const versionAttribute = options.versionAttribute ?? '_version';
  if (!/^[A-Za-z0-9_.-]{1,255}$/.test(versionAttribute))
    problems.push(`versionAttribute ${JSON.stringify(versionAttribute)} is not a plain attribute name`);
  for (const [name, effect] of Object.entries(options.sideEffects ?? {})) {
    if (typeof effect !== 'function') problems.push(`side effect ${name} must be a function`);
    // An effect key is `<idempotency key>#<name>#<position>`, or `<name>#<chosen key>`: a name
    // without `#` keeps the first one key's own and the second apart from it (see `effectKeys.ts`).
    if (name === '' || name.includes('#'))
      problems.push(`side effect name ${JSON.stringify(name)} must be non-empty and hold no '#' (it is part of the effect key)`);
  }
  const inboxHome = options.inboxHome;
  let home: ConsumerDefinition<Event>['home'];
  if (inboxHome !== undefined) {
    const attribute = inboxHome.attribute ?? DEFAULT_MARK_ATTRIBUTE;
    const table = Object.hasOwn(tables, inboxHome.table) ? tables[inboxHome.table as keyof typeof tables] : undefined;
    if (table === undefined) problems.push(`inboxHome.table ${JSON.stringify(inboxHome.table)} is not one of the consumer's tables`);
    if (typeof inboxHome.key !== 'function') problems.push('inboxHome.key must be a function of the event');
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(attribute))
      problems.push(`inboxHome.attribute ${JSON.stringify(attribute)} must be 1 to 64 letters, digits or '_', not starting with a digit`);
    const reserved = [versionAttribute, ...(table === undefined ? [] : [table.partitionKey, table.sortKey])];
    if (reserved.includes(attribute) || reserved.includes(stubAttributeOf(attribute)))
      problems.push(`inboxHome.attribute ${JSON.stringify(attribute)} must not be the version attribute or a key attribute of the table`);
    const rowsUntil = inboxHome.rowsUntil;
    const rowsUntilMs =
      rowsUntil === undefined
        ? undefined
        : rowsUntil instanceof Date
          ? rowsUntil.getTime()
          : typeof rowsUntil === 'string' && /^\d{4}-\d{2}-\d{2}T.*(Z|[+-]\d{2}:\d{2})$/.test(rowsUntil)
            ? Date.parse(rowsUntil)
            : Number.NaN;
    if (inboxHome.marks !== undefined && typeof inboxHome.marks !== 'boolean') problems.push('inboxHome.marks must be a boolean');
    if (rowsUntilMs !== undefined && !Number.isFinite(rowsUntilMs))
      problems.push(
        `inboxHome.rowsUntil ${JSON.stringify(rowsUntil)} must be a valid Date or an ISO 8601 date-time with its offset (2027-01-31T00:00:00Z)`,
      );
    home = {
      table: inboxHome.table,
      attribute,
      stubAttribute: stubAttributeOf(attribute),
      stubAttributes: [
        versionAttribute,
        ...(table === undefined ? [] : [table.partitionKey, ...(table.sortKey === undefined ? [] : [table.sortKey])]),
      ],
      keyOf: inboxHome.key as (event: Event) => Readonly<ItemKey['key']>,
      ...(rowsUntilMs === undefined ? {} : { rowsUntilMs }),
      ...(inboxHome.marks === false ? { writeMarks: false } : {}),
    };
  }
  const keyField = typeof options.idempotencyKey === 'string' ? options.idempotencyKey : undefined;
  if (typeof options.idempotencyKey !== 'string' && typeof options.idempotencyKey !== 'function')
    problems.push('`idempotencyKey` must be a field name or a function');
  if (problems.length > 0) throw new ConsumerDefinitionError(`invalid consumer options: ${problems.join('; ')}`);

  const byField =
    <E>(field: string) =>
    (event: E) =>
      (event as Record<string, unknown>)[field] as string;
  const idempotencyKeyOf: (event: Event) => string =
    keyField !== undefined ? byField(keyField) : (options.idempotencyKey as (event: Event) => string);
  const orderingKeyOf: (event: Event) => string =
    options.orderingKey === undefined
      ? idempotencyKeyOf
      : typeof options.orderingKey === 'string'
        ? byField(options.orderingKey)
        : options.orderingKey;
  const schema = options.schema;

  return {
    parseEvent: schema !== undefined ? (json) => validateWithSchema(schema, json) : (json) => parseWith(options.parse!, json),
    idempotencyKeyField: keyField,
    idempotencyKeyOf,
    orderingKeyOf,
    logFieldsOf: (event) => safeLogFields(options.logFields, event),
    tables,
    read: options.read ?? (() => []),
    decide: options.decide,
    sideEffects: options.sideEffects ?? {},
    classifyError: options.classifyError,
    versionAttribute,
    home,
  };
}

function validateWithSchema<Event>(schema: NonNullable<IdempotentConsumerOptions<Event>['schema']>, json: unknown): Event {
  let result: ReturnType<(typeof schema)['~standard']['validate']>;
  try {
    result = schema['~standard'].validate(json);
  } catch (error) {
    throw new ValidationError(`the schema could not validate the body (${error instanceof Error ? error.name : typeof error})`, [], {
      cause: error,
    });
  }
  if (result instanceof Promise) {
    throw new ConsumerDefinitionError('the schema validates asynchronously; use a synchronous schema (no async refinements)');
  }
  if (result.issues !== undefined) {
    const issues = result.issues.slice(0, 10).map((issue) => {
      const path = (issue.path ?? [])
        .slice(0, 8)
        .map((segment) => String(typeof segment === 'object' && segment !== null ? segment.key : segment).slice(0, 64))
        .join('.');
      return `${path || '(body)'}: ${issue.message.slice(0, 200)}`;
    });
    throw new ValidationError(
      `the body fails the schema: ${issues.join('; ')}${result.issues.length > 10 ? ` (and ${result.issues.length - 10} more)` : ''}`,
      issues,
    );
  }
  return result.value;
}

function parseWith<Event>(parse: (json: unknown) => Event, json: unknown): Event {
  try {
    return parse(json);
  } catch (error) {
    if (isConsumerError(error) && !error.retryable) throw error;
    throw new ValidationError(`the body could not be parsed: ${error instanceof Error ? error.message.slice(0, 200) : typeof error}`, [], {
      cause: error,
    });
  }
}

function safeLogFields<Event>(
  logFields: IdempotentConsumerOptions<Event>['logFields'],
  event: Event,
): Record<string, string | number | boolean> {
  if (logFields === undefined) return {};
  try {
    const fields: Record<string, string | number | boolean> = {};
    for (const [name, value] of Object.entries(logFields(event)).slice(0, 20)) {
      if (value === undefined) continue;
      fields[name.slice(0, 64)] =
        typeof value === 'string' && value.length > MAX_LOG_FIELD_LENGTH ? `${value.slice(0, MAX_LOG_FIELD_LENGTH - 1)}…` : value;
    }
    return fields;
  } catch {
    return {};
  }
}

/**
 * Checks an idempotency or ordering key taken from an event.
 *
 * @throws MissingIdempotencyKey (idempotency key) when it is not a non-empty string
 * @throws ValidationError when it is not well-formed Unicode (a lone surrogate) or longer than {@link MAX_KEY_BYTES}
 */
export function checkKey(value: unknown, what: 'idempotency key' | 'ordering key'): string {
  if (typeof value !== 'string' || value.trim() === '') {
    if (what === 'idempotency key') throw new MissingIdempotencyKey('the message has no idempotency key, or it is not a non-empty string');
    throw new ValidationError('the message has no ordering key, or it is not a non-empty string');
  }
  if (!value.isWellFormed()) throw new ValidationError(`the ${what} is not well-formed Unicode (it holds a lone surrogate)`);
  if (Buffer.byteLength(value, 'utf8') > MAX_KEY_BYTES) throw new ValidationError(`the ${what} is longer than ${MAX_KEY_BYTES} bytes`);
  return value;
}
