/**
 * Where the X-Ray trace header goes, request by request (no server): read from the SQS record and
 * from the invocation, onto the dead letter (`SendMessage` and `SendMessageBatch`'s
 * `MessageSystemAttributes.AWSTraceHeader`), into the outbox item and back out of its stream
 * record (old items without it still publish), onto the SQS destination's `SendMessage`.
 * The SNS destination's HTTP header is checked against the emulator in `test/outbox/traceHeaders.test.ts`.
 */
import type { SQSClient } from '@aws-sdk/client-sqs';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord, SQSRecord } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { sqsDeliveries } from '../../packages/idempotent-consumer/src/batch/sqsDeliveries.js';
import { DeadLetterQueue } from '../../packages/idempotent-consumer/src/dlq/DeadLetterQueue.js';
import { buildDeadLetterMessage, type DeadLetterContext } from '../../packages/idempotent-consumer/src/dlq/deadLetterMessage.js';
import {
  invocationTraceHeader,
  isTraceHeader,
  TRACE_HEADER_ATTRIBUTE,
} from '../../packages/idempotent-consumer/src/observability/traceHeader.js';
import { outboxPut } from '../../packages/idempotent-consumer/src/outbox/outboxItems.js';
import { readOutboxRecord } from '../../packages/idempotent-consumer/src/outbox/outboxStreamRecords.js';
import { sqsQueueDestination } from '../../packages/idempotent-consumer/src/outbox/sqsQueueDestination.js';
import { INVOCATION_TRACE_HEADER } from '../support/fakeTracer.js';
import { sqsRecord } from '../support/sqsEvents.js';

const SOURCE_HEADER = 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=557abcec3ee5a047;Sampled=1';
const DLQ = 'https://sqs.us-east-1.amazonaws.com/000000000000/events-dlq';

/** An SQS client that records each command and answers as SQS does. */
function recordingSqs() {
  const sent: { name: string; input: any }[] = [];
  const client = {
    send: async (command: { constructor: { name: string }; input: any }) => {
      sent.push({ name: command.constructor.name, input: command.input });
      if (command.constructor.name === 'SendMessageBatchCommand') {
        return { Successful: command.input.Entries.map((entry: { Id: string }) => ({ Id: entry.Id, MessageId: `dlq-${entry.Id}` })) };
      }
      return { MessageId: 'sent-1' };
    },
  };
  return { client: client as unknown as SQSClient, sent };
}

const context = (overrides: Partial<DeadLetterContext> = {}): DeadLetterContext => ({
  body: '{"eventId":"e-1","points":"ten"}',
  failure: { reason: 'ValidationError', errorType: 'ValidationError', errorMessage: 'points: expected number' },
  attempts: 1,
  source: 'arn:aws:sqs:us-east-1:000000000000:events',
  originalMessageId: 'm-1',
  failedAt: new Date('2026-01-01T12:00:00.000Z'),
  ...overrides,
});

describe('isTraceHeader', () => {
  it.each([
    SOURCE_HEADER,
    'Root=1-5759e988-bd862e3fe1be46a994272793',
    'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=557abcec3ee5a047;Sampled=0;Lineage=1:a1b2c3d4:0',
    'Sampled=1;Root=1-5759e988-bd862e3fe1be46a994272793',
  ])('accepts %s', (header) => {
    expect(isTraceHeader(header)).toBe(true);
  });

  it.each([
    ['empty', ''],
    ['no root', 'Parent=557abcec3ee5a047;Sampled=1'],
    ['a malformed root', 'Root=1-xyz-bd862e3fe1be46a994272793'],
    ['a space', 'Root=1-5759e988-bd862e3fe1be46a994272793; Sampled=1'],
    ['a field without =', 'Root=1-5759e988-bd862e3fe1be46a994272793;junk'],
    ['too long', `Root=1-5759e988-bd862e3fe1be46a994272793;Data=${'a'.repeat(600)}`],
    ['not text', 42],
  ])('refuses %s', (_, header) => {
    expect(isTraceHeader(header)).toBe(false);
  });
});

