import { createHash } from 'node:crypto';
import type { MessageAttributeValue } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { DeadLetterTooLargeError, InvalidFailureReasonError } from '../../packages/idempotent-consumer/src/dlq/deadLetterErrors.js';
import {
  attributesSize,
  buildDeadLetterMessage,
  DeadLetterAttribute,
  EMPTY_BODY_PLACEHOLDER,
  isSqsSafeText,
  MAX_ERROR_MESSAGE_LENGTH,
  MAX_ERROR_TYPE_LENGTH,
  producerAttributesOf,
  readDeadLetterAttributes,
  SQS_MAX_MESSAGE_ATTRIBUTES,
  type DeadLetterContext,
  type DeadLetterFailure,
} from '../../packages/idempotent-consumer/src/dlq/deadLetterMessage.js';
import { builtInFailureReasons, FailureReason, isValidFailureReason } from '../../packages/idempotent-consumer/src/dlq/failureReasons.js';
import {
  EXTENDED_PAYLOAD_SIZE_ATTRIBUTE,
  parsePayloadPointer,
  PAYLOAD_POINTER_CLASS,
} from '../../packages/idempotent-consumer/src/dlq/payloadPointer.js';

const failure: DeadLetterFailure = { reason: 'ValidationError', errorType: 'ValidationError', errorMessage: 'points: expected number' };
const context = (overrides: Partial<DeadLetterContext> = {}): DeadLetterContext => ({
  body: '{"eventId":"e-1","points":"ten"}',
  failure,
  attempts: 1,
  source: 'arn:aws:sqs:us-east-1:000000000000:events',
  originalMessageId: 'm-1',
  failedAt: new Date('2026-01-01T00:00:00Z'),
  ...overrides,
});
const DLQ = 'https://sqs.us-east-1.amazonaws.com/000000000000/events-dlq';
const MiB = 1_048_576;
const sizes = { fifo: false, maxMessageSizeBytes: MiB };
const str = (value: string): MessageAttributeValue => ({ DataType: 'String', StringValue: value });

/** Attribute names of a message, the consumer's (`ic.*`) and the others. */
function names(attributes: Record<string, MessageAttributeValue> | undefined) {
  const all = Object.keys(attributes ?? {});
  return { ic: all.filter((n) => n.startsWith('ic.')).sort(), other: all.filter((n) => !n.startsWith('ic.')).sort() };
}

