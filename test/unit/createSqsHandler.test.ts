import { describe, expect, it } from 'vitest';
import type { SQSRecord } from 'aws-lambda';
import { defaultSettings, lambdaEnvironment } from '../../config/settings.js';
import type { RetryBackoff } from '../../lambda/batch/retryBackoff.js';
import { readRuntimeConfig } from '../../lambda/config/runtimeConfig.js';
import type { Consumer } from '../../lambda/createConsumer.js';
import type { DeadLetterContext } from '../../lambda/dlq/deadLetterMessage.js';
import { PredecessorNotApplied, ValidationError } from '../../lambda/errors.js';
import { createSqsHandler } from '../../lambda/handlers/createSqsHandler.js';
import { MessageConsumer } from '../../lambda/processing/MessageConsumer.js';
import type { InboundMessage, ProcessResult } from '../../lambda/processing/OrderEventProcessor.js';
import { body, lambdaContext, sqsEvent, sqsRecord } from '../support/sqsEvents.js';

type Behaviour = (message: InboundMessage) => Promise<ProcessResult['outcome']>;

/** A consumer whose processor follows `behaviour`; it records calls, dead letters and delays. */
function fakeConsumer(behaviour: Behaviour, fifo = false) {
  const calls: string[] = [];
  const deadLetters: DeadLetterContext[] = [];
  const delayed: string[] = [];
  const config = readRuntimeConfig(
    lambdaEnvironment(
      { ...defaultSettings, queue: { ...defaultSettings.queue, fifo } },
      { inboxTable: 'i', ordersTable: 'o', idempotencyTable: 'p', deadLetterQueueUrl: 'http://127.0.0.1:9/q' },
    ),
  );
  const consumer: Consumer = {
    config,
    inbox: {},
    notifier: { registerLambdaContext: () => undefined, paymentReceived: async () => undefined },
    retryBackoff: {
      delay: async (records: readonly SQSRecord[]) => {
        delayed.push(...records.map((r) => r.messageId));
        return records.length;
      },
    } as unknown as RetryBackoff,
    messageConsumer: new MessageConsumer({
      processor: {
        process: async (message) => {
          calls.push(message.messageId);
          const outcome = await behaviour(message);
          return { outcome, event: JSON.parse(message.body) };
        },
      },
      deadLetterQueue: { send: async (context) => void deadLetters.push(context) },
      observer: { onOutcome: () => undefined },
    }),
  };
  return { handler: createSqsHandler(consumer), calls, deadLetters, delayed };
}

const failOn =
  (ids: readonly string[], error: () => Error = () => new PredecessorNotApplied('not yet')): Behaviour =>
  async (message) => {
    if (ids.includes(message.messageId)) throw error();
    return 'applied';
  };

