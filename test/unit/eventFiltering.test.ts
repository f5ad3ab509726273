import type { SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import type { KafkaRecord } from '../../packages/idempotent-consumer/src/batch/kafkaEvent.js';
import {
  type FilterPattern,
  filterCriteriaProblems,
  filterPatternGrammarProblems,
} from '../../packages/idempotent-consumer/src/settings/filterCriteria.js';
import { settingsProblems } from '../../packages/idempotent-consumer/src/settings/validateSettings.js';
import { withOverrides } from '../../packages/idempotent-consumer/src/settings/settings.js';
import { matchesFilterPattern, UnsupportedFilterRuleError } from '../../packages/local/src/matchesFilterPattern.js';
import { matchesFilterPattern as fromOutbox } from '../../packages/local/src/outbox/matchesFilterPattern.js';
import { kafkaRecordPasses, sqsRecordPasses } from '../../packages/local/src/recordFilters.js';

const sqsRecord = (body: string): SQSRecord =>
  ({ messageId: `m-${body.length}`, body, attributes: {}, messageAttributes: {}, eventSource: 'aws:sqs' }) as unknown as SQSRecord;
const kafkaRecord = (value: string | null): KafkaRecord => ({
  topic: 'orders',
  partition: 0,
  offset: 1,
  timestamp: 0,
  timestampType: 'CREATE_TIME',
  value: value === null ? null : Buffer.from(value).toString('base64'),
  headers: [],
});

describe('filterCriteriaProblems: the rules AWS applies to FilterCriteria', () => {
  it('accepts every operator Lambda documents, on the source key', () => {
    const pattern: FilterPattern = {
      body: {
        name: ['Alice', null, ''],
        nameCi: [{ 'equals-ignore-case': 'alice' }],
        region: [{ prefix: 'us-' }],
        file: [{ suffix: '.png' }],
        weather: [{ 'anything-but': ['Raining'] }],
        price: [{ numeric: ['>', 10, '<=', 20] }],
        exact: [{ numeric: ['=', 100] }],
        product: [{ exists: true }],
        nested: { level: [1, 2] },
        $or: [{ a: ['x'] }, { b: ['y'] }],
      },
    };
    expect(filterCriteriaProblems([pattern], 'sqs', 'function.filters')).toEqual([]);
    expect(filterCriteriaProblems([{ value: { type: ['OrderPaid'] } }], 'kafka', 'kafka.filters')).toEqual([]);
    expect(filterCriteriaProblems(undefined, 'sqs', 'function.filters')).toEqual([]);
  });

  it('refuses more than 5 filters, a pattern over 4,096 characters, and keys other than body (SQS) or value (Kafka)', () => {
    const six = Array.from({ length: 6 }, (_, i) => ({ body: { type: [`T${i}`] } }));
    expect(filterCriteriaProblems(six, 'sqs', 'function.filters')).toEqual([expect.stringContaining('at most 5')]);
    const long = { body: { type: ['x'.repeat(4100)] } };
    expect(filterCriteriaProblems([long], 'sqs', 'function.filters')).toEqual([expect.stringContaining('4096')]);
    expect(filterCriteriaProblems([{ value: { a: ['x'] } }], 'sqs', 'f')).toEqual([expect.stringContaining('only on the "body" key')]);
    expect(filterCriteriaProblems([{ body: { a: ['x'] } }], 'kafka', 'k')).toEqual([expect.stringContaining('only on the "value" key')]);
    expect(filterCriteriaProblems([{ $or: [{ body: ['a'] }, { attributes: { x: ['1'] } }] }], 'sqs', 'f')).toHaveLength(1);
    expect(filterCriteriaProblems([{}], 'sqs', 'f')).toEqual([expect.stringContaining('empty')]);
    expect(filterCriteriaProblems({ body: ['x'] }, 'sqs', 'f')).toEqual([expect.stringContaining('must be a list')]);
  });

  it('refuses operators Lambda does not support and malformed operands, naming where', () => {
    const problems = (rule: unknown) => filterPatternGrammarProblems({ body: { field: [rule] } }, 'p');
    expect(problems({ wildcard: 'a*' })).toEqual([expect.stringContaining('does not support')]);
    expect(problems({ cidr: '10.0.0.0/24' })).toEqual([expect.stringContaining('"cidr"')]);
    expect(problems({ prefix: 5 })).toEqual([expect.stringContaining('prefix needs a string')]);
    expect(problems({ exists: 'yes' })).toEqual([expect.stringContaining('exists needs true or false')]);
    expect(problems({ 'anything-but': { prefix: 'a' } })).toEqual([expect.stringContaining('anything-but needs')]);
    expect(problems({ numeric: ['>', 20, '<', 10] })).toEqual([expect.stringContaining('is empty')]);
    expect(problems({ numeric: ['>', 1, '>', 2] })).toEqual([expect.stringContaining('lower bound')]);
    expect(problems({ numeric: ['!=', 1] })).toEqual([expect.stringContaining('"!="')]);
    expect(problems({ numeric: ['<', 6e9] })).toEqual([expect.stringContaining('-5e9 to 5e9')]);
    expect(problems({ prefix: 'a', suffix: 'b' })).toEqual([expect.stringContaining('exactly one operator')]);
    expect(filterPatternGrammarProblems({ body: { field: [] } }, 'p')).toEqual([
      'p.body.field is an empty list of rules: it matches nothing',
    ]);
    expect(filterPatternGrammarProblems({ body: { $or: [{ a: ['x'] }] } }, 'p')).toEqual([expect.stringContaining('at least two')]);
    expect(filterPatternGrammarProblems({ body: { field: 'x' } }, 'p')).toEqual([expect.stringContaining('p.body.field must be a list')]);
  });

  it('is part of settingsProblems for both mappings, with SQS provisioned pollers', () => {
    const settings = withOverrides({
      function: { filters: [{ value: { a: ['x'] } }], minimumPollers: 1, maximumPollers: 3000 },
      kafka: { filters: [{ value: { a: [{ wildcard: '*' }] } } as never] },
    });
    const problems = settingsProblems(settings);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringContaining('function.filters[0] filters on "value"'),
        expect.stringContaining('kafka.filters[0].value.a[0] uses the operator "wildcard"'),
        expect.stringContaining('SQS provisioned pollers'),
      ]),
    );
    expect(settingsProblems(withOverrides({ function: { minimumPollers: 2, maximumPollers: 10 } }))).toEqual([]);
    expect(settingsProblems(withOverrides({ function: { minimumPollers: 20, maximumPollers: 10 } }))).toHaveLength(1);
  });
});

