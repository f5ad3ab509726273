/**
 * Fixtures of the DLQ tool's tests: an SQS server (fauxqs, which serves S3 on the same endpoint)
 * of the test file's own on 127.0.0.1, queues, and dead-letter messages built exactly as the
 * consumer builds them (`buildDeadLetterMessage`).
 */
import {
  ChangeMessageVisibilityBatchCommand,
  CreateQueueCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
  type Message,
  type MessageAttributeValue,
} from '@aws-sdk/client-sqs';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { defaultSettings, maxReceiveCount } from '../../packages/idempotent-consumer/src/settings/settings.js';
import type { DeadLetterContext } from '../../packages/idempotent-consumer/src/dlq/deadLetterMessage.js';
import { DeadLetterQueue } from '../../packages/idempotent-consumer/src/dlq/DeadLetterQueue.js';
import { startSqsServer, type SqsServer } from '../../packages/local/src/sqsServer.js';
import { createPayloadStore, type PayloadStore } from '../../packages/cli/src/dlq/payloadStore.js';

export type FauxqsServer = SqsServer;

const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };

/** Starts fauxqs on 127.0.0.1 and a free port, with an SQS client for it. */
export async function startSqs(): Promise<{ server: FauxqsServer; sqs: SQSClient; endpoint: string }> {
  const server = await startSqsServer();
  const sqs = new SQSClient({ endpoint: server.endpoint, region: 'us-east-1', credentials });
  return { server, sqs, endpoint: server.endpoint };
}

/** An S3 client for the fauxqs server (path-style), and the DLQ tool's payload store on it. */
export function s3For(endpoint: string): { s3: S3Client; payloads: PayloadStore } {
  const s3 = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials });
  const payloads = createPayloadStore({ connection: { endpoint, region: 'us-east-1', dummyCredentials: true }, env: {} });
  return { s3, payloads };
}

let buckets = 0;

/** Creates a bucket with a unique name. */
export async function createBucket(s3: S3Client, prefix = 'payloads'): Promise<string> {
  buckets += 1;
  const name = `${prefix}-${buckets}-${process.pid}`;
  await s3.send(new CreateBucketCommand({ Bucket: name }));
  return name;
}

let counter = 0;

/** Creates a queue with a unique name (`<prefix>-<n>`, `.fifo` kept at the end). */
export async function createQueue(
  sqs: SQSClient,
  prefix: string,
  attributes: Record<string, string> = {},
): Promise<{ url: string; arn: string }> {
  counter += 1;
  const fifo = prefix.endsWith('.fifo');
  const name = fifo ? `${prefix.slice(0, -5)}-${counter}.fifo` : `${prefix}-${counter}`;
  const created = await sqs.send(
    new CreateQueueCommand({ QueueName: name, Attributes: { ...(fifo ? { FifoQueue: 'true' } : {}), ...attributes } }),
  );
  const url = created.QueueUrl ?? '';
  const arn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }))).Attributes?.QueueArn ?? '';
  return { url, arn };
}

/** The redrive policy's `maxReceiveCount` of the default settings (what the stack creates). */
export const MAX_RECEIVE_COUNT = maxReceiveCount(defaultSettings);

/**
 * A source queue and its dead-letter queue, the source's redrive policy naming the DLQ (as the
 * stack creates them). `fifo` makes both FIFO; `sourceAttributes` are extra attributes of the source.
 */
export async function createQueuePair(
  sqs: SQSClient,
  prefix: string,
  fifo = false,
  sourceAttributes: Record<string, string> = {},
): Promise<{ source: { url: string; arn: string }; dlq: { url: string; arn: string } }> {
  const suffix = fifo ? '.fifo' : '';
  const dlq = await createQueue(sqs, `${prefix}-dlq${suffix}`);
  const source = await createQueue(sqs, `${prefix}${suffix}`, {
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: MAX_RECEIVE_COUNT }),
    ...sourceAttributes,
  });
  return { source, dlq };
}

/** One poison message, as the consumer would dead-letter it. */
export interface PoisonSpec {
  /** Any reason name: a built-in one or a user's own. */
  readonly reason: string;
  readonly body: string;
  readonly bodyEncoding?: 'base64';
  /** The source queue ARN (or a Kafka event source ARN). */
  readonly source: string;
  readonly originalMessageId: string;
  readonly errorType?: string;
  readonly errorMessage?: string;
  readonly messageGroupId?: string;
  readonly coordinates?: Record<string, string | number | null>;
  /** The producer's attributes. */
  readonly originalAttributes?: Record<string, MessageAttributeValue>;
  readonly failedAt?: Date;
  readonly attempts?: number;
}

