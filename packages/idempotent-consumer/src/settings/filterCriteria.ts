/**
 * Lambda event filtering (`FilterCriteria`) of the event source mappings the constructs create: the
 * shape of a filter pattern and the rules AWS applies to it, checked by the settings
 * (`settingsProblems`) before `cdk synth` and before a local run. The local runtime's pollers
 * evaluate the same patterns (`@idempotent-consumer/local`, `matchesFilterPattern`).
 *
 * Source: https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html (filter rule
 * syntax, quotas), https://docs.aws.amazon.com/lambda/latest/dg/with-sqs-filtering.html (SQS:
 * the `body` key only), https://docs.aws.amazon.com/lambda/latest/dg/kafka-filtering.html (Kafka:
 * the `value` key only), https://docs.aws.amazon.com/lambda/latest/api/API_Filter.html (a pattern
 * of at most 4,096 characters).
 *
 * @module
 */

/** A value an equality rule compares with: a string, a number, a boolean or `null`. */
export type FilterValue = string | number | boolean | null;

/**
 * One rule of a filter pattern's list: a value (equals; `""` is "empty", `null` is "null"), or one
 * of Lambda's comparison operators:
 * `{ "prefix": "us-" }` (begins with), `{ "suffix": ".png" }` (ends with),
 * `{ "equals-ignore-case": "alice" }`, `{ "anything-but": ["Raining"] }` (not; a value or a list of
 * strings or of numbers), `{ "numeric": [">", 10, "<=", 20] }` (numeric equals or range),
 * `{ "exists": true }` / `{ "exists": false }`.
 */
export type FilterRule =
  | FilterValue
  | { readonly prefix: string }
  | { readonly suffix: string }
  | { readonly 'equals-ignore-case': string }
  | { readonly 'anything-but': string | number | readonly string[] | readonly number[] }
  | { readonly numeric: readonly (string | number)[] }
  | { readonly exists: boolean };

/**
 * A Lambda event filter pattern, as plain JSON (the construct serializes it into
 * `FilterCriteria.Filters[].Pattern`): each key holds a list of {@link FilterRule}s (any of them
 * matches: "or"), or a nested pattern for a nested object; the keys of one object must all match
 * ("and"); `"$or": [pattern, pattern, …]` matches when one of its patterns does.
 *
 * The top-level key is the record's data: `body` on SQS (the message body), `value` on Kafka (the
 * record's value, decoded from base64). Under it, a nested pattern filters a JSON body's fields; a
 * list of rules filters a plain-string body as a whole. Lambda drops a record whose body is JSON
 * when the pattern expects a plain string, and the reverse.
 *
 * @example
 * // SQS: only PaymentCaptured and PaymentRefunded events of the EU region
 * { body: { type: ['PaymentCaptured', 'PaymentRefunded'], region: [{ prefix: 'eu-' }] } }
 */
export interface FilterPattern {
  /** A field name (a nested pattern, or the rules its value must match), or `$or` (patterns, one of which must match). */
  readonly [key: string]: FilterPattern | readonly FilterRule[] | readonly FilterPattern[];
}

/**
 * Filters an event source mapping may have by default; any one of them matching lets a record
 * through (AWS quota; it can be raised to 10 on request, which the constructs do not assume).
 */
export const MAX_FILTERS_PER_MAPPING = 5;

/** Longest filter pattern, in characters of its JSON (`Filter.Pattern`, API_Filter). */
export const MAX_FILTER_PATTERN_LENGTH = 4096;

/**
 * The key of the record's data a pattern of each source filters on: SQS mappings filter only on
 * `body`, Kafka mappings only on `value` (AWS rules).
 */
export const filterDataKey = { sqs: 'body', kafka: 'value', kinesis: 'data' } as const;

/**
 * The fields of a DynamoDB Streams record a filter pattern may name at its top level: the record's
 * own (`eventName`, `dynamodb` with `Keys`, `NewImage`, `OldImage` in DynamoDB JSON, …)
 * (https://docs.aws.amazon.com/lambda/latest/dg/with-ddb-filtering.html).
 */
export const DYNAMODB_STREAM_FILTER_KEYS = [
  'eventID',
  'eventName',
  'eventVersion',
  'eventSource',
  'awsRegion',
  'dynamodb',
  'userIdentity',
  'eventSourceARN',
] as const;

/**
 * The mappings filter criteria are checked for: `stream` is a Kinesis or DynamoDB Streams mapping
 * not yet known which (the settings' `stream.filters`: either source's keys).
 */
export type FilterSource = 'sqs' | 'kafka' | 'kinesis' | 'dynamodb-streams' | 'stream';

/** The top-level keys a pattern of `source` may name. */
function allowedTopLevelKeys(source: FilterSource): readonly string[] {
  switch (source) {
    case 'sqs':
    case 'kafka':
    case 'kinesis':
      return [filterDataKey[source]];
    case 'dynamodb-streams':
      return DYNAMODB_STREAM_FILTER_KEYS;
    case 'stream':
      return [filterDataKey.kinesis, ...DYNAMODB_STREAM_FILTER_KEYS];
  }
}