describe('matchesFilterPattern: EventBridge semantics as Lambda applies them', () => {
  const matches = (pattern: FilterPattern, value: unknown) => matchesFilterPattern(pattern, value);

  it('equals without case folding; null matches null, not a missing field; "" matches empty', () => {
    expect(matches({ name: ['Alice'] }, { name: 'Alice' })).toBe(true);
    expect(matches({ name: ['Alice'] }, { name: 'alice' })).toBe(false);
    expect(matches({ name: [null] }, { name: null })).toBe(true);
    expect(matches({ name: [null] }, {})).toBe(false);
    expect(matches({ name: [''] }, { name: '' })).toBe(true);
    expect(matches({ n: [5] }, { n: '5' })).toBe(false);
    expect(matches({ n: [5] }, { n: 5 })).toBe(true);
  });

  it('prefix, suffix, equals-ignore-case on strings only', () => {
    expect(matches({ r: [{ prefix: 'us-' }] }, { r: 'us-east-1' })).toBe(true);
    expect(matches({ r: [{ prefix: 'us-' }] }, { r: 'eu-west-1' })).toBe(false);
    expect(matches({ f: [{ suffix: '.png' }] }, { f: 'a.png' })).toBe(true);
    expect(matches({ f: [{ suffix: '.png' }] }, { f: 'a.jpg' })).toBe(false);
    expect(matches({ n: [{ 'equals-ignore-case': 'ALICE' }] }, { n: 'alice' })).toBe(true);
    expect(matches({ n: [{ prefix: '1' }] }, { n: 12 })).toBe(false);
  });

  it('anything-but needs the field, and excludes its values', () => {
    expect(matches({ w: [{ 'anything-but': ['Raining'] }] }, { w: 'Sunny' })).toBe(true);
    expect(matches({ w: [{ 'anything-but': ['Raining'] }] }, { w: 'Raining' })).toBe(false);
    expect(matches({ w: [{ 'anything-but': 'Raining' }] }, {})).toBe(false);
    expect(matches({ n: [{ 'anything-but': [1, 2] }] }, { n: 3 })).toBe(true);
  });

  it('numeric equals and ranges, on numbers only', () => {
    const range: FilterPattern = { p: [{ numeric: ['>', 10, '<=', 20] }] };
    expect([5, 10, 11, 20, 21].map((p) => matches(range, { p }))).toEqual([false, false, true, true, false]);
    expect(matches({ p: [{ numeric: ['=', 100] }] }, { p: 100 })).toBe(true);
    expect(matches(range, { p: '15' })).toBe(false);
  });

  it('exists true and false; a nested pattern under a missing object matches only exists: false', () => {
    expect(matches({ a: [{ exists: true }] }, { a: 1 })).toBe(true);
    expect(matches({ a: [{ exists: true }] }, {})).toBe(false);
    expect(matches({ a: [{ exists: false }] }, {})).toBe(true);
    expect(matches({ a: [{ exists: false }] }, { a: 1 })).toBe(false);
    expect(matches({ a: { b: [{ exists: false }] } }, {})).toBe(true);
    expect(matches({ a: { b: ['x'] } }, {})).toBe(false);
  });

  it('and across keys, or within a list and with $or; a list value matches by any element', () => {
    expect(matches({ a: ['1'], b: ['2'] }, { a: '1', b: '2' })).toBe(true);
    expect(matches({ a: ['1'], b: ['2'] }, { a: '1', b: '3' })).toBe(false);
    expect(matches({ a: ['1', '2'] }, { a: '2' })).toBe(true);
    expect(matches({ $or: [{ a: ['1'] }, { b: ['2'] }] }, { b: '2' })).toBe(true);
    expect(matches({ $or: [{ a: ['1'] }, { b: ['2'] }] }, { c: '3' })).toBe(false);
    expect(matches({ tags: ['a'] }, { tags: ['b', 'a'] })).toBe(true);
    expect(matches({ items: { sku: ['X'] } }, { items: [{ sku: 'Y' }, { sku: 'X' }] })).toBe(true);
  });

  it('refuses a pattern Lambda would refuse; the old import path is the same function', () => {
    expect(() => matches({ a: [{ wildcard: '*' }] } as never, { a: 'x' })).toThrow(UnsupportedFilterRuleError);
    expect(fromOutbox).toBe(matchesFilterPattern);
  });
});