describe('buildDeadLetterMessage: layout', () => {
  it('keeps the body byte for byte; the reason, error and context go in four ic.* attributes', () => {
    const { input, offload } = buildDeadLetterMessage(DLQ, context({ coordinates: { messageGroupId: 'G-1' } }), sizes);

    expect(input.MessageBody).toBe('{"eventId":"e-1","points":"ten"}');
    expect(offload).toBeUndefined();
    const attrs = input.MessageAttributes ?? {};
    expect(names(attrs)).toEqual({ ic: ['ic.context', 'ic.errorMessage', 'ic.errorType', 'ic.failureReason'], other: [] });
    expect(attrs[DeadLetterAttribute.failureReason]).toEqual(str('ValidationError'));
    expect(attrs[DeadLetterAttribute.errorType]).toEqual(str('ValidationError'));
    expect(attrs[DeadLetterAttribute.errorMessage]).toEqual(str('points: expected number'));
    expect(JSON.parse(attrs[DeadLetterAttribute.context]?.StringValue ?? '')).toEqual({
      v: 1,
      source: 'arn:aws:sqs:us-east-1:000000000000:events',
      originalMessageId: 'm-1',
      attempts: 1,
      failedAt: '2026-01-01T00:00:00.000Z',
      coordinates: { messageGroupId: 'G-1' },
    });
    expect(input.MessageGroupId).toBeUndefined();
  });

  it('reads its own attributes back; a message without ic.* attributes reads as moved by the redrive policy', () => {
    const { input } = buildDeadLetterMessage(DLQ, context({ attempts: 4 }), sizes);

    const info = readDeadLetterAttributes(input.MessageAttributes ?? {});

    expect(info).toMatchObject({
      failureReason: 'ValidationError',
      errorType: 'ValidationError',
      failedAt: new Date('2026-01-01T00:00:00Z'),
    });
    expect(info?.context).toMatchObject({ source: 'arn:aws:sqs:us-east-1:000000000000:events', originalMessageId: 'm-1', attempts: 4 });
    expect(readDeadLetterAttributes({ source: str('web-checkout'), attempts: str('3') })).toBeUndefined();
  });

  it("C22: the producer's attributes (source=web-checkout, attempts=3) stay real attributes beside the consumer's, and a redrive restores exactly them", () => {
    const producer = { source: str('web-checkout'), attempts: { DataType: 'Number', StringValue: '3' } };

    const { input } = buildDeadLetterMessage(DLQ, context({ originalAttributes: producer, attempts: 2 }), sizes);

    const attrs = input.MessageAttributes ?? {};
    expect(attrs.source).toEqual(str('web-checkout'));
    expect(attrs.attempts).toEqual({ DataType: 'Number', StringValue: '3' });
    expect(attrs[DeadLetterAttribute.originalAttributes]).toBeUndefined();
    expect(JSON.parse(attrs[DeadLetterAttribute.context]?.StringValue ?? '').attempts).toBe(2);
    expect(producerAttributesOf(attrs)).toEqual(producer);
  });

  it('keeps up to 6 producer attributes real; 7 are packed, all of them, into ic.originalAttributes, within 10 attributes', () => {
    const six = Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`a${i}`, str(`v${i}`)]));
    const seven: Record<string, MessageAttributeValue> = {
      ...six,
      bin: { DataType: 'Binary.gz', BinaryValue: new Uint8Array([0, 1, 255]) },
    };

    const real = buildDeadLetterMessage(DLQ, context({ originalAttributes: six }), sizes).input.MessageAttributes ?? {};
    const packed = buildDeadLetterMessage(DLQ, context({ originalAttributes: seven }), sizes).input.MessageAttributes ?? {};

    expect(Object.keys(real)).toHaveLength(10);
    expect(names(real).other).toEqual(Object.keys(six).sort());
    expect(Object.keys(packed)).toHaveLength(5);
    expect(names(packed).other).toEqual([]);
    const restored = producerAttributesOf(packed);
    expect(Object.keys(restored).sort()).toEqual(Object.keys(seven).sort());
    expect(restored.bin?.DataType).toBe('Binary.gz');
    expect([...(restored.bin?.BinaryValue ?? [])]).toEqual([0, 1, 255]);
    expect(restored.a5).toEqual(str('v5'));
  });

  it.each([
    ['a name with the reserved prefix', { 'ic.trace': str('t-1'), other: str('x') }],
    ['a value SQS would refuse as text', { note: str('a\uFFFFb') }],
    ['an empty value', { empty: str('') }],
    ['a name SQS would refuse', { 'AWS.Trace': str('x') }],
  ])("packs the producer's attributes losslessly when one has %s", (_, producer) => {
    const { input } = buildDeadLetterMessage(DLQ, context({ originalAttributes: producer }), sizes);

    const attrs = input.MessageAttributes ?? {};
    expect(names(attrs).other).toEqual([]);
    expect(isSqsSafeText(attrs[DeadLetterAttribute.originalAttributes]?.StringValue ?? '')).toBe(true);
    expect(producerAttributesOf(attrs)).toEqual(producer);
  });

  it('truncates a long error message and error type, and makes them text SQS accepts', () => {
    const { input } = buildDeadLetterMessage(
      DLQ,
      context({ failure: { ...failure, errorMessage: `\u0000${'x'.repeat(5000)}`, errorType: 'T'.repeat(1000) } }),
      sizes,
    );

    const message = input.MessageAttributes?.[DeadLetterAttribute.errorMessage]?.StringValue ?? '';
    expect(message).toHaveLength(MAX_ERROR_MESSAGE_LENGTH);
    expect(message.startsWith('\uFFFD')).toBe(true);
    expect(input.MessageAttributes?.[DeadLetterAttribute.errorType]?.StringValue).toHaveLength(MAX_ERROR_TYPE_LENGTH);
  });

  it('writes an empty error message as a non-empty value (SQS rejects empty attributes)', () => {
    const { input } = buildDeadLetterMessage(DLQ, context({ failure: { ...failure, errorMessage: '' } }), sizes);
    expect(input.MessageAttributes?.[DeadLetterAttribute.errorMessage]?.StringValue).toBe('(empty)');
  });

  it('writes a context SQS accepts when a coordinate holds a character it refuses, and reads it back unchanged', () => {
    const coordinates = { topic: 'events', partition: 0, offset: 7, key: 'k\uFFFE\uFFFF' };

    const { input } = buildDeadLetterMessage(DLQ, context({ coordinates }), sizes);

    const raw = input.MessageAttributes?.[DeadLetterAttribute.context]?.StringValue ?? '';
    expect(isSqsSafeText(raw)).toBe(true);
    expect(readDeadLetterAttributes(input.MessageAttributes ?? {})?.context.coordinates).toEqual(coordinates);
  });

  it('sends an empty body, which SQS refuses, as a placeholder marked in the context', () => {
    const { input } = buildDeadLetterMessage(DLQ, context({ body: '' }), sizes);
    expect(input.MessageBody).toBe(EMPTY_BODY_PLACEHOLDER);
    expect(readDeadLetterAttributes(input.MessageAttributes ?? {})?.context.bodyEncoding).toBe('empty');
    expect(
      readDeadLetterAttributes(buildDeadLetterMessage(DLQ, context(), sizes).input.MessageAttributes ?? {})?.context.bodyEncoding,
    ).toBeUndefined();
  });

  it('keeps the message group and derives a stable deduplication id from the original message on a FIFO queue', () => {
    const fifo = { ...sizes, fifo: true };
    const a = buildDeadLetterMessage(`${DLQ}.fifo`, context({ messageGroupId: 'G-1' }), fifo).input;
    const b = buildDeadLetterMessage(`${DLQ}.fifo`, context({ messageGroupId: 'G-1', failedAt: new Date() }), fifo).input;
    const other = buildDeadLetterMessage(`${DLQ}.fifo`, context({ messageGroupId: 'G-1', originalMessageId: 'm-2' }), fifo).input;

    expect(a.MessageGroupId).toBe('G-1');
    expect(a.MessageDeduplicationId).toMatch(/^[0-9a-f]{64}$/);
    expect(a.MessageDeduplicationId).toBe(b.MessageDeduplicationId);
    expect(other.MessageDeduplicationId).not.toBe(a.MessageDeduplicationId);
  });

  it('refuses a FIFO message without a group', () => {
    expect(() => buildDeadLetterMessage(`${DLQ}.fifo`, context(), { ...sizes, fifo: true })).toThrow(/message group/);
  });
});

