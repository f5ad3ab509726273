/**
 * The bad-input corpus, as a table, for both the SQS handler and the Kafka handler of the café
 * consumer (built with the public API), against DynamoDB Local and the dead-letter queue: not
 * JSON, empty, arrays and scalars, prototype keys, deep nesting, 256 KiB and more, huge and odd
 * numbers, wrong types, long and ill-formed ids, odd Unicode (lone surrogates, BOM, RTL marks,
 * NUL), record shapes with missing fields, and two stateful ones (an order placed twice, a key
 * reused for another payload), in the spirit of the field cases C7, C18–C21.
 *
 * Each input is delivered once, first in a batch with a valid `OrderPlaced` after it (the rest of
 * its batch), on its first receive. For each: the handler does not throw and reports nothing for
 * retry; the valid message is applied; the input has its expected outcome, read from what is
 * stored — applied (its inbox row), or in the dead-letter queue once, with the expected reason,
 * on attempt 1 (never `RetriesExhausted`), its body byte for byte (or, when it is not text SQS
 * takes, in base64; when too large, in the payload bucket).
 */
import { GetObjectCommand } from '@aws-sdk/client-s3';
import type { Message } from '@aws-sdk/client-sqs';
import { DeleteMessageBatchCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { createIdempotentConsumer } from 'idempotent-consumer';
import type { KafkaEvent, KafkaRecord } from 'idempotent-consumer/kafka';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cafeConsumerOptions } from '../../examples/cafe/consumer.js';
import { readDeadLetterAttributes } from '../../packages/idempotent-consumer/src/dlq/deadLetterMessage.js';
import { readInboxRows } from '../../tools/prove/storedState.js';
import { cafeResources, orderState } from '../support/cafeHarness.js';
import { MSK_CLUSTER_ARN } from '../support/kafkaEvents.js';
import { lambdaContext, sqsRecord } from '../support/sqsEvents.js';
import { describeUnlessDeployedStack, type TestResources } from '../support/testResources.js';

/** What must become of an input. */
type Expected =
  /** Applied: its inbox row holds it. */
  | 'applied'
  /** Dead-lettered on its first attempt with this reason. */
  | { readonly reason: string }
  /** Either is right (the cases' own words for C18). */
  | { readonly appliedOr: string };

/** One kind of input. `body` gets the case number for unique ids. */
interface BadInput {
  readonly name: string;
  /** The body as text, or (Kafka only) raw bytes, `null` for a tombstone. */
  readonly body: (n: number) => string | Uint8Array | null;
  readonly expected: Expected;
  /** Messages delivered before it in the same batch (its order placed, its key taken). */
  readonly before?: (n: number) => readonly string[];
  /** Only for this source (a body SQS cannot carry, a Kafka record shape). */
  readonly only?: 'sqs' | 'kafka';
  /** A Kafka record's shape, changed. */
  readonly kafkaRecord?: (record: KafkaRecord) => KafkaRecord;
  /** An SQS record's shape, changed. */
  readonly sqsRecord?: (record: SQSRecord) => SQSRecord;
}

const AT = '2026-01-01T00:00:00Z';
const ids = (n: number) => ({ eventId: `bi-${n}`, orderId: `BI-${n}` });
/** A valid `OrderPlaced` of case `n`, with fields replaced or added. */
const placed = (n: number, fields: Record<string, unknown> = {}) =>
  JSON.stringify({ ...ids(n), type: 'OrderPlaced', occurredAt: AT, ...fields });
/** An `OrderPaid` of case `n`'s order, with fields replaced or added (its order is placed before it). */
const paid = (n: number, fields: Record<string, unknown> = {}) =>
  JSON.stringify({ eventId: `bi-${n}-paid`, orderId: `BI-${n}`, type: 'OrderPaid', occurredAt: AT, points: 10, ...fields });
