/**
 * Fixtures of the DLQ tool's tests: a fauxqs server of the test file's own, queues, and
 * dead-letter messages built exactly as the consumer builds them (`buildDeadLetterMessage`).
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
import { startFauxqs } from 'fauxqs';
import { Disposition } from '../../lambda/classifier.js';
import { buildDeadLetterMessage } from '../../lambda/dlq/deadLetterMessage.js';
import { defaultSettings } from '../../config/settings.js';
import type { FailureReason } from '../../lambda/errors.js';

export type FauxqsServer = Awaited<ReturnType<typeof startFauxqs>>;

/** Starts fauxqs on 127.0.0.1, a free port, and a client for it. */
export async function startSqs(): Promise<{ server: FauxqsServer; sqs: SQSClient; endpoint: string }> {
  const server = await startFauxqs({ port: 0, logger: false });
  const endpoint = server.address;
  const sqs = new SQSClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });
  return { server, sqs, endpoint };
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

/**
 * A source queue and its dead-letter queue, the source's redrive policy naming the DLQ (as the
 * stack creates them). `fifo` makes both FIFO.
 */
export async function createQueuePair(
  sqs: SQSClient,
  prefix: string,
  fifo = false,
): Promise<{ source: { url: string; arn: string }; dlq: { url: string; arn: string } }> {
  const suffix = fifo ? '.fifo' : '';
  const dlq = await createQueue(sqs, `${prefix}-dlq${suffix}`);
  const source = await createQueue(sqs, `${prefix}${suffix}`, {
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: defaultSettings.queue.maxReceiveCount }),
  });
  return { source, dlq };
}

/** One poison message, as the consumer would dead-letter it. */
export interface PoisonSpec {
  readonly reason: FailureReason;
  readonly body: string;
  /** The source queue ARN. */
  readonly source: string;
  readonly originalMessageId: string;
  readonly errorType?: string;
  readonly errorMessage?: string;
  readonly messageGroupId?: string;
  readonly originalAttributes?: Record<string, MessageAttributeValue>;
  readonly failedAt?: Date;
}

/** Sends dead-letter messages built by `buildDeadLetterMessage` to `dlqUrl`, in order. */
export async function seedDeadLetters(sqs: SQSClient, dlqUrl: string, specs: readonly PoisonSpec[]): Promise<void> {
  for (const spec of specs) {
    const input = buildDeadLetterMessage(
      dlqUrl,
      {
        body: spec.body,
        failure: {
          disposition: Disposition.DeadLetter,
          reason: spec.reason,
          errorType: spec.errorType ?? spec.reason,
          errorMessage: spec.errorMessage ?? `${spec.reason} for ${spec.originalMessageId}`,
        },
        attempts: spec.reason === 'RetriesExhausted' ? 5 : 1,
        source: spec.source,
        originalMessageId: spec.originalMessageId,
        ...(spec.messageGroupId !== undefined
          ? { messageGroupId: spec.messageGroupId, coordinates: { messageGroupId: spec.messageGroupId } }
          : {}),
        ...(spec.originalAttributes !== undefined ? { originalAttributes: spec.originalAttributes } : {}),
        failedAt: spec.failedAt ?? new Date(),
      },
      { fifo: dlqUrl.endsWith('.fifo'), maxMessageSizeBytes: defaultSettings.queue.deadLetterMaxMessageSizeBytes },
    );
    await sqs.send(new SendMessageCommand(input));
  }
}

/** A café event body. */
export function orderEvent(eventId: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ eventId, type: 'OrderPlaced', orderId: `order-${eventId}`, occurredAt: '2025-01-01T00:00:00.000Z', ...extra });
}

/** Visible messages of a queue as SQS counts them. */
export async function visibleCount(sqs: SQSClient, url: string): Promise<number> {
  const output = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages'] }));
  return Number(output.Attributes?.ApproximateNumberOfMessages ?? 0);
}

/**
 * Reads every visible message of a queue, each once. `consume: false` hides them while reading
 * and makes them visible again afterwards; `consume: true` deletes each one it reads, which on a
 * FIFO queue is the only way to see a group past its first message (fauxqs shows one message
 * per group at a time).
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
export function comparable(attributes: Record<string, MessageAttributeValue> | undefined): Record<string, { DataType?: string; StringValue?: string; BinaryValue?: string }> {
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
