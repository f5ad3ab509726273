/**
 * The seeded grammar of generated consumers: a fast-check arbitrary of the raw material
 * (`raw.ts`) — tables with any logical name a user may choose and string, number or binary keys;
 * values in every form the document client takes (`Buffer`, `Uint8Array`, `BigInt`,
 * `NumberValue`, sets, empty and non-ASCII strings, nested maps and lists); reads that cover,
 * omit or over-read what is written; `Put`, `Update` (`SET` with arithmetic and `if_not_exists`,
 * `ADD` of numbers and sets, `REMOVE`, `DELETE`), `Delete`, `ConditionCheck`, user conditions;
 * outbox messages, inline side effects, the user's own errors, throws from `read`, and decisions
 * that cannot be written — mapped through the design pass (`design.ts`), so that shrinking a
 * schedule shrinks its consumer too.
 *
 * @module
 */
import fc from 'fast-check';
import { poisonKinds } from '../poisonKinds.js';
import type { ProveSource } from '../proveSources.js';
import { designWorkload } from './design.js';
import type { RawHome, RawItem, RawKey, RawKeyValue, RawSpec, RawStep, RawWrite } from './raw.js';
import {
  type ConditionSpec,
  type EffectSpec,
  type GeneratedWorkloadSpec,
  type InboxHomeMode,
  type Intent,
  keyTypes,
  type NamesSpec,
  type OutboxSpec,
  type TableSpec,
  type ThrowSpec,
  type UpdateAction,
} from './spec.js';
import { badValueKinds, type ValueSpec } from './values.js';

/** Pieces of text: ASCII, accents, combining marks, CJK, emoji (with modifiers, flags), right-to-left scripts and marks, quotes. */
const textPieces = [
  'a',
  'Z',
  '0',
  ' ',
  '-',
  'é',
  'e\u0301',
  'ß',
  'ñ',
  '中',
  '日本',
  '😀',
  '👍🏽',
  '🇫🇷',
  'שלום',
  'مرحبا',
  '\u200f',
  '\u202e',
  '"',
  '\\',
  '\n',
  '\t',
  'Ω',
  '\u00a0',
  '𝔘',
  '/',
  '#',
];

/** Logical table names a user may choose (`^[A-Za-z][A-Za-z0-9_]{0,63}$`). */
const tableNamePool = [
  'orders',
  'Orders2',
  'stock_items',
  'toString',
  'constructor',
  'valueOf',
  'hasOwnProperty',
  'a',
  'Z9',
  'T_1_x',
  'mixedCASE_Name',
  'ledger_v2',
  `L${'ong_'.repeat(15)}x`,
  'ABC',
];
const partitionKeyNames = ['pk', 'id', 'PK', 'Id', 'partition key', 'ключ', 'a.b', 'k#1', 'userId', '名前'];
const sortKeyNames = ['sk', 'SK', 'sort', 'ordre', 'n', 'Range.Key', 'date time'];
/** Attribute names: non-ASCII, spaces, dots, `#`, `:`, prototype names, a 64-character one. */
const attributeNames = [
  'a',
  'count',
  'Status',
  'naïve',
  'ключ2',
  '名前2',
  'emoji😀',
  'with space',
  'dot.ted',
  'toString',
  'valueOf',
  'hasOwnProperty',
  'UPPER_case_1',
  'שלום',
  'e\u0301',
  '#hash',
  ':colon',
  'x'.repeat(64),
  'tags',
  'amount',
  'items',
  'meta',
];
const errorNames = ['OutOfStock', 'NotYet', 'Überfällig', 'Rule_7', 'LimitReached', 'Busy', 'LegacyFailure', 'X'];
const errorReasons = ['too.late', 'Out-Of-Range', 'rule-9'];
const effectNames = ['notify', 'charge_card', 'Ünïcödé', 'toString', 'send.receipt'];

