/**
 * Factories of Kafka events as Lambda's MSK event source mapping delivers them, and the C8
 * fixture (`test/events/msk-event-c8.json`).
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import type { KafkaEvent, KafkaRecord } from '../../packages/idempotent-consumer/src/batch/kafkaEvent.js';

/** The MSK cluster ARN of the tests. */
export const MSK_CLUSTER_ARN = 'arn:aws:kafka:us-east-1:000000000000:cluster/orders/11111111-2222-3333-4444-555555555555-1';

/** Base64 of a string's UTF-8 bytes, as Kafka keys and values appear in the event. */
export const base64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');

/**
 * One record of an MSK event. `value` is a body (an object is written as JSON) or `null` for a
 * tombstone; `key` is text (base64-encoded here), `null` for none, and defaults to the body's
 * `orderId`.
 */
export function kafkaRecord(
  topic: string,
  partition: number,
  offset: number,
  value: string | Record<string, unknown> | null,
  options: { key?: string | null; headers?: Record<string, number[]>[]; timestamp?: number } = {},
): KafkaRecord {
  const body = value === null ? null : typeof value === 'string' ? value : JSON.stringify(value);
  const orderId = typeof value === 'object' && value !== null && typeof value.orderId === 'string' ? value.orderId : null;
  const key = options.key === undefined ? orderId : options.key;
  return {
    topic,
    partition,
    offset,
    timestamp: options.timestamp ?? 1_767_268_800_000 + offset,
    timestampType: 'CREATE_TIME',
    ...(key !== null ? { key: base64(key) } : {}),
    value: body === null ? null : base64(body),
    headers: options.headers ?? [],
  };
}

/** An MSK event of these records, grouped by `"<topic>-<partition>"` in the order given. */
export function mskEvent(...records: KafkaRecord[]): KafkaEvent {
  const grouped: Record<string, KafkaRecord[]> = {};
  for (const record of records) (grouped[`${record.topic}-${record.partition}`] ??= []).push(record);
  return {
    eventSource: 'aws:kafka',
    eventSourceArn: MSK_CLUSTER_ARN,
    bootstrapServers: 'b-1.orders.kafka.us-east-1.amazonaws.com:9098',
    records: grouped,
  };
}

/**
 * Case C8's event: topic `orders`, partition 0, offsets 10..13 (10 `OrderPaid` e-10/O-10, 11
 * the value `not-json`, 12 `OrderPaid` e-12/O-12, 13 `OrderPaid` e-13/O-13), values base64.
 */
export function c8Event(): KafkaEvent {
  return JSON.parse(readFileSync(new URL('../events/msk-event-c8.json', import.meta.url), 'utf8')) as KafkaEvent;
}
