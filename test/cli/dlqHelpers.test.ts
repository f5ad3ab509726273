import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { terminalConfirm } from '../../packages/cli/src/dlq/confirm.js';
import { ConfirmationRequiredError } from '../../packages/cli/src/dlq/errors.js';
import { ArchiveDigest, buildReplayMessage, parseArchive } from '../../packages/cli/src/dlq/archiveFormat.js';
import { formatDuration, parseDuration } from '../../packages/cli/src/dlq/duration.js';
import {
  isUnsupportedOperation,
  toDlqToolError,
  CredentialsError,
  QueueNotFoundError,
  UsageError,
} from '../../packages/cli/src/dlq/errors.js';
import { buildRedriveMessage, NotRedrivableError } from '../../packages/cli/src/dlq/redriveMessage.js';
import { parseQueueUrl, parseSqsQueueArn } from '../../packages/cli/src/dlq/queueUrl.js';
import { parseReasons, reasonWarnings } from '../../packages/cli/src/dlq/selection.js';
import { resolveConnection } from '../../packages/cli/src/dlq/sqsClient.js';
import { toDeadLetterRecord, type DeadLetterRecord } from '../../packages/idempotent-consumer/src/dlq/deadLetterRecord.js';
import { arrivalCutoff } from '../../packages/cli/src/dlq/arrivalCutoff.js';
import { ServerClock } from '../../packages/cli/src/dlq/serverClock.js';
import { resolvePayloadEndpoint } from '../../packages/cli/src/dlq/payloadStore.js';
import { buildDeadLetterMessage } from '../../packages/idempotent-consumer/src/dlq/deadLetterMessage.js';

describe('parseDuration', () => {
  it('reads s, m, h, d, w and combinations, in milliseconds', () => {
    expect(parseDuration('90s')).toBe(90_000);
    expect(parseDuration('30m')).toBe(1_800_000);
    expect(parseDuration('2h')).toBe(7_200_000);
    expect(parseDuration('7d')).toBe(604_800_000);
    expect(parseDuration('1w')).toBe(604_800_000);
    expect(parseDuration('1h30m')).toBe(5_400_000);
  });

  it.each(['', '2', 'h', '1.5h', '3 days', '-1h', '2y'])('rejects %j with a UsageError', (text) => {
    expect(() => parseDuration(text)).toThrow(UsageError);
  });

  it('formats ages for a table', () => {
    expect([45_000, 12 * 60_000, 3 * 3_600_000 + 5 * 60_000, 2 * 86_400_000 + 4 * 3_600_000, -5].map(formatDuration)).toEqual([
      '45s',
      '12m',
      '3h05m',
      '2d04h',
      '0s',
    ]);
  });
});

describe('resolveConnection', () => {
  const aws = 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq';
  const local = 'http://sqs.us-east-1.localhost:4566/000000000000/orders-dlq';

  it('uses the AWS default endpoint and the region of an AWS queue URL', () => {
    expect(resolveConnection({ queueUrl: aws, env: {} })).toEqual({ endpoint: undefined, region: 'eu-west-1', dummyCredentials: false });
  });

  it('takes --endpoint, then AWS_ENDPOINT_URL_SQS, then AWS_ENDPOINT_URL', () => {
    const env = { AWS_ENDPOINT_URL: 'http://a:1', AWS_ENDPOINT_URL_SQS: 'http://b:2' };
    expect(resolveConnection({ queueUrl: aws, endpoint: 'http://c:3', env }).endpoint).toBe('http://c:3');
    expect(resolveConnection({ queueUrl: aws, env }).endpoint).toBe('http://b:2');
    expect(resolveConnection({ queueUrl: aws, env: { AWS_ENDPOINT_URL: 'http://a:1' } }).endpoint).toBe('http://a:1');
    expect(resolveConnection({ queueUrl: aws, env: { ...env, AWS_IGNORE_CONFIGURED_ENDPOINT_URLS: 'true' } }).endpoint).toBeUndefined();
  });

  it('reaches an emulator from its queue URL alone, with dummy credentials unless some are configured', () => {
    expect(resolveConnection({ queueUrl: local, env: {} })).toEqual({
      endpoint: 'http://127.0.0.1:4566',
      region: 'us-east-1',
      dummyCredentials: true,
    });
    expect(resolveConnection({ queueUrl: local, env: { AWS_PROFILE: 'dev' } }).dummyCredentials).toBe(false);
  });

  it('rejects an endpoint that is not a URL', () => {
    expect(() => resolveConnection({ queueUrl: aws, endpoint: 'localhost:4566', env: {} })).toThrow(UsageError);
  });
});