/**
 * Parts of the grammar left out for triage, from `PROVE_GENERATED_WITHOUT` (comma-separated:
 * intents such as `badOutbox`; `NumberValue` for lib-dynamodb's `NumberValue` keys and values;
 * `BigIntKey` for number keys beyond 2^53 and keys named in another native form; `BufferKey` for
 * binary keys as `Buffer`s; `copies` for producer copies): a run without the forms that trip a known fault finds
 * the others. Leaving parts out changes what a seed generates.
 */
const without = new Set(
  (process.env.PROVE_GENERATED_WITHOUT ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== ''),
);

const text = fc.array(fc.constantFrom(...textPieces), { maxLength: 5 }).map((parts) => parts.join(''));
const nonEmptyText = fc.array(fc.constantFrom(...textPieces), { minLength: 1, maxLength: 4 }).map((parts) => parts.join(''));
const smallInt = fc.integer({ min: -1000, max: 1000 });
const quarter = fc.integer({ min: -400, max: 400 }).map((q) => q / 4);
/** Integers beyond 2^53 (up to 29 digits), either sign. */
const bigText = fc.tuple(fc.bigInt({ min: 10n ** 16n, max: 10n ** 29n }), fc.boolean()).map(([b, negative]) => String(negative ? -b : b));
const bytes = fc.uint8Array({ maxLength: 8 }).map((b) => Buffer.from(b).toString('base64'));
const nonEmptyBytes = fc.uint8Array({ minLength: 1, maxLength: 6 }).map((b) => Buffer.from(b).toString('base64'));
/** Canonical number text of an amount: small integers and quarters. */
const amountText = fc
  .oneof(
    fc.integer({ min: -50, max: 50 }),
    fc.integer({ min: -40, max: 40 }).map((q) => q / 4),
  )
  .map((n) => String(n));

const scalar: fc.Arbitrary<ValueSpec> = fc.oneof(
  { weight: 4, arbitrary: text },
  { weight: 3, arbitrary: smallInt },
  { weight: 1, arbitrary: quarter },
  { weight: 2, arbitrary: bigText.map((b) => ({ $big: b })) },
  { weight: without.has('NumberValue') ? 0 : 1, arbitrary: bigText.map((b) => ({ $nv: b })) },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: bytes.map((b) => ({ $buf: b })) },
  { weight: 1, arbitrary: bytes.map((b) => ({ $u8: b })) },
  { weight: 1, arbitrary: fc.uniqueArray(nonEmptyText, { minLength: 1, maxLength: 3 }).map((ss) => ({ $ss: ss })) },
  { weight: 1, arbitrary: fc.uniqueArray(fc.integer({ min: -50, max: 50 }), { minLength: 1, maxLength: 3 }).map((ns) => ({ $ns: ns })) },
  { weight: 1, arbitrary: fc.uniqueArray(bigText, { minLength: 1, maxLength: 3 }).map((ns) => ({ $nsBig: ns })) },
  { weight: 1, arbitrary: fc.uniqueArray(nonEmptyBytes, { minLength: 1, maxLength: 3 }).map((bs) => ({ $bs: bs })) },
);

const mapOf = (value: fc.Arbitrary<ValueSpec>): fc.Arbitrary<ValueSpec> =>
  fc
    .uniqueArray(fc.tuple(fc.constantFrom(...attributeNames), value), { maxLength: 3, selector: ([name]) => name })
    .map((entries) => ({ $m: Object.fromEntries(entries) }));
const level1: fc.Arbitrary<ValueSpec> = fc.oneof(
  { weight: 4, arbitrary: scalar },
  { weight: 1, arbitrary: fc.array(scalar, { maxLength: 3 }) },
  { weight: 1, arbitrary: mapOf(scalar) },
);
/** Any attribute value, nested up to two levels of lists and maps. */
const value: fc.Arbitrary<ValueSpec> = fc.oneof(
  { weight: 5, arbitrary: scalar },
  { weight: 1, arbitrary: fc.array(level1, { maxLength: 3 }) },
  { weight: 1, arbitrary: mapOf(level1) },
);

