import { describe, expect, it } from 'vitest';
import type { Classification } from '../../../packages/idempotent-consumer/src/classifier.js';
import {
  type DeadLetterCandidate,
  type DeadLetterRequest,
  type DeadLetterResult,
  type DeadLetterSink,
  deadLetter,
  notCounted,
} from '../../../packages/idempotent-consumer/src/engine/deadLetters.js';
import type { Delivery } from '../../../packages/idempotent-consumer/src/engine/Delivery.js';
import { conditionalCheckFailed, FakeDynamoDb, recordingLogger, sdkError } from './fakeDynamoDb.js';
import { delivery } from './fixtures.js';

const config = { inboxTable: 'inbox', consumerName: 'c', inboxTtlSeconds: 60 };
const at = new Date('2026-01-02T03:04:05.000Z');
const rule: Classification = {
  retryable: false,
  reason: 'BusinessRuleViolation',
  errorType: 'BusinessRuleViolation',
  errorMessage: 'cancelled order',
  countsAsAttempt: true,
};

const candidate = (messageId: string, extra: Partial<DeadLetterCandidate> = {}): DeadLetterCandidate => ({
  delivery: {
    ...delivery(messageId),
    body: `{"key":"${messageId}"}`,
    deadLetter: { source: 'arn:aws:sqs:us-east-1:000000000000:q', messageGroupId: 'g' },
  } as Delivery,
  idempotencyKey: `key-${messageId}`,
  payloadHash: `hash-${messageId}`,
  failure: rule,
  attempt: 2,
  alreadyMarked: false,
  ...extra,
});

/** A sink that records what it is sent and answers `results` (by default: every one sent). */
function sinkOf(results?: (requests: readonly DeadLetterRequest[]) => readonly DeadLetterResult[]) {
  const sent: DeadLetterRequest[][] = [];
  const sink: DeadLetterSink = {
    sendBatch: async (requests) => {
      sent.push([...requests]);
      return results === undefined ? requests.map(() => ({ ok: true as const, messageId: 'dlq-id' })) : results(requests);
    },
  };
  return { sink, sent };
}

function depsOf(fake: FakeDynamoDb, sink: DeadLetterSink | (() => Promise<DeadLetterSink>)) {
  const { logger, lines } = recordingLogger();
  return {
    deps: { client: fake.client, config, deadLetters: typeof sink === 'function' ? sink : async () => sink, logger, now: () => at },
    lines,
  };
}