describe('parseQueueUrl', () => {
  it('accepts a queue URL and rejects an ARN, a name, a URL without account and queue', () => {
    expect(parseQueueUrl('https://sqs.us-east-1.amazonaws.com/123456789012/q').pathname).toBe('/123456789012/q');
    expect(() => parseQueueUrl('arn:aws:sqs:us-east-1:123456789012:q')).toThrow(/not an ARN/);
    expect(() => parseQueueUrl('orders-dlq')).toThrow(/not a URL/);
    expect(() => parseQueueUrl('https://sqs.us-east-1.amazonaws.com/')).toThrow(/not an SQS queue URL/);
  });
});

describe('parseReasons, reasonWarnings and parseSqsQueueArn', () => {
  it('accepts any reason name (built-in ones and none in any case), and refuses only what cannot be a name', () => {
    expect(parseReasons(['validationerror', 'NONE', 'RetriesExhausted', 'inventory.OutOfStock'])).toEqual([
      'ValidationError',
      'none',
      'RetriesExhausted',
      'inventory.OutOfStock',
    ]);
    expect(parseReasons(['Typo'])).toEqual(['Typo']);
    expect(() => parseReasons(['out of stock'])).toThrow(UsageError);
  });

  it('warns about a reason that matches nothing, naming the reasons present', () => {
    const seen = [record({}), record({ failureReason: 'OutOfStock' }), record({ failureReason: undefined })];

    expect(reasonWarnings({ reasons: ['Foo', 'OutOfStock'] }, seen)).toEqual([
      '--reason Foo matches no message seen; reasons present: none (1), OutOfStock (1), ValidationError (1)',
    ]);
    expect(reasonWarnings({ reasons: ['outofstock'] }, seen)[0]).toMatch(/case-sensitive: did you mean OutOfStock\?/);
    expect(reasonWarnings({}, seen)).toEqual([]);
  });

  it('parses SQS queue ARNs only', () => {
    expect(parseSqsQueueArn('arn:aws:sqs:eu-west-1:123456789012:orders.fifo')).toEqual({
      partition: 'aws',
      region: 'eu-west-1',
      account: '123456789012',
      name: 'orders.fifo',
    });
    expect(parseSqsQueueArn('arn:aws:kafka:eu-west-1:123456789012:cluster/c/1')).toBeUndefined();
  });
});

describe('errors', () => {
  it('recognises unsupported actions of AWS, fauxqs and LocalStack', () => {
    expect(isUnsupportedOperation({ name: 'UnsupportedOperation' })).toBe(true);
    expect(isUnsupportedOperation({ name: 'InvalidAction', message: 'Unknown action: StartMessageMoveTask' })).toBe(true);
    expect(isUnsupportedOperation({ name: 'InternalFailure', $metadata: { httpStatusCode: 501 } })).toBe(true);
    expect(isUnsupportedOperation({ name: 'AccessDenied', $metadata: { httpStatusCode: 403 } })).toBe(false);
  });

  it('maps SDK errors to operator messages', () => {
    expect(
      toDlqToolError(Object.assign(new Error('Could not load credentials from any providers'), { name: 'CredentialsProviderError' })),
    ).toBeInstanceOf(CredentialsError);
    expect(toDlqToolError(Object.assign(new Error('x'), { name: 'QueueDoesNotExist' }), { queueUrl: 'u' })).toBeInstanceOf(
      QueueNotFoundError,
    );
    expect(toDlqToolError(Object.assign(new Error('x'), { name: 'InvalidClientTokenId' }))).toBeInstanceOf(CredentialsError);
    const other = new Error('other');
    expect(toDlqToolError(other)).toBe(other);
  });
});

