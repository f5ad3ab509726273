/**
 * Case C20 and bodies too large for the DLQ: the writer offloads the body to S3 (the Extended
 * Client convention), and `show`, `archive`, `replay` and `redrive` get it back whole.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeleteObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { archiveDeadLetters } from '../../packages/cli/src/dlq/archive.js';
import type { PayloadStore } from '../../packages/cli/src/dlq/payloadStore.js';
import { listDeadLetters } from '../../packages/cli/src/dlq/list.js';
import { formatShow } from '../../packages/cli/src/dlq/output.js';
import { redriveDeadLetters } from '../../packages/cli/src/dlq/redrive.js';
import { replayArchive } from '../../packages/cli/src/dlq/replay.js';
import { showDeadLetter } from '../../packages/cli/src/dlq/show.js';
import { DeadLetterTooLargeError } from '../../packages/idempotent-consumer/src/dlq/deadLetterErrors.js';
import { attributesSize } from '../../packages/idempotent-consumer/src/dlq/deadLetterMessage.js';
import { DeadLetterQueue } from '../../packages/idempotent-consumer/src/dlq/DeadLetterQueue.js';
import { EXTENDED_PAYLOAD_SIZE_ATTRIBUTE, parsePayloadPointer } from '../../packages/idempotent-consumer/src/dlq/payloadPointer.js';
import {
  comparable,
  contextOf,
  createBucket,
  createQueue,
  createQueuePair,
  readAll,
  s3For,
  startSqs,
  visibleCount,
  type FauxqsServer,
} from './dlqFixtures.js';

let server: FauxqsServer;
let sqs: SQSClient;
let s3: S3Client;
let payloads: PayloadStore;
let folder: string;
const MiB = 1_048_576;
const fast = { waitTimeSeconds: 0, visibilityTimeoutSeconds: 30 };
const MSK = 'arn:aws:kafka:us-east-1:123456789012:cluster/events/abc';

beforeAll(async () => {
  let endpoint: string;
  ({ server, sqs, endpoint } = await startSqs());
  ({ s3, payloads } = s3For(endpoint));
  folder = await mkdtemp(join(tmpdir(), 'dlq-offload-'));
});

afterAll(async () => {
  sqs?.destroy();
  s3?.destroy();
  await server?.stop();
  if (folder !== undefined) await rm(folder, { recursive: true, force: true });
});

/** C20: a Kafka value of 800 KiB that is not UTF-8 (over 1 MiB once base64), at offset 10 of events-0. */
const value = Buffer.from(Array.from({ length: 800 * 1024 }, (_, i) => (i * 7 + 0x80) % 256));
const c20 = {
  reason: 'ValidationError',
  body: value.toString('base64'),
  bodyEncoding: 'base64' as const,
  errorMessage: 'the value is not valid UTF-8',
  source: MSK,
  originalMessageId: 'events-0@10',
  messageGroupId: 'K-10',
  // A recent record: redrive and replay refuse one older than the inbox window (docs/dlq.md, "The inbox window").
  coordinates: { topic: 'events', partition: 0, offset: 10, timestamp: Date.now() - 60_000, timestampType: 'CREATE_TIME', key: 'K-10' },
  attempts: 1,
};

async function c20Scenario() {
  const dlq = await createQueue(sqs, 'c20-dlq');
  const bucket = await createBucket(s3);
  const writer = new DeadLetterQueue({ sqs, s3, queueUrl: dlq.url, maxMessageSizeBytes: MiB, payloadBucket: bucket });
  const messageId = await writer.send(contextOf(c20));
  return { dlq, bucket, messageId };
}

