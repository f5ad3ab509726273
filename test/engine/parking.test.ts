/**
 * Parking out-of-order messages (`retry.parkOutOfOrder`, issue 19 part 5) on a consumer of its own
 * (parcels that go through numbered steps), against DynamoDB Local and the SQS server: a message
 * whose predecessor has not been applied waits in the inbox table, is applied by the invocation
 * that applies its predecessor, and is deleted from the queue with its parked receipt handle, so
 * it is not redelivered; one whose predecessor never comes is dead-lettered `RetriesExhausted` on
 * its last attempt, as without parking.
 */
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import { type IdempotentConsumerOptions, PredecessorNotApplied, BusinessRuleViolation, type TableDefinition } from 'idempotent-consumer';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { deadLetters } from '../support/cafeHarness.js';
import { consumerEnvironment, inboxRowOf, outcomeList, sourceRecord, storedItem } from '../support/consumerHarness.js';
import { deadLetterAttribute } from '../support/deadLetterAttributes.js';
import { clientRacingThePark, parkedIds, parkItem, queueCounts, sendAndReceive } from '../support/parkHarness.js';
import { lambdaContext, sqsEvent } from '../support/sqsEvents.js';
import { describeUnlessDeployedStack, type TestResources, testResources } from '../support/testResources.js';

const describe = describeUnlessDeployedStack(
  'a consumer with a table of its own and parking on: a deployed stack has the café, without parking',
);

const StepEvent = z.object({ eventId: z.string().min(1), parcelId: z.string().min(1), step: z.number().int().min(1) });
type StepEvent = z.infer<typeof StepEvent>;
type Parcel = { parcelId: string; step: number };
const tables = { parcels: { partitionKey: 'parcelId' } } as const satisfies Record<string, TableDefinition>;

/** Step n applies only on step n − 1 (step 1 on no parcel); an earlier or equal step can never apply. */
const parcelConsumer: IdempotentConsumerOptions<StepEvent> = {
  schema: StepEvent,
  idempotencyKey: 'eventId',
  orderingKey: 'parcelId',
  tables,
  read: (event) => [{ table: 'parcels', key: { parcelId: event.parcelId } }],
  decide: (event, state) => {
    const parcel = state.get<Parcel>('parcels', { parcelId: event.parcelId });
    const at = parcel?.step ?? 0;
    if (event.step > at + 1) throw new PredecessorNotApplied(`parcel ${event.parcelId} is at step ${at}, step ${event.step} waits`);
    if (event.step <= at) throw new BusinessRuleViolation(`parcel ${event.parcelId} is past step ${event.step}`);
    return { writes: [{ Put: { TableName: 'parcels', Item: { parcelId: event.parcelId, step: event.step } } }] };
  },
};

const step = (parcelId: string, n: number): StepEvent => ({ eventId: `${parcelId}-${n}`, parcelId, step: n });
const stepBody = (parcelId: string, n: number): string => JSON.stringify(step(parcelId, n));

