import { SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { batchBySize, sendInput, SendInputError } from '../../packages/local/src/sendInput.js';

const entry = (bytes: number) => ({ MessageBody: 'x'.repeat(bytes) });
const sizes = (batches: Array<Array<{ MessageBody?: string }>>) => batches.map((batch) => batch.map((e) => e.MessageBody?.length));

describe('batchBySize', () => {
  it('puts at most 10 messages in a batch', () => {
    expect(sizes(batchBySize(Array.from({ length: 23 }, () => entry(1)))).map((batch) => batch.length)).toEqual([10, 10, 3]);
  });

  it('keeps a batch within 1 MiB: five 250 KB bodies go as four and one', () => {
    expect(sizes(batchBySize(Array.from({ length: 5 }, () => entry(250_000))))).toEqual([[250_000, 250_000, 250_000, 250_000], [250_000]]);
  });

  it('fills a batch up to exactly 1 MiB, keeps the order, and counts attributes', () => {
    const exact = [entry(524_288), entry(524_288), entry(1)];
    expect(sizes(batchBySize(exact))).toEqual([[524_288, 524_288], [1]]);
    const withAttribute = [
      entry(524_288),
      { MessageBody: 'x'.repeat(524_288 - 8), MessageAttributes: { k: { DataType: 'String', StringValue: 'v' } } },
    ];
    expect(batchBySize(withAttribute)).toHaveLength(1);
    expect(batchBySize([entry(524_288), { ...withAttribute[1]!, MessageBody: 'x'.repeat(524_288 - 7) }])).toHaveLength(2);
  });

  it('counts bytes, not characters: an emoji is four', () => {
    const emoji = { MessageBody: '🎉'.repeat(131_072) }; // 524,288 bytes
    expect(batchBySize([emoji, emoji, emoji])).toHaveLength(2);
  });
});

describe('sendInput checks before sending', () => {
  const offline = new SQSClient({
    region: 'us-east-1',
    endpoint: 'http://127.0.0.1:9',
    credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
    maxAttempts: 1,
  });
  const input = [{ line: 3, body: '{"id":"a"}' }];

  it('refuses a FIFO queue without a message group function', async () => {
    await expect(sendInput(offline, 'http://127.0.0.1:9/000000000000/q.fifo', input, { fifo: true })).rejects.toThrow(
      /pass messageGroupId/,
    );
  });

  it.each([
    ['an empty group', ''],
    ['a group with a space', 'group one'],
    ['a group of 129 characters', 'g'.repeat(129)],
    ['a group with an emoji', 'g🎉'],
  ])('refuses %s, naming the line', async (_what, group) => {
    const sending = sendInput(offline, 'http://127.0.0.1:9/000000000000/q.fifo', input, { fifo: true, messageGroupId: () => group });
    await expect(sending).rejects.toThrow(SendInputError);
    await expect(sending).rejects.toThrow(/Input line 3: the message group/);
  });
});