describe('C20: a message too large for the DLQ', () => {
  it('is set aside on its first attempt with its reason and coordinates; show gets its whole value back', async () => {
    expect(Buffer.byteLength(c20.body)).toBeGreaterThan(MiB);
    const { dlq, bucket, messageId } = await c20Scenario();

    const listed = await listDeadLetters({ sqs, payloads }, { queueUrl: dlq.url, ...fast });
    const shown = await showDeadLetter({ sqs, payloads }, { queueUrl: dlq.url, id: 'events-0@10', ...fast });

    expect(listed.groups.map((g) => [g.reason, g.count])).toEqual([['ValidationError', 1]]);
    expect(listed.groups[0]?.messages[0]).toMatchObject({
      messageId,
      attempts: 1,
      source: MSK,
      offloadedTo: expect.stringMatching(`^s3://${bucket}/dead-letters/`),
    });
    expect(shown.message.deadLetter).toMatchObject({
      failureReason: 'ValidationError',
      originalMessageId: 'events-0@10',
      bodyEncoding: 'base64',
      coordinates: { topic: 'events', partition: 0, offset: 10, key: 'K-10' },
    });
    expect(parsePayloadPointer(shown.message.body)?.bucket).toBe(bucket);
    expect(shown.message.messageAttributes[EXTENDED_PAYLOAD_SIZE_ATTRIBUTE]?.StringValue).toBe(String(Buffer.byteLength(c20.body)));
    expect(Buffer.from(shown.message.offloaded?.body ?? '', 'base64').equals(value)).toBe(true);
    expect(formatShow(shown)).toContain(`Body (offloaded to s3://${bucket}/`);
  });

  it('archive keeps the whole value; replay stores it in S3 again (after the object expired) and puts the message back as it was', async () => {
    const { dlq, bucket } = await c20Scenario();
    const [before] = await readAll(sqs, dlq.url);
    const out = join(folder, 'c20.jsonl');

    const archived = await archiveDeadLetters({ sqs, payloads }, { queueUrl: dlq.url, out, delete: true, yes: true, ...fast });
    const key = parsePayloadPointer(before?.Body ?? '')?.key ?? '';
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    const replayed = await replayArchive({ sqs, payloads }, { in: out, queueUrl: dlq.url });
    const shown = await showDeadLetter({ sqs, payloads }, { queueUrl: dlq.url, id: 'events-0@10', ...fast });

    expect(archived).toMatchObject({ archived: 1, deleted: 1, notArchived: [] });
    const line = JSON.parse((await readFile(out, 'utf8')).split('\n')[0] ?? '{}') as { body: string; offloadedBody: string };
    expect(line.body).toBe(before?.Body);
    expect(Buffer.from(line.offloadedBody, 'base64').equals(value)).toBe(true);
    expect(replayed.sent).toBe(1);
    const [after] = await readAll(sqs, dlq.url);
    expect(after?.Body).toBe(before?.Body);
    expect(comparable(after?.MessageAttributes)).toEqual(comparable(before?.MessageAttributes));
    expect(Buffer.from(shown.message.offloaded?.body ?? '', 'base64').equals(value)).toBe(true);
  });

  it('a Kafka record is not redriven to an SQS queue: it stays in the DLQ, and the redrive says why', async () => {
    const { dlq } = await c20Scenario();
    const elsewhere = await createQueue(sqs, 'c20-elsewhere');

    const toSource = await redriveDeadLetters({ sqs, payloads }, { queueUrl: dlq.url, yes: true, ...fast });
    const toOther = await redriveDeadLetters({ sqs, payloads }, { queueUrl: dlq.url, to: elsewhere.url, yes: true, ...fast });

    expect(toSource.skipped[0]?.detail).toMatch(/is not an SQS queue/);
    expect(toOther.skipped[0]?.detail).toMatch(/bytes SQS cannot hold as text/);
    expect(toOther.nothingMoved).toMatch(/^nothing moved: every one of the 1 selected message\(s\) has to stay/);
    expect(await visibleCount(sqs, dlq.url)).toBe(1);
    expect(await visibleCount(sqs, elsewhere.url)).toBe(0);
  });

  it('without a payload bucket the writer refuses it (the engine retries it), and nothing reaches the DLQ', async () => {
    const dlq = await createQueue(sqs, 'c20-no-bucket');
    const writer = new DeadLetterQueue({ sqs, queueUrl: dlq.url, maxMessageSizeBytes: MiB });

    await expect(writer.send(contextOf(c20))).rejects.toThrow(DeadLetterTooLargeError);
    expect(await visibleCount(sqs, dlq.url)).toBe(0);
  });
});