const placeFirst = (n: number) => [placed(n)];
const without = (n: number, field: string) => {
  const body: Record<string, unknown> = { ...ids(n), type: 'OrderPlaced', occurredAt: AT };
  delete body[field];
  return JSON.stringify(body);
};
const nested = (depth: number, open: string, close: string, inner = '1') => `${open.repeat(depth)}${inner}${close.repeat(depth)}`;
const invalid = { reason: 'ValidationError' } as const;
const noKey = { reason: 'MissingIdempotencyKey' } as const;
const unknownType = { reason: 'UnknownMessageType' } as const;

/** The corpus. */
const corpus: readonly BadInput[] = [
  // Not JSON, or not an object.
  { name: 'plain text', body: () => 'not-json', expected: invalid },
  { name: 'an opening brace', body: () => '{', expected: invalid },
  { name: 'JSON cut short', body: (n) => placed(n).slice(0, 30), expected: invalid },
  { name: 'JSON null', body: () => 'null', expected: invalid },
  { name: 'JSON true', body: () => 'true', expected: invalid },
  { name: 'a JSON number', body: () => '42', expected: invalid },
  { name: 'a JSON string', body: (n) => JSON.stringify(placed(n)), expected: invalid },
  { name: 'an empty array', body: () => '[]', expected: invalid },
  { name: 'an array of the event', body: (n) => `[${placed(n)}]`, expected: invalid },
  { name: 'an empty object', body: () => '{}', expected: noKey },
  { name: 'white space only', body: () => ' \n\t ', expected: invalid },
  { name: 'the event in white space', body: (n) => `\n  ${placed(n)}  \n`, expected: 'applied' },
  { name: 'a trailing comma', body: (n) => `${placed(n).slice(0, -1)},}`, expected: invalid },
  { name: 'a comment', body: (n) => `/* event */ ${placed(n)}`, expected: invalid },
  { name: 'single quotes', body: (n) => placed(n).replaceAll('"', "'"), expected: invalid },
  { name: 'NaN', body: (n) => `${placed(n).slice(0, -1)},"x":NaN}`, expected: invalid },
  { name: 'two events back to back', body: (n) => `${placed(n)}${placed(n)}`, expected: invalid },
  { name: 'a byte-order mark before the JSON', body: (n) => `\uFEFF${placed(n)}`, expected: invalid },
  { name: 'an empty body', body: () => '', expected: invalid, only: 'kafka' },
  { name: 'a tombstone (no value)', body: () => null, expected: invalid, only: 'kafka' },
  { name: 'a value that is not UTF-8', body: () => Uint8Array.from([0x7b, 0xff, 0xfe, 0x7d]), expected: invalid, only: 'kafka' },
  {
    name: 'a raw NUL byte in the value',
    body: (n) => Buffer.from(placed(n).replace('OrderPlaced', 'Order\u0000Placed')),
    expected: invalid,
    only: 'kafka',
  },
  {
    name: 'a lone surrogate as raw UTF-8 bytes (CESU)',
    body: () => Uint8Array.from([0x22, 0xed, 0xa0, 0x80, 0x22]),
    expected: invalid,
    only: 'kafka',
  },

  // The idempotency key.
  { name: 'no eventId', body: (n) => without(n, 'eventId'), expected: noKey },
  { name: 'eventId a number', body: (n) => placed(n, { eventId: 42 }), expected: noKey },
  { name: 'eventId null', body: (n) => placed(n, { eventId: null }), expected: noKey },
  { name: 'eventId empty', body: (n) => placed(n, { eventId: '' }), expected: noKey },
  { name: 'eventId blank', body: (n) => placed(n, { eventId: '   ' }), expected: noKey },
  { name: 'eventId an array', body: (n) => placed(n, { eventId: ['e'] }), expected: noKey },
  { name: 'eventId an object', body: (n) => placed(n, { eventId: { id: 'e' } }), expected: noKey },
  { name: 'eventId true', body: (n) => placed(n, { eventId: true }), expected: noKey },
  {
    name: 'eventId nested 1,000 arrays deep',
    body: (n) => `${placed(n).slice(0, -1)},"eventId":${nested(1000, '[', ']', '"e"')}}`,
    expected: noKey,
  },
  { name: 'eventId of 256 characters', body: (n) => placed(n, { eventId: `bi-${n}-`.padEnd(256, 'e') }), expected: 'applied' },
  { name: 'eventId of 257 characters', body: (n) => placed(n, { eventId: `bi-${n}-`.padEnd(257, 'e') }), expected: invalid },
  { name: 'eventId of 5,000 characters', body: (n) => placed(n, { eventId: `bi-${n}-`.padEnd(5000, 'e') }), expected: invalid },
  { name: 'eventId with a lone high surrogate', body: (n) => placed(n).replace(`"bi-${n}"`, `"bi-${n}-\\ud800"`), expected: invalid },
  { name: 'eventId with a lone low surrogate', body: (n) => placed(n).replace(`"bi-${n}"`, `"bi-${n}-\\udc00"`), expected: invalid },
  { name: 'eventId with an escaped NUL', body: (n) => placed(n).replace(`"bi-${n}"`, `"bi-${n}-\\u0000"`), expected: 'applied' },
  { name: 'eventId with emoji', body: (n) => placed(n, { eventId: `bi-${n}-🧾☕` }), expected: 'applied' },
  { name: 'eventId with a right-to-left override', body: (n) => placed(n, { eventId: `bi-${n}-\u202Eevil` }), expected: 'applied' },
  { name: 'eventId with a BOM character inside', body: (n) => placed(n, { eventId: `bi-${n}-\uFEFF` }), expected: 'applied' },
  { name: 'eventId with separators (#, /, :)', body: (n) => placed(n, { eventId: `bi-${n}#key#/x:y` }), expected: 'applied' },
  { name: 'eventId "__proto__"', body: (n) => placed(n, { eventId: '__proto__', orderId: `BI-${n}` }), expected: 'applied' },
  { name: 'eventId "constructor"', body: (n) => placed(n, { eventId: 'constructor' }), expected: 'applied' },
  {
    name: 'the same eventId twice, the last one kept',
    body: (n) => `{"eventId":"ignored-${n}",${placed(n).slice(1)}`,
    expected: 'applied',
  },

  // The other fields.
  { name: 'no type', body: (n) => without(n, 'type'), expected: unknownType },
  { name: 'type a number', body: (n) => placed(n, { type: 42 }), expected: unknownType },
  { name: 'type of another case', body: (n) => placed(n, { type: 'orderplaced' }), expected: unknownType },
  { name: 'type unknown', body: (n) => placed(n, { type: 'OrderRefunded' }), expected: unknownType },
  { name: 'type "__proto__"', body: (n) => placed(n, { type: '__proto__' }), expected: unknownType },
  { name: 'type "toString"', body: (n) => placed(n, { type: 'toString' }), expected: unknownType },
  { name: 'type "constructor"', body: (n) => placed(n, { type: 'constructor' }), expected: unknownType },
  { name: 'type of 200 KB', body: (n) => placed(n, { type: 'A'.repeat(200_000) }), expected: unknownType },
  { name: 'no orderId', body: (n) => without(n, 'orderId'), expected: invalid },
  { name: 'orderId a number', body: (n) => placed(n, { orderId: 42 }), expected: invalid },
  { name: 'orderId empty', body: (n) => placed(n, { orderId: '' }), expected: invalid },
  { name: 'orderId of 257 characters', body: (n) => placed(n, { orderId: `BI-${n}-`.padEnd(257, 'o') }), expected: invalid },
  { name: 'orderId with a lone surrogate (C19)', body: (n) => placed(n).replace(`"BI-${n}"`, `"BI-${n}-\\ud800"`), expected: invalid },
  {
    name: 'orderId of 120 emoji (4-byte characters)',
    body: (n) => placed(n, { orderId: `${n}-${'😀'.repeat(120)}` }),
    expected: 'applied',
  },
  { name: 'orderId "__proto__"', body: (n) => placed(n, { orderId: '__proto__' }), expected: 'applied' },
  { name: 'orderId "constructor"', body: (n) => placed(n, { orderId: 'constructor' }), expected: 'applied' },
  { name: 'no occurredAt', body: (n) => without(n, 'occurredAt'), expected: invalid },
  { name: 'occurredAt not a date', body: (n) => placed(n, { occurredAt: 'yesterday' }), expected: invalid },
  { name: 'occurredAt in epoch seconds', body: (n) => placed(n, { occurredAt: 1_767_225_600 }), expected: invalid },
  { name: 'occurredAt without a time zone', body: (n) => placed(n, { occurredAt: '2026-01-01T00:00:00' }), expected: invalid },
  { name: 'occurredAt with an offset', body: (n) => placed(n, { occurredAt: '2026-01-01T01:00:00+01:00' }), expected: 'applied' },

  // Numbers.
  { name: 'points a string', body: (n) => paid(n, { points: '10' }), before: placeFirst, expected: invalid },
  { name: 'points "ten"', body: (n) => paid(n, { points: 'ten' }), before: placeFirst, expected: invalid },
  { name: 'points null', body: (n) => paid(n, { points: null }), before: placeFirst, expected: invalid },
  { name: 'points missing', body: (n) => paid(n, { points: undefined }), before: placeFirst, expected: invalid },
  { name: 'points negative', body: (n) => paid(n, { points: -1 }), before: placeFirst, expected: invalid },
  { name: 'points a fraction', body: (n) => paid(n, { points: 0.5 }), before: placeFirst, expected: invalid },
  { name: 'points 1e-7', body: (n) => paid(n).replace('"points":10', '"points":1e-7'), before: placeFirst, expected: invalid },
  { name: 'points 1e308', body: (n) => paid(n).replace('"points":10', '"points":1e308'), before: placeFirst, expected: invalid },
  { name: 'points 1e400 (Infinity)', body: (n) => paid(n).replace('"points":10', '"points":1e400'), before: placeFirst, expected: invalid },
  {
    name: 'points beyond the safe integers',
    body: (n) => paid(n).replace('"points":10', '"points":9007199254740993'),
    before: placeFirst,
    expected: invalid,
  },
  {
    name: 'points the largest safe integer',
    body: (n) => paid(n, { points: Number.MAX_SAFE_INTEGER }),
    before: placeFirst,
    expected: 'applied',
  },
  { name: 'points -0', body: (n) => paid(n).replace('"points":10', '"points":-0'), before: placeFirst, expected: 'applied' },
  { name: 'points 1.0', body: (n) => paid(n).replace('"points":10', '"points":1.0'), before: placeFirst, expected: 'applied' },
  { name: 'points 1E2 (exponent)', body: (n) => paid(n).replace('"points":10', '"points":1E2'), before: placeFirst, expected: 'applied' },
  { name: 'points on OrderPlaced (a field it does not have)', body: (n) => placed(n, { points: 10 }), expected: 'applied' },

  // Prototype keys.
  { name: '__proto__ holding the event', body: (n) => `{"__proto__":${placed(n)}}`, expected: noKey },
  {
    name: '__proto__ beside the event',
    body: (n) => `${placed(n).slice(0, -1)},"__proto__":{"polluted":true,"eventId":"x"}}`,
    expected: 'applied',
  },
  {
    name: 'constructor.prototype beside the event',
    body: (n) => `${placed(n).slice(0, -1)},"constructor":{"prototype":{"polluted":true}}}`,
    expected: 'applied',
  },
  { name: 'toString and valueOf fields', body: (n) => placed(n, { toString: 'x', valueOf: 1, hasOwnProperty: null }), expected: 'applied' },

  // Deep nesting and size (C7, C18, C20).
  {
    name: '3,200 nested arrays in an unknown field',
    body: (n) => `${placed(n).slice(0, -1)},"x":${nested(3200, '[', ']')}}`,
    expected: 'applied',
  },
  {
    name: '10,000 nested objects in an unknown field',
    body: (n) => `${placed(n).slice(0, -1)},"x":${nested(10_000, '{"a":', '}')}}`,
    expected: 'applied',
  },
  {
    name: '100,000 nested arrays in an unknown field',
    body: (n) => `${placed(n).slice(0, -1)},"x":${nested(100_000, '[', ']')}}`,
    expected: { appliedOr: 'ValidationError' },
  },
  { name: 'a body of 256 KiB that is not JSON', body: () => 'x'.repeat(262_144), expected: invalid },
  { name: 'the event with 200 KiB of padding', body: (n) => placed(n, { padding: 'p'.repeat(204_800) }), expected: 'applied' },
  { name: '800 KiB that are not UTF-8 (offloaded)', body: () => new Uint8Array(819_200).fill(0xff), expected: invalid, only: 'kafka' },

  // Odd Unicode in the body.
  { name: 'emoji in an unknown field', body: (n) => placed(n, { note: '☕🥐 merci' }), expected: 'applied' },
  { name: 'an escaped NUL in an unknown field', body: (n) => `${placed(n).slice(0, -1)},"note":"a\\u0000b"}`, expected: 'applied' },
  { name: 'a lone surrogate in an unknown field', body: (n) => `${placed(n).slice(0, -1)},"note":"\\udfff"}`, expected: 'applied' },
  { name: 'right-to-left marks around the type', body: (n) => placed(n, { type: '\u200FOrderPlaced\u200E' }), expected: unknownType },
  { name: 'a zero-width space in the type', body: (n) => placed(n, { type: 'Order\u200BPlaced' }), expected: unknownType },
  { name: 'a fullwidth type', body: (n) => placed(n, { type: 'ＯｒｄｅｒＰｌａｃｅｄ' }), expected: unknownType },

  // Record shapes with fields missing.
  {
    name: 'an SQS record without attributes',
    body: (n) => placed(n),
    expected: 'applied',
    only: 'sqs',
    sqsRecord: ({ attributes: _a, ...record }) => record as SQSRecord,
  },
  {
    name: 'an SQS record without messageAttributes',
    body: (n) => placed(n),
    expected: 'applied',
    only: 'sqs',
    sqsRecord: ({ messageAttributes: _m, ...record }) => record as SQSRecord,
  },
  {
    name: 'an SQS record whose receive count is not a number',
    body: (n) => placed(n),
    expected: 'applied',
    only: 'sqs',
    sqsRecord: (record) => ({ ...record, attributes: { ...record.attributes, ApproximateReceiveCount: 'many' } }),
  },
  {
    name: 'an SQS record without a body',
    body: () => 'x',
    expected: invalid,
    only: 'sqs',
    sqsRecord: ({ body: _b, ...record }) => record as SQSRecord,
  },
  {
    name: "an SQS record with the producer's odd attributes",
    body: (n) => placed(n),
    expected: 'applied',
    only: 'sqs',
    sqsRecord: (record) => ({
      ...record,
      messageAttributes: {
        'ic.failureReason': { dataType: 'String', stringValue: 'forged' },
        source: { dataType: 'String', stringValue: 'web' },
      },
    }),
  },
  {
    name: 'a Kafka record without a key',
    body: (n) => placed(n),
    expected: 'applied',
    only: 'kafka',
    kafkaRecord: ({ key: _k, ...record }) => record as KafkaRecord,
  },
  {
    name: 'a Kafka record whose key is not UTF-8',
    body: (n) => placed(n),
    expected: 'applied',
    only: 'kafka',
    kafkaRecord: (record) => ({ ...record, key: Buffer.from([0xff, 0x00, 0xfe]).toString('base64') }),
  },
  {
    name: 'a Kafka record without headers',
    body: (n) => placed(n),
    expected: 'applied',
    only: 'kafka',
    kafkaRecord: ({ headers: _h, ...record }) => record as KafkaRecord,
  },
  {
    name: 'a Kafka record with 20 odd headers',
    body: (n) => placed(n),
    expected: 'applied',
    only: 'kafka',
    kafkaRecord: (record) => ({
      ...record,
      headers: Array.from({ length: 20 }, (_, i) => ({ [i % 2 === 0 ? `h.${i}` : 'AWS.bad']: [0xff, i] })),
    }),
  },

  // Stateful: the batch itself makes the input wrong.
  {
    name: 'an order placed twice under two event ids',
    body: (n) => placed(n, { eventId: `bi-${n}-again` }),
    before: placeFirst,
    expected: { reason: 'BusinessRuleViolation' },
  },
  {
    name: 'an event id reused for another payload',
    body: (n) => placed(n, { orderId: `BI-${n}-other` }),
    before: placeFirst,
    expected: { reason: 'IdempotencyConflict' },
  },
];

