import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { terminalConfirm } from '../../cli/dlq/confirm.js';
import { ConfirmationRequiredError } from '../../cli/dlq/errors.js';
import { buildReplayMessage, parseArchive } from '../../cli/dlq/archiveFormat.js';
import { formatDuration, parseDuration } from '../../cli/dlq/duration.js';
import { isUnsupportedOperation, toDlqToolError, CredentialsError, QueueNotFoundError, UsageError } from '../../cli/dlq/errors.js';
import { buildRedriveMessage, NotRedrivableError } from '../../cli/dlq/redriveMessage.js';
import { parseSqsQueueArn } from '../../cli/dlq/redriveTarget.js';
import { parseReasons } from '../../cli/dlq/selection.js';
import { parseQueueUrl, resolveConnection } from '../../cli/dlq/sqsClient.js';
import type { DeadLetterRecord } from '../../cli/dlq/deadLetterRecord.js';
import { DeadLetterAttribute } from '../../lambda/dlq/deadLetterMessage.js';

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
    expect(resolveConnection({ queueUrl: local, env: {} })).toEqual({ endpoint: 'http://127.0.0.1:4566', region: 'us-east-1', dummyCredentials: true });
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

describe('parseReasons and parseSqsQueueArn', () => {
  it('accepts the failure reasons in any case, and none', () => {
    expect(parseReasons(['validationerror', 'none', 'RetriesExhausted'])).toEqual(['ValidationError', '(none)', 'RetriesExhausted']);
    expect(() => parseReasons(['Typo'])).toThrow(/unknown --reason "Typo"; one of: ValidationError/);
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
    expect(toDlqToolError(Object.assign(new Error('Could not load credentials from any providers'), { name: 'CredentialsProviderError' }))).toBeInstanceOf(CredentialsError);
    expect(toDlqToolError(Object.assign(new Error('x'), { name: 'QueueDoesNotExist' }), { queueUrl: 'u' })).toBeInstanceOf(QueueNotFoundError);
    expect(toDlqToolError(Object.assign(new Error('x'), { name: 'InvalidClientTokenId' }))).toBeInstanceOf(CredentialsError);
    const other = new Error('other');
    expect(toDlqToolError(other)).toBe(other);
  });
});

describe('buildRedriveMessage', () => {
  const record = (overrides: Partial<DeadLetterRecord>): DeadLetterRecord => ({
    messageId: 'dlq-1',
    receiptHandle: 'rh',
    body: 'body',
    md5OfBody: undefined,
    messageAttributes: {
      [DeadLetterAttribute.failureReason]: { DataType: 'String', StringValue: 'ValidationError' },
      [DeadLetterAttribute.source]: { DataType: 'String', StringValue: 'arn:aws:sqs:us-east-1:1:orders' },
      other: { DataType: 'String', StringValue: 'kept' },
    },
    systemAttributes: {},
    failureReason: 'ValidationError',
    errorType: undefined,
    errorMessage: undefined,
    failedAt: undefined,
    attempts: undefined,
    source: undefined,
    originalMessageId: undefined,
    coordinates: undefined,
    originalAttributes: { traceId: { DataType: 'String', StringValue: 't' } },
    messageGroupId: undefined,
    sentAt: undefined,
    ...overrides,
  });

  it('drops the failure attributes, restores the original ones, keeps the body', () => {
    const input = buildRedriveMessage(record({}), 'https://sqs.us-east-1.amazonaws.com/1/orders');

    expect(input).toEqual({
      QueueUrl: 'https://sqs.us-east-1.amazonaws.com/1/orders',
      MessageBody: 'body',
      MessageAttributes: { other: { DataType: 'String', StringValue: 'kept' }, traceId: { DataType: 'String', StringValue: 't' } },
    });
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

describe('parseArchive', () => {
  it('needs a message group for a FIFO target and keeps it on replay', () => {
    const text = `${JSON.stringify({ body: 'a', messageId: 'm', attributes: { MessageGroupId: 'g' } })}\n${JSON.stringify({ body: 'b' })}\n`;

    const parsed = parseArchive(text, { fifoTarget: true });

    expect(parsed.problems).toEqual([{ line: 2, message: 'no "attributes.MessageGroupId", which a FIFO queue needs' }]);
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