describe('invocationTraceHeader', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
    delete (globalThis as { awslambda?: unknown }).awslambda;
  });

  it("reads Lambda's _X_AMZN_TRACE_ID, and nothing outside Lambda", () => {
    vi.stubEnv('_X_AMZN_TRACE_ID', '');
    expect(invocationTraceHeader()).toBeUndefined();
    vi.stubEnv('_X_AMZN_TRACE_ID', INVOCATION_TRACE_HEADER);
    expect(invocationTraceHeader()).toBe(INVOCATION_TRACE_HEADER);
    vi.stubEnv('_X_AMZN_TRACE_ID', 'garbage');
    expect(invocationTraceHeader()).toBeUndefined();
  });

  it("prefers Lambda's per-invocation store (Managed Instances) to the process's variable", () => {
    vi.stubEnv('_X_AMZN_TRACE_ID', INVOCATION_TRACE_HEADER);
    (globalThis as { awslambda?: unknown }).awslambda = { InvokeStore: { getXRayTraceId: () => SOURCE_HEADER } };
    expect(invocationTraceHeader()).toBe(SOURCE_HEADER);
  });
});

describe('sqsDeliveries', () => {
  it("takes the record's AWSTraceHeader when it is well formed", () => {
    const traced: SQSRecord = {
      ...sqsRecord('m-1', '{}'),
      attributes: { ...sqsRecord('m-1', '{}').attributes, AWSTraceHeader: SOURCE_HEADER },
    };
    const malformed: SQSRecord = {
      ...sqsRecord('m-2', '{}'),
      attributes: { ...sqsRecord('m-2', '{}').attributes, AWSTraceHeader: 'nonsense' },
    };
    const [first, second, third] = sqsDeliveries([traced, malformed, sqsRecord('m-3', '{}')], false);
    expect(first?.traceHeader).toBe(SOURCE_HEADER);
    expect(second).not.toHaveProperty('traceHeader');
    expect(third).not.toHaveProperty('traceHeader');
  });
});

describe('the dead letter', () => {
  it('carries the trace header as the AWSTraceHeader system attribute, the body unchanged', () => {
    const message = buildDeadLetterMessage(DLQ, context({ traceHeader: SOURCE_HEADER }), { fifo: false, maxMessageSizeBytes: 262_144 });
    expect(message.input.MessageSystemAttributes).toEqual({ [TRACE_HEADER_ATTRIBUTE]: { DataType: 'String', StringValue: SOURCE_HEADER } });
    expect(message.input.MessageBody).toBe('{"eventId":"e-1","points":"ten"}');
    expect(Object.keys(message.input.MessageAttributes ?? {})).not.toContain(TRACE_HEADER_ATTRIBUTE);
  });

  it('has no system attribute without a trace header, or with a malformed one', () => {
    for (const traceHeader of [undefined, 'Root=broken']) {
      const message = buildDeadLetterMessage(DLQ, context(traceHeader === undefined ? {} : { traceHeader }), {
        fifo: false,
        maxMessageSizeBytes: 262_144,
      });
      expect(message.input).not.toHaveProperty('MessageSystemAttributes');
    }
  });

  it('keeps each entry’s own trace header in SendMessageBatch, and in SendMessage', async () => {
    const { client, sent } = recordingSqs();
    const queue = new DeadLetterQueue({ sqs: client, queueUrl: DLQ, maxMessageSizeBytes: 262_144 });
    const results = await queue.sendBatch([
      context({ originalMessageId: 'm-1', traceHeader: SOURCE_HEADER }),
      context({ originalMessageId: 'm-2' }),
      context({ originalMessageId: 'm-3', traceHeader: INVOCATION_TRACE_HEADER }),
    ]);
    expect(results.map((result) => result.ok)).toEqual([true, true, true]);
    const entries = sent[0]!.input.Entries as { MessageSystemAttributes?: unknown; MessageBody: string }[];
    expect(entries.map((entry) => entry.MessageSystemAttributes)).toEqual([
      { AWSTraceHeader: { DataType: 'String', StringValue: SOURCE_HEADER } },
      undefined,
      { AWSTraceHeader: { DataType: 'String', StringValue: INVOCATION_TRACE_HEADER } },
    ]);
    expect(entries.map((entry) => entry.MessageBody)).toEqual(Array(3).fill('{"eventId":"e-1","points":"ten"}'));

    await queue.send(context({ traceHeader: SOURCE_HEADER }));
    expect(sent[1]).toMatchObject({
      name: 'SendMessageCommand',
      input: { MessageSystemAttributes: { AWSTraceHeader: { DataType: 'String', StringValue: SOURCE_HEADER } } },
    });
  });
});

