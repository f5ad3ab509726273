import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeadLetterAttribute, readDeadLetterAttributes } from '../../packages/idempotent-consumer/src/dlq/deadLetterMessage.js';
import { MessageNotFoundError, NotADeadLetterQueueError, QueueNotFoundError } from '../../packages/cli/src/dlq/errors.js';
import { listDeadLetters } from '../../packages/cli/src/dlq/list.js';
import { formatList, formatShow } from '../../packages/cli/src/dlq/output.js';
import { showDeadLetter } from '../../packages/cli/src/dlq/show.js';
import {
  createQueue,
  createQueuePair,
  eventBody,
  moveByRedrivePolicy,
  readAll,
  seedDeadLetters,
  startSqs,
  visibleCount,
  type FauxqsServer,
} from './dlqFixtures.js';

let server: FauxqsServer;
let sqs: SQSClient;
let source: { url: string; arn: string };
let dlq: { url: string; arn: string };

beforeAll(async () => {
  ({ server, sqs } = await startSqs());
  ({ source, dlq } = await createQueuePair(sqs, 'orders'));
  await seedDeadLetters(sqs, dlq.url, [
    {
      reason: 'ValidationError',
      body: '{"not":"an event"',
      source: source.arn,
      originalMessageId: 'm-1',
      errorMessage: 'Unexpected end of JSON input',
    },
    {
      reason: 'ValidationError',
      body: eventBody('e-2', { points: -1 }),
      source: source.arn,
      originalMessageId: 'm-2',
      originalAttributes: {
        traceId: { DataType: 'String', StringValue: 'trace-2' },
        blob: { DataType: 'Binary', BinaryValue: Uint8Array.from([0, 1, 2, 255]) },
      },
    },
    { reason: 'BusinessRuleViolation', body: eventBody('e-3', { type: 'OrderShipped' }), source: source.arn, originalMessageId: 'm-3' },
    { reason: 'RetriesExhausted', body: eventBody('e-4'), source: source.arn, originalMessageId: 'm-4', errorType: 'TimeoutError' },
    { reason: 'UnknownMessageType', body: eventBody('e-5', { type: 'OrderTeleported' }), source: source.arn, originalMessageId: 'm-5' },
  ]);
});

afterAll(async () => {
  sqs.destroy();
  await server.stop();
});

describe('listDeadLetters', () => {
  it('groups the messages by failureReason, largest group first', async () => {
    const result = await listDeadLetters({ sqs }, { queueUrl: dlq.url, visibilityTimeoutSeconds: 30 });

    expect(result.seen).toBe(5);
    expect(result.groups.map((g) => [g.reason, g.count])).toEqual([
      ['ValidationError', 2],
      ['BusinessRuleViolation', 1],
      ['RetriesExhausted', 1],
      ['UnknownMessageType', 1],
    ]);
    const validation = result.groups[0]?.messages ?? [];
    expect(validation.map((m) => m.originalMessageId).sort()).toEqual(['m-1', 'm-2']);
    expect(validation[0]?.source).toBe(source.arn);
    expect(validation[0]?.errorType).toBe('ValidationError');
    expect(validation[0]?.ageSeconds).toBeGreaterThanOrEqual(0);
    const text = formatList(result);
    expect(text).toContain('ValidationError (2)');
    expect(text).toContain('Unexpected end of JSON input');
  });

  it('consumes nothing: every message is in the queue and visible again afterwards', async () => {
    const before = await visibleCount(sqs, dlq.url);

    const result = await listDeadLetters({ sqs }, { queueUrl: dlq.url });

    expect(result.released).toBe(5);
    expect(await visibleCount(sqs, dlq.url)).toBe(before);
    expect(await readAll(sqs, dlq.url)).toHaveLength(5);
  });

  it('warns about a --reason that matches nothing, naming the reasons present, and lists nothing', async () => {
    const result = await listDeadLetters({ sqs }, { queueUrl: dlq.url, selection: { reasons: ['Foo'] } });

    expect(result.listed).toBe(0);
    expect(result.warnings[0]).toBe(
      '--reason Foo matches no message seen; reasons present: ValidationError (2), BusinessRuleViolation (1), RetriesExhausted (1), UnknownMessageType (1)',
    );
    expect(formatList(result)).toContain('warning: --reason Foo matches no message seen');
  });

  it('selects by --reason and --id', async () => {
    const byReason = await listDeadLetters({ sqs }, { queueUrl: dlq.url, selection: { reasons: ['RetriesExhausted'] } });
    const byId = await listDeadLetters({ sqs }, { queueUrl: dlq.url, selection: { ids: ['m-3'] } });

    expect(byReason.listed).toBe(1);
    expect(byReason.groups[0]?.messages[0]?.errorType).toBe('TimeoutError');
    expect(byId.groups.map((g) => g.reason)).toEqual(['BusinessRuleViolation']);
  });

  it('refuses a source queue (one with a redrive policy of its own) as not a dead-letter queue', async () => {
    const withPolicy = await createQueue(sqs, 'with-policy', {
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 5 }),
    });

    await expect(listDeadLetters({ sqs }, { queueUrl: withPolicy.url })).rejects.toThrow(NotADeadLetterQueueError);
  });

  it('refuses a queue whose messages carry no failureReason, and leaves them visible', async () => {
    const plain = await createQueue(sqs, 'plain');
    await sqs.send(new SendMessageCommand({ QueueUrl: plain.url, MessageBody: eventBody('p-1') }));

    await expect(listDeadLetters({ sqs }, { queueUrl: plain.url })).rejects.toThrow(
      /none of the 1 message\(s\) read carries a failureReason/,
    );
    expect(await visibleCount(sqs, plain.url)).toBe(1);
    const unchecked = await listDeadLetters({ sqs }, { queueUrl: plain.url, dlqCheck: false });
    expect(unchecked.groups.map((g) => g.reason)).toEqual(['none']);
  });

  it('throws QueueNotFoundError for a wrong queue URL', async () => {
    const wrong = dlq.url.replace(/[^/]+$/, 'no-such-queue');

    await expect(listDeadLetters({ sqs }, { queueUrl: wrong })).rejects.toThrow(QueueNotFoundError);
  });
});