describe('buildRedriveMessage', () => {
  it("drops every ic.* attribute, restores the producer's attributes, keeps the body", () => {
    const input = buildRedriveMessage(record({}), 'https://sqs.us-east-1.amazonaws.com/1/orders');

    expect(input).toEqual({
      QueueUrl: 'https://sqs.us-east-1.amazonaws.com/1/orders',
      MessageBody: 'body',
      MessageAttributes: { traceId: { DataType: 'String', StringValue: 't' } },
    });
  });

  it("carries the dead letter's X-Ray trace header back as the AWSTraceHeader system attribute, and no malformed one", () => {
    const header = 'Root=1-6b0f6c77-2b11a03c513ebac2bffb0081;Parent=53995c3f42cd8ad8;Sampled=1';
    const target = 'https://sqs.us-east-1.amazonaws.com/1/orders';
    expect(buildRedriveMessage(record({ systemAttributes: { AWSTraceHeader: header } }), target).MessageSystemAttributes).toEqual({
      AWSTraceHeader: { DataType: 'String', StringValue: header },
    });
    expect(
      buildRedriveMessage(record({ systemAttributes: { AWSTraceHeader: 'not a header' } }), target).MessageSystemAttributes,
    ).toBeUndefined();
  });

  it('sends the body read back from S3 in place of the pointer, and refuses what does not fit the target', () => {
    const offloaded = record({ offloaded: { bucket: 'b', key: 'k', bytes: 9, sha256: 'x' } });
    const target = 'https://sqs.us-east-1.amazonaws.com/1/orders';

    expect(buildRedriveMessage(offloaded, target, { body: 'original!' }).MessageBody).toBe('original!');
    expect(() => buildRedriveMessage(offloaded, target)).toThrow(/s3:\/\/b\/k and was not read/);
    expect(() => buildRedriveMessage(offloaded, target, { body: 'original!', maxMessageSizeBytes: 20 })).toThrow(
      /is 23 bytes, more than the 20 bytes/,
    );
  });

  it('refuses a body the DLQ keeps in base64 or as the empty placeholder, and unreadable producer attributes', () => {
    const target = 'https://sqs.us-east-1.amazonaws.com/1/orders';
    expect(() => buildRedriveMessage(record({ bodyEncoding: 'base64' }), target)).toThrow(NotRedrivableError);
    expect(() => buildRedriveMessage(record({ bodyEncoding: 'empty' }), target)).toThrow(/was empty/);
    expect(() => buildRedriveMessage(record({ producerAttributes: undefined, problem: 'bad json' }), target)).toThrow(/bad json/);
  });

  it('keeps the message group and derives a stable deduplication id for a FIFO target', () => {
    const a = buildRedriveMessage(record({ messageGroupId: 'g' }), 'https://sqs.us-east-1.amazonaws.com/1/orders.fifo');
    const b = buildRedriveMessage(record({ messageGroupId: 'g' }), 'https://sqs.us-east-1.amazonaws.com/1/orders.fifo');

    expect(a.MessageGroupId).toBe('g');
    expect(a.MessageDeduplicationId).toMatch(/^[0-9a-f]{64}$/);
    expect(a.MessageDeduplicationId).toBe(b.MessageDeduplicationId);
    expect(() => buildRedriveMessage(record({}), 'https://sqs.us-east-1.amazonaws.com/1/orders.fifo')).toThrow(NotRedrivableError);
  });
});

describe('toDeadLetterRecord', () => {
  it('reads a message the consumer dead-lettered, and one the redrive policy moved', () => {
    const { input } = buildDeadLetterMessage(
      'https://sqs.us-east-1.amazonaws.com/1/dlq',
      {
        body: 'b',
        failure: { reason: 'OutOfStock', errorType: 'OutOfStock', errorMessage: 'none left' },
        attempts: 2,
        source: 'arn:aws:sqs:us-east-1:1:orders',
        originalMessageId: 'm-1',
        coordinates: { messageGroupId: 'g' },
        originalAttributes: { source: { DataType: 'String', StringValue: 'web-checkout' } },
        failedAt: new Date('2026-01-01T00:00:00Z'),
      },
      { fifo: false, maxMessageSizeBytes: 1_048_576 },
    );

    const dead = toDeadLetterRecord({ MessageId: 'd-1', ReceiptHandle: 'r', Body: 'b', MessageAttributes: input.MessageAttributes ?? {} });
    const moved = toDeadLetterRecord({
      MessageId: 'd-2',
      ReceiptHandle: 'r',
      Body: 'b',
      Attributes: { SentTimestamp: '1767225600000' },
      MessageAttributes: { source: { DataType: 'String', StringValue: 'web-checkout' } },
    });

    expect(dead).toMatchObject({
      deadLettered: true,
      failureReason: 'OutOfStock',
      attempts: 2,
      source: 'arn:aws:sqs:us-east-1:1:orders',
      originalMessageId: 'm-1',
      messageGroupId: 'g',
      failedAt: new Date('2026-01-01T00:00:00Z'),
      producerAttributes: { source: { DataType: 'String', StringValue: 'web-checkout' } },
      problem: undefined,
    });
    expect(moved).toMatchObject({
      deadLettered: false,
      failureReason: undefined,
      source: undefined,
      attempts: undefined,
      sentAt: new Date(1_767_225_600_000),
      producerAttributes: { source: { DataType: 'String', StringValue: 'web-checkout' } },
    });
  });
});