/** JSON values only (outbox bodies, side-effect inputs). */
const jsonScalar: fc.Arbitrary<ValueSpec> = fc.oneof(text, smallInt, quarter, fc.boolean(), fc.constant(null));
const jsonValue: fc.Arbitrary<ValueSpec> = fc.oneof(
  { weight: 3, arbitrary: jsonScalar },
  { weight: 1, arbitrary: fc.array(jsonScalar, { maxLength: 3 }) },
  {
    weight: 2,
    arbitrary: fc
      .uniqueArray(fc.tuple(fc.constantFrom(...attributeNames), jsonScalar), { maxLength: 3, selector: ([name]) => name })
      .map((entries) => ({ $m: Object.fromEntries(entries) })),
  },
);

const attribute = fc.constantFrom(...attributeNames);

const leafCondition: fc.Arbitrary<ConditionSpec> = fc.oneof(
  fc.record({ c: fc.constantFrom('exists' as const, 'notExists' as const), attr: attribute }),
  fc.record({ c: fc.constantFrom('eq' as const, 'ne' as const), attr: attribute, value: fc.oneof(text, smallInt, quarter, fc.boolean()) }),
  fc.record({ c: fc.constantFrom('lt' as const, 'le' as const, 'gt' as const, 'ge' as const), attr: attribute, value: amountText }),
  fc.record({ c: fc.constant('beginsWith' as const), attr: attribute, prefix: text }),
  fc.record({ c: fc.constant('contains' as const), attr: attribute, value: nonEmptyText }),
  fc.record({ c: fc.constant('sizeGt' as const), attr: attribute, n: fc.integer({ min: 0, max: 3 }) }),
  fc.record({
    c: fc.constant('type' as const),
    attr: attribute,
    type: fc.constantFrom(
      'S' as const,
      'N' as const,
      'B' as const,
      'BOOL' as const,
      'NULL' as const,
      'L' as const,
      'M' as const,
      'SS' as const,
      'NS' as const,
      'BS' as const,
    ),
  }),
);
const condition: fc.Arbitrary<ConditionSpec> = fc.oneof(
  { weight: 4, arbitrary: leafCondition },
  { weight: 1, arbitrary: fc.record({ c: fc.constantFrom('and' as const, 'or' as const), a: leafCondition, b: leafCondition }) },
  { weight: 1, arbitrary: fc.record({ c: fc.constant('not' as const), a: leafCondition }) },
);

const setValue: fc.Arbitrary<ValueSpec> = fc.oneof(
  fc.uniqueArray(nonEmptyText, { minLength: 1, maxLength: 3 }).map((ss) => ({ $ss: ss })),
  fc.uniqueArray(fc.integer({ min: -50, max: 50 }), { minLength: 1, maxLength: 3 }).map((ns) => ({ $ns: ns })),
  fc.uniqueArray(nonEmptyBytes, { minLength: 1, maxLength: 2 }).map((bs) => ({ $bs: bs })),
);

const updateAction: fc.Arbitrary<UpdateAction> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ op: fc.constant('set' as const), attr: attribute, value }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constantFrom('setPlus' as const, 'setMinus' as const), attr: attribute, by: amountText }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('setIfNotExists' as const), attr: attribute, value }) },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('setIfNotExistsPlus' as const), attr: attribute, start: amountText, by: amountText }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('appendList' as const), attr: attribute, values: fc.array(scalar, { maxLength: 2 }) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('add' as const),
      attr: attribute,
      value: fc.oneof(
        smallInt,
        bigText.map((b) => ({ $big: b })),
        setValue,
      ),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('deleteFromSet' as const), attr: attribute, value: setValue }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('remove' as const), attr: attribute }) },
);

