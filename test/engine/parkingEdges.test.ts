/**
 * Edges of parking out-of-order messages (`retry.parkOutOfOrder`, docs/parking.md), against
 * DynamoDB Local and the SQS server: park items past DynamoDB's 400 KB, message attributes (a
 * Binary one, `ic.redrive`) kept through the park, a message parked twice, a dead letter on the
 * new state, a retryable failure beside a parked successor, two environments taking up one parked
 * message at once, an invocation out of time when the park read returns entries, a FIFO queue.
 *
 * The consumer keeps a tally per key: an event `{ need }` applies when the tally is at least
 * `need` (else it waits: `PredecessorNotApplied`) and adds one; with `below`, a tally at or above
 * it is a `BusinessRuleViolation`.
 */
import { ChangeMessageVisibilityCommand, DeleteMessageCommand } from '@aws-sdk/client-sqs';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Context, SQSBatchResponse, SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { deadLetters } from '../support/cafeHarness.js';
import { consumerEnvironment, inboxRowOf, outcomeList, sourceRecord, storedItem } from '../support/consumerHarness.js';
import { deadLetterAttribute } from '../support/deadLetterAttributes.js';
import { kafkaRecord, mskEvent } from '../support/kafkaEvents.js';
import { parkedIds, parkItem, queueCounts, receiveOne, sendAndReceive, tally, tallyConsumer, tallyTables } from '../support/parkHarness.js';
import { lambdaContext, sqsEvent } from '../support/sqsEvents.js';
import { awsClients, describeUnlessDeployedStack, type TestResources, testResources } from '../support/testResources.js';

const describe = describeUnlessDeployedStack('a consumer with a table of its own and parking on');

