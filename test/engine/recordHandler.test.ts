/**
 * `createRecordHandler`: the record handler for teams that keep their own Powertools
 * `processPartialResponse`, on the real DynamoDB Local and SQS server. Each record is its own
 * batch of one: applied once, acknowledged as a duplicate on redelivery, dead-lettered with its
 * reason when it can never apply (and then not reported), reported as a batch item failure when it
 * must be retried. Its start-up, like `createIdempotentConsumer`'s, is not remembered when it
 * fails: the next invocation builds again.
 */
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import { createRecordHandler, type IdempotentConsumerOptions, PredecessorNotApplied, type TableDefinition } from 'idempotent-consumer';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { deadLetters } from '../support/cafeHarness.js';
import { sourceRecord, storedItem } from '../support/consumerHarness.js';
import { deadLetterAttribute } from '../support/deadLetterAttributes.js';
import { lambdaContext, sqsEvent } from '../support/sqsEvents.js';
import { describeUnlessDeployedStack, type TestResources, testResources } from '../support/testResources.js';

const describe = describeUnlessDeployedStack('a consumer with a table of its own (counters) and assertions over its DLQ');

const CounterEvent = z.object({ eventId: z.string().min(1), counterId: z.string().min(1), by: z.number().int() });
type CounterEvent = z.infer<typeof CounterEvent>;
const counterTables = { counters: { partitionKey: 'counterId' } } as const satisfies Record<string, TableDefinition>;

const counterConsumer: IdempotentConsumerOptions<CounterEvent> = {
  schema: CounterEvent,
  idempotencyKey: 'eventId',
  orderingKey: 'counterId',
  tables: counterTables,
  read: (event) => [{ table: 'counters', key: { counterId: event.counterId } }],
  decide: (event, state) => {
    const counter = state.get<{ counterId: string; value: number }>('counters', { counterId: event.counterId });
    // A negative step before the counter exists waits for it (retryable).
    if (counter === undefined && event.by < 0) throw new PredecessorNotApplied(`${event.counterId} does not exist yet`);
    return { writes: [{ Put: { TableName: 'counters', Item: { counterId: event.counterId, value: (counter?.value ?? 0) + event.by } } }] };
  },
};

describe('createRecordHandler under processPartialResponse', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await testResources('record-handler', counterTables, { consumerName: 'counters' });
  });
  afterAll(async () => {
    await env?.dispose();
  });

  const runtime = () => ({ environment: env.environment, clients: { dynamoDb: env.dynamoDb, sqs: env.sqs, s3: env.s3 } });
  const invoke = (recordHandler: ReturnType<typeof createRecordHandler>, ...records: Parameters<typeof sqsEvent>) => {
    const context = lambdaContext();
    return processPartialResponse(sqsEvent(...records), recordHandler, new BatchProcessor(EventType.SQS), { context });
  };

  it('applies each record once, acknowledges a redelivery as a duplicate, dead-letters a poison record and reports one that must wait', async () => {
    const recordHandler = createRecordHandler(counterConsumer, runtime());
    const first = sourceRecord(env, 'm-1', { eventId: 'e-1', counterId: 'A', by: 5 });
    const waiting = sourceRecord(env, 'm-2', { eventId: 'e-2', counterId: 'B', by: -1 });
    const poison = sourceRecord(env, 'm-3', { eventId: 'e-3', counterId: 'A', by: 'five' });
    expect(await invoke(recordHandler, first, waiting, poison)).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-2' }] });
    expect(await storedItem(env, 'counters', { counterId: 'A' })).toMatchObject({ value: 5 });
    expect(await storedItem(env, 'counters', { counterId: 'B' })).toBeUndefined();

    // The same message again (a redelivery), and a second event on the same counter.
    const again = sourceRecord(env, 'm-1', { eventId: 'e-1', counterId: 'A', by: 5 }, { receiveCount: 2 });
    const second = sourceRecord(env, 'm-4', { eventId: 'e-4', counterId: 'A', by: 2 });
    expect(await invoke(recordHandler, again, second)).toEqual({ batchItemFailures: [] });
    expect(await storedItem(env, 'counters', { counterId: 'A' })).toMatchObject({ value: 7 });

    const dead = await deadLetters(env);
    expect(dead.map((message) => deadLetterAttribute(message, 'failureReason'))).toEqual(['ValidationError']);
    expect(dead.map((message) => deadLetterAttribute(message, 'originalMessageId'))).toEqual(['m-3']);
  });

  it('fails an invocation whose start-up fails, and builds again at the next one once the cause is fixed', async () => {
    const environment: Record<string, string> = { ...env.environment };
    const inboxVariable = Object.keys(environment).find((name) => environment[name] === env.resources.inboxTable);
    expect(inboxVariable).toBeDefined();
    delete environment[inboxVariable!];
    const recordHandler = createRecordHandler(counterConsumer, { ...runtime(), environment });
    const record = sourceRecord(env, 'm-10', { eventId: 'e-10', counterId: 'C', by: 1 });

    await expect(recordHandler(record, lambdaContext())).rejects.toThrow(inboxVariable!);
    environment[inboxVariable!] = env.resources.inboxTable;
    await expect(recordHandler(record, lambdaContext())).resolves.toBeUndefined();
    expect(await storedItem(env, 'counters', { counterId: 'C' })).toMatchObject({ value: 1 });
  });
});
