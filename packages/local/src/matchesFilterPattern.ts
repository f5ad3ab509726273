/**
 * Lambda's event filtering, evaluated as the event source mappings evaluate it: the local pollers
 * (SQS, Kafka, DynamoDB Streams) keep or drop records with it.
 *
 * @module
 */
import { type FilterPattern, filterPatternGrammarProblems } from 'idempotent-consumer/settings';

export type { FilterPattern, FilterRule, FilterValue } from 'idempotent-consumer/settings';

/** A pattern breaks Lambda's filter grammar or uses a rule Lambda does not support (`wildcard`, `cidr`, …). */
export class UnsupportedFilterRuleError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsupportedFilterRuleError';
  }
}

/** Patterns already checked (a pattern is checked once, not per record). */
const checked = new WeakSet<object>();

/**
 * Checks a pattern against Lambda's filter grammar (`filterPatternGrammarProblems`), once per
 * pattern object.
 *
 * @throws UnsupportedFilterRuleError listing the problems, when there are any
 */
export function assertFilterPattern(pattern: FilterPattern): void {
  if (pattern !== null && typeof pattern === 'object' && checked.has(pattern)) return;
  const problems = filterPatternGrammarProblems(pattern);
  if (problems.length > 0) throw new UnsupportedFilterRuleError(problems.join('; '));
  checked.add(pattern);
}

/**
 * Whether `value` (a record as Lambda's filter sees it: the JSON of the event record, with its data
 * decoded) matches `pattern`, with the semantics of Lambda's event filtering, EventBridge's
 * (https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html,
 * https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-create-pattern-operators.html):
 *
 * - every key of the pattern must match ("and"); `"$or": [p1, p2, …]` matches when one of its
 *   patterns does;
 * - a list of rules matches when one rule matches ("or"); a field that holds a list matches when
 *   one of its elements does;
 * - a value rule matches an equal value (strings exactly, without case folding; `null` matches
 *   `null`, not a missing field); `prefix`, `suffix` and `equals-ignore-case` match strings;
 *   `numeric` matches numbers; `anything-but` matches a string or number that is none of its values;
 *   all of these need the field to be present. `{ "exists": false }` matches a missing field only,
 *   `{ "exists": true }` a present one;
 * - a nested pattern matches a nested object (or one object of a list of objects); under a missing
 *   field only `exists: false` rules can match.
 *
 * Difference from AWS: numbers are compared by value after JSON parsing, so 300 equals 300.0 here,
 * where Lambda compares their text.
 *
 * @throws UnsupportedFilterRuleError when the pattern breaks the grammar (see {@link assertFilterPattern}):
 *   the local pollers refuse what Lambda would refuse rather than let every record through
 */
export function matchesFilterPattern(pattern: FilterPattern, value: unknown): boolean {
  assertFilterPattern(pattern);
  return matchesObject(pattern, value);
}

type Present = { readonly present: true; readonly value: unknown } | { readonly present: false };

function matchesObject(pattern: FilterPattern, value: unknown): boolean {
  for (const [key, rule] of Object.entries(pattern)) {
    if (key === '$or') {
      if (!(rule as readonly FilterPattern[]).some((branch) => matchesObject(branch, value))) return false;
      continue;
    }
    const field: Present = isObject(value) && Object.hasOwn(value, key) ? { present: true, value: value[key] } : { present: false };
    if (Array.isArray(rule)) {
      if (!matchesRules(rule as readonly unknown[], field)) return false;
    } else if (field.present && Array.isArray(field.value)) {
      if (!field.value.some((element) => matchesObject(rule as FilterPattern, element))) return false;
    } else if (!matchesObject(rule as FilterPattern, field.present ? field.value : undefined)) {
      return false;
    }
  }
  return true;
}

function matchesRules(rules: readonly unknown[], field: Present): boolean {
  const values = field.present ? (Array.isArray(field.value) ? field.value : [field.value]) : [];
  return rules.some((rule) => {
    if (isObject(rule) && 'exists' in rule) return field.present === rule.exists;
    return values.some((value) => matchesRule(rule, value));
  });
}

function matchesRule(rule: unknown, value: unknown): boolean {
  if (!isObject(rule)) return rule === value;
  const [operator, operand] = Object.entries(rule)[0] as [string, unknown];
  switch (operator) {
    case 'prefix':
      return typeof value === 'string' && value.startsWith(operand as string);
    case 'suffix':
      return typeof value === 'string' && value.endsWith(operand as string);
    case 'equals-ignore-case':
      return typeof value === 'string' && value.toLowerCase() === (operand as string).toLowerCase();
    case 'anything-but': {
      if (typeof value !== 'string' && typeof value !== 'number') return false;
      const excluded = Array.isArray(operand) ? (operand as unknown[]) : [operand];
      return !excluded.includes(value);
    }
    case 'numeric':
      return typeof value === 'number' && numericHolds(operand as readonly (string | number)[], value);
    default:
      return false; // assertFilterPattern refused any other operator
  }
}

function numericHolds(comparisons: readonly (string | number)[], value: number): boolean {
  for (let i = 0; i < comparisons.length; i += 2) {
    const bound = comparisons[i + 1] as number;
    const holds =
      comparisons[i] === '='
        ? value === bound
        : comparisons[i] === '<'
          ? value < bound
          : comparisons[i] === '<='
            ? value <= bound
            : comparisons[i] === '>'
              ? value > bound
              : value >= bound;
    if (!holds) return false;
  }
  return true;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
