import { randomUUID } from 'node:crypto';
import { CreateQueueCommand, DeleteQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Message } from '@aws-sdk/client-sqs';
import type { FinalizeRequestMiddleware } from '@smithy/types';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { localCredentials } from '../../packages/local/src/localClientConfig.js';
import { sendInput, SendInputError } from '../../packages/local/src/sendInput.js';
import type { InputMessage } from '../../packages/local/src/inputFile.js';
import { awsEndpoints } from '../support/awsEndpoints.js';
import { receiveAll } from '../support/sqsMessages.js';
import { describeUnlessDeployedStack } from '../support/testResources.js';

const describe = describeUnlessDeployedStack(
  "creates tables and queues of its own on the run's endpoints (without IC_OUTPUTS_FILE it runs against LocalStack, AWS_ENDPOINT_URL alone)",
);

/** sendInput against the run's SQS server (strict: it refuses what SQS refuses). */
const endpoints = awsEndpoints();
let sqs: SQSClient;
const batchSizes: number[] = [];
const queues: string[] = [];

beforeAll(() => {
  sqs = new SQSClient({ endpoint: endpoints.sqsEndpoint, region: endpoints.region, credentials: { ...localCredentials } });
  const countBatches: FinalizeRequestMiddleware<object, object> = (next, context) => async (args) => {
    if (context.commandName === 'SendMessageBatchCommand') batchSizes.push((args.input as { Entries: unknown[] }).Entries.length);
    return next(args);
  };
  (sqs.middlewareStack as unknown as { add(middleware: unknown, options: object): void }).add(countBatches, {
    step: 'finalizeRequest',
    name: 'countBatches',
  });
});
afterAll(async () => {
  for (const QueueUrl of queues) await sqs.send(new DeleteQueueCommand({ QueueUrl }));
  sqs?.destroy();
});

async function queue(fifo = false): Promise<string> {
  const { QueueUrl } = await sqs.send(
    new CreateQueueCommand({
      QueueName: `input-${randomUUID().slice(0, 8)}${fifo ? '.fifo' : ''}`,
      Attributes: fifo ? { FifoQueue: 'true' } : {},
    }),
  );
  queues.push(QueueUrl!);
  return QueueUrl!;
}

const lines = (bodies: readonly string[]): InputMessage[] => bodies.map((body, index) => ({ line: index + 1, body }));
const bodiesOf = (messages: readonly Message[]) => messages.map((message) => message.Body);

describe('sendInput', () => {
  it('sends five valid 250 KB bodies in two batches (4 + 1), within SQS per-batch 1 MiB', async () => {
    const queueUrl = await queue();
    const input = lines(Array.from({ length: 5 }, (_, i) => `${i}`.repeat(250_000)));
    batchSizes.length = 0;

    const sent = await sendInput(sqs, queueUrl, input, { fifo: false });

    expect(batchSizes).toEqual([4, 1]);
    expect(sent.map((message) => message.line)).toEqual([1, 2, 3, 4, 5]);
    expect(bodiesOf(await receiveAll(sqs, queueUrl, 0)).sort()).toEqual(input.map((message) => message.body).sort());
  });

  it('sends a body with an emoji byte for byte', async () => {
    const queueUrl = await queue();
    const body = '{"eventId":"e-1","note":"paid 🎉"}';

    const [sent] = await sendInput(sqs, queueUrl, lines([body]), { fifo: false });

    const [received] = await receiveAll(sqs, queueUrl, 0);
    expect(received?.MessageId).toBe(sent?.messageId);
    expect(received?.Body).toBe(body);
  });

  it('sends FIFO messages with the group the caller picks, each group in input order, a repeated line as a new message', async () => {
    const queueUrl = await queue(true);
    const input = lines(['{"k":"A","n":1}', '{"k":"B","n":1}', '{"k":"A","n":2}', '{"k":"A","n":2}']);

    await sendInput(sqs, queueUrl, input, { fifo: true, messageGroupId: (message) => (JSON.parse(message.body) as { k: string }).k });

    const received = await receiveAll(sqs, queueUrl, 0);
    expect(received.map((message) => `${message.Attributes?.MessageGroupId}:${message.Body}`)).toEqual([
      'A:{"k":"A","n":1}',
      'A:{"k":"A","n":2}',
      'A:{"k":"A","n":2}',
      'B:{"k":"B","n":1}',
    ]);
  });

  it('names the line of a message SQS refuses', async () => {
    const queueUrl = await queue();

    const sending = sendInput(sqs, queueUrl, lines(['fine', 'bad \u0000 body']), { fifo: false });

    await expect(sending).rejects.toThrow(SendInputError);
    await expect(sending).rejects.toThrow(/input line 2: InvalidMessageContents/);
  });
});