describe('deadLetter', () => {
  it('marks the message in the inbox, then sends it with its reason, body and origin', async () => {
    const fake = new FakeDynamoDb().always('PutCommand', {});
    const { sink, sent } = sinkOf();
    const outcomes = await deadLetter([candidate('m-1')], depsOf(fake, sink).deps);
    expect(outcomes).toEqual([{ kind: 'sent', failure: rule }]);
    expect(fake.inputs('PutCommand')[0]).toMatchObject({
      TableName: 'inbox',
      Item: {
        pk: 'c#key#key-m-1',
        status: 'dead-lettered',
        messageId: 'm-1',
        reason: 'BusinessRuleViolation',
        deadLetteredAt: at.toISOString(),
      },
    });
    expect(sent).toEqual([
      [
        {
          source: 'arn:aws:sqs:us-east-1:000000000000:q',
          messageGroupId: 'g',
          body: '{"key":"m-1"}',
          failure: { reason: 'BusinessRuleViolation', errorType: 'BusinessRuleViolation', errorMessage: 'cancelled order' },
          attempts: 2,
          originalMessageId: 'm-1',
          failedAt: at,
        },
      ],
    ]);
  });

  it('writes no marker for a message without a key, one already marked, or one whose key another payload applied', async () => {
    const fake = new FakeDynamoDb();
    const { sink, sent } = sinkOf();
    const conflict: Classification = { ...rule, reason: 'IdempotencyConflict', errorType: 'IdempotencyConflict' };
    const outcomes = await deadLetter(
      [
        candidate('m-1', { idempotencyKey: undefined, payloadHash: undefined }),
        candidate('m-2', { alreadyMarked: true }),
        candidate('m-3', { failure: conflict }),
      ],
      depsOf(fake, sink).deps,
    );
    expect(fake.calls).toHaveLength(0);
    expect(outcomes.map((o) => o.kind)).toEqual(['sent', 'sent', 'sent']);
    expect(sent[0]!.map((r) => r.originalMessageId)).toEqual(['m-1', 'm-2', 'm-3']);
  });

  it('never dead-letters a message its marker finds applied: a duplicate with the same payload, an IdempotencyConflict with another', async () => {
    const fake = new FakeDynamoDb()
      .next(
        'PutCommand',
        conditionalCheckFailed({
          pk: 'c#key#key-m-1',
          status: 'applied',
          idempotencyKey: 'key-m-1',
          payloadHash: 'hash-m-1',
          messageId: 'm-0',
        }),
      )
      .next(
        'PutCommand',
        conditionalCheckFailed({
          pk: 'c#key#key-m-2',
          status: 'applied',
          idempotencyKey: 'key-m-2',
          payloadHash: 'other',
          messageId: 'm-0',
        }),
      );
    const { sink, sent } = sinkOf();
    const outcomes = await deadLetter([candidate('m-1'), candidate('m-2')], depsOf(fake, sink).deps);
    expect(outcomes[0]).toEqual({ kind: 'duplicate', storedPayloadHash: 'hash-m-1' });
    expect(outcomes[1]).toMatchObject({
      kind: 'sent',
      failure: { retryable: false, reason: 'IdempotencyConflict', errorType: 'IdempotencyConflict' },
    });
    expect(sent[0]!.map((r) => [r.originalMessageId, r.failure.reason])).toEqual([['m-2', 'IdempotencyConflict']]);
  });

  it('retries, not counted, a message whose marker cannot be written, and does not send it', async () => {
    const fake = new FakeDynamoDb().always('PutCommand', sdkError('ProvisionedThroughputExceededException', 'slow down'));
    const { sink, sent } = sinkOf();
    const { deps, lines } = depsOf(fake, sink);
    const outcomes = await deadLetter([candidate('m-1')], deps);
    expect(outcomes).toEqual([
      {
        kind: 'retry',
        failure: {
          retryable: true,
          reason: undefined,
          errorType: 'ProvisionedThroughputExceededException',
          errorMessage: 'slow down',
          countsAsAttempt: false,
        },
      },
    ]);
    expect(sent).toEqual([]);
    expect(lines.map((l) => l.message)).toEqual(['could not mark a message as dead-lettered; it will be retried']);
  });

  it('retries, not counted, the messages the sink could not take, each with its error', async () => {
    const fake = new FakeDynamoDb().always('PutCommand', {});
    const refused = sdkError('InvalidMessageContents', 'bad character');
    const { sink } = sinkOf(() => [{ ok: true }, { ok: false, error: refused }]);
    const { deps, lines } = depsOf(fake, sink);
    const outcomes = await deadLetter([candidate('m-1'), candidate('m-2'), candidate('m-3')], deps);
    expect(outcomes[0]).toEqual({ kind: 'sent', failure: rule });
    expect(outcomes[1]).toEqual({ kind: 'retry', failure: notCounted(refused) });
    expect(outcomes[2]).toMatchObject({
      kind: 'retry',
      failure: { errorMessage: 'no result for this dead letter', countsAsAttempt: false },
    });
    expect(lines.filter((l) => l.message === 'could not send a message to the dead-letter queue; it will be retried')).toHaveLength(2);
  });

  it('retries every message when the sink cannot be loaded or its batch is refused', async () => {
    const fake = new FakeDynamoDb().always('PutCommand', {});
    const cannotLoad = await deadLetter([candidate('m-1')], depsOf(fake, async () => Promise.reject(new Error('no SQS client'))).deps);
    expect(cannotLoad).toEqual([
      {
        kind: 'retry',
        failure: { retryable: true, reason: undefined, errorType: 'Error', errorMessage: 'no SQS client', countsAsAttempt: false },
      },
    ]);
    const rejecting: DeadLetterSink = { sendBatch: () => Promise.reject(sdkError('AccessDenied', 'not allowed')) };
    const refused = await deadLetter([candidate('m-1'), candidate('m-2')], depsOf(fake, rejecting).deps);
    expect(refused.map((o) => [o.kind, o.kind === 'retry' ? o.failure.errorType : undefined])).toEqual([
      ['retry', 'AccessDenied'],
      ['retry', 'AccessDenied'],
    ]);
  });

  it('counts one attempt and says Unknown when the attempt and the reason are not known', async () => {
    const { sink, sent } = sinkOf();
    await deadLetter(
      [candidate('m-1', { idempotencyKey: undefined, attempt: undefined, failure: { ...rule, reason: undefined } })],
      depsOf(new FakeDynamoDb(), sink).deps,
    );
    expect(sent[0]![0]).toMatchObject({ attempts: 1, failure: { reason: 'Unknown' } });
  });

  it('sends nothing and loads no sink when nothing is left to send', async () => {
    let loaded = false;
    const fake = new FakeDynamoDb().always('PutCommand', sdkError('InternalServerError'));
    const outcomes = await deadLetter([candidate('m-1')], {
      ...depsOf(fake, sinkOf().sink).deps,
      deadLetters: async () => ((loaded = true), sinkOf().sink),
    });
    expect(outcomes.map((o) => o.kind)).toEqual(['retry']);
    expect(loaded).toBe(false);
  });
});

describe('notCounted', () => {
  it('retries a failure of the dead-letter path without using up an attempt, whatever the error', () => {
    expect(notCounted(new Error('x'))).toEqual({
      retryable: true,
      reason: undefined,
      errorType: 'Error',
      errorMessage: 'x',
      countsAsAttempt: false,
    });
    expect(notCounted(Object.assign(new Error('y'), { name: 'ValidationError' }))).toMatchObject({
      retryable: true,
      reason: undefined,
      countsAsAttempt: false,
    });
  });
});
