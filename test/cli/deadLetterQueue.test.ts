/**
 * The dead-letter writer (`DeadLetterQueue`) against the real SQS server (fauxqs, which serves
 * S3 too): what lands in the queue, batch by batch, and each entry's own outcome.
 */
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { SendMessageBatchCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeadLetterSendError, InvalidFailureReasonError } from '../../packages/idempotent-consumer/src/dlq/deadLetterErrors.js';
import { readDeadLetterAttributes } from '../../packages/idempotent-consumer/src/dlq/deadLetterMessage.js';
import { DeadLetterQueue } from '../../packages/idempotent-consumer/src/dlq/DeadLetterQueue.js';
import { parsePayloadPointer } from '../../packages/idempotent-consumer/src/dlq/payloadPointer.js';
import {
  contextOf,
  createBucket,
  createQueue,
  eventBody,
  readAll,
  s3For,
  startSqs,
  type FauxqsServer,
  type PoisonSpec,
} from './dlqFixtures.js';

let server: FauxqsServer;
let sqs: SQSClient;
let s3: S3Client;
const MiB = 1_048_576;
const SOURCE = 'arn:aws:sqs:us-east-1:000000000000:events';

beforeAll(async () => {
  let endpoint: string;
  ({ server, sqs, endpoint } = await startSqs());
  ({ s3 } = s3For(endpoint));
});

afterAll(async () => {
  sqs?.destroy();
  s3?.destroy();
  await server?.stop();
});

/** An SQS client that records the entries of every send (1 for SendMessage). */
function counting(): { client: SQSClient; requests: number[] } {
  const requests: number[] = [];
  const client = {
    config: sqs.config,
    send: (command: object) => {
      if (command instanceof SendMessageBatchCommand) requests.push(command.input.Entries?.length ?? 0);
      if (command instanceof SendMessageCommand) requests.push(1);
      return sqs.send(command as never);
    },
  } as unknown as SQSClient;
  return { client, requests };
}

const spec = (id: string, overrides: Partial<PoisonSpec> = {}): PoisonSpec => ({
  reason: 'ValidationError',
  body: eventBody(id),
  source: SOURCE,
  originalMessageId: id,
  ...overrides,
});

