/**
 * Whether an SQS message or a Kafka record passes an event source mapping's filter criteria, as
 * Lambda decides it before invoking the function.
 *
 * @module
 */
import type { DynamoDBRecord, KinesisStreamRecord, SQSRecord } from 'aws-lambda';
import type { KafkaRecord } from 'idempotent-consumer/kafka';
import { type FilterPattern, filterDataKey } from 'idempotent-consumer/settings';
import { assertFilterPattern, matchesFilterPattern } from './matchesFilterPattern.js';

/**
 * Whether an SQS record (as the function would receive it) passes `filters`: no filters, or one
 * pattern that matches. The pattern's `body` is matched against the body parsed as JSON when the
 * pattern filters its fields (`{ body: { … } }`), against the body as a string when the pattern
 * lists rules (`{ body: [ … ] }`); a JSON body under a string pattern, or a non-JSON body under a
 * field pattern, fails that pattern: Lambda drops the message
 * (https://docs.aws.amazon.com/lambda/latest/dg/with-sqs-filtering.html, and the table "Incoming
 * message body format / Filter pattern body format" of
 * https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html).
 *
 * @throws UnsupportedFilterRuleError when a pattern breaks Lambda's filter grammar
 */
export function sqsRecordPasses(filters: readonly FilterPattern[] | undefined, record: SQSRecord): boolean {
  return recordPasses(filters, record as unknown as Record<string, unknown>, filterDataKey.sqs, record.body);
}

/**
 * Whether a Kafka record (as the function would receive it: `value` in base64, `null` for a
 * tombstone) passes `filters`, as {@link sqsRecordPasses} with the `value` key: the value is decoded
 * from base64 (UTF-8) and matched as JSON or as a string by the pattern's form
 * (https://docs.aws.amazon.com/lambda/latest/dg/kafka-filtering.html). A tombstone has no value:
 * only `exists: false` matches it.
 *
 * @throws UnsupportedFilterRuleError when a pattern breaks Lambda's filter grammar
 */
export function kafkaRecordPasses(filters: readonly FilterPattern[] | undefined, record: KafkaRecord): boolean {
  const value = record.value === null || record.value === undefined ? undefined : Buffer.from(record.value, 'base64').toString('utf8');
  return recordPasses(filters, record as unknown as Record<string, unknown>, filterDataKey.kafka, value);
}

/**
 * Whether a Kinesis record (as the function would receive it: `kinesis.data` in base64) passes
 * `filters`, as {@link kafkaRecordPasses} with the `data` key: the data is decoded from base64
 * (UTF-8) and matched as JSON or as a string by the pattern's form
 * (https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis-filtering.html: Kinesis mappings
 * filter only on `data`).
 *
 * @throws UnsupportedFilterRuleError when a pattern breaks Lambda's filter grammar
 */
export function kinesisRecordPasses(filters: readonly FilterPattern[] | undefined, record: KinesisStreamRecord): boolean {
  const data = Buffer.from(record.kinesis.data, 'base64').toString('utf8');
  return recordPasses(filters, { data: record.kinesis.data }, filterDataKey.kinesis, data);
}

/**
 * Whether a DynamoDB Streams record (as the function would receive it, images in DynamoDB JSON)
 * passes `filters`: a pattern is matched against the record's own fields (`eventName`,
 * `dynamodb.NewImage`, …; https://docs.aws.amazon.com/lambda/latest/dg/with-ddb-filtering.html).
 *
 * @throws UnsupportedFilterRuleError when a pattern breaks Lambda's filter grammar
 */
export function dynamoDbStreamRecordPasses(filters: readonly FilterPattern[] | undefined, record: DynamoDBRecord): boolean {
  if (filters === undefined || filters.length === 0) return true;
  return filters.some((pattern) => {
    assertFilterPattern(pattern);
    return matchesFilterPattern(pattern, record);
  });
}

/**
 * Checks every pattern of `filters` against Lambda's grammar now, so that a poller refuses bad
 * filters at its start rather than at its first record.
 *
 * @throws UnsupportedFilterRuleError when a pattern breaks Lambda's filter grammar
 */
export function assertFilters(filters: readonly FilterPattern[] | undefined): void {
  for (const pattern of filters ?? []) assertFilterPattern(pattern);
}

const notJson = Symbol('not JSON');

function recordPasses(
  filters: readonly FilterPattern[] | undefined,
  record: Record<string, unknown>,
  dataKey: string,
  data: string | undefined,
): boolean {
  if (filters === undefined || filters.length === 0) return true;
  let parsed: unknown = notJson;
  if (data !== undefined) {
    try {
      parsed = JSON.parse(data);
    } catch {
      parsed = notJson;
    }
  }
  const view = (form: 'json' | 'string' | 'none'): Record<string, unknown> | undefined => {
    const { [dataKey]: _data, ...rest } = record;
    if (data === undefined) return rest;
    if (form === 'none') return rest;
    if (form === 'json') return parsed === notJson ? undefined : { ...rest, [dataKey]: parsed };
    return parsed === notJson ? { ...rest, [dataKey]: data } : undefined;
  };
  return filters.some((pattern) => {
    assertFilterPattern(pattern);
    // A top-level "$or" is spread into alternatives, so that each alternative sees the data in its own form.
    return alternatives(pattern).some((conjunction) =>
      conjunction.every((part) => {
        const rule = part[dataKey];
        const form = rule === undefined ? 'none' : Array.isArray(rule) ? 'string' : 'json';
        const seen = view(form);
        return seen !== undefined && matchesFilterPattern(part, seen);
      }),
    );
  });
}

/** The pattern as alternatives ("or") of conjunctions ("and") of patterns without a top-level `$or`. */
function alternatives(pattern: FilterPattern): FilterPattern[][] {
  const { $or: branches, ...rest } = pattern as Record<string, unknown>;
  if (!Array.isArray(branches)) return [[pattern]];
  const base = Object.keys(rest).length === 0 ? [] : [rest as FilterPattern];
  return (branches as FilterPattern[]).flatMap((branch) => alternatives(branch).map((conjunction) => [...base, ...conjunction]));
}