describe('sqsRecordPasses and kafkaRecordPasses: the body or value as JSON or as a string', () => {
  it('no filters let every record through; any one pattern matching is enough', () => {
    expect(sqsRecordPasses(undefined, sqsRecord('anything'))).toBe(true);
    expect(sqsRecordPasses([], sqsRecord('anything'))).toBe(true);
    const filters: FilterPattern[] = [{ body: { type: ['A'] } }, { body: { type: ['B'] } }];
    expect(sqsRecordPasses(filters, sqsRecord('{"type":"B"}'))).toBe(true);
    expect(sqsRecordPasses(filters, sqsRecord('{"type":"C"}'))).toBe(false);
  });

  it('follows AWS table: a field pattern drops a plain-string body, a string pattern drops a JSON body', () => {
    expect(sqsRecordPasses([{ body: { type: ['A'] } }], sqsRecord('type=A'))).toBe(false);
    expect(sqsRecordPasses([{ body: [{ prefix: 'type=' }] }], sqsRecord('type=A'))).toBe(true);
    expect(sqsRecordPasses([{ body: [{ prefix: '{' }] }], sqsRecord('{"type":"A"}'))).toBe(false);
    // A top-level $or whose branches take the body in different forms.
    const either: FilterPattern[] = [{ $or: [{ body: { type: ['A'] } }, { body: [{ prefix: 'legacy:' }] }] }];
    expect(sqsRecordPasses(either, sqsRecord('{"type":"A"}'))).toBe(true);
    expect(sqsRecordPasses(either, sqsRecord('legacy:A'))).toBe(true);
    expect(sqsRecordPasses(either, sqsRecord('other'))).toBe(false);
  });

  it('decodes a Kafka value from base64; a tombstone matches only exists: false', () => {
    expect(kafkaRecordPasses([{ value: { type: ['A'] } }], kafkaRecord('{"type":"A"}'))).toBe(true);
    expect(kafkaRecordPasses([{ value: { type: ['A'] } }], kafkaRecord('{"type":"B"}'))).toBe(false);
    expect(kafkaRecordPasses([{ value: [{ prefix: 'Hello' }] }], kafkaRecord('Hello, this is a test.'))).toBe(true);
    expect(kafkaRecordPasses([{ value: { type: ['A'] } }], kafkaRecord(null))).toBe(false);
    expect(kafkaRecordPasses([{ value: [{ exists: false }] }], kafkaRecord(null))).toBe(true);
  });
});
