import { describe, expect, it } from 'vitest';
import type { Classification } from '../../lambda/classifier.js';
import {
  attributesSize,
  buildDeadLetterMessage,
  type DeadLetterContext,
  deserializeAttributes,
  EMPTY_BODY_PLACEHOLDER,
  MAX_ERROR_MESSAGE_LENGTH,
} from '../../lambda/dlq/deadLetterMessage.js';

const failure: Classification = { disposition: 'dead-letter', reason: 'ValidationError', errorType: 'ValidationError', errorMessage: 'points: expected number' };
const context = (overrides: Partial<DeadLetterContext> = {}): DeadLetterContext => ({
  body: '{"eventId":"e-1","points":"ten"}',
  failure,
  attempts: 1,
  source: 'arn:aws:sqs:us-east-1:000000000000:orders',
  originalMessageId: 'm-1',
  failedAt: new Date('2026-01-01T00:00:00Z'),
  ...overrides,
});
const DLQ = 'https://sqs.us-east-1.amazonaws.com/000000000000/orders-dlq';
const sizes = { fifo: false, maxMessageSizeBytes: 1_048_576 };

describe('buildDeadLetterMessage', () => {
  it('keeps the body byte for byte and attaches the reason and context', () => {
    const input = buildDeadLetterMessage(DLQ, context(), sizes);
    expect(input.MessageBody).toBe('{"eventId":"e-1","points":"ten"}');
    const attrs = input.MessageAttributes ?? {};
    expect(attrs.failureReason?.StringValue).toBe('ValidationError');
    expect(attrs.errorType?.StringValue).toBe('ValidationError');
    expect(attrs.errorMessage?.StringValue).toBe('points: expected number');
    expect(attrs.originalMessageId?.StringValue).toBe('m-1');
    expect(attrs.source?.StringValue).toBe('arn:aws:sqs:us-east-1:000000000000:orders');
    expect(attrs.attempts).toEqual({ DataType: 'Number', StringValue: '1' });
    expect(attrs.failedAt?.StringValue).toBe('2026-01-01T00:00:00.000Z');
    expect(input.MessageGroupId).toBeUndefined();
  });

  it('stays within 10 attributes and keeps the originals, binary included', () => {
    const originalAttributes = Object.fromEntries(
      Array.from({ length: 10 }, (_, i) => [`attr${i}`, { DataType: 'String', StringValue: `v${i}` }]),
    );
    originalAttributes.bin = { DataType: 'Binary', BinaryValue: new Uint8Array([0, 1, 255]) } as never;
    const input = buildDeadLetterMessage(DLQ, context({ originalAttributes, coordinates: { messageGroupId: 'O-1' } }), sizes);
    const attrs = input.MessageAttributes ?? {};
    expect(Object.keys(attrs).length).toBeLessThanOrEqual(10);
    const restored = deserializeAttributes(attrs.originalAttributes?.StringValue ?? '{}');
    expect(Object.keys(restored)).toHaveLength(11);
    expect([...(restored.bin?.BinaryValue ?? [])]).toEqual([0, 1, 255]);
  });

  it('truncates a long error message', () => {
    const input = buildDeadLetterMessage(DLQ, context({ failure: { ...failure, errorMessage: 'x'.repeat(5000) } }), sizes);
    expect(input.MessageAttributes?.errorMessage?.StringValue?.length).toBe(MAX_ERROR_MESSAGE_LENGTH);
  });

  it('never cuts the body: drops original attributes first when the size limit is near', () => {
    const body = 'y'.repeat(262_144);
    const originalAttributes = { big: { DataType: 'String', StringValue: 'z'.repeat(20_000) } };
    const input = buildDeadLetterMessage(DLQ, context({ body, originalAttributes }), { fifo: false, maxMessageSizeBytes: 270_000 });
    expect(input.MessageBody).toBe(body);
    expect(input.MessageAttributes?.originalAttributes).toBeUndefined();
    expect(Buffer.byteLength(body) + attributesSize(input.MessageAttributes ?? {})).toBeLessThanOrEqual(270_000);
  });

  it('writes an empty error message as a non-empty value (SQS rejects empty attributes)', () => {
    const input = buildDeadLetterMessage(DLQ, context({ failure: { ...failure, errorMessage: '' } }), sizes);
    expect(input.MessageAttributes?.errorMessage?.StringValue).toBe('(empty)');
  });

  it('sends an empty body, which SQS refuses, as a marked placeholder', () => {
    const input = buildDeadLetterMessage(DLQ, context({ body: '' }), sizes);
    expect(input.MessageBody).toBe(EMPTY_BODY_PLACEHOLDER);
    expect(input.MessageAttributes?.bodyEncoding?.StringValue).toBe('empty');
    expect(buildDeadLetterMessage(DLQ, context(), sizes).MessageAttributes?.bodyEncoding).toBeUndefined();
  });

  it('keeps the message group and derives a stable deduplication id on a FIFO queue', () => {
    const a = buildDeadLetterMessage(`${DLQ}.fifo`, context({ messageGroupId: 'O-1' }), { ...sizes, fifo: true });
    const b = buildDeadLetterMessage(`${DLQ}.fifo`, context({ messageGroupId: 'O-1', failedAt: new Date() }), { ...sizes, fifo: true });
    expect(a.MessageGroupId).toBe('O-1');
    expect(a.MessageDeduplicationId).toMatch(/^[0-9a-f]{64}$/);
    expect(a.MessageDeduplicationId).toBe(b.MessageDeduplicationId);
  });

  it('refuses a FIFO message without a group', () => {
    expect(() => buildDeadLetterMessage(`${DLQ}.fifo`, context(), { ...sizes, fifo: true })).toThrow(/message group/);
  });
});