const SOURCE_NAMES: Record<FilterSource, string> = {
  sqs: 'an SQS',
  kafka: 'a Kafka',
  kinesis: 'a Kinesis',
  'dynamodb-streams': 'a DynamoDB Streams',
  stream: 'a Kinesis or DynamoDB Streams',
};

/** The comparison operators of Lambda event filtering, as the keys of a rule object. */
export const FILTER_OPERATORS = ['prefix', 'suffix', 'equals-ignore-case', 'anything-but', 'numeric', 'exists'] as const;

/**
 * Numbers a numeric rule may hold: EventBridge's range, which Lambda's filtering shares
 * (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-create-pattern-operators.html#eb-filtering-numeric-matching).
 */
const NUMERIC_LIMIT = 5e9;

/**
 * Checks the filters of one event source mapping against Lambda's rules and returns one sentence
 * per broken rule (empty when all hold): a list of at most {@link MAX_FILTERS_PER_MAPPING} patterns,
 * each a non-empty JSON object of at most {@link MAX_FILTER_PATTERN_LENGTH} characters, whose
 * top-level keys are the source's data key ({@link filterDataKey}: `body` for SQS, `value` for
 * Kafka, `data` for Kinesis), a DynamoDB Streams record's fields
 * ({@link DYNAMODB_STREAM_FILTER_KEYS}), or `$or`, and whose rules follow
 * {@link filterPatternGrammarProblems}.
 *
 * @param filters - the patterns, as given (any value: a settings file is not type-checked)
 * @param source - which mapping they are for
 * @param name - how the settings name them in a message, e.g. `function.filters`
 */
export function filterCriteriaProblems(filters: unknown, source: FilterSource, name: string): string[] {
  if (filters === undefined) return [];
  if (!Array.isArray(filters)) return [`${name} must be a list of filter patterns, got ${describe(filters)}`];
  const problems: string[] = [];
  if (filters.length > MAX_FILTERS_PER_MAPPING) {
    problems.push(
      `${name} has ${filters.length} filter patterns; an event source mapping has at most ${MAX_FILTERS_PER_MAPPING} by default ` +
        '(AWS quota; combine patterns with "$or" or with lists of values)',
    );
  }
  const allowed = allowedTopLevelKeys(source);
  filters.forEach((pattern: unknown, index) => {
    const where = `${name}[${index}]`;
    if (!isObject(pattern)) {
      problems.push(`${where} must be a JSON object (a filter pattern), got ${describe(pattern)}`);
      return;
    }
    const length = JSON.stringify(pattern).length;
    if (length > MAX_FILTER_PATTERN_LENGTH) {
      problems.push(`${where} is ${length} characters of JSON; a filter pattern has at most ${MAX_FILTER_PATTERN_LENGTH} (AWS rule)`);
    }
    problems.push(...topLevelProblems(pattern, allowed, source, where));
    problems.push(...filterPatternGrammarProblems(pattern, where));
  });
  return problems;
}

/** The top-level keys of a pattern (and of its top-level `$or` branches): the source's keys only. */
function topLevelProblems(pattern: Record<string, unknown>, allowed: readonly string[], source: FilterSource, where: string): string[] {
  const problems: string[] = [];
  const keys = Object.keys(pattern);
  if (keys.length === 0) problems.push(`${where} is empty: it would let every record through; leave it out instead`);
  for (const key of keys) {
    if (key === '$or') {
      const branches = pattern[key];
      if (Array.isArray(branches)) {
        branches.forEach((branch: unknown, index) => {
          if (isObject(branch)) problems.push(...topLevelProblems(branch, allowed, source, `${where}.$or[${index}]`));
        });
      }
      continue;
    }
    if (!allowed.includes(key)) {
      const example = allowed[0] === 'eventID' ? 'eventName' : allowed[0]!;
      problems.push(
        `${where} filters on "${key}": ${SOURCE_NAMES[source]} event source mapping filters only on ` +
          `${allowed.length === 1 ? `the "${allowed[0]}" key` : `the keys ${allowed.map((k) => `"${k}"`).join(', ')}`} (AWS rule), e.g. { "${example}": ${example === 'eventName' ? '["INSERT"]' : '{ "type": ["PaymentCaptured"] }'} }`,
      );
    }
  }
  return problems;
}

/**
 * Checks a filter pattern's grammar (whatever its source) and returns one sentence per problem:
 * every key holds a non-empty list of rules, a nested pattern, or (for `$or`) a list of at least two
 * patterns; every rule is a value (string, number, boolean, `null`) or an object with exactly one
 * of {@link FILTER_OPERATORS}, with an operand of the right type (`prefix`, `suffix`,
 * `equals-ignore-case`: a string; `exists`: a boolean; `anything-but`: a string, a number, or a
 * non-empty list of strings or of numbers; `numeric`: `["=", n]`, or one or two comparisons
 * `<`, `<=`, `>`, `>=` making a lower and an upper bound, numbers within ±5e9). EventBridge's
 * other operators (`wildcard`, `cidr`, `anything-but` with `prefix`, …) are refused: Lambda's
 * event filtering does not list them.
 *
 * @param pattern - the pattern
 * @param where - how to name it in the messages
 */