/** Sends dead-letter messages built by `buildDeadLetterMessage` to `dlqUrl`, in order (offloading to `options.s3` when too large). */
export async function seedDeadLetters(
  sqs: SQSClient,
  dlqUrl: string,
  specs: readonly PoisonSpec[],
  options: { readonly payloadBucket?: string; readonly s3?: S3Client } = {},
): Promise<void> {
  const writer = new DeadLetterQueue({
    sqs,
    queueUrl: dlqUrl,
    maxMessageSizeBytes: defaultSettings.queue.deadLetterMaxMessageSizeBytes,
    ...(options.payloadBucket !== undefined ? { payloadBucket: options.payloadBucket } : {}),
    ...(options.s3 !== undefined ? { s3: options.s3 } : {}),
  });
  for (const spec of specs) await writer.send(contextOf(spec));
}

/** The writer's context of a spec. */
export function contextOf(spec: PoisonSpec): DeadLetterContext {
  const group = spec.messageGroupId;
  return {
    body: spec.body,
    ...(spec.bodyEncoding !== undefined ? { bodyEncoding: spec.bodyEncoding } : {}),
    failure: {
      reason: spec.reason,
      errorType: spec.errorType ?? spec.reason,
      errorMessage: spec.errorMessage ?? `${spec.reason} for ${spec.originalMessageId}`,
    },
    attempts: spec.attempts ?? (spec.reason === 'RetriesExhausted' ? 5 : 1),
    source: spec.source,
    originalMessageId: spec.originalMessageId,
    ...(group !== undefined ? { messageGroupId: group } : {}),
    ...(spec.coordinates !== undefined
      ? { coordinates: spec.coordinates }
      : group !== undefined
        ? { coordinates: { messageGroupId: group } }
        : {}),
    ...(spec.originalAttributes !== undefined ? { originalAttributes: spec.originalAttributes } : {}),
    failedAt: spec.failedAt ?? new Date(),
  };
}

/** An event body of no particular domain. */
export function eventBody(eventId: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ eventId, type: 'ItemAdded', subject: `subject-${eventId}`, occurredAt: '2025-01-01T00:00:00.000Z', ...extra });
}

/** Visible messages of a queue as SQS counts them. */
export async function visibleCount(sqs: SQSClient, url: string): Promise<number> {
  const output = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages'] }));
  return Number(output.Attributes?.ApproximateNumberOfMessages ?? 0);
}

/**
 * Sends a message to a source queue and receives it until the queue's redrive policy moves it to
 * its dead-letter queue (`MAX_RECEIVE_COUNT` receives, then one more).
 */
export async function moveByRedrivePolicy(
  sqs: SQSClient,
  sourceUrl: string,
  body: string,
  attributes: Record<string, MessageAttributeValue>,
): Promise<void> {
  await sqs.send(new SendMessageCommand({ QueueUrl: sourceUrl, MessageBody: body, MessageAttributes: attributes }));
  for (let receive = 0; receive <= MAX_RECEIVE_COUNT; receive += 1) {
    await sqs.send(new ReceiveMessageCommand({ QueueUrl: sourceUrl, VisibilityTimeout: 0 }));
  }
}

/**
 * Reads every visible message of a queue, each once. `consume: false` hides them while reading
 * and makes them visible again afterwards; `consume: true` deletes each one it reads, which on a
 * FIFO queue is the only way to see all of a group (a receive may return several of its
 * messages, and none after them while they are held, as SQS does).
 */
export async function readAll(sqs: SQSClient, url: string, options: { consume: boolean } = { consume: false }): Promise<Message[]> {
  const messages: Message[] = [];
  for (;;) {
    const output = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MaxNumberOfMessages: 10,
        VisibilityTimeout: 60,
        WaitTimeSeconds: 0,
        MessageAttributeNames: ['All'],
        MessageSystemAttributeNames: ['All'],
      }),
    );
    const batch = output.Messages ?? [];
    if (batch.length === 0) break;
    messages.push(...batch);
    if (options.consume) {
      for (const m of batch) await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle ?? '' }));
    }
  }
  if (!options.consume) {
    for (let i = 0; i < messages.length; i += 10) {
      await sqs.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: url,
          Entries: messages.slice(i, i + 10).map((m, j) => ({ Id: String(j), ReceiptHandle: m.ReceiptHandle ?? '', VisibilityTimeout: 0 })),
        }),
      );
    }
  }
  return messages;
}

/** Message attributes as plain comparable values (binary as base64). */
export function comparable(
  attributes: Record<string, MessageAttributeValue> | undefined,
): Record<string, { DataType?: string; StringValue?: string; BinaryValue?: string }> {
  const result: Record<string, { DataType?: string; StringValue?: string; BinaryValue?: string }> = {};
  for (const [name, value] of Object.entries(attributes ?? {})) {
    result[name] = {
      DataType: value.DataType,
      ...(value.StringValue !== undefined ? { StringValue: value.StringValue } : {}),
      ...(value.BinaryValue !== undefined ? { BinaryValue: Buffer.from(value.BinaryValue).toString('base64') } : {}),
    };
  }
  return result;
}
