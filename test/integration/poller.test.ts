import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import type { Message, SQSClient } from '@aws-sdk/client-sqs';
import type { DeserializeMiddleware } from '@smithy/types';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import { afterEach, expect, it } from 'vitest';
import type { SettingsOverrides } from '../../packages/idempotent-consumer/src/settings/settings.js';
import { InvocationStoppedError } from '../../packages/local/src/aws/invocationGuard.js';
import { PollerIdleTimeoutError } from '../../packages/local/src/errors.js';
import { pollerOptionsFromSettings, SqsEventSourcePoller } from '../../packages/local/src/sqsEventSourcePoller.js';
import type { InvocationReport, LocalSqsHandler, SqsEventSourcePollerOptions } from '../../packages/local/src/sqsEventSourcePoller.js';
import { receiveAll, sendMessages } from '../support/sqsMessages.js';
import { testResources, describeUnlessDeployedStack } from '../support/testResources.js';
import type { TestResources } from '../support/testResources.js';

const describe = describeUnlessDeployedStack(
  "sends to the source queue and consumes it with a local event source mapping: the deployed function's mapping would take the messages",
);

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  // Pollers first (registered last), then their queues.
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function queue(name: string, overrides: SettingsOverrides = {}): Promise<TestResources> {
  const env = await testResources(name, {}, overrides);
  cleanups.push(() => env.dispose());
  return env;
}

interface Harness {
  readonly poller: SqsEventSourcePoller;
  readonly reports: InvocationReport[];
  readonly errors: unknown[];
}

function poller(env: TestResources, createHandler: () => LocalSqsHandler, options: Partial<SqsEventSourcePollerOptions> = {}): Harness {
  const reports: InvocationReport[] = [];
  const errors: unknown[] = [];
  const instance = new SqsEventSourcePoller({
    sqs: env.sqs,
    queueUrl: env.resources.queueUrl,
    queueArn: env.resources.queueArn,
    createHandler,
    ...pollerOptionsFromSettings(env.settings),
    concurrency: 1,
    onInvocation: (report) => reports.push(report),
    onError: (error) => errors.push(error),
    ...options,
  });
  cleanups.push(() => instance.stop());
  return { poller: instance, reports, errors };
}

/** Every record the handler saw: body and receive count, in call order. */
function recordingHandler(respond: (event: SQSEvent, seen: SQSRecord[]) => unknown) {
  const seen: SQSRecord[] = [];
  const handler: LocalSqsHandler = (event) => {
    seen.push(...event.Records);
    return respond(event, seen);
  };
  return { seen, handler };
}

const receiveCountsOf = (seen: readonly SQSRecord[], body: string): string[] =>
  seen.filter((record) => record.body === body).map((record) => record.attributes.ApproximateReceiveCount);

async function queueDepth(sqs: SQSClient, queueUrl: string): Promise<number> {
  const { Attributes = {} } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'],
    }),
  );
  return (
    Number(Attributes.ApproximateNumberOfMessages) +
    Number(Attributes.ApproximateNumberOfMessagesNotVisible) +
    Number(Attributes.ApproximateNumberOfMessagesDelayed)
  );
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves when `condition()` holds, checking every 20 ms (no fixed wait: adapts to a slow machine). */
async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** Records every message the client receives (body and receive count), from the responses of ReceiveMessage. */
function observeReceives(sqs: SQSClient): Array<{ body: string; receiveCount: string }> {
  const received: Array<{ body: string; receiveCount: string }> = [];
  const observer: DeserializeMiddleware<object, object> = (next, context) => async (args) => {
    const result = await next(args);
    if (context.commandName === 'ReceiveMessageCommand') {
      for (const message of (result.output as { Messages?: Message[] }).Messages ?? []) {
        received.push({ body: message.Body ?? '', receiveCount: message.Attributes?.ApproximateReceiveCount ?? '' });
      }
    }
    return result;
  };
  (sqs.middlewareStack as unknown as { add(middleware: unknown, options: object): void }).add(observer, {
    step: 'deserialize',
    priority: 'high',
    name: `observeReceives${Math.random()}`,
  });
  return received;
}
const untilIdle = { idleMs: 300, timeoutMs: 20_000 } as const;
const shortVisibility = { queue: { visibilityTimeoutSeconds: 1 } } as const;