const rawWrite: fc.Arbitrary<RawWrite> = fc.record(
  {
    kind: fc.oneof(
      { weight: 3, arbitrary: fc.constant('Put' as const) },
      { weight: 4, arbitrary: fc.constant('Update' as const) },
      { weight: 1, arbitrary: fc.constant('Delete' as const) },
      { weight: 1, arbitrary: fc.constant('ConditionCheck' as const) },
    ),
    item: fc.nat({ max: 7 }),
    blind: fc.boolean(),
    attrs: fc.array(fc.tuple(attribute, value), { maxLength: 4 }),
    carry: fc.constantFrom('none' as const, 'all' as const, 'allButVersion' as const),
    plusAttr: fc.record({ attr: attribute, by: amountText }),
    actions: fc.array(updateAction, { minLength: 1, maxLength: 4 }),
    lowerCase: fc.boolean(),
    condition,
  },
  { requiredKeys: ['kind', 'item', 'blind', 'attrs', 'carry', 'actions', 'lowerCase'] },
);

const outboxMessage: fc.Arbitrary<OutboxSpec> = fc.record(
  {
    body: fc.oneof(text, jsonValue),
    destination: fc.constantFrom('default', 'audit', 'ünï'),
    messageGroupId: fc.constantFrom('g-1', 'group.2'),
    attributes: fc.dictionary(fc.constantFrom('trace-id', 'kind', 'x.y', 'Priority_1'), nonEmptyText, { maxKeys: 2 }),
  },
  { requiredKeys: ['body'] },
);

const throwSpec: fc.Arbitrary<ThrowSpec> = fc.record(
  {
    kind: fc.constantFrom('nonRetryable' as const, 'retryable' as const, 'classified' as const, 'unknown' as const),
    name: fc.constantFrom(...errorNames),
    reason: fc.constantFrom(...errorReasons),
  },
  { requiredKeys: ['kind', 'name'] },
);

const intentWeights: Readonly<Record<Intent, number>> = {
  apply: 20,
  reject: 2,
  wait: 2,
  readThrow: 1,
  conditionFails: 2,
  badValue: 2,
  badOutbox: 2,
  tooLarge: 1,
  tooManyActions: 1,
};
const intent: fc.Arbitrary<Intent> = fc.oneof(
  ...(Object.entries(intentWeights) as [Intent, number][])
    .filter(([name]) => name === 'apply' || !without.has(name))
    .map(([name, weight]) => ({ weight, arbitrary: fc.constant(name) })),
);

/** `arbitrary`'s value with probability `p`, else `undefined` (shrinks toward `undefined`). */
function sometimes<T>(arbitrary: fc.Arbitrary<T>, p: number): fc.Arbitrary<T | undefined> {
  return fc.oneof({ weight: Math.round((1 - p) * 100), arbitrary: fc.constant(undefined) }, { weight: Math.round(p * 100), arbitrary });
}