describe('parking out-of-order messages (retry.parkOutOfOrder)', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('parking', tables, { consumerName: 'parcels', retry: { parkOutOfOrder: true, backoffBaseSeconds: 2 } });
  });
  afterAll(() => env.dispose());

  /** What the event source mapping does with an acknowledged message: deletes it. */
  async function acknowledge(record: SQSRecord, response: SQSBatchResponse): Promise<void> {
    expect(response.batchItemFailures.map((f) => f.itemIdentifier)).not.toContain(record.messageId);
    const { DeleteMessageCommand } = await import('@aws-sdk/client-sqs');
    await env.sqs.send(new DeleteMessageCommand({ QueueUrl: env.resources.queueUrl, ReceiptHandle: record.receiptHandle }));
  }

  it('parks a successor that arrives first; the invocation of another environment that applies its predecessor applies it and deletes it from the queue', async () => {
    const first = consumerEnvironment(env, parcelConsumer);
    const second = consumerEnvironment(env, parcelConsumer);
    const successor = await sendAndReceive(env, stepBody('P-1', 2));
    const parked = (await first.handler(sqsEvent(successor), lambdaContext())) as SQSBatchResponse;
    // Reported: it stays in flight for its backoff (its wake-up), its record in the park.
    expect(parked).toEqual({ batchItemFailures: [{ itemIdentifier: successor.messageId }] });
    expect(first.outcomes).toMatchObject([
      { messageId: successor.messageId, outcome: 'retried', errorType: 'PredecessorNotApplied', parked: true },
    ]);
    expect(await parkedIds(env, 'P-1')).toEqual([successor.messageId]);
    expect(await inboxRowOf(env, 'P-1-2')).toBeUndefined();

    const predecessor = await sendAndReceive(env, stepBody('P-1', 1));
    const applied = (await second.handler(sqsEvent(predecessor), lambdaContext())) as SQSBatchResponse;
    await acknowledge(predecessor, applied);
    expect(outcomeList(second.outcomes)).toEqual([`${predecessor.messageId}:applied`, `${successor.messageId}:applied`]);
    expect(second.outcomes[1]).toMatchObject({ fromPark: true, idempotencyKey: 'P-1-2' });
    expect(await storedItem(env, 'parcels', { parcelId: 'P-1' })).toMatchObject({ step: 2 });
    expect(await inboxRowOf(env, 'P-1-2')).toMatchObject({ status: 'applied', messageId: successor.messageId });
    expect(await parkedIds(env, 'P-1')).toEqual([]);
    // Deleted with the parked receipt handle: nothing in flight, nothing comes back after the backoff.
    expect(await queueCounts(env)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const { Messages = [] } = await env.sqs.send(new ReceiveMessageCommand({ QueueUrl: env.resources.queueUrl, WaitTimeSeconds: 1 }));
    expect(Messages).toEqual([]);
  });

  it('applies a chain of parked successors in order once the first event comes, whatever order they were parked in', async () => {
    const environment = consumerEnvironment(env, parcelConsumer);
    const fourth = await sendAndReceive(env, stepBody('P-2', 4));
    const third = await sendAndReceive(env, stepBody('P-2', 3));
    const second = await sendAndReceive(env, stepBody('P-2', 2));
    for (const record of [fourth, third, second]) {
      expect(await environment.handler(sqsEvent(record), lambdaContext())).toEqual({
        batchItemFailures: [{ itemIdentifier: record.messageId }],
      });
    }
    expect(await parkedIds(env, 'P-2')).toEqual([fourth, third, second].map((r) => r.messageId).sort());
    environment.outcomes.length = 0;
    const first = await sendAndReceive(env, stepBody('P-2', 1));
    await acknowledge(first, (await environment.handler(sqsEvent(first), lambdaContext())) as SQSBatchResponse);
    expect(environment.outcomes.filter((o) => o.outcome === 'applied').map((o) => o.idempotencyKey)).toEqual([
      'P-2-1',
      'P-2-2',
      'P-2-3',
      'P-2-4',
    ]);
    expect(await storedItem(env, 'parcels', { parcelId: 'P-2' })).toMatchObject({ step: 4 });
    expect(await parkedIds(env, 'P-2')).toEqual([]);
    expect(await queueCounts(env)).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
  });

  it('applies a successor and its predecessor that come in one batch, successor first, without reporting or parking either', async () => {
    const environment = consumerEnvironment(env, parcelConsumer);
    const response = await environment.handler(
      sqsEvent(sourceRecord(env, 'm-p3-2', step('P-3', 2)), sourceRecord(env, 'm-p3-1', step('P-3', 1))),
      lambdaContext(),
    );
    expect(response).toEqual({ batchItemFailures: [] });
    expect(outcomeList(environment.outcomes).sort()).toEqual(['m-p3-1:applied', 'm-p3-2:applied']);
    expect(await storedItem(env, 'parcels', { parcelId: 'P-3' })).toMatchObject({ step: 2 });
    expect(await parkItem(env, 'P-3')).toBeUndefined();
  });

  it('applies at once a successor whose predecessor commits while it is being parked (the race the read after the commit cannot see)', async () => {
    const predecessorEnvironment = consumerEnvironment(env, parcelConsumer);
    // The parking environment's client lets the predecessor commit (and read the park, missing it)
    // just before the park is written.
    const racing = clientRacingThePark(env, 'P-4', async () => {
      const response = await predecessorEnvironment.handler(sqsEvent(sourceRecord(env, 'm-p4-1', step('P-4', 1))), lambdaContext());
      expect(response).toEqual({ batchItemFailures: [] });
    });
    try {
      const environment = consumerEnvironment(env, parcelConsumer, { dynamoDb: racing.dynamoDb });
      const response = await environment.handler(sqsEvent(sourceRecord(env, 'm-p4-2', step('P-4', 2))), lambdaContext());
      expect(racing.raced()).toBe(true);
      // The predecessor's read of the park missed it; the re-decision after parking saw the predecessor.
      expect(outcomeList(predecessorEnvironment.outcomes)).toEqual(['m-p4-1:applied']);
      expect(response).toEqual({ batchItemFailures: [] });
      expect(outcomeList(environment.outcomes)).toEqual(['m-p4-2:applied']);
      expect(await storedItem(env, 'parcels', { parcelId: 'P-4' })).toMatchObject({ step: 2 });
      expect(await parkedIds(env, 'P-4')).toEqual([]);
    } finally {
      racing.destroy();
    }
  });

  it('takes up what waits behind a message applied on its read after parking', async () => {
    const waiting = consumerEnvironment(env, parcelConsumer);
    expect(await waiting.handler(sqsEvent(sourceRecord(env, 'm-p7-3', step('P-7', 3))), lambdaContext())).toEqual({
      batchItemFailures: [{ itemIdentifier: 'm-p7-3' }],
    });
    const predecessorEnvironment = consumerEnvironment(env, parcelConsumer);
    const racing = clientRacingThePark(env, 'P-7', async () => {
      await predecessorEnvironment.handler(sqsEvent(sourceRecord(env, 'm-p7-1', step('P-7', 1))), lambdaContext());
    });
    try {
      const environment = consumerEnvironment(env, parcelConsumer, { dynamoDb: racing.dynamoDb });
      const response = await environment.handler(sqsEvent(sourceRecord(env, 'm-p7-2', step('P-7', 2))), lambdaContext());
      expect(racing.raced()).toBe(true);
      expect(response).toEqual({ batchItemFailures: [] });
      // Step 2 was applied on its own read after parking; step 3, parked before, right after it.
      expect(outcomeList(environment.outcomes)).toEqual(['m-p7-2:applied', 'm-p7-3:applied']);
      expect(environment.outcomes[1]).toMatchObject({ fromPark: true });
      expect(await storedItem(env, 'parcels', { parcelId: 'P-7' })).toMatchObject({ step: 3 });
      expect(await parkedIds(env, 'P-7')).toEqual([]);
    } finally {
      racing.destroy();
    }
  });

  it('dead-letters a successor whose predecessor never comes RetriesExhausted on its last attempt, body byte for byte, and takes it out of the park', async () => {
    const environment = consumerEnvironment(env, parcelConsumer);
    const body = JSON.stringify(step('P-5', 3));
    const responses: unknown[] = [];
    for (let receiveCount = 1; receiveCount <= 5; receiveCount += 1) {
      responses.push(await environment.handler(sqsEvent(sourceRecord(env, 'm-p5-3', body, { receiveCount })), lambdaContext()));
    }
    expect(responses.slice(0, 4)).toEqual(responses.slice(0, 4).map(() => ({ batchItemFailures: [{ itemIdentifier: 'm-p5-3' }] })));
    expect(responses[4]).toEqual({ batchItemFailures: [] });
    expect(environment.outcomes.map((o) => [o.outcome, o.parked ?? false])).toEqual([
      ['retried', true],
      ['retried', true],
      ['retried', true],
      ['retried', true],
      ['dead-lettered', false],
    ]);
    expect(environment.outcomes[4]).toMatchObject({ reason: 'RetriesExhausted', errorType: 'PredecessorNotApplied' });
    const dlq = (await deadLetters(env)).filter((message) => deadLetterAttribute(message, 'originalMessageId') === 'm-p5-3');
    expect(dlq.map((message) => message.Body)).toEqual([body]);
    expect(await parkedIds(env, 'P-5')).toEqual([]);

    // Its predecessors come later: nothing is taken up from the park, nothing is sent again.
    environment.outcomes.length = 0;
    for (const n of [1, 2]) await environment.handler(sqsEvent(sourceRecord(env, `m-p5-${n}`, step('P-5', n))), lambdaContext());
    expect(outcomeList(environment.outcomes)).toEqual(['m-p5-1:applied', 'm-p5-2:applied']);
  });

  it('leaves a message taken up from the park in its place when its own earlier delivery dead-lettered it: not sent again, not deleted', async () => {
    const environment = consumerEnvironment(env, parcelConsumer);
    const successor = await sendAndReceive(env, stepBody('P-6', 2));
    expect(await environment.handler(sqsEvent(successor), lambdaContext())).toEqual({
      batchItemFailures: [{ itemIdentifier: successor.messageId }],
    });
    // Its last attempt, in another environment whose park read missed it (a crash left the entry): dead-lettered.
    const last = { ...successor, attributes: { ...successor.attributes, ApproximateReceiveCount: '5' } };
    const other = consumerEnvironment(env, parcelConsumer);
    expect(await other.handler(sqsEvent(last), lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(other.outcomes).toMatchObject([{ outcome: 'dead-lettered', reason: 'RetriesExhausted' }]);
    const before = (await deadLetters(env)).filter((m) => deadLetterAttribute(m, 'originalMessageId') === successor.messageId);
    expect(before).toHaveLength(1);
    // Put the entry back as a crash between the dead letter and the release would have left it.
    const { UpdateCommand } = await import('@aws-sdk/lib-dynamodb');
    await env.documentClient.send(
      new UpdateCommand({
        TableName: env.resources.inboxTable,
        Key: { pk: 'parcels#park#P-6' },
        UpdateExpression: 'SET #e = :r',
        ExpressionAttributeNames: { '#e': `parked:${successor.messageId}` },
        ExpressionAttributeValues: { ':r': JSON.stringify(successor) },
      }),
    );
    environment.outcomes.length = 0;
    await environment.handler(sqsEvent(sourceRecord(env, 'm-p6-1', step('P-6', 1))), lambdaContext());
    // Taken up, found dead-lettered by its own delivery: no outcome of its own here, out of the park.
    expect(outcomeList(environment.outcomes)).toEqual(['m-p6-1:applied']);
    expect(await parkedIds(env, 'P-6')).toEqual([]);
    // The dead-letter queue's visibility hides the first copy for 30 s: a second send would be visible now.
    expect((await deadLetters(env)).filter((m) => deadLetterAttribute(m, 'originalMessageId') === successor.messageId)).toEqual([]);
  });
});

describe('without parking (the default)', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('noparking', tables, { consumerName: 'parcels' });
  });
  afterAll(() => env.dispose());

  it('retries a successor that arrives first, writes no park item, and reads none', async () => {
    const environment = consumerEnvironment(env, parcelConsumer);
    const response = await environment.handler(sqsEvent(sourceRecord(env, 'm-q1-2', step('Q-1', 2))), lambdaContext());
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-q1-2' }] });
    expect(environment.outcomes[0]).not.toHaveProperty('parked');
    const output = await env.documentClient.send(
      new GetCommand({ TableName: env.resources.inboxTable, Key: { pk: 'parcels#park#Q-1' }, ConsistentRead: true }),
    );
    expect(output.Item).toBeUndefined();
  });
});