/** The idempotency key of an input, when it has one the inbox could hold (to read its inbox row or mark). */
function keyOf(body: string | Uint8Array | null): string | undefined {
  if (typeof body !== 'string') return undefined;
  try {
    const json = JSON.parse(body) as { eventId?: unknown };
    const key = json?.eventId;
    // Only a key the inbox can hold (1 to 1,024 bytes of well-formed Unicode) can have a row.
    return typeof key === 'string' && key.trim() !== '' && key.isWellFormed() && Buffer.byteLength(key) <= 1024 ? key : undefined;
  } catch {
    return undefined;
  }
}

/** The order id of an input's body, when it has one the orders table could hold (to read its order's inbox marks). */
function orderIdOf(body: string | Uint8Array | null): string | undefined {
  if (typeof body !== 'string') return undefined;
  try {
    const orderId = (JSON.parse(body) as { orderId?: unknown })?.orderId;
    return typeof orderId === 'string' && orderId !== '' && orderId.isWellFormed() && Buffer.byteLength(orderId) <= 1024
      ? orderId
      : undefined;
  } catch {
    return undefined;
  }
}

/** Every message of the DLQ, received and deleted. */
async function drain(env: TestResources): Promise<Message[]> {
  const all: Message[] = [];
  for (let empty = 0; empty < 2; ) {
    const { Messages = [] } = await env.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: env.resources.deadLetterQueueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 0,
        MessageAttributeNames: ['All'],
      }),
    );
    if (Messages.length === 0) {
      empty += 1;
      continue;
    }
    all.push(...Messages);
    await env.sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: env.resources.deadLetterQueueUrl,
        Entries: Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
      }),
    );
  }
  return all;
}