describe('DeadLetterQueue.sendBatch', () => {
  it('sends 12 dead letters in requests of at most 10, each body intact, one result per entry in order', async () => {
    const dlq = await createQueue(sqs, 'batch-dlq');
    const { client, requests } = counting();
    const writer = new DeadLetterQueue({ sqs: client, queueUrl: dlq.url, maxMessageSizeBytes: MiB });
    const ids = Array.from({ length: 12 }, (_, i) => `b-${i}`);

    const results = await writer.sendBatch(ids.map((id) => contextOf(spec(id))));

    expect(results.every((r) => r.ok)).toBe(true);
    expect(requests).toEqual([10, 2]);
    const stored = await readAll(sqs, dlq.url);
    expect(stored.map((m) => m.Body).sort()).toEqual(ids.map((id) => eventBody(id)).sort());
    const byId = new Map(stored.map((m) => [m.MessageId, readDeadLetterAttributes(m.MessageAttributes ?? {})?.context.originalMessageId]));
    expect(results.map((r) => (r.ok ? byId.get(r.messageId) : undefined))).toEqual(ids);
  });

  it('keeps each request within the maximum message size: three of 400 KiB go as 2 + 1', async () => {
    const dlq = await createQueue(sqs, 'batch-size-dlq');
    const { client, requests } = counting();
    const writer = new DeadLetterQueue({ sqs: client, queueUrl: dlq.url, maxMessageSizeBytes: MiB });
    const big = (id: string) => spec(id, { body: JSON.stringify({ eventId: id, pad: 'p'.repeat(400 * 1024) }) });

    const results = await writer.sendBatch([big('s-1'), big('s-2'), big('s-3')].map(contextOf));

    expect(results.every((r) => r.ok)).toBe(true);
    expect(requests).toEqual([2, 1]);
    expect(await readAll(sqs, dlq.url)).toHaveLength(3);
  });

  it("reports each entry's own failure: one SQS refuses (too large for the queue), one cannot be built, the others are sent", async () => {
    const dlq = await createQueue(sqs, 'partial-dlq', { MaximumMessageSize: '2048' });
    const writer = new DeadLetterQueue({ sqs, queueUrl: dlq.url, maxMessageSizeBytes: MiB });

    const results = await writer.sendBatch(
      [spec('p-1'), spec('p-2', { body: 'x'.repeat(3000) }), spec('p-3', { reason: 'not a reason' }), spec('p-4')].map(contextOf),
    );

    expect(results.map((r) => r.ok)).toEqual([true, false, false, true]);
    const refused = results[1] as { ok: false; error: DeadLetterSendError };
    expect(refused.error).toBeInstanceOf(DeadLetterSendError);
    expect(refused.error.code).toBe('InvalidParameterValue');
    expect(refused.error.senderFault).toBe(true);
    expect((results[2] as { ok: false; error: Error }).error).toBeInstanceOf(InvalidFailureReasonError);
    expect((await readAll(sqs, dlq.url)).map((m) => m.Body).sort()).toEqual([eventBody('p-1'), eventBody('p-4')]);
  });

  it('FIFO: keeps each group in order; after a failed entry, the later ones of its group are not sent, other groups are', async () => {
    const dlq = await createQueue(sqs, 'fifo-dlq.fifo', { MaximumMessageSize: '2048' });
    const writer = new DeadLetterQueue({ sqs, queueUrl: dlq.url, maxMessageSizeBytes: MiB });
    const g = (id: string, group: string, body = eventBody(id)) => spec(id, { messageGroupId: group, body });

    const results = await writer.sendBatch(
      [g('f-1', 'A'), g('f-2', 'A', 'y'.repeat(3000)), g('f-3', 'A'), g('f-4', 'B'), g('f-5', 'B')].map(contextOf),
    );

    expect(results.map((r) => r.ok)).toEqual([true, false, false, true, true]);
    expect((results[2] as { ok: false; error: DeadLetterSendError }).error.code).toBe('GroupBlocked');
    const stored = await readAll(sqs, dlq.url, { consume: true });
    expect(stored.map((m) => [m.Attributes?.MessageGroupId, m.Body])).toEqual([
      ['A', eventBody('f-1')],
      ['B', eventBody('f-4')],
      ['B', eventBody('f-5')],
    ]);
  });

  it('offloads a body too large for the queue to S3 and sends the pointer, loading the S3 client only then', async () => {
    const dlq = await createQueue(sqs, 'offload-batch-dlq');
    const bucket = await createBucket(s3);
    let s3Made = 0;
    const writer = new DeadLetterQueue({
      sqs,
      queueUrl: dlq.url,
      maxMessageSizeBytes: MiB,
      payloadBucket: bucket,
      s3: () => {
        s3Made += 1;
        return s3;
      },
    });
    const large = 'L'.repeat(MiB + 10);

    const small = await writer.sendBatch([contextOf(spec('o-1'))]);
    const madeForSmall = s3Made;
    const mixed = await writer.sendBatch([spec('o-2'), spec('o-3', { body: large })].map(contextOf));

    expect(small.every((r) => r.ok)).toBe(true);
    expect(madeForSmall).toBe(0);
    expect(mixed.every((r) => r.ok)).toBe(true);
    expect(s3Made).toBe(1);
    const pointerMessage = (await readAll(sqs, dlq.url)).find((m) => parsePayloadPointer(m.Body ?? '') !== undefined);
    const pointer = parsePayloadPointer(pointerMessage?.Body ?? '');
    const object = await s3.send(new GetObjectCommand({ Bucket: pointer?.bucket, Key: pointer?.key }));
    expect(await object.Body?.transformToString('utf-8')).toBe(large);
  });

  it('fails the entry, not the batch, when the body is too large and there is no bucket', async () => {
    const dlq = await createQueue(sqs, 'no-bucket-dlq');
    const writer = new DeadLetterQueue({ sqs, queueUrl: dlq.url, maxMessageSizeBytes: MiB });

    const results = await writer.sendBatch([spec('n-1', { body: 'L'.repeat(MiB + 10) }), spec('n-2')].map(contextOf));

    expect(results.map((r) => r.ok)).toEqual([false, true]);
    expect((results[0] as { ok: false; error: Error }).error.name).toBe('DeadLetterTooLargeError');
    expect((await readAll(sqs, dlq.url)).map((m) => m.Body)).toEqual([eventBody('n-2')]);
  });
});
