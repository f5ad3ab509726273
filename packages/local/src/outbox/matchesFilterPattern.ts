/**
 * The part of Lambda's event filtering that the local stream poller needs: equality matching.
 *
 * @module
 */

/**
 * A Lambda event filter pattern restricted to equality: each key maps to a nested pattern or to
 * a list of allowed values (strings, numbers, booleans or `null`), e.g.
 * `{ "eventName": ["INSERT"], "dynamodb": { "NewImage": { "kind": { "S": ["outbox"] } } } }`.
 */
export interface FilterPattern {
  readonly [key: string]: FilterPattern | readonly (string | number | boolean | null)[];
}

/** A pattern uses a rule this module does not evaluate (`prefix`, `anything-but`, `numeric`, …). */
export class UnsupportedFilterRuleError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsupportedFilterRuleError';
  }
}

/**
 * Whether `value` (a stream record as Lambda's filter sees it, the JSON of the event record)
 * matches `pattern`, as Lambda's filtering does for equality rules
 * (https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html): every key of the
 * pattern must be present; a list matches when the value equals one of its entries (a value that
 * is a list matches when one of its elements does); a nested pattern matches a nested object.
 *
 * @throws UnsupportedFilterRuleError when the pattern holds a content-filter object (`{ "prefix": … }`
 *   and the like) or is not an object: the local poller refuses what it cannot evaluate rather
 *   than let every record through
 */
export function matchesFilterPattern(pattern: FilterPattern, value: unknown): boolean {
  if (pattern === null || typeof pattern !== 'object' || Array.isArray(pattern)) {
    throw new UnsupportedFilterRuleError('a filter pattern must be a JSON object');
  }
  for (const [key, rule] of Object.entries(pattern)) {
    const field =
      value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>)[key] : undefined;
    if (Array.isArray(rule)) {
      for (const allowed of rule) {
        if (allowed !== null && typeof allowed === 'object') {
          throw new UnsupportedFilterRuleError(
            `filter rule ${JSON.stringify(allowed)} under ${JSON.stringify(key)} is not an equality rule; the local poller evaluates only lists of values`,
          );
        }
      }
      if (field === undefined) return false;
      const candidates = Array.isArray(field) ? field : [field];
      if (!candidates.some((candidate) => rule.some((allowed) => allowed === candidate))) return false;
    } else if (rule !== null && typeof rule === 'object') {
      if (field === null || typeof field !== 'object' || !matchesFilterPattern(rule as FilterPattern, field)) return false;
    } else {
      throw new UnsupportedFilterRuleError(`filter rule under ${JSON.stringify(key)} must be a list of values or a nested pattern`);
    }
  }
  return true;
}