const rawStep: fc.Arbitrary<RawStep> = fc.record(
  {
    intent,
    overReads: fc.array(fc.nat({ max: 20 }), { maxLength: 2 }),
    writes: fc.array(rawWrite, { maxLength: 3 }),
    outbox: fc.array(outboxMessage, { maxLength: 2 }),
    sideEffects: fc.array(fc.record({ effect: fc.nat({ max: 3 }), input: jsonValue }), { maxLength: 2 }),
    shared: fc.array(
      fc.record({
        counter: fc.nat({ max: 3 }),
        by: fc.oneof(
          fc.integer({ min: -5, max: 20 }),
          bigText.map((b) => ({ $big: b })),
        ),
      }),
      { maxLength: 2 },
    ),
    throws: throwSpec,
    badValue: fc.constantFrom(...badValueKinds),
    badOutbox: fc.constantFrom('bigint' as const, 'nan' as const, 'inf' as const),
    exactly100: fc.oneof({ weight: 19, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
    large: fc.oneof({ weight: 19, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
    touchShared: fc.boolean(),
    churnModify: fc.boolean(),
    note: text,
    copies: without.has('copies')
      ? fc.constant(0)
      : fc.oneof(
          { weight: 6, arbitrary: fc.constant(0) },
          { weight: 3, arbitrary: fc.constant(1) },
          { weight: 1, arbitrary: fc.constant(2) },
        ),
    poison: sometimes(fc.constantFrom(...poisonKinds), 0.05),
  },
  {
    requiredKeys: [
      'intent',
      'overReads',
      'writes',
      'outbox',
      'sideEffects',
      'shared',
      'throws',
      'badValue',
      'badOutbox',
      'exactly100',
      'large',
      'touchShared',
      'churnModify',
      'note',
      'copies',
    ],
  },
);

const rawKeyValue: fc.Arbitrary<RawKeyValue> = fc.record({
  text,
  n: fc.nat({ max: 9 }),
  numberStyle: fc.constantFrom(
    ...(['int', 'int', 'neg', 'dec', 'big', 'nv'] as const).filter(
      (style) =>
        (style !== 'nv' || !without.has('NumberValue')) &&
        (style === 'int' || style === 'neg' || style === 'dec' || !without.has('BigIntKey')),
    ),
  ),
  bytes,
  binaryStyle: without.has('BufferKey') ? fc.constant('u8' as const) : fc.constantFrom('buffer' as const, 'u8' as const),
  alt: without.has('BigIntKey') || without.has('BufferKey') ? fc.constant(false) : fc.boolean(),
});
const rawItem: fc.Arbitrary<RawItem> = fc.record({ table: fc.nat({ max: 5 }), partition: rawKeyValue, sort: rawKeyValue });

const rawKey: fc.Arbitrary<RawKey> = fc.record({
  gated: fc.boolean(),
  items: fc.array(rawItem, { minLength: 1, maxLength: 3 }),
  sharedItem: fc.boolean(),
  churn: fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  steps: fc.array(rawStep, { minLength: 1, maxLength: 5 }),
});

const keyType = fc.constantFrom(...keyTypes);
/**
 * Logical table names: from the pool, or any name the library accepts; rarely a pair a user may
 * well choose that differ only by case and `_` (`orderItems`, `order_items`).
 */
const tableNames: fc.Arbitrary<string[]> = fc
  .tuple(
    fc.uniqueArray(
      fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom(...tableNamePool) },
        { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z][A-Za-z0-9_]{0,63}$/) },
      ),
      { minLength: 1, maxLength: 3 },
    ),
    // About one schedule in a hundred (fast-check favours small integers: not a small one).
    fc.integer({ min: 0, max: 1_000_000 }).map((n) => n % 97 === 41),
  )
  .map(([names, pair]) => (pair ? ['orderItems', 'order_items'] : names));
const tables: fc.Arbitrary<TableSpec[]> = tableNames.chain((names) =>
  fc.tuple(
    ...names.map((name) =>
      fc.record(
        {
          name: fc.constant(name),
          partitionKey: fc.record({ name: fc.constantFrom(...partitionKeyNames), type: keyType }),
          sortKey: fc.record({ name: fc.constantFrom(...sortKeyNames), type: keyType }),
        },
        { requiredKeys: ['name', 'partitionKey'] },
      ),
    ),
  ),
);

const names: fc.Arbitrary<NamesSpec> = fc.record({
  idField: fc.constantFrom('eventId', 'id', 'requestId', 'messageKey', null),
  groupField: fc.constantFrom('aggregateId', 'group', 'orderId', 'lane_key', null),
  seq: fc.constantFrom('seq', 'position', 'pos.ition', 'позиция'),
  log: fc.constantFrom('log', 'applied', 'history', 'Verlauf'),
  counter: fc.constantFrom('hits', 'total', 'Σcount', 'counter'),
});