export function filterPatternGrammarProblems(pattern: unknown, where = 'filter pattern'): string[] {
  if (!isObject(pattern)) return [`${where} must be a JSON object, got ${describe(pattern)}`];
  const problems: string[] = [];
  for (const [key, rule] of Object.entries(pattern)) {
    const at = `${where}.${key}`;
    if (key === '$or') {
      if (!Array.isArray(rule) || rule.length < 2 || !rule.every(isObject)) {
        problems.push(`${at} must be a list of at least two filter patterns (objects), got ${describe(rule)}`);
        continue;
      }
      rule.forEach((branch, index) => problems.push(...filterPatternGrammarProblems(branch, `${at}[${index}]`)));
    } else if (Array.isArray(rule)) {
      if (rule.length === 0) problems.push(`${at} is an empty list of rules: it matches nothing`);
      rule.forEach((item: unknown, index) => {
        const problem = ruleProblem(item);
        if (problem !== undefined) problems.push(`${at}[${index}] ${problem}`);
      });
    } else if (isObject(rule)) {
      if (Object.keys(rule).length === 0) problems.push(`${at} is an empty pattern`);
      problems.push(...filterPatternGrammarProblems(rule, at));
    } else {
      problems.push(`${at} must be a list of rules (e.g. ["value"]) or a nested pattern, got ${describe(rule)}`);
    }
  }
  return problems;
}

/** What is wrong with one rule of a list, or `undefined`. */
function ruleProblem(rule: unknown): string | undefined {
  if (rule === null || typeof rule === 'string' || typeof rule === 'boolean') return undefined;
  if (typeof rule === 'number') return Number.isFinite(rule) ? undefined : `is not a finite number`;
  if (!isObject(rule)) return `must be a value or a comparison operator object, got ${describe(rule)}`;
  const keys = Object.keys(rule);
  if (keys.length !== 1) return `must have exactly one operator (${FILTER_OPERATORS.join(', ')}), got ${describe(rule)}`;
  const operator = keys[0]!;
  const operand = rule[operator];
  switch (operator) {
    case 'prefix':
    case 'suffix':
    case 'equals-ignore-case':
      return typeof operand === 'string' ? undefined : `${operator} needs a string, got ${describe(operand)}`;
    case 'exists':
      return typeof operand === 'boolean' ? undefined : `exists needs true or false, got ${describe(operand)}`;
    case 'anything-but': {
      if (typeof operand === 'string' || (typeof operand === 'number' && Number.isFinite(operand))) return undefined;
      const list = Array.isArray(operand) ? (operand as unknown[]) : undefined;
      if (list !== undefined && list.length > 0 && (list.every((v) => typeof v === 'string') || list.every((v) => typeof v === 'number'))) {
        return undefined;
      }
      return `anything-but needs a string, a number, or a non-empty list of strings or of numbers (Lambda's "not" operator), got ${describe(operand)}`;
    }
    case 'numeric':
      return numericProblem(operand);
    default:
      return `uses the operator "${operator}", which Lambda event filtering does not support (it supports ${FILTER_OPERATORS.join(', ')}, and lists of values)`;
  }
}

/** What is wrong with a `numeric` operand, or `undefined`. */
function numericProblem(operand: unknown): string | undefined {
  const usage = 'numeric needs ["=", n] or one or two comparisons making a range, e.g. [">", 10, "<=", 20]';
  if (!Array.isArray(operand) || (operand.length !== 2 && operand.length !== 4)) return `${usage}, got ${describe(operand)}`;
  const pairs: [unknown, unknown][] = [];
  for (let i = 0; i < operand.length; i += 2) pairs.push([operand[i], operand[i + 1]]);
  for (const [operator, value] of pairs) {
    if (!['=', '<', '<=', '>', '>='].includes(operator as string)) return `${usage}: "${String(operator)}" is not =, <, <=, > or >=`;
    if (typeof value !== 'number' || !Number.isFinite(value) || Math.abs(value) > NUMERIC_LIMIT) {
      return `${usage}: ${describe(value)} is not a number from -5e9 to 5e9`;
    }
  }
  if (pairs.length === 2) {
    const lower = pairs.find(([operator]) => operator === '>' || operator === '>=');
    const upper = pairs.find(([operator]) => operator === '<' || operator === '<=');
    if (lower === undefined || upper === undefined) return `${usage}: a range needs one lower bound (>, >=) and one upper bound (<, <=)`;
    if ((lower[1] as number) >= (upper[1] as number)) return `${usage}: the range ${describe(operand)} is empty`;
  }
  return undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function describe(value: unknown): string {
  return value === undefined ? 'nothing' : JSON.stringify(value);
}