const describe = describeUnlessDeployedStack(
  'fixed event ids (bi-<n>) shared by its SQS and Kafka halves, and it drains the whole dead-letter queue: on one stack the second half finds the ids applied by the first',
);

describe.each(['sqs', 'kafka'] as const)('the bad-input corpus, %s handler', (source) => {
  let env: TestResources;
  let handler: ReturnType<typeof createIdempotentConsumer>;
  const pristine = Object.getOwnPropertyNames(Object.prototype).sort();
  beforeAll(async () => {
    env = await cafeResources(`bad-${source}`);
    handler = createIdempotentConsumer(cafeConsumerOptions, {
      environment: env.environment,
      clients: { dynamoDb: env.dynamoDb, sqs: env.sqs, s3: env.s3 },
    });
  });
  afterAll(() => env?.dispose());

  const cases = corpus.map((input, n) => ({ ...input, n })).filter((input) => input.only === undefined || input.only === source);

  it.each(cases.map((input) => [input.name, input] as const))('%s', async (_name, input) => {
    const n = input.n;
    const body = input.body(n);
    const companion = JSON.stringify({ eventId: `bi-${n}-companion`, type: 'OrderPlaced', orderId: `BI-${n}-companion`, occurredAt: AT });
    const bodies: (string | Uint8Array | null)[] = [...(input.before?.(n) ?? []), body, companion];
    const inputIndex = bodies.length - 2;

    let response: unknown;
    let inputId: string;
    /** The bytes the handler got as the input's body. */
    let original: Buffer;
    if (source === 'sqs') {
      const records = bodies.map((b, i) => {
        const record = sqsRecord(`bi-${n}-m${i}`, b as string, { queueArn: env.resources.queueArn });
        return i === inputIndex && input.sqsRecord !== undefined ? input.sqsRecord(record) : record;
      });
      inputId = records[inputIndex]!.messageId;
      const delivered = records[inputIndex]!.body as string | undefined;
      original = Buffer.from(typeof delivered === 'string' ? delivered : '', 'utf8');
      response = await handler({ Records: records }, lambdaContext());
    } else {
      const records = bodies.map((b, i): KafkaRecord => {
        const offset = n * 10 + i;
        const record: KafkaRecord = {
          topic: 'orders',
          partition: 0,
          offset,
          timestamp: 1_767_225_600_000 + offset,
          timestampType: 'CREATE_TIME',
          key: Buffer.from(`BI-${n}`).toString('base64'),
          value: b === null ? null : Buffer.from(typeof b === 'string' ? Buffer.from(b, 'utf8') : b).toString('base64'),
          headers: [],
        };
        return i === inputIndex && input.kafkaRecord !== undefined ? input.kafkaRecord(record) : record;
      });
      inputId = `orders-0@${records[inputIndex]!.offset}`;
      const value = records[inputIndex]!.value;
      original = value === null || value === undefined ? Buffer.alloc(0) : Buffer.from(value, 'base64');
      const event: KafkaEvent = {
        eventSource: 'aws:kafka',
        eventSourceArn: MSK_CLUSTER_ARN,
        bootstrapServers: 'b-1:9098',
        records: { 'orders-0': records },
      };
      response = await handler(event, lambdaContext());
    }

    // Nothing thrown, nothing to retry.
    expect(response).toEqual({ batchItemFailures: [] });
    // The rest of its batch is unaffected.
    expect((await orderState(env, `BI-${n}-companion`))?.status).toBe('Created');

    const letters = (await drain(env)).filter(
      (message) => readDeadLetterAttributes(message.MessageAttributes ?? {})?.context.originalMessageId === inputId,
    );
    const key = keyOf(body);
    const row =
      key === undefined
        ? undefined
        : (await readInboxRows(env.documentClient, env.resources.inboxTable, env.settings.consumerName, [key])).get(key);
    // The café keeps an applied event's inbox mark on its order (inboxHome); a redrive also writes a row.
    const orderId = orderIdOf(body);
    const mark =
      key === undefined || orderId === undefined
        ? undefined
        : (await orderState(env, orderId))?._inbox?.[`${env.settings.consumerName}#${key}`];
    const appliedByIt =
      (row?.status === 'applied' && row.messageId === inputId) || (mark !== undefined && mark.s === undefined && mark.m === inputId);
    const expected = input.expected;
    if (expected === 'applied' || ('appliedOr' in expected && appliedByIt)) {
      expect(appliedByIt, `applied (inbox row of ${String(key)})`).toBe(true);
      expect(letters).toEqual([]);
    } else {
      const reason = 'reason' in expected ? expected.reason : expected.appliedOr;
      expect(letters, 'dead-lettered once').toHaveLength(1);
      const info = readDeadLetterAttributes(letters[0]!.MessageAttributes ?? {})!;
      expect(info.failureReason).toBe(reason);
      expect(info.context.attempts).toBe(1);
      expect(appliedByIt).toBe(false);
      // Its body, byte for byte: as text, in base64 when SQS could not take it, or in the payload bucket.
      const stored =
        info.context.payload !== undefined
          ? await (
              await env.s3.send(new GetObjectCommand({ Bucket: info.context.payload.bucket, Key: info.context.payload.key }))
            ).Body!.transformToString()
          : letters[0]!.Body!;
      const decoded =
        info.context.bodyEncoding === 'empty'
          ? Buffer.alloc(0)
          : info.context.bodyEncoding === 'base64'
            ? Buffer.from(stored, 'base64')
            : Buffer.from(stored, 'utf8');
      expect(decoded.equals(original), 'the dead letter holds the body byte for byte').toBe(true);
    }
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(pristine);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('holds at least 70 kinds of input for this handler', () => {
    expect(cases.length).toBeGreaterThanOrEqual(70);
  });
});