describe('createSqsHandler: the partial batch response contract (standard queue)', () => {
  it('case C5: returns exactly the failed messageId, camelCase, and does not throw', async () => {
    const { handler, delayed } = fakeConsumer(failOn(['m-2']));
    const event = sqsEvent(
      sqsRecord('m-1', body.paid('e-1', 'O-1')),
      sqsRecord('m-2', body.paid('e-2', 'O-2')),
      sqsRecord('m-3', body.paid('e-3', 'O-3')),
    );

    const response = await handler(event, lambdaContext());

    expect(JSON.stringify(response)).toBe('{"batchItemFailures":[{"itemIdentifier":"m-2"}]}');
    expect(delayed).toEqual(['m-2']);
  });

  it('returns an empty list when everything succeeds', async () => {
    const { handler } = fakeConsumer(failOn([]));
    const response = await handler(sqsEvent(sqsRecord('m-1', body.paid('e-1', 'O-1'))), lambdaContext());
    expect(response).toEqual({ batchItemFailures: [] });
  });

  it('reports a full-batch failure as every item instead of throwing', async () => {
    const { handler } = fakeConsumer(failOn(['m-1', 'm-2']));
    const event = sqsEvent(sqsRecord('m-1', body.paid('e-1', 'O-1')), sqsRecord('m-2', body.paid('e-2', 'O-2')));
    const response = await handler(event, lambdaContext());
    expect(response.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(['m-1', 'm-2']);
  });

  it('acknowledges a non-retryable failure after sending it to the DLQ with its reason', async () => {
    const { handler, deadLetters } = fakeConsumer(failOn(['m-1'], () => new ValidationError('points: expected number')));
    const response = await handler(sqsEvent(sqsRecord('m-1', body.paid('e-1', 'O-1', 'ten'))), lambdaContext());
    expect(response).toEqual({ batchItemFailures: [] });
    expect(deadLetters).toHaveLength(1);
    expect(deadLetters[0]?.failure.reason).toBe('ValidationError');
    expect(deadLetters[0]?.originalMessageId).toBe('m-1');
  });

  it('dead-letters a retryable failure on the last receive as RetriesExhausted', async () => {
    const { handler, deadLetters } = fakeConsumer(failOn(['m-1']));
    const response = await handler(sqsEvent(sqsRecord('m-1', body.paid('e-1', 'O-1'), { receiveCount: 5 })), lambdaContext());
    expect(response).toEqual({ batchItemFailures: [] });
    expect(deadLetters.map((d) => [d.failure.reason, d.failure.errorType])).toEqual([['RetriesExhausted', 'PredecessorNotApplied']]);
  });

  it('runs the records of one order in batch order, other orders concurrently', async () => {
    const started: string[] = [];
    const { handler } = fakeConsumer(async (message) => {
      started.push(message.messageId);
      await new Promise((resolve) => setTimeout(resolve, message.messageId === 'a-1' ? 30 : 1));
      return 'applied';
    });
    const event = sqsEvent(
      sqsRecord('a-1', body.placed('e-1', 'A')),
      sqsRecord('b-1', body.placed('e-2', 'B')),
      sqsRecord('a-2', body.paid('e-3', 'A')),
    );
    await handler(event, lambdaContext());
    expect(started.indexOf('a-1')).toBeLessThan(started.indexOf('a-2'));
    expect(started.indexOf('b-1')).toBeLessThan(started.indexOf('a-2'));
  });
});

describe('createSqsHandler: FIFO queues', () => {
  const groupO1 = () => [
    sqsRecord('m-1', body.paid('e-1', 'O-1'), { groupId: 'O-1' }),
    sqsRecord('m-2', body.shipped('e-2', 'O-1'), { groupId: 'O-1' }),
    sqsRecord('m-3', body.delivered('e-3', 'O-1'), { groupId: 'O-1' }),
  ];

  it('case C3: a failure reports it and every later message of its group, in order', async () => {
    const { handler, delayed } = fakeConsumer(failOn(['m-1']), true);
    const response = await handler(sqsEvent(...groupO1()), lambdaContext());
    expect(JSON.stringify(response)).toBe(
      '{"batchItemFailures":[{"itemIdentifier":"m-1"},{"itemIdentifier":"m-2"},{"itemIdentifier":"m-3"}]}',
    );
    expect(delayed).toEqual(['m-1', 'm-2', 'm-3']);
  });

  it('case C4: runs the domain handler once (m-1) and never for m-2 and m-3', async () => {
    const { handler, calls } = fakeConsumer(failOn(['m-1']), true);
    await handler(sqsEvent(...groupO1()), lambdaContext());
    expect(calls).toEqual(['m-1']);
  });

  it('case C4: with two groups, the other group is applied in the same attempt', async () => {
    const { handler, calls } = fakeConsumer(failOn(['m-1']), true);
    const event = sqsEvent(
      sqsRecord('m-1', body.paid('e-1', 'O-1'), { groupId: 'O-1' }),
      sqsRecord('n-1', body.paid('e-4', 'O-2'), { groupId: 'O-2' }),
      sqsRecord('m-2', body.shipped('e-2', 'O-1'), { groupId: 'O-1' }),
      sqsRecord('n-2', body.shipped('e-5', 'O-2'), { groupId: 'O-2' }),
    );
    const response = await handler(event, lambdaContext());
    expect(response.batchItemFailures.map((f) => f.itemIdentifier)).toEqual(['m-1', 'm-2']);
    expect(calls).toEqual(['m-1', 'n-1', 'n-2']);
  });

  it('a non-retryable message is dead-lettered and its group goes on', async () => {
    const { handler, calls, deadLetters } = fakeConsumer(failOn(['m-2'], () => new ValidationError('bad')), true);
    const response = await handler(sqsEvent(...groupO1()), lambdaContext());
    expect(response).toEqual({ batchItemFailures: [] });
    expect(calls).toEqual(['m-1', 'm-2', 'm-3']);
    expect(deadLetters[0]?.messageGroupId).toBe('O-1');
  });
});
