import { createHash } from 'node:crypto';
import {
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { Message, MessageAttributeValue } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localClientConfig } from '../../packages/local/src/localClientConfig.js';
import { startSqsServer } from '../../packages/local/src/sqsServer.js';
import type { SqsServer } from '../../packages/local/src/sqsServer.js';

/**
 * The strict SQS server, through the AWS SDK: every rule of `local/aws/strictSqs.ts` against a
 * real server. It starts its own servers (the 12-hour rule needs a clock the test moves).
 */
let now = Date.parse('2025-06-01T00:00:00Z');
let strict: SqsServer;
let lenient: SqsServer;
let sqs: SQSClient;
let fauxqsAlone: SQSClient;

beforeAll(async () => {
  strict = await startSqsServer({ clock: () => now });
  lenient = await startSqsServer({ strict: false });
  sqs = new SQSClient({ ...localClientConfig(strict.endpoint), maxAttempts: 1 });
  fauxqsAlone = new SQSClient({ ...localClientConfig(lenient.endpoint), maxAttempts: 1 });
});
afterAll(async () => {
  sqs?.destroy();
  fauxqsAlone?.destroy();
  await Promise.all([strict?.stop(), lenient?.stop()]);
});

let queueCount = 0;
async function createQueue(client: SQSClient, options: { fifo?: boolean; maximumMessageSize?: number } = {}): Promise<string> {
  queueCount += 1;
  const name = `q${queueCount}${options.fifo ? '.fifo' : ''}`;
  const { QueueUrl } = await client.send(
    new CreateQueueCommand({
      QueueName: name,
      Attributes: {
        ...(options.fifo ? { FifoQueue: 'true', ContentBasedDeduplication: 'true' } : {}),
        ...(options.maximumMessageSize ? { MaximumMessageSize: String(options.maximumMessageSize) } : {}),
      },
    }),
  );
  return QueueUrl!;
}

async function receive(client: SQSClient, queueUrl: string, visibilityTimeout?: number): Promise<Message[]> {
  const { Messages = [] } = await client.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: 0,
      MessageSystemAttributeNames: ['All'],
      MessageAttributeNames: ['All'],
      ...(visibilityTimeout === undefined ? {} : { VisibilityTimeout: visibilityTimeout }),
    }),
  );
  return Messages;
}

/** The error a send is refused with, as `{ name, message }`, or `undefined` when it is accepted. */
async function refusal(send: Promise<unknown>): Promise<{ name: string; message: string } | undefined> {
  try {
    await send;
    return undefined;
  } catch (error) {
    return { name: (error as Error).name, message: (error as Error).message };
  }
}

const text = (value: string): MessageAttributeValue => ({ DataType: 'String', StringValue: value });
const attributes = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`a${i}`, text('v')]));