describe('parking edges (standard queue)', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('parkedges', tallyTables, {
      consumerName: 'tallies',
      retry: { parkOutOfOrder: true, backoffBaseSeconds: 2 },
    });
  });
  afterAll(() => env.dispose());

  const countOf = async (key: string) => (await storedItem<{ count: number }>(env, 'tallies', { key }))?.count;
  const deadLettersOf = async (messageId: string) =>
    (await deadLetters(env)).filter((message) => deadLetterAttribute(message, 'originalMessageId') === messageId);

  it('parks one large record; a second that would take the park item past 400 KB is retried as without parking; both applied once later', async () => {
    const environment = consumerEnvironment(env, tallyConsumer());
    const pad = 'x'.repeat(300_000);
    const first = sourceRecord(env, 'm-big-1', tally('BIG', 'big-1', 1, { pad }));
    const second = sourceRecord(env, 'm-big-2', tally('BIG', 'big-2', 1, { pad }));
    const response = await environment.handler(sqsEvent(first, second), lambdaContext());
    expect((response as SQSBatchResponse).batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(['m-big-1', 'm-big-2']);
    expect(environment.outcomes.map((o) => o.outcome)).toEqual(['retried', 'retried']);
    // Exactly one of the two fits in the park item.
    expect(environment.outcomes.filter((o) => o.parked === true)).toHaveLength(1);
    const parked = await parkedIds(env, 'BIG');
    expect(parked).toHaveLength(1);
    const notParked = parked[0] === 'm-big-1' ? second : first;

    // A record alone larger than 400 KB: not parked, retried, no crash.
    const huge = sourceRecord(env, 'm-huge', tally('HUGE', 'huge-1', 1, { pad: 'y'.repeat(450_000) }));
    expect(await environment.handler(sqsEvent(huge), lambdaContext())).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-huge' }] });
    expect(environment.outcomes.at(-1)).toMatchObject({ outcome: 'retried', errorType: 'PredecessorNotApplied' });
    expect(environment.outcomes.at(-1)?.parked).toBeUndefined();
    expect(await parkedIds(env, 'HUGE')).toEqual([]);

    environment.outcomes.length = 0;
    await environment.handler(sqsEvent(sourceRecord(env, 'm-big-0', tally('BIG', 'big-0', 0))), lambdaContext());
    expect(outcomeList(environment.outcomes)).toEqual(['m-big-0:applied', `${parked[0]}:applied`]);
    expect(await parkedIds(env, 'BIG')).toEqual([]);
    // The one not parked comes back at its wake-up and is applied.
    environment.outcomes.length = 0;
    const again = { ...notParked, attributes: { ...notParked.attributes, ApproximateReceiveCount: '2' } };
    expect(await environment.handler(sqsEvent(again), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(outcomeList(environment.outcomes)).toEqual([`${notParked.messageId}:applied`]);
    expect(await countOf('BIG')).toBe(3);
  });

  it('leaves a parked message that is a business rule violation on the new state to its own receive, which dead-letters it once with its body and attributes (a Binary one); the park is emptied', async () => {
    const environment = consumerEnvironment(env, tallyConsumer());
    const body = `${JSON.stringify(tally('BRV', 'brv-1', 1, { below: 1 }))}  `;
    const binary = new Uint8Array([0, 1, 2, 127, 128, 254, 255]);
    const parkedRecord = await sendAndReceive(env, body, {
      note: { DataType: 'String', StringValue: 'kept ✓' },
      blob: { DataType: 'Binary', BinaryValue: binary },
      amount: { DataType: 'Number', StringValue: '42.5' },
    });
    expect(await environment.handler(sqsEvent(parkedRecord), lambdaContext())).toEqual({
      batchItemFailures: [{ itemIdentifier: parkedRecord.messageId }],
    });
    expect(await parkedIds(env, 'BRV')).toEqual([parkedRecord.messageId]);

    environment.outcomes.length = 0;
    await environment.handler(sqsEvent(sourceRecord(env, 'm-brv-0', tally('BRV', 'brv-0', 0))), lambdaContext());
    // Taken up and found dead-letter-worthy: not dead-lettered from the park (its parked receipt
    // handle may be stale), out of the park, left in the queue for its own receive.
    expect(outcomeList(environment.outcomes)).toEqual(['m-brv-0:applied']);
    expect(await parkedIds(env, 'BRV')).toEqual([]);
    expect(await deadLettersOf(parkedRecord.messageId)).toEqual([]);
    expect(await queueCounts(env)).toMatchObject({ visible: 0, inFlight: 1 });
    // Its wake-up (made visible now rather than in 2 s): dead-lettered once, then deleted as the event source mapping would.
    await env.sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: env.resources.queueUrl,
        ReceiptHandle: parkedRecord.receiptHandle,
        VisibilityTimeout: 0,
      }),
    );
    const wakeUp = await receiveOne(env);
    expect(wakeUp.messageId).toBe(parkedRecord.messageId);
    environment.outcomes.length = 0;
    expect(await environment.handler(sqsEvent(wakeUp), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(environment.outcomes).toMatchObject([
      { messageId: parkedRecord.messageId, outcome: 'dead-lettered', reason: 'BusinessRuleViolation' },
    ]);
    await env.sqs.send(new DeleteMessageCommand({ QueueUrl: env.resources.queueUrl, ReceiptHandle: wakeUp.receiptHandle }));
    expect(await queueCounts(env)).toMatchObject({ visible: 0, inFlight: 0 });
    const dlq = await deadLettersOf(parkedRecord.messageId);
    expect(dlq).toHaveLength(1);
    expect(dlq[0]?.Body).toBe(body);
    expect(deadLetterAttribute(dlq[0], 'failureReason')).toBe('BusinessRuleViolation');
    const attributes = dlq[0]?.MessageAttributes ?? {};
    expect(attributes.note).toMatchObject({ DataType: 'String', StringValue: 'kept ✓' });
    expect(attributes.amount).toMatchObject({ DataType: 'Number', StringValue: '42.5' });
    expect(attributes.blob?.DataType).toBe('Binary');
    expect([...(attributes.blob?.BinaryValue ?? [])]).toEqual([...binary]);
    expect(await inboxRowOf(env, 'brv-1')).toMatchObject({ status: 'dead-lettered' });
  });

  it('keeps only the newest park of a message received twice, applies it once and deletes it with the newest receipt handle', async () => {
    const environment = consumerEnvironment(env, tallyConsumer());
    const firstReceive = await sendAndReceive(env, JSON.stringify(tally('TWICE', 'twice-1', 1)));
    expect(await environment.handler(sqsEvent(firstReceive), lambdaContext())).toEqual({
      batchItemFailures: [{ itemIdentifier: firstReceive.messageId }],
    });
    // Its wake-up, early: visible again, received with a new receipt handle, parked again.
    await env.sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: env.resources.queueUrl,
        ReceiptHandle: firstReceive.receiptHandle,
        VisibilityTimeout: 0,
      }),
    );
    const secondReceive = await receiveOne(env);
    expect(secondReceive.messageId).toBe(firstReceive.messageId);
    expect(secondReceive.receiptHandle).not.toBe(firstReceive.receiptHandle);
    expect(await environment.handler(sqsEvent(secondReceive), lambdaContext())).toEqual({
      batchItemFailures: [{ itemIdentifier: secondReceive.messageId }],
    });
    const item = await parkItem(env, 'TWICE');
    expect(await parkedIds(env, 'TWICE')).toEqual([firstReceive.messageId]);
    const stored = JSON.parse(String(item?.[`parked:${firstReceive.messageId}`])) as SQSRecord;
    expect(stored.receiptHandle).toBe(secondReceive.receiptHandle);
    expect(stored.attributes.ApproximateReceiveCount).toBe('2');

    environment.outcomes.length = 0;
    await environment.handler(sqsEvent(sourceRecord(env, 'm-twice-0', tally('TWICE', 'twice-0', 0))), lambdaContext());
    expect(outcomeList(environment.outcomes)).toEqual(['m-twice-0:applied', `${firstReceive.messageId}:applied`]);
    expect(await countOf('TWICE')).toBe(2);
    expect(await parkedIds(env, 'TWICE')).toEqual([]);
    expect(await queueCounts(env)).toMatchObject({ visible: 0, inFlight: 0 });
  });

  it('applies from the park a redrive of a dead-lettered key (its ic.redrive attribute kept through the park)', async () => {
    const environment = consumerEnvironment(env, tallyConsumer());
    const body = JSON.stringify(tally('RD', 'rd-1', 1));
    // Its last attempt: dead-lettered RetriesExhausted.
    expect(await environment.handler(sqsEvent(sourceRecord(env, 'm-rd-1', body, { receiveCount: 5 })), lambdaContext())).toEqual({
      batchItemFailures: [],
    });
    expect(environment.outcomes).toMatchObject([{ outcome: 'dead-lettered', reason: 'RetriesExhausted' }]);
    expect(await inboxRowOf(env, 'rd-1')).toMatchObject({ status: 'dead-lettered' });
    // Redriven (a new message with ic.redrive); its predecessor still missing: parked.
    environment.outcomes.length = 0;
    const redrive = sourceRecord(env, 'm-rd-1-redrive', body, { stringAttributes: { 'ic.redrive': 'm-rd-1', note: 'n' } });
    expect(await environment.handler(sqsEvent(redrive), lambdaContext())).toEqual({
      batchItemFailures: [{ itemIdentifier: 'm-rd-1-redrive' }],
    });
    expect(environment.outcomes).toMatchObject([{ outcome: 'retried', parked: true }]);
    environment.outcomes.length = 0;
    await environment.handler(sqsEvent(sourceRecord(env, 'm-rd-0', tally('RD', 'rd-0', 0))), lambdaContext());
    expect(outcomeList(environment.outcomes)).toEqual(['m-rd-0:applied', 'm-rd-1-redrive:applied']);
    expect(await countOf('RD')).toBe(2);
    expect(await inboxRowOf(env, 'rd-1')).toMatchObject({ status: 'applied' });
    expect(await parkedIds(env, 'RD')).toEqual([]);
  });

  it('loses nothing when a successor comes in a batch with its predecessor that fails retryably; each applied once later', async () => {
    let flaky = true;
    const environment = consumerEnvironment(
      env,
      tallyConsumer((event) => flaky && event.eventId === 'fl-0'),
    );
    const successor = sourceRecord(env, 'm-fl-1', tally('FL', 'fl-1', 1));
    const predecessor = sourceRecord(env, 'm-fl-0', tally('FL', 'fl-0', 0));
    const response = (await environment.handler(sqsEvent(successor, predecessor), lambdaContext())) as SQSBatchResponse;
    expect(response.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(['m-fl-0', 'm-fl-1']);
    expect(environment.outcomes.every((o) => o.outcome === 'retried')).toBe(true);
    expect(await countOf('FL')).toBeUndefined();

    flaky = false;
    environment.outcomes.length = 0;
    const again = { ...predecessor, attributes: { ...predecessor.attributes, ApproximateReceiveCount: '2' } };
    expect(await environment.handler(sqsEvent(again), lambdaContext())).toEqual({ batchItemFailures: [] });
    const parkedBefore = environment.outcomes.some((o) => o.messageId === 'm-fl-1');
    // The successor was parked (taken up now) or comes back at its wake-up: either way, applied once.
    if (!parkedBefore) {
      const successorAgain = { ...successor, attributes: { ...successor.attributes, ApproximateReceiveCount: '2' } };
      await environment.handler(sqsEvent(successorAgain), lambdaContext());
    }
    expect(
      environment.outcomes
        .filter((o) => o.outcome === 'applied')
        .map((o) => o.messageId)
        .sort(),
    ).toEqual(['m-fl-0', 'm-fl-1']);
    expect(await countOf('FL')).toBe(2);
    expect(await parkedIds(env, 'FL')).toEqual([]);
  });

  it('two environments that take up one parked message at once: applied once, no dead letter, the park emptied', async () => {
    const parker = consumerEnvironment(env, tallyConsumer());
    const waiting = sourceRecord(env, 'm-cc-9', tally('CC', 'cc-9', 1));
    await parker.handler(sqsEvent(waiting), lambdaContext());
    expect(await parkedIds(env, 'CC')).toEqual(['m-cc-9']);
    const a = consumerEnvironment(env, tallyConsumer());
    const b = consumerEnvironment(env, tallyConsumer());
    const responses = (await Promise.all([
      a.handler(sqsEvent(sourceRecord(env, 'm-cc-a', tally('CC', 'cc-a', 0))), lambdaContext()),
      b.handler(sqsEvent(sourceRecord(env, 'm-cc-b', tally('CC', 'cc-b', 0))), lambdaContext()),
    ])) as SQSBatchResponse[];
    // A touch that lost a conflict and was retried comes back and is applied.
    const retried = responses.flatMap((r) => r.batchItemFailures.map((f) => f.itemIdentifier));
    for (const id of retried) {
      const record = sourceRecord(env, id, tally('CC', id.slice(2), 0), { receiveCount: 2 });
      await a.handler(sqsEvent(record), lambdaContext());
    }
    const all = [...a.outcomes, ...b.outcomes];
    expect(all.filter((o) => o.messageId === 'm-cc-9' && o.outcome === 'applied')).toHaveLength(1);
    expect(all.filter((o) => o.outcome === 'dead-lettered')).toEqual([]);
    expect(
      all
        .filter((o) => o.outcome === 'applied')
        .map((o) => o.messageId)
        .sort(),
    ).toEqual(['m-cc-9', 'm-cc-a', 'm-cc-b']);
    expect(await countOf('CC')).toBe(3);
    expect(await parkedIds(env, 'CC')).toEqual([]);
    expect(await deadLettersOf('m-cc-9')).toEqual([]);
  });

  it('leaves a parked message in the park, unapplied, when the invocation that reads it has no time left; its wake-up applies it once', async () => {
    const environment = consumerEnvironment(env, tallyConsumer());
    const waiting = sourceRecord(env, 'm-tl-1', tally('TL', 'tl-1', 1));
    await environment.handler(sqsEvent(waiting), lambdaContext());
    expect(await parkedIds(env, 'TL')).toEqual(['m-tl-1']);

    // The invocation's time runs out the moment its commit is done (the park, read beside it, holds the waiting message).
    const clients = awsClients();
    let outOfTime = false;
    clients.dynamoDb.middlewareStack.add(
      (next, context) => async (args) => {
        const output = await next(args);
        if (context.commandName === 'TransactWriteItemsCommand') outOfTime = true;
        return output;
      },
      { step: 'initialize', name: 'outOfTimeAfterTheCommit' },
    );
    try {
      const hurried = consumerEnvironment(env, tallyConsumer(), { dynamoDb: clients.dynamoDb });
      const context: Context = { ...lambdaContext(), getRemainingTimeInMillis: () => (outOfTime ? 0 : 30_000) };
      const response = await hurried.handler(sqsEvent(sourceRecord(env, 'm-tl-0', tally('TL', 'tl-0', 0))), context);
      expect(outOfTime).toBe(true);
      expect(response).toEqual({ batchItemFailures: [] });
      expect(outcomeList(hurried.outcomes)).toEqual(['m-tl-0:applied']);
    } finally {
      clients.destroy();
    }
    expect(await countOf('TL')).toBe(1);
    expect(await inboxRowOf(env, 'tl-1')).toBeUndefined();
    expect(await parkedIds(env, 'TL')).toEqual(['m-tl-1']);
    environment.outcomes.length = 0;
    const wakeUp = { ...waiting, attributes: { ...waiting.attributes, ApproximateReceiveCount: '2' } };
    expect(await environment.handler(sqsEvent(wakeUp), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(outcomeList(environment.outcomes)).toEqual(['m-tl-1:applied']);
    expect(await countOf('TL')).toBe(2);
    expect(await parkedIds(env, 'TL')).toEqual([]);
  });
  it('parks nothing from a Kafka batch: the partition stops at the waiting record, as without parking', async () => {
    const environment = consumerEnvironment(env, tallyConsumer());
    const response = await environment.handler(
      mskEvent(
        kafkaRecord('tallies', 0, 10, tally('KF', 'kf-1', 1), { key: 'KF' }),
        kafkaRecord('tallies', 0, 11, tally('KF', 'kf-0', 0), { key: 'KF' }),
      ) as never,
      lambdaContext(),
    );
    expect(response).toEqual({
      batchItemFailures: [
        { itemIdentifier: { partition: 'tallies-0', offset: 10 } },
        { itemIdentifier: { partition: 'tallies-0', offset: 11 } },
      ],
    });
    expect(environment.outcomes.some((o) => o.parked === true)).toBe(false);
    expect(await parkItem(env, 'KF')).toBeUndefined();
    expect(await countOf('KF')).toBeUndefined();
  });

  it('settles once a parked message and another copy of its event (another message id) that comes in a batch with its predecessor', async () => {
    const environment = consumerEnvironment(env, tallyConsumer());
    const body = JSON.stringify(tally('DUP', 'dup-1', 1));
    const parkedRecord = await sendAndReceive(env, body);
    await environment.handler(sqsEvent(parkedRecord), lambdaContext());
    expect(await parkedIds(env, 'DUP')).toEqual([parkedRecord.messageId]);
    environment.outcomes.length = 0;
    const response = await environment.handler(
      sqsEvent(sourceRecord(env, 'm-dup-copy', body), sourceRecord(env, 'm-dup-0', tally('DUP', 'dup-0', 0))),
      lambdaContext(),
    );
    expect(response).toEqual({ batchItemFailures: [] });
    const ofEvent = environment.outcomes.filter((o) => o.idempotencyKey === 'dup-1');
    expect(ofEvent.map((o) => o.outcome).sort()).toEqual(['applied', 'duplicate']);
    expect(await countOf('DUP')).toBe(2);
    expect(await parkedIds(env, 'DUP')).toEqual([]);
    // The parked copy was settled from the park: deleted from the queue.
    expect(await queueCounts(env)).toMatchObject({ visible: 0, inFlight: 0 });
  });
  it('applies a batch message that waits for a parked one right after it, in the same invocation', async () => {
    const environment = consumerEnvironment(env, tallyConsumer());
    await environment.handler(sqsEvent(sourceRecord(env, 'm-ch-1', tally('CH', 'ch-1', 1))), lambdaContext());
    expect(await parkedIds(env, 'CH')).toEqual(['m-ch-1']);
    environment.outcomes.length = 0;
    const response = await environment.handler(
      sqsEvent(sourceRecord(env, 'm-ch-0', tally('CH', 'ch-0', 0)), sourceRecord(env, 'm-ch-2', tally('CH', 'ch-2', 2))),
      lambdaContext(),
    );
    expect(response).toEqual({ batchItemFailures: [] });
    expect(outcomeList(environment.outcomes).sort()).toEqual(['m-ch-0:applied', 'm-ch-1:applied', 'm-ch-2:applied']);
    expect(environment.outcomes.find((o) => o.messageId === 'm-ch-1')).toMatchObject({ fromPark: true });
    expect(await countOf('CH')).toBe(3);
    expect(await parkedIds(env, 'CH')).toEqual([]);
  });
});

describe('parking on a FIFO queue (ignored)', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('parkfifo', tallyTables, { consumerName: 'tallies', queue: { fifo: true }, retry: { parkOutOfOrder: true } });
  });
  afterAll(() => env.dispose());

  it('parks nothing: the group stops at the waiting message, as without parking', async () => {
    const environment = consumerEnvironment(env, tallyConsumer());
    const response = await environment.handler(
      sqsEvent(
        sourceRecord(env, 'm-ff-1', tally('FF', 'ff-1', 1), { groupId: 'FF' }),
        sourceRecord(env, 'm-ff-0', tally('FF', 'ff-0', 0), { groupId: 'FF' }),
      ),
      lambdaContext(),
    );
    expect((response as SQSBatchResponse).batchItemFailures.map((f) => f.itemIdentifier)).toEqual(['m-ff-1', 'm-ff-0']);
    expect(environment.outcomes.some((o) => o.parked === true)).toBe(false);
    const output = await env.documentClient.send(
      new GetCommand({ TableName: env.resources.inboxTable, Key: { pk: 'tallies#park#FF' }, ConsistentRead: true }),
    );
    expect(output.Item).toBeUndefined();
    expect(await storedItem(env, 'tallies', { key: 'FF' })).toBeUndefined();
  });
});