const effects: fc.Arbitrary<EffectSpec[]> = fc.uniqueArray(fc.record({ name: fc.constantFrom(...effectNames), flaky: fc.boolean() }), {
  maxLength: 2,
  selector: (e) => e.name,
});

/**
 * Names of the marks' map attribute (`inboxHome.attribute`, letters, digits and `_`): none a
 * decision writes (the grammar's attribute names, the head's, the version attribute, key
 * attributes), nor their stub flags (`<attribute>Stub`); the longest the library takes;
 * `undefined` is the default `_inbox`.
 */
const homeAttributes = [undefined, undefined, '_inbox', 'marks', 'Inbox_2', '_', `m${'_x'.repeat(31)}a`] as const;

/** A consumer that keeps its inbox marks on home items: where each key's marks live. */
const rawHome: fc.Arbitrary<RawHome> = fc.record(
  {
    table: fc.oneof({ weight: 3, arbitrary: fc.constant('head' as const) }, { weight: 1, arbitrary: fc.nat({ max: 5 }) }),
    places: fc.array(
      fc.oneof(
        { weight: 4, arbitrary: fc.constant('head' as const) },
        { weight: 2, arbitrary: fc.constant('other' as const) },
        { weight: 2, arbitrary: fc.constant('fresh' as const) },
        { weight: 1, arbitrary: fc.constant('shared' as const) },
        { weight: 1, arbitrary: fc.constant('cross' as const) },
      ),
      { minLength: 1, maxLength: 3 },
    ),
    attribute: fc.constantFrom(...homeAttributes),
    alt: fc.boolean(),
  },
  { requiredKeys: ['table', 'places', 'alt'] },
);

/**
 * The raw material of a generated consumer and its producer.
 *
 * @param home - which consumers keep their inbox marks on home items (`inboxHome`) @default 'mixed'
 */
export function rawSpecArbitraryFor(home: InboxHomeMode = 'mixed'): fc.Arbitrary<RawSpec> {
  return fc.record(
    {
      tables,
      versionAttribute: fc.constantFrom('rev', 'v.1', '_ver-sion', 'Version', 'etag'),
      validation: fc.constantFrom('schema' as const, 'parse' as const),
      names,
      counterItems: fc.array(rawItem, { maxLength: 2 }),
      extraItems: fc.array(rawItem, { maxLength: 2 }),
      effects,
      keys: fc.array(rawKey, { minLength: 1, maxLength: 3 }),
      strayPoison: fc.array(fc.constantFrom(...poisonKinds), { maxLength: 1 }),
      // Last, so that the fields before it draw what they drew before it existed; shrinks toward no home.
      home: home === 'always' ? rawHome : home === 'never' ? fc.constant(undefined) : fc.oneof(fc.constant(undefined), rawHome),
    },
    { requiredKeys: ['tables', 'validation', 'names', 'counterItems', 'extraItems', 'effects', 'keys', 'strayPoison', 'home'] },
  );
}

/** The raw material of a generated consumer and its producer (half of them keep their inbox marks on home items). */
export const rawSpecArbitrary: fc.Arbitrary<RawSpec> = rawSpecArbitraryFor('mixed');

/** Parts of the grammar, for tests that check the reference model's semantics against DynamoDB Local. */
export const grammarParts = { value, condition, updateAction, attribute } as const;

/**
 * Generated consumers and their producers for one source: the grammar's raw material, designed
 * (`designWorkload`) so that every event's outcome is the same whatever order the source delivers in.
 *
 * @param home - which consumers keep their inbox marks on home items (`inboxHome`) @default 'mixed'
 */
export function generatedWorkloadArbitrary(source: ProveSource, home: InboxHomeMode = 'mixed'): fc.Arbitrary<GeneratedWorkloadSpec> {
  return rawSpecArbitraryFor(home).map((raw) => designWorkload(raw, source));
}