describe('the server clock and the arrival cutoff', () => {
  it("ServerClock follows the server's Date, not the local clock, and keeps the latest estimate", () => {
    const clock = new ServerClock();
    expect(clock.synchronized).toBe(false);

    clock.observe(new Date(Date.now() - 120_000));
    clock.observe(new Date(Date.now() - 150_000));
    clock.observe(new Date('not a date'));

    expect(clock.synchronized).toBe(true);
    const skew = Date.now() - clock.now().getTime();
    expect(skew).toBeGreaterThanOrEqual(119_000);
    expect(skew).toBeLessThan(150_000);
  });

  it("arrivalCutoff takes the server's time, never earlier than the latest SentTimestamp received, and the local clock never", () => {
    const sent = (ms: number) => record({ sentAt: new Date(ms) });
    const server = { now: () => new Date(5_000), synchronized: true };
    const unsynchronized = { now: () => new Date(9_999_999), synchronized: false };

    expect(arrivalCutoff(server, [sent(1_000), sent(3_000)])).toBe(5_000);
    expect(arrivalCutoff(server, [sent(7_000)])).toBe(7_000);
    expect(arrivalCutoff(unsynchronized, [sent(1_000), sent(3_000)])).toBe(3_000);
    expect(arrivalCutoff(unsynchronized, [])).toBeUndefined();
  });
});

describe('resolvePayloadEndpoint', () => {
  const connection = (endpoint?: string) => ({ endpoint, region: 'us-east-1', dummyCredentials: false });

  it("takes AWS_ENDPOINT_URL_S3, then AWS_ENDPOINT_URL, then an emulator's SQS endpoint, else S3 itself", () => {
    expect(
      resolvePayloadEndpoint(connection('http://127.0.0.1:4566'), { AWS_ENDPOINT_URL_S3: 'http://s3:1', AWS_ENDPOINT_URL: 'http://a:2' }),
    ).toBe('http://s3:1');
    expect(resolvePayloadEndpoint(connection(), { AWS_ENDPOINT_URL: 'http://a:2' })).toBe('http://a:2');
    expect(resolvePayloadEndpoint(connection('http://127.0.0.1:4566'), {})).toBe('http://127.0.0.1:4566');
    expect(resolvePayloadEndpoint(connection('https://sqs.eu-west-1.amazonaws.com'), {})).toBeUndefined();
    expect(resolvePayloadEndpoint(connection(), {})).toBeUndefined();
  });
});

describe('parseArchive', () => {
  it('needs a message group for a FIFO target and keeps it on replay', () => {
    const text = `${JSON.stringify({ body: 'a', messageId: 'm', attributes: { MessageGroupId: 'g' } })}\n${JSON.stringify({ body: 'b' })}\n`;

    const parsed = parseArchive(text, { fifoTarget: true });

    expect(parsed.problems).toEqual([{ line: 2, message: 'no "attributes.MessageGroupId", which a FIFO queue needs' }]);
    expect(parsed.trailer.status).toBe('missing');
    const input = buildReplayMessage(parsed.entries[0]!, 'https://sqs.us-east-1.amazonaws.com/1/dlq.fifo');
    expect(input.MessageGroupId).toBe('g');
    expect(input.MessageDeduplicationId).toMatch(/^[0-9a-f]{64}$/);
  });

  it('rejects bad attributes and versions, and skips blank lines', () => {
    const lines = [
      JSON.stringify({ body: 'x', messageAttributes: { a: { StringValue: 'no type' } } }),
      JSON.stringify({ body: 'x', messageAttributes: { a: { DataType: 'Binary', BinaryValue: 'not base64!' } } }),
      '   ',
      JSON.stringify({ v: 2, body: 'x' }),
      '[]',
    ];

    const parsed = parseArchive(lines.join('\r\n'), { fifoTarget: false });

    expect(parsed.problems.map((p) => p.line)).toEqual([1, 2, 4, 5]);
    expect(parsed.entries).toEqual([]);
  });
});