describe('buildDeadLetterMessage: failure reasons are open', () => {
  it("takes a user's own reason as it is", () => {
    const { input } = buildDeadLetterMessage(DLQ, context({ failure: { ...failure, reason: 'inventory.OutOfStock-2' } }), sizes);
    expect(input.MessageAttributes?.[DeadLetterAttribute.failureReason]?.StringValue).toBe('inventory.OutOfStock-2');
  });

  it.each([undefined, '', 'out of stock', 'x'.repeat(65), 'none', 'NONE'])('refuses the reason %j', (reason) => {
    expect(() => buildDeadLetterMessage(DLQ, context({ failure: { ...failure, reason } }), sizes)).toThrow(InvalidFailureReasonError);
  });

  it('exports the built-in reasons, each a valid reason name', () => {
    expect(builtInFailureReasons).toEqual([
      'ValidationError',
      'MissingIdempotencyKey',
      'IdempotencyConflict',
      'UnknownMessageType',
      'BusinessRuleViolation',
      'ConditionalWriteFailed',
      'InvalidWrite',
      'RetriesExhausted',
    ]);
    expect(builtInFailureReasons.every(isValidFailureReason)).toBe(true);
    expect(FailureReason.ConditionalWriteFailed).toBe('ConditionalWriteFailed');
  });
});