describe('SqsEventSourcePoller', () => {
  describe('partial batch responses (C5)', () => {
    it('deletes only the successes; the failed message comes back with ApproximateReceiveCount 2', async () => {
      // Arrange
      const env = await queue('partial', shortVisibility);
      const [idA, idB, idC] = await sendMessages(env.sqs, env.resources.queueUrl, ['a', 'b', 'c']);
      const { seen, handler } = recordingHandler((event) => ({
        batchItemFailures: event.Records.filter((r) => r.body === 'b' && r.attributes.ApproximateReceiveCount === '1').map((r) => ({
          itemIdentifier: r.messageId,
        })),
      }));
      const { poller: instance, reports, errors } = poller(env, () => handler);

      // Act
      await instance.runUntilIdle(untilIdle);

      // Assert
      expect(reports[0]).toMatchObject({ batchSize: 3, judgement: { kind: 'partial', failedIds: [idB] }, deletedIds: [idA, idC] });
      expect(receiveCountsOf(seen, 'a')).toEqual(['1']);
      expect(receiveCountsOf(seen, 'b')).toEqual(['1', '2']);
      expect(receiveCountsOf(seen, 'c')).toEqual(['1']);
      expect(await queueDepth(env.sqs, env.resources.queueUrl)).toBe(0);
      expect(await receiveAll(env.sqs, env.resources.deadLetterQueueUrl, 0)).toEqual([]);
      expect(errors).toEqual([]);
    });

    it('deletes every message of a response with the wrong key case: the failure is lost', async () => {
      const env = await queue('wrongcase', shortVisibility);
      const ids = await sendMessages(env.sqs, env.resources.queueUrl, ['a', 'b', 'c']);
      const { seen, handler } = recordingHandler((event) => ({
        BatchItemFailures: event.Records.filter((r) => r.body === 'b').map((r) => ({ itemIdentifier: r.messageId })),
      }));
      const { poller: instance, reports } = poller(env, () => handler);

      await instance.runUntilIdle(untilIdle);

      expect(reports).toHaveLength(1);
      expect(reports[0]?.judgement.kind).toBe('all-succeeded');
      expect(reports[0]?.deletedIds).toEqual(ids);
      expect(receiveCountsOf(seen, 'b')).toEqual(['1']); // never retried
      expect(await queueDepth(env.sqs, env.resources.queueUrl)).toBe(0);
    });

    it('deletes nothing when an identifier is not a messageId of the batch: the successes are replayed', async () => {
      const env = await queue('unknownid', shortVisibility);
      await sendMessages(env.sqs, env.resources.queueUrl, ['a', 'b', 'c']);
      const { seen, handler } = recordingHandler((_event, all) =>
        all.length <= 3 ? { batchItemFailures: [{ itemIdentifier: 'not-a-message-id' }] } : { batchItemFailures: [] },
      );
      const { poller: instance, reports } = poller(env, () => handler);

      await instance.runUntilIdle(untilIdle);

      expect(reports[0]).toMatchObject({ judgement: { kind: 'all-failed' }, deletedIds: [] });
      for (const body of ['a', 'b', 'c']) expect(receiveCountsOf(seen, body)).toEqual(['1', '2']);
      expect(await queueDepth(env.sqs, env.resources.queueUrl)).toBe(0);
    });
  });

  describe('function errors', () => {
    it('leaves every message of a batch whose handler threw', async () => {
      const env = await queue('throws', shortVisibility);
      await sendMessages(env.sqs, env.resources.queueUrl, ['a', 'b', 'c']);
      const { seen, handler } = recordingHandler((_event, all) => {
        if (all.length <= 3) throw new Error('database unavailable');
        return { batchItemFailures: [] };
      });
      const { poller: instance, reports } = poller(env, () => handler);

      await instance.runUntilIdle(untilIdle);

      expect(reports[0]).toMatchObject({ outcome: 'threw', judgement: { kind: 'all-failed' }, deletedIds: [] });
      expect((reports[0]?.error as Error).message).toBe('database unavailable');
      for (const body of ['a', 'b', 'c']) expect(receiveCountsOf(seen, body)).toEqual(['1', '2']);
    });

    it('fails the whole batch past the function timeout and gives the worker a new handler', async () => {
      const env = await queue('timeout', shortVisibility);
      await sendMessages(env.sqs, env.resources.queueUrl, ['slow']);
      let handlersCreated = 0;
      const remaining: number[] = [];
      const createHandler = (): LocalSqsHandler => {
        handlersCreated += 1;
        const first = handlersCreated === 1;
        return async (_event: SQSEvent, context: Context) => {
          remaining.push(context.getRemainingTimeInMillis());
          if (first) await sleep(1_500); // abandoned when the 0.5 s timeout fires
          return { batchItemFailures: [] };
        };
      };
      const { poller: instance, reports } = poller(env, createHandler, { functionTimeoutSeconds: 0.5 });

      await instance.runUntilIdle(untilIdle);

      expect(reports[0]).toMatchObject({ outcome: 'timed-out', judgement: { kind: 'all-failed' }, deletedIds: [] });
      expect(reports[1]).toMatchObject({ outcome: 'returned', judgement: { kind: 'all-succeeded' } });
      expect(handlersCreated).toBe(2);
      expect(remaining.every((ms) => ms > 0 && ms <= 500)).toBe(true);
    });
  });

  describe('execution environments shared by invocations (Lambda Managed Instances)', () => {
    it('gives concurrencyPerEnvironment workers one handler, whose invocations overlap, each in its own store context', async () => {
      const env = await queue('shared-environments');
      await sendMessages(
        env.sqs,
        env.resources.queueUrl,
        Array.from({ length: 24 }, (_, i) => `m-${i}`),
      );
      const handlers: LocalSqsHandler[] = [];
      let active = 0;
      let mostActive = 0;
      const mismatches: string[] = [];
      const createHandler = (): LocalSqsHandler => {
        const handler: LocalSqsHandler = async (_event, context) => {
          active += 1;
          mostActive = Math.max(mostActive, active);
          await sleep(100);
          const requestId = globalThis.awslambda?.InvokeStore?.getRequestId();
          if (requestId !== context.awsRequestId) mismatches.push(`${requestId} for ${context.awsRequestId}`);
          active -= 1;
          return { batchItemFailures: [] };
        };
        handlers.push(handler);
        return handler;
      };
      const { poller: instance, reports } = poller(env, createHandler, { concurrency: 6, concurrencyPerEnvironment: 3, batchSize: 2 });

      await instance.runUntilIdle(untilIdle);

      expect(handlers).toHaveLength(2);
      expect(reports.reduce((sum, report) => sum + report.batchSize, 0)).toBe(24);
      expect(mostActive).toBeGreaterThan(2);
      expect(mismatches).toEqual([]);
    });

    it('refuses a concurrencyPerEnvironment that is not a positive integer', async () => {
      const env = await queue('shared-environments-bad');
      expect(() => poller(env, () => () => ({ batchItemFailures: [] }), { concurrencyPerEnvironment: 0 })).toThrow(
        'concurrencyPerEnvironment 0 must be a positive integer',
      );
    });
  });

  describe('the deadline', () => {
    it('stops a timed-out invocation: its later writes never reach DynamoDB, and its batch comes back', async () => {
      // Arrange
      const env = await queue('deadline', shortVisibility);
      const table = env.resources.inboxTable;
      await sendMessages(env.sqs, env.resources.queueUrl, ['slow']);
      let releaseLateWrite!: () => void;
      const lateWriteAllowed = new Promise<void>((resolve) => (releaseLateWrite = resolve));
      let lateWrite: Promise<unknown> | undefined;
      let calls = 0;
      const handler: LocalSqsHandler = async () => {
        calls += 1;
        if (calls === 1) {
          lateWrite = lateWriteAllowed.then(() =>
            env.dynamoDb.send(new PutItemCommand({ TableName: table, Item: { pk: { S: 'written-after-the-timeout' } } })),
          );
          await lateWrite.catch(() => undefined);
        }
        return { batchItemFailures: [] };
      };
      const { poller: instance, reports } = poller(env, () => handler, {
        functionTimeoutSeconds: 0.5,
        guardedClients: [env.dynamoDb],
        onInvocation: (report) => {
          reports.push(report);
          if (report.outcome === 'timed-out') releaseLateWrite();
        },
      });

      // Act
      await instance.runUntilIdle(untilIdle);

      // Assert
      expect(reports.map((report) => report.outcome)).toEqual(['timed-out', 'returned']);
      expect(reports[0]).toMatchObject({ judgement: { kind: 'all-failed' }, deletedIds: [] });
      await expect(lateWrite).rejects.toThrow(InvocationStoppedError);
      const { Item } = await env.dynamoDb.send(
        new GetItemCommand({ TableName: table, Key: { pk: { S: 'written-after-the-timeout' } }, ConsistentRead: true }),
      );
      expect(Item).toBeUndefined();
    });
  });

  describe('redrive', () => {
    it('moves a message that keeps failing to the dead-letter queue after maxReceiveCount receives', async () => {
      const env = await queue('redrive', { queue: { visibilityTimeoutSeconds: 1, maxReceiveCount: 3 } });
      await sendMessages(env.sqs, env.resources.queueUrl, ['poison']);
      const { seen, handler } = recordingHandler((event) => ({
        batchItemFailures: event.Records.map((r) => ({ itemIdentifier: r.messageId })),
      }));
      const { poller: instance } = poller(env, () => handler);

      await instance.runUntilIdle(untilIdle);

      expect(receiveCountsOf(seen, 'poison')).toEqual(['1', '2', '3']);
      const deadLetters = await receiveAll(env.sqs, env.resources.deadLetterQueueUrl, 0);
      expect(deadLetters.map((message) => message.Body)).toEqual(['poison']);
      expect(await queueDepth(env.sqs, env.resources.queueUrl)).toBe(0);
    });
  });

  describe('the event and the context', () => {
    it('hands the handler an event shaped like test/events/sqs-event-standard.json and a Lambda context', async () => {
      const fixture = JSON.parse(readFileSync(new URL('../events/sqs-event-standard.json', import.meta.url), 'utf8')) as SQSEvent;
      const expected = fixture.Records[0]!;
      const env = await queue('eventshape');
      await sendMessages(env.sqs, env.resources.queueUrl, [expected.body], {
        messageAttributes: {
          traceparent: { DataType: 'String', StringValue: expected.messageAttributes['traceparent']!.stringValue! },
          checksum: {
            DataType: 'Binary',
            BinaryValue: new Uint8Array(Buffer.from(expected.messageAttributes['checksum']!.binaryValue!, 'base64')),
          },
          priority: { DataType: 'Number', StringValue: expected.messageAttributes['priority']!.stringValue! },
        },
      });
      const calls: Array<{ event: SQSEvent; context: Context }> = [];
      const { poller: instance } = poller(env, () => (event, context) => {
        calls.push({ event, context });
      });

      await instance.runUntilIdle(untilIdle);

      const record = calls[0]!.event.Records[0]!;
      expect(Object.keys(calls[0]!.event)).toEqual(['Records']);
      expect(Object.keys(record)).toEqual(Object.keys(expected));
      expect(Object.keys(record.attributes)).toEqual(Object.keys(expected.attributes));
      expect(record.messageAttributes).toEqual(expected.messageAttributes);
      expect(record).toMatchObject({
        body: expected.body,
        md5OfBody: createHash('md5').update(expected.body).digest('hex'),
        md5OfMessageAttributes: expected.md5OfMessageAttributes,
        eventSource: 'aws:sqs',
        eventSourceARN: env.resources.queueArn,
        awsRegion: 'us-east-1',
      });
      const { context } = calls[0]!;
      expect(context.functionName).toBe(env.settings.consumerName);
      expect(context.invokedFunctionArn).toBe(`arn:aws:lambda:us-east-1:000000000000:function:${env.settings.consumerName}`);
      expect(context.awsRequestId).toMatch(/^[0-9a-f-]{36}$/);
      expect(context.getRemainingTimeInMillis()).toBeLessThanOrEqual(env.settings.function.timeoutSeconds * 1_000);
    });
  });

  describe('batching', () => {
    it('gathers messages that arrive within the batching window into one invocation', async () => {
      const env = await queue('window');
      await sendMessages(env.sqs, env.resources.queueUrl, ['a', 'b']);
      const received = observeReceives(env.sqs);
      const { poller: instance, reports } = poller(env, () => () => undefined, { batchSize: 5, maxBatchingWindowSeconds: 20 });

      instance.start();
      await until(() => received.length === 2, 'the first two messages to be received');
      await sendMessages(env.sqs, env.resources.queueUrl, ['c', 'd', 'e']);
      await instance.runUntilIdle(untilIdle);

      expect(reports.map((report) => report.batchSize)).toEqual([5]);
    });
  });

  describe('FIFO (C10)', () => {
    it('hands a message group its events in order, with at most one batch of the group in flight', async () => {
      // Arrange
      const env = await queue('c10', { queue: { fifo: true } });
      const eventIds = ['e-1', 'e-2', 'e-3', 'e-4', 'e-5'];
      await sendMessages(
        env.sqs,
        env.resources.queueUrl,
        eventIds.map((eventId) => JSON.stringify({ eventId, orderId: 'O-1' })),
        { messageGroupId: 'O-1', deduplicationIds: eventIds },
      );
      const applied: string[] = [];
      const calls: Array<{ start: number; end: number }> = [];
      const handler: LocalSqsHandler = async (event) => {
        const start = performance.now();
        for (const record of event.Records) {
          await sleep(100);
          applied.push((JSON.parse(record.body) as { eventId: string }).eventId);
        }
        calls.push({ start, end: performance.now() });
        return { batchItemFailures: [] };
      };
      const { poller: instance, reports } = poller(env, () => handler, { concurrency: 3 });

      // Act
      await instance.runUntilIdle(untilIdle);

      // Assert
      expect(applied).toEqual(eventIds);
      const byStart = [...calls].sort((x, y) => x.start - y.start);
      byStart.slice(1).forEach((call, index) => expect(call.start).toBeGreaterThanOrEqual(byStart[index]!.end));
      expect(reports.every((report) => report.messageGroupIds.join() === 'O-1')).toBe(true);
    });

    it('runs different message groups in parallel while each group stays in order', async () => {
      const env = await queue('groups', { queue: { fifo: true } });
      for (const group of ['O-1', 'O-2']) {
        const ids = [1, 2, 3].map((n) => `${group}/e-${n}`);
        await sendMessages(env.sqs, env.resources.queueUrl, ids, { messageGroupId: group, deduplicationIds: ids });
      }
      const calls: Array<{ body: string; start: number; end: number }> = [];
      const handler: LocalSqsHandler = async (event) => {
        const start = performance.now();
        await sleep(150);
        for (const record of event.Records) calls.push({ body: record.body, start, end: performance.now() });
      };
      const { poller: instance } = poller(env, () => handler, { concurrency: 2, batchSize: 1 });

      await instance.runUntilIdle(untilIdle);

      for (const group of ['O-1', 'O-2']) {
        const ofGroup = calls.filter((call) => call.body.startsWith(group));
        expect(ofGroup.map((call) => call.body)).toEqual([1, 2, 3].map((n) => `${group}/e-${n}`));
        ofGroup.slice(1).forEach((call, index) => expect(call.start).toBeGreaterThanOrEqual(ofGroup[index]!.end));
      }
      const overlapped = calls.some((a) =>
        calls.some((b) => a.body.slice(0, 3) !== b.body.slice(0, 3) && a.start < b.end && b.start < a.end),
      );
      expect(overlapped).toBe(true);
    });

    it('holds back a redelivered message of a group until the batch still running for it ends', async () => {
      // e-1's first handler call outlives the 2 s visibility timeout (it waits until SQS has handed
      // e-1 to the second worker), so the second worker holds e-1 while the first still runs it:
      // the guard must make that worker wait.
      const env = await queue('guard', { queue: { fifo: true, visibilityTimeoutSeconds: 2 } });
      await sendMessages(env.sqs, env.resources.queueUrl, ['e-1', 'e-2'], { messageGroupId: 'O-1', deduplicationIds: ['e-1', 'e-2'] });
      const received = observeReceives(env.sqs);
      const calls: Array<{ body: string; receiveCount: string; start: number; end: number }> = [];
      let started = 0;
      const handler: LocalSqsHandler = async (event) => {
        const start = performance.now();
        const record = event.Records[0]!;
        started += 1;
        if (started === 1)
          await until(() => received.some((message) => message.body === 'e-1' && message.receiveCount === '2'), 'e-1 to be received again');
        calls.push({ body: record.body, receiveCount: record.attributes.ApproximateReceiveCount, start, end: performance.now() });
      };
      const { poller: instance } = poller(env, () => handler, { concurrency: 2, batchSize: 1 });

      await instance.runUntilIdle(untilIdle);

      expect(calls.map((call) => `${call.body}#${call.receiveCount}`)).toEqual(['e-1#1', 'e-1#2', 'e-2#1']);
      const byStart = [...calls].sort((x, y) => x.start - y.start);
      byStart.slice(1).forEach((call, index) => expect(call.start).toBeGreaterThanOrEqual(byStart[index]!.end));
    });
  });

  describe('FIFO batches with several messages of a group', () => {
    it('hands a group several messages in one batch, and a failure at the head burns a receive of every message behind it', async () => {
      // Arrange: the handler fails the head of the group once and reports the rest without running them.
      const env = await queue('fifobatch', { queue: { fifo: true, visibilityTimeoutSeconds: 1 } });
      const bodies = ['e-1', 'e-2', 'e-3', 'e-4'];
      await sendMessages(env.sqs, env.resources.queueUrl, bodies, { messageGroupId: 'G-1', deduplicationIds: bodies });
      const { seen, handler } = recordingHandler((event, all) =>
        all.length <= bodies.length
          ? { batchItemFailures: event.Records.map((record) => ({ itemIdentifier: record.messageId })) }
          : { batchItemFailures: [] },
      );
      const { poller: instance, reports } = poller(env, () => handler, { concurrency: 2 });

      // Act
      await instance.runUntilIdle(untilIdle);

      // Assert
      expect(reports.map((report) => report.batchSize)).toEqual([4, 4]);
      expect(reports.every((report) => report.messageGroupIds.join() === 'G-1')).toBe(true);
      expect(seen.map((record) => `${record.body}#${record.attributes.ApproximateReceiveCount}`)).toEqual([
        'e-1#1',
        'e-2#1',
        'e-3#1',
        'e-4#1',
        'e-1#2',
        'e-2#2',
        'e-3#2',
        'e-4#2',
      ]);
    });

    it('redrives the messages of a group that keeps failing after maxReceiveCount receives, in order', async () => {
      const env = await queue('fiforedrive', { queue: { fifo: true, visibilityTimeoutSeconds: 1, maxReceiveCount: 2 } });
      await sendMessages(env.sqs, env.resources.queueUrl, ['p-1', 'p-2'], { messageGroupId: 'G-1', deduplicationIds: ['p-1', 'p-2'] });
      const { seen, handler } = recordingHandler((event) => ({
        batchItemFailures: event.Records.map((record) => ({ itemIdentifier: record.messageId })),
      }));
      const { poller: instance } = poller(env, () => handler);

      await instance.runUntilIdle(untilIdle);

      expect(seen.map((record) => `${record.body}#${record.attributes.ApproximateReceiveCount}`)).toEqual([
        'p-1#1',
        'p-2#1',
        'p-1#2',
        'p-2#2',
      ]);
      const deadLetters = await receiveAll(env.sqs, env.resources.deadLetterQueueUrl, 0);
      expect(deadLetters.map((message) => message.Body)).toEqual(['p-1', 'p-2']);
    });
  });

  describe('lifecycle', () => {
    it('run(signal) keeps consuming messages sent while it runs, until the signal aborts', async () => {
      const env = await queue('forever');
      const { poller: instance, reports } = poller(env, () => () => undefined);
      const controller = new AbortController();

      const running = instance.run(controller.signal);
      await env.sqs.send(new SendMessageCommand({ QueueUrl: env.resources.queueUrl, MessageBody: 'first' }));
      await until(() => reports.length === 1, 'the first message to be consumed');
      await env.sqs.send(new SendMessageCommand({ QueueUrl: env.resources.queueUrl, MessageBody: 'second' }));
      await until(() => reports.length === 2, 'the second message to be consumed');
      controller.abort();
      await running;

      expect(instance.isRunning).toBe(false);
      expect(await queueDepth(env.sqs, env.resources.queueUrl)).toBe(0);
    });

    it('stop() waits for the invocation in flight', async () => {
      const env = await queue('stop');
      await sendMessages(env.sqs, env.resources.queueUrl, ['a']);
      let finished = false;
      let started!: () => void;
      const handlerStarted = new Promise<void>((resolve) => (started = resolve));
      const { poller: instance, reports } = poller(env, () => async () => {
        started();
        await sleep(300);
        finished = true;
      });

      instance.start();
      await handlerStarted;
      await instance.stop();

      expect(finished).toBe(true);
      expect(reports).toHaveLength(1);
      expect(instance.isRunning).toBe(false);
    });

    it('runUntilIdle() rejects with the queue counts when the queue does not drain in time', async () => {
      const env = await queue('notidle', { queue: { visibilityTimeoutSeconds: 30 } });
      await sendMessages(env.sqs, env.resources.queueUrl, ['always-fails']);
      const { poller: instance } = poller(env, () => (event: SQSEvent) => ({
        batchItemFailures: event.Records.map((r) => ({ itemIdentifier: r.messageId })),
      }));

      const run = instance.runUntilIdle({ idleMs: 100, timeoutMs: 1_500 });

      await expect(run).rejects.toThrow(PollerIdleTimeoutError);
      await expect(run).rejects.toThrow(/1 in flight/);
    });
  });
});