describe('an SQS message offloaded by the consumer', () => {
  /** A source queue that takes 1 MiB messages, so body + the consumer's attributes exceed the DLQ's 1 MiB. */
  async function sqsScenario() {
    const pair = await createQueuePair(sqs, 'big', false, { MaximumMessageSize: String(MiB) });
    const bucket = await createBucket(s3);
    const producer = {
      traceparent: { DataType: 'String', StringValue: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
      blob: { DataType: 'Binary', BinaryValue: Uint8Array.from([1, 2, 3]) },
    };
    // Body + the producer's attributes fill the source's 1 MiB but for 100 bytes: the consumer's attributes do not fit beside them.
    const padBytes = MiB - 100 - attributesSize(producer) - Buffer.byteLength('{"eventId":"big-1","pad":""}');
    const body = JSON.stringify({ eventId: 'big-1', pad: `${'é'.repeat(Math.floor(padBytes / 2))}${'a'.repeat(padBytes % 2)}` });
    const writer = new DeadLetterQueue({ sqs, s3, queueUrl: pair.dlq.url, maxMessageSizeBytes: MiB, payloadBucket: bucket });
    await writer.send(
      contextOf({
        reason: 'BusinessRuleViolation',
        body,
        source: pair.source.arn,
        originalMessageId: 'big-1',
        originalAttributes: producer,
      }),
    );
    return { ...pair, bucket, body, producer };
  }

  it('is redriven with its original body and its producer attributes exactly, without ExtendedPayloadSize or ic.* but the redrive mark', async () => {
    const { source, dlq, body, producer } = await sqsScenario();
    const [inDlq] = await readAll(sqs, dlq.url);

    const result = await redriveDeadLetters({ sqs, payloads }, { queueUrl: dlq.url, yes: true, ...fast });

    expect(Buffer.byteLength(body) + attributesSize(producer)).toBe(MiB - 100);
    expect(parsePayloadPointer(inDlq?.Body ?? '')).toBeDefined();
    expect(result.moved).toHaveLength(1);
    const [back] = await readAll(sqs, source.url);
    expect(back?.Body).toBe(body);
    expect(createHash('md5').update(body).digest('hex')).toBe(back?.MD5OfBody);
    expect(comparable(back?.MessageAttributes)).toEqual({
      ...comparable(producer),
      'ic.redrive': { DataType: 'String', StringValue: 'big-1' },
    });
    expect(await visibleCount(sqs, dlq.url)).toBe(0);
  });

  it('stays in the DLQ when it does not fit the target queue, and the redrive says so', async () => {
    const { dlq } = await sqsScenario();
    const small = await createQueue(sqs, 'small-target', { MaximumMessageSize: '262144' });

    const result = await redriveDeadLetters({ sqs, payloads }, { queueUrl: dlq.url, to: small.url, yes: true, ...fast });

    expect(result.skipped[0]?.detail).toMatch(new RegExp(`more than the 262144 bytes ${small.url} accepts`));
    expect(result.nothingMoved).toBeDefined();
    expect(await visibleCount(sqs, dlq.url)).toBe(1);
    expect(await visibleCount(sqs, small.url)).toBe(0);
  });

  it('stays in the DLQ when its body cannot be read back: without S3 access, or changed in S3', async () => {
    const { dlq, bucket } = await sqsScenario();
    const [inDlq] = await readAll(sqs, dlq.url);
    const key = parsePayloadPointer(inDlq?.Body ?? '')?.key ?? '';

    const noAccess = await redriveDeadLetters({ sqs }, { queueUrl: dlq.url, yes: true, ...fast });
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: 'tampered' }));
    const changed = await redriveDeadLetters({ sqs, payloads }, { queueUrl: dlq.url, yes: true, ...fast });
    const shown = await showDeadLetter({ sqs, payloads }, { queueUrl: dlq.url, id: 'big-1', ...fast });
    const archived = await archiveDeadLetters(
      { sqs, payloads },
      { queueUrl: dlq.url, out: join(folder, 'tampered.jsonl'), delete: true, yes: true, ...fast },
    );

    expect(noAccess.skipped[0]?.detail).toMatch(/this command has no S3 access/);
    expect(changed.skipped[0]?.detail).toMatch(/is not the one the consumer stored/);
    expect(shown.message.offloaded?.error).toMatch(/is not the one the consumer stored/);
    expect(archived).toMatchObject({ archived: 0, deleted: 0, notArchived: [{ messageId: inDlq?.MessageId }] });
    expect(await visibleCount(sqs, dlq.url)).toBe(1);
  });
});