describe('the outbox item', () => {
  const put = (traceHeader?: string) =>
    outboxPut({
      tableName: 'inbox',
      consumerName: 'c',
      idempotencyKey: 'e-1',
      orderingKey: 'o-1',
      position: 0,
      message: { body: { type: 'PaymentReceived' } },
      now: new Date('2026-01-01T12:00:00.000Z'),
      ttlSeconds: 3600,
      ...(traceHeader === undefined ? {} : { traceHeader }),
    });
  const insert = (item: Record<string, unknown>): DynamoDBRecord => ({
    eventName: 'INSERT',
    dynamodb: { NewImage: marshall(item) as never, SequenceNumber: '1' },
  });

  it('stores the trace header, which the relay reads back for its destination', () => {
    const { Item } = put(SOURCE_HEADER);
    expect(Item.traceHeader).toBe(SOURCE_HEADER);
    const verdict = readOutboxRecord(insert(Item), 'c');
    expect(verdict).toMatchObject({ kind: 'publish', message: { traceHeader: SOURCE_HEADER, body: '{"type":"PaymentReceived"}' } });
  });

  it('stores none without one (or a malformed one); an item without it (written before) still publishes', () => {
    expect(put()).not.toHaveProperty('Item.traceHeader');
    expect(put('Root=broken')).not.toHaveProperty('Item.traceHeader');
    const verdict = readOutboxRecord(insert(put().Item), 'c');
    expect(verdict.kind).toBe('publish');
    expect(verdict.kind === 'publish' && verdict.message).not.toHaveProperty('traceHeader');
    const tampered = readOutboxRecord(insert({ ...put().Item, traceHeader: 'not a header' }), 'c');
    expect(tampered.kind === 'publish' && tampered.message).not.toHaveProperty('traceHeader');
  });
});

describe('the SQS destination', () => {
  const message = {
    messageId: 'a'.repeat(64),
    consumer: 'c',
    idempotencyKey: 'e-1',
    position: 0,
    destination: 'default',
    messageGroupId: 'o-1',
    body: '{"type":"PaymentReceived"}',
    attributes: {},
    createdAt: '2026-01-01T12:00:00.000Z',
  };

  it('sends the message’s trace header as AWSTraceHeader; none when it has none or a malformed one', async () => {
    const { client, sent } = recordingSqs();
    const destination = sqsQueueDestination({ queueUrl: 'https://sqs.us-east-1.amazonaws.com/000000000000/out', client });
    await destination.publish({ ...message, traceHeader: SOURCE_HEADER });
    await destination.publish(message);
    await destination.publish({ ...message, traceHeader: 'Root=broken' });
    expect(sent.map((call) => call.input.MessageSystemAttributes)).toEqual([
      { AWSTraceHeader: { DataType: 'String', StringValue: SOURCE_HEADER } },
      undefined,
      undefined,
    ]);
    expect(sent[0]!.input.MessageAttributes).toEqual({ outboxMessageId: { DataType: 'String', StringValue: message.messageId } });
  });
});
