import { SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { withOverrides } from '../../packages/idempotent-consumer/src/settings/settings.js';
import { pollerOptionsFromSettings, SqsEventSourcePoller } from '../../packages/local/src/sqsEventSourcePoller.js';
import type { SqsEventSourcePollerOptions } from '../../packages/local/src/sqsEventSourcePoller.js';

/** The poller's checks of Lambda's event source mapping limits (no server needed: the constructor refuses). */
const sqs = new SQSClient({ region: 'us-east-1', endpoint: 'http://127.0.0.1:9', credentials: { accessKeyId: 'a', secretAccessKey: 'b' } });
const base: SqsEventSourcePollerOptions = {
  sqs,
  queueUrl: 'http://127.0.0.1:9/000000000000/q',
  queueArn: 'arn:aws:sqs:us-east-1:000000000000:q',
  createHandler: () => () => undefined,
};
const fifoBase = { ...base, queueUrl: 'http://127.0.0.1:9/000000000000/q.fifo', queueArn: 'arn:aws:sqs:us-east-1:000000000000:q.fifo' };

describe('SqsEventSourcePoller limits (Lambda SQS event source mapping)', () => {
  it.each([
    ['a batch size of 0', { batchSize: 0 }, /batchSize 0 is outside 1..10000/],
    ['a batch size of 10,001', { batchSize: 10_001 }, /outside 1..10000/],
    ['a batching window over 300 s', { maxBatchingWindowSeconds: 301 }, /0..300/],
    ['a function timeout over 900 s', { functionTimeoutSeconds: 901 }, /\(0, 900\]/],
    ['a long-poll wait over 20 s', { waitTimeSeconds: 21 }, /0..20/],
    ['no concurrency', { concurrency: 0 }, /positive integer/],
  ] as Array<[string, Partial<SqsEventSourcePollerOptions>, RegExp]>)('refuses %s', (_what, options, message) => {
    expect(() => new SqsEventSourcePoller({ ...base, ...options })).toThrow(message);
  });

  it('allows 10 records per batch on a FIFO queue and refuses 11', () => {
    expect(() => new SqsEventSourcePoller({ ...fifoBase, batchSize: 10 })).not.toThrow();
    expect(() => new SqsEventSourcePoller({ ...fifoBase, batchSize: 11 })).toThrow(/outside 1..10$/);
  });

  it('refuses an ARN that is not an SQS queue ARN', () => {
    expect(() => new SqsEventSourcePoller({ ...base, queueArn: 'arn:aws:sns:us-east-1:000000000000:topic' })).toThrow(
      /not an SQS queue ARN/,
    );
  });

  it('takes the batch settings from the one source of settings', () => {
    const settings = withOverrides({ queue: { fifo: true }, function: { batchSize: 7, timeoutSeconds: 12, maxConcurrency: 3 } });
    expect(pollerOptionsFromSettings(settings)).toMatchObject({ batchSize: 7, functionTimeoutSeconds: 12, concurrency: 3, fifo: true });
  });
});