describe('archive trailers', () => {
  const lines = ['one', 'two', 'three'].map((body, i) => JSON.stringify({ v: 1, messageId: `m-${i}`, body }));
  const archive = (...rounds: { lines: string[]; final: boolean }[]): string => {
    const digest = new ArchiveDigest();
    const out: string[] = [];
    for (const round of rounds) {
      for (const line of round.lines) {
        digest.add(line);
        out.push(line);
      }
      out.push(digest.trailer(round.final));
    }
    return `${out.join('\n')}\n`;
  };

  it('an archive written to its end is complete; so is one written in rounds', () => {
    expect(parseArchive(archive({ lines, final: true }), { fifoTarget: false }).trailer).toEqual({ status: 'complete', messages: 3 });
    const rounds = archive({ lines: lines.slice(0, 2), final: false }, { lines: lines.slice(2), final: false }, { lines: [], final: true });
    const parsed = parseArchive(rounds, { fifoTarget: false });
    expect(parsed.trailer).toEqual({ status: 'complete', messages: 3 });
    expect(parsed.entries.map((e) => e.message.body)).toEqual(['one', 'two', 'three']);
  });

  it('an archive cut at any line boundary is not complete', () => {
    const whole = archive({ lines: lines.slice(0, 2), final: false }, { lines: lines.slice(2), final: true })
      .trimEnd()
      .split('\n');
    const statuses = whole
      .slice(0, -1)
      .map((_, cut) => parseArchive(`${whole.slice(0, cut + 1).join('\n')}\n`, { fifoTarget: false }).trailer.status);

    expect(statuses).toEqual(['missing', 'missing', 'unfinished', 'missing']);
  });

  it('a changed or dropped line does not match its trailer', () => {
    const whole = archive({ lines, final: true }).split('\n');
    const changed = [whole[0], whole[1]?.replace('two', 'TWO'), ...whole.slice(2)].join('\n');
    const dropped = [whole[0], ...whole.slice(2)].join('\n');

    expect(parseArchive(changed, { fifoTarget: false }).trailer).toMatchObject({ status: 'mismatch', line: 4 });
    expect(parseArchive(dropped, { fifoTarget: false }).trailer).toMatchObject({ status: 'mismatch', line: 3 });
  });
});

describe('terminalConfirm', () => {
  const terminal = (answer: string) => {
    const input = Object.assign(new PassThrough(), { isTTY: true });
    const output = new PassThrough();
    setImmediate(() => input.write(`${answer}\n`));
    return terminalConfirm({ input, output });
  };

  it('goes ahead on y or yes only', async () => {
    expect(await terminal('y')('Delete?')).toBe(true);
    expect(await terminal('YES')('Delete?')).toBe(true);
    expect(await terminal('')('Delete?')).toBe(false);
    expect(await terminal('n')('Delete?')).toBe(false);
  });

  it('refuses without a terminal', async () => {
    const confirm = terminalConfirm({ input: new PassThrough(), output: new PassThrough() });

    await expect(confirm('Delete 3 messages?')).rejects.toThrow(ConfirmationRequiredError);
  });
});

/** A dead-letter record as the tool reads it, with a consumer reason and one producer attribute. */
function record(overrides: Partial<DeadLetterRecord>): DeadLetterRecord {
  return {
    messageId: 'dlq-1',
    receiptHandle: 'rh',
    body: 'body',
    md5OfBody: undefined,
    messageAttributes: {
      'ic.failureReason': { DataType: 'String', StringValue: 'ValidationError' },
      traceId: { DataType: 'String', StringValue: 't' },
    },
    systemAttributes: {},
    deadLettered: true,
    failureReason: 'ValidationError',
    errorType: undefined,
    errorMessage: undefined,
    failedAt: undefined,
    attempts: undefined,
    source: undefined,
    originalMessageId: undefined,
    coordinates: undefined,
    bodyEncoding: undefined,
    offloaded: undefined,
    producerAttributes: { traceId: { DataType: 'String', StringValue: 't' } },
    messageGroupId: undefined,
    sentAt: undefined,
    problem: undefined,
    ...overrides,
  };
}