describe('buildDeadLetterMessage: a message too large for the DLQ (C20)', () => {
  /** C20: a Kafka value of 800 KiB that is not UTF-8, sent in base64 (1.07 MiB), at offset 10 of events-0. */
  const value = Buffer.alloc(800 * 1024, 0xff);
  const kafka = context({
    body: value.toString('base64'),
    bodyEncoding: 'base64',
    source: 'arn:aws:kafka:us-east-1:123456789012:cluster/c/abc',
    originalMessageId: 'events-0@10',
    coordinates: { topic: 'events', partition: 0, offset: 10, timestamp: 1_767_268_800_010, timestampType: 'CREATE_TIME', key: 'K-10' },
    originalAttributes: { traceparent: str('00-abc-def-01') },
  });

  it('offloads the body to the payload bucket with the Extended Client pointer; nothing is cut', () => {
    expect(Buffer.byteLength(kafka.body)).toBeGreaterThan(MiB);

    const message = buildDeadLetterMessage(DLQ, kafka, { ...sizes, payloadBucket: 'dead-letter-payloads' });

    const { input, offload } = message;
    const pointer = parsePayloadPointer(input.MessageBody ?? '');
    expect(JSON.parse(input.MessageBody ?? '')[0]).toBe(PAYLOAD_POINTER_CLASS);
    expect(pointer?.bucket).toBe('dead-letter-payloads');
    expect(offload).toEqual({ bucket: 'dead-letter-payloads', key: pointer?.key, body: kafka.body });
    const attrs = input.MessageAttributes ?? {};
    expect(attrs[EXTENDED_PAYLOAD_SIZE_ATTRIBUTE]).toEqual({ DataType: 'Number', StringValue: String(Buffer.byteLength(kafka.body)) });
    const info = readDeadLetterAttributes(attrs);
    expect(info?.failureReason).toBe('ValidationError');
    expect(info?.context).toMatchObject({
      originalMessageId: 'events-0@10',
      bodyEncoding: 'base64',
      coordinates: { topic: 'events', partition: 0, offset: 10 },
      payload: {
        bucket: 'dead-letter-payloads',
        key: pointer?.key,
        bytes: Buffer.byteLength(kafka.body),
        sha256: createHash('sha256').update(kafka.body).digest('hex'),
      },
    });
    expect(attrs.traceparent).toEqual(str('00-abc-def-01'));
    expect(message.sizeBytes).toBe(Buffer.byteLength(input.MessageBody ?? '') + attributesSize(attrs));
    expect(message.sizeBytes).toBeLessThanOrEqual(MiB);
    expect(Object.keys(attrs).length).toBeLessThanOrEqual(SQS_MAX_MESSAGE_ATTRIBUTES);
    expect(producerAttributesOf(attrs)).toEqual({ traceparent: str('00-abc-def-01') });
    expect(attrs[DeadLetterAttribute.errorMessage]).toEqual(str('points: expected number'));
  });

  it('derives the same S3 key for the same failure (a retry overwrites, leaves no stray object)', () => {
    const a = buildDeadLetterMessage(DLQ, kafka, { ...sizes, payloadBucket: 'b' });
    const b = buildDeadLetterMessage(DLQ, { ...kafka, failedAt: new Date(), attempts: 2 }, { ...sizes, payloadBucket: 'b' });
    expect(a.offload?.key).toBe(b.offload?.key);
    expect(a.offload?.key).toMatch(/^dead-letters\/[0-9a-f]{64}$/);
  });

  it('without a payload bucket: DeadLetterTooLargeError (retried, never cut)', () => {
    const error = (() => {
      try {
        buildDeadLetterMessage(DLQ, kafka, sizes);
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(DeadLetterTooLargeError);
    expect((error as DeadLetterTooLargeError).sizeBytes).toBeGreaterThan(MiB);
    expect((error as Error).message).toMatch(/PAYLOAD_BUCKET_NAME/);
  });

  it('shortens the error message rather than offload when that is enough', () => {
    const body = 'y'.repeat(MiB - 1000);
    const long = { ...failure, errorMessage: 'z'.repeat(1000) };

    const { input, offload } = buildDeadLetterMessage(DLQ, context({ body, failure: long }), sizes);

    expect(offload).toBeUndefined();
    expect(input.MessageBody).toBe(body);
    expect(input.MessageAttributes?.[DeadLetterAttribute.errorMessage]?.StringValue).toHaveLength(128);
    expect(Buffer.byteLength(body) + attributesSize(input.MessageAttributes ?? {})).toBeLessThanOrEqual(MiB);
  });

  it("refuses, rather than drop them, attributes that alone exceed the DLQ's size", () => {
    const huge = { blob: { DataType: 'Binary', BinaryValue: new Uint8Array(MiB) } };
    expect(() => buildDeadLetterMessage(DLQ, context({ originalAttributes: huge }), { ...sizes, payloadBucket: 'b' })).toThrow(
      /even with its body offloaded/,
    );
  });

  it("packs the producer's attributes when the offloaded body's ExtendedPayloadSize leaves no room for all six", () => {
    const six = Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`a${i}`, str(`v${i}`)]));

    const { input } = buildDeadLetterMessage(DLQ, { ...kafka, originalAttributes: six }, { ...sizes, payloadBucket: 'b' });

    const attrs = input.MessageAttributes ?? {};
    expect(Object.keys(attrs).sort()).toEqual([EXTENDED_PAYLOAD_SIZE_ATTRIBUTE, ...names(attrs).ic].sort());
    expect(attrs[DeadLetterAttribute.originalAttributes]).toBeDefined();
    expect(producerAttributesOf(attrs)).toEqual(six);
  });
});

describe('producerAttributesOf', () => {
  it("keeps a producer's own ExtendedPayloadSize when the consumer did not offload (a message sent by an extended client)", () => {
    const producer = { [EXTENDED_PAYLOAD_SIZE_ATTRIBUTE]: { DataType: 'Number', StringValue: '300000' } };
    const { input } = buildDeadLetterMessage(DLQ, context({ originalAttributes: producer }), sizes);
    expect(producerAttributesOf(input.MessageAttributes ?? {})).toEqual(producer);
  });

  it('throws when ic.originalAttributes cannot be read, rather than restore without them', () => {
    const attrs = {
      [DeadLetterAttribute.failureReason]: str('ValidationError'),
      [DeadLetterAttribute.originalAttributes]: str('{not json'),
    };
    expect(() => producerAttributesOf(attrs)).toThrow(/ic.originalAttributes cannot be read/);
  });
});