describe("C22: producer attributes beside the consumer's", () => {
  it('lists a message moved by the redrive policy as such (reason none), with source=web-checkout and attempts=3 as they were', async () => {
    const pair = await createQueuePair(sqs, 'c22-list');
    await moveByRedrivePolicy(sqs, pair.source.url, eventBody('c22-1'), {
      source: { DataType: 'String', StringValue: 'web-checkout' },
      attempts: { DataType: 'Number', StringValue: '3' },
    });
    await seedDeadLetters(sqs, pair.dlq.url, [
      {
        reason: 'BusinessRuleViolation',
        body: eventBody('c22-2'),
        source: pair.source.arn,
        originalMessageId: 'c22-2',
        attempts: 1,
        originalAttributes: {
          source: { DataType: 'String', StringValue: 'web-checkout' },
          attempts: { DataType: 'Number', StringValue: '3' },
        },
      },
    ]);

    const result = await listDeadLetters({ sqs }, { queueUrl: pair.dlq.url });

    const byReason = Object.fromEntries(result.groups.map((g) => [g.reason, g.messages]));
    expect(Object.keys(byReason).sort()).toEqual(['BusinessRuleViolation', 'none']);
    expect(byReason.none?.[0]).toMatchObject({
      deadLettered: false,
      failureReason: undefined,
      attempts: undefined,
      attributes: { source: { DataType: 'String', StringValue: 'web-checkout' }, attempts: { DataType: 'Number', StringValue: '3' } },
    });
    expect(byReason.BusinessRuleViolation?.[0]).toMatchObject({
      deadLettered: true,
      attempts: 1,
      source: pair.source.arn,
      attributes: { source: { DataType: 'String', StringValue: 'web-checkout' }, attempts: { DataType: 'Number', StringValue: '3' } },
    });
    const text = formatList(result);
    expect(text).toContain('none (1): moved by the redrive policy, no reason given');
    expect(text).toMatch(/source=web-checkout, attempts=3/);
  });
});

describe('showDeadLetter', () => {
  it('returns one message in full: body byte for byte and every attribute', async () => {
    const all = await readAll(sqs, dlq.url);
    const target = all.find((m) => readDeadLetterAttributes(m.MessageAttributes ?? {})?.context.originalMessageId === 'm-2');

    const result = await showDeadLetter({ sqs }, { queueUrl: dlq.url, id: target?.MessageId ?? '' });

    expect(result.message.body).toBe(eventBody('e-2', { points: -1 }));
    expect(Object.keys(result.message.messageAttributes).sort()).toEqual(Object.keys(target?.MessageAttributes ?? {}).sort());
    expect(result.message.deadLetter.failureReason).toBe('ValidationError');
    expect(result.message.deadLetter.producerAttributes).toEqual({
      traceId: { DataType: 'String', StringValue: 'trace-2' },
      blob: { DataType: 'Binary', BinaryValue: Buffer.from([0, 1, 2, 255]).toString('base64') },
    });
    expect(result.message.systemAttributes.SentTimestamp).toMatch(/^\d+$/);
    const text = formatShow(result);
    expect(text).toContain(eventBody('e-2', { points: -1 }));
    expect(text).toContain('traceId');
    expect(text).toContain(DeadLetterAttribute.errorMessage);
    expect(await visibleCount(sqs, dlq.url)).toBe(5);
  });

  it("finds a message by the consumer's originalMessageId", async () => {
    const result = await showDeadLetter({ sqs }, { queueUrl: dlq.url, id: 'm-4' });

    expect(result.message.deadLetter.errorType).toBe('TimeoutError');
    expect(result.message.body).toBe(eventBody('e-4'));
  });

  it('throws MessageNotFoundError for an unknown id and leaves the queue as it was', async () => {
    await expect(showDeadLetter({ sqs }, { queueUrl: dlq.url, id: 'nope' })).rejects.toThrow(MessageNotFoundError);
    expect(await visibleCount(sqs, dlq.url)).toBe(5);
  });
});