describe('the strict SQS server', () => {
  describe('character set', () => {
    it('accepts an emoji in a body and a String attribute, and hands them back byte for byte', async () => {
      const queueUrl = await createQueue(sqs);
      const body = '{"eventId":"e-1","note":"paid 🎉☕"}';

      await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body, MessageAttributes: { mood: text('🙂') } }));
      await sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: [{ Id: 'b', MessageBody: `${body}🚀` }] }));

      const messages = await receive(sqs, queueUrl);
      expect(messages.map((message) => message.Body).sort()).toEqual([body, `${body}🚀`].sort());
      const first = messages.find((message) => message.Body === body)!;
      expect(first.MD5OfBody).toBe(createHash('md5').update(body, 'utf8').digest('hex'));
      expect(first.MessageAttributes?.['mood']?.StringValue).toBe('🙂');
    });

    it('refuses NUL in a body (InvalidMessageContents) and in a String attribute value', async () => {
      const queueUrl = await createQueue(sqs);

      expect(await refusal(sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'a\u0000b' })))).toMatchObject({
        name: 'InvalidMessageContents',
        message: expect.stringContaining('U+0000'),
      });
      expect(
        await refusal(
          sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'ok', MessageAttributes: { x: text('a\u0000') } })),
        ),
      ).toMatchObject({ name: 'InvalidParameterValue' });
      expect(await receive(sqs, queueUrl)).toEqual([]);
    });
  });

  describe('message attributes', () => {
    it('accepts 10 attributes and refuses 11 with AWS message; fauxqs alone accepts 11', async () => {
      const queueUrl = await createQueue(sqs);
      const lenientQueueUrl = await createQueue(fauxqsAlone);

      await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'ten', MessageAttributes: attributes(10) }));
      const eleven = await refusal(
        sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'eleven', MessageAttributes: attributes(11) })),
      );
      const alone = await refusal(
        fauxqsAlone.send(new SendMessageCommand({ QueueUrl: lenientQueueUrl, MessageBody: 'eleven', MessageAttributes: attributes(11) })),
      );

      expect(eleven).toEqual({
        name: 'InvalidParameterValue',
        message: 'Number of message attributes [11] exceeds the allowed maximum [10].',
      });
      expect(alone).toBeUndefined();
    });

    it.each([
      ['a name starting with AWS.', { 'AWS.trace': text('v') }, /reserved/],
      ['a name starting with amazon. in another case', { 'amazon.x': text('v') }, /reserved/],
      ['a name ending with a period', { 'x.': text('v') }, /period/],
      ['a name with successive periods', { 'a..b': text('v') }, /successive periods/],
      ['an empty String value', { x: text('') }, /non-empty value/],
      ['an unknown data type', { x: { DataType: 'Text', StringValue: 'v' } }, /type prefixes/],
      ['a Number that is not a number', { x: { DataType: 'Number', StringValue: 'NaN' } }, /number/],
    ] as Array<[string, Record<string, MessageAttributeValue>, RegExp]>)('refuses %s', async (_what, messageAttributes, message) => {
      const queueUrl = await createQueue(sqs);

      const refused = await refusal(
        sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'b', MessageAttributes: messageAttributes })),
      );

      expect(refused?.name).toBe('InvalidParameterValue');
      expect(refused?.message).toMatch(message);
    });

    it('lets fauxqs alone accept a name starting with AWS. and an empty value (the leniency the layer removes)', async () => {
      const queueUrl = await createQueue(fauxqsAlone);

      expect(
        await refusal(
          fauxqsAlone.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'b', MessageAttributes: { 'AWS.x': text('v') } })),
        ),
      ).toBeUndefined();
      expect(
        await refusal(
          fauxqsAlone.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'b', MessageAttributes: { x: text('') } })),
        ),
      ).toBeUndefined();
    });
  });

  describe('sizes', () => {
    it("counts body and attributes against the queue's MaximumMessageSize", async () => {
      const queueUrl = await createQueue(sqs, { maximumMessageSize: 1_024 });
      const withAttribute = (bodyBytes: number) =>
        sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'x'.repeat(bodyBytes), MessageAttributes: { k: text('v') } }));

      expect(await refusal(withAttribute(1_024 - 8))).toBeUndefined(); // k + String + v = 8 bytes
      expect(await refusal(withAttribute(1_024 - 7))).toEqual({
        name: 'InvalidParameterValue',
        message: 'One or more parameters are invalid. Reason: Message must be shorter than 1024 bytes.',
      });
    });

    it('refuses a SendMessageBatch over 1 MiB in total (five 250 KB bodies) and accepts four', async () => {
      const queueUrl = await createQueue(sqs);
      const entries = (count: number) => Array.from({ length: count }, (_, i) => ({ Id: `e${i}`, MessageBody: String(i).repeat(250_000) }));

      const five = await refusal(sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries(5) })));
      const four = await sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries(4) }));

      expect(five?.name).toBe('BatchRequestTooLong');
      expect(four.Successful).toHaveLength(4);
    });
  });

  describe('batches', () => {
    it('refuses 11 entries and repeated entry ids', async () => {
      const queueUrl = await createQueue(sqs);
      const entries = Array.from({ length: 11 }, (_, i) => ({ Id: `e${i}`, MessageBody: 'b' }));

      expect((await refusal(sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }))))?.name).toBe(
        'TooManyEntriesInBatchRequest',
      );
      expect(
        (
          await refusal(
            sqs.send(
              new SendMessageBatchCommand({
                QueueUrl: queueUrl,
                Entries: [
                  { Id: 'a', MessageBody: '1' },
                  { Id: 'a', MessageBody: '2' },
                ],
              }),
            ),
          )
        )?.name,
      ).toBe('BatchEntryIdsNotDistinct');
    });

    it('fails only the entries that break a rule and sends the others', async () => {
      const queueUrl = await createQueue(sqs);

      const output = await sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: [
            { Id: 'good', MessageBody: 'fine 🎉' },
            { Id: 'nul', MessageBody: 'bad \u0000' },
            { Id: 'attrs', MessageBody: 'too many', MessageAttributes: attributes(11) },
          ],
        }),
      );

      expect(output.Successful?.map((entry) => entry.Id)).toEqual(['good']);
      expect(output.Failed?.map((entry) => [entry.Id, entry.Code, entry.SenderFault]).sort()).toEqual([
        ['attrs', 'InvalidParameterValue', true],
        ['nul', 'InvalidMessageContents', true],
      ]);
      expect((await receive(sqs, queueUrl)).map((message) => message.Body)).toEqual(['fine 🎉']);
    });
  });

  describe('FIFO message groups', () => {
    async function sendGroups(client: SQSClient, queueUrl: string, groups: Record<string, number>): Promise<void> {
      for (const [group, count] of Object.entries(groups)) {
        await client.send(
          new SendMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: Array.from({ length: count }, (_, i) => ({ Id: `m${i}`, MessageBody: `${group}-${i + 1}`, MessageGroupId: group })),
          }),
        );
      }
    }
    const bodies = (messages: readonly Message[]) => messages.map((message) => message.Body);
    const receiveCounts = (messages: readonly Message[]) => messages.map((message) => message.Attributes?.ApproximateReceiveCount);

    it('returns several messages of one group in one receive, in order, then other groups; fauxqs alone returns one per group', async () => {
      const queueUrl = await createQueue(sqs, { fifo: true });
      const lenientQueueUrl = await createQueue(fauxqsAlone, { fifo: true });
      await sendGroups(sqs, queueUrl, { A: 4, B: 2 });
      await sendGroups(fauxqsAlone, lenientQueueUrl, { A: 4, B: 2 });

      const messages = await receive(sqs, queueUrl);
      const alone = await receive(fauxqsAlone, lenientQueueUrl);

      expect(bodies(messages)).toEqual(['A-1', 'A-2', 'A-3', 'A-4', 'B-1', 'B-2']);
      expect(receiveCounts(messages)).toEqual(['1', '1', '1', '1', '1', '1']);
      expect(bodies(alone)).toEqual(['A-1', 'B-1']);
    });

    it('returns nothing more of a group while any of its messages is in flight', async () => {
      const queueUrl = await createQueue(sqs, { fifo: true });
      await sendGroups(sqs, queueUrl, { A: 3 });
      const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 2 }));

      await sendGroups(sqs, queueUrl, { B: 1 });
      const next = await receive(sqs, queueUrl);

      expect(bodies(Messages)).toEqual(['A-1', 'A-2']);
      expect(bodies(next)).toEqual(['B-1']);
    });

    it('counts a receive for every message received, and gives a group released message by message back in order', async () => {
      const queueUrl = await createQueue(sqs, { fifo: true });
      await sendGroups(sqs, queueUrl, { A: 5 });
      const first = await receive(sqs, queueUrl);

      // The consumer ran A-1, failed on it and reported the rest without running them; the
      // consumer's backoff releases them one by one, in batch order.
      for (const message of first) {
        await sqs.send(
          new ChangeMessageVisibilityCommand({ QueueUrl: queueUrl, ReceiptHandle: message.ReceiptHandle!, VisibilityTimeout: 0 }),
        );
      }
      const second = await receive(sqs, queueUrl);

      expect(bodies(second)).toEqual(['A-1', 'A-2', 'A-3', 'A-4', 'A-5']);
      expect(receiveCounts(second)).toEqual(['2', '2', '2', '2', '2']);
    });

    it('gives a group back in order when the visibility timeout of its messages ends', async () => {
      const queueUrl = await createQueue(sqs, { fifo: true });
      await sendGroups(sqs, queueUrl, { A: 4 });
      await receive(sqs, queueUrl, 1);

      let again: Message[] = [];
      for (let attempt = 0; again.length === 0 && attempt < 200; attempt += 1) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        again = await receive(sqs, queueUrl);
      }

      expect(bodies(again)).toEqual(['A-1', 'A-2', 'A-3', 'A-4']);
      expect(receiveCounts(again)).toEqual(['2', '2', '2', '2']);
    });
  });

  describe('FIFO sends (fauxqs enforces these itself)', () => {
    it('refuses a message without a message group, and one without a deduplication id when content-based deduplication is off', async () => {
      queueCount += 1;
      const { QueueUrl: queueUrl } = await sqs.send(
        new CreateQueueCommand({ QueueName: `nodedup${queueCount}.fifo`, Attributes: { FifoQueue: 'true' } }),
      );

      const noGroup = await refusal(
        sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'b', MessageDeduplicationId: 'd' })),
      );
      const noDeduplicationId = await refusal(
        sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'b', MessageGroupId: 'g' })),
      );

      expect(noGroup?.name).toBe('MissingParameter');
      expect(noDeduplicationId?.name).toBe('InvalidParameterValue');
    });
  });

  describe('the 12-hour visibility limit', () => {
    it('counts from the receive: an extension to exactly 12 hours passes, one second more is refused', async () => {
      const queueUrl = await createQueue(sqs);
      await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'long job' }));
      const [message] = await receive(sqs, queueUrl, 30);
      const change = (seconds: number) =>
        sqs.send(
          new ChangeMessageVisibilityCommand({ QueueUrl: queueUrl, ReceiptHandle: message!.ReceiptHandle!, VisibilityTimeout: seconds }),
        );

      now += 11 * 3_600 * 1_000; // eleven hours after the receive
      const beyond = await refusal(change(3_601));
      const upTo = await refusal(change(3_600));

      expect(beyond).toEqual({
        name: 'InvalidParameterValue',
        message:
          'Value 3601 for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [43200 seconds].',
      });
      expect(upTo).toBeUndefined();
    });

    it('fails only the entries of a ChangeMessageVisibilityBatch that go beyond it', async () => {
      const queueUrl = await createQueue(sqs);
      await sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: [
            { Id: 'a', MessageBody: 'a' },
            { Id: 'b', MessageBody: 'b' },
          ],
        }),
      );
      const [a, b] = await receive(sqs, queueUrl, 30);
      now += 12 * 3_600 * 1_000 - 60_000; // one minute left

      const output = await sqs.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: queueUrl,
          Entries: [
            { Id: 'short', ReceiptHandle: a!.ReceiptHandle!, VisibilityTimeout: 60 },
            { Id: 'long', ReceiptHandle: b!.ReceiptHandle!, VisibilityTimeout: 61 },
          ],
        }),
      );

      expect(output.Successful?.map((entry) => entry.Id)).toEqual(['short']);
      expect(output.Failed).toEqual([expect.objectContaining({ Id: 'long', Code: 'InvalidParameterValue', SenderFault: true })]);
    });
  });
});
