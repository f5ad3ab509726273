/**
 * Found by `npm run prove -- --schedules 1500 --seed 7` (kafka schedule 473), kept as its replay
 * and as a direct test of the attempt log. Fixed: every attempt-log write carries a token of its
 * own, so the SDK's retry of a write the server had already applied counts nothing twice.
 *
 * A Kafka record's failed attempt is counted with an `UpdateItem` `ADD attempts 1`. When the
 * server applies it but the answer is lost (a 5xx after the write, a timeout), the SDK retries the
 * call and the `ADD` runs twice: the record was dead-lettered as `RetriesExhausted` after 4 real
 * attempts of its 5. The same holds for the SQS skip count (`ADD skips 1`), which would give a
 * message an attempt more than its budget.
 */
import { emulatorDynamoDb } from '../../support/hookedDynamoDb.js';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AttemptLog } from '../../../packages/idempotent-consumer/src/inbox/AttemptLog.js';
import type { Schedule } from '../../../tools/prove/schedule.js';
import { describeUnlessDeployedStack, testResources, type TestResources } from '../../support/testResources.js';
import { replaySession } from './replaySession.js';

const replay: Schedule = {
  version: 1,
  source: 'kafka',
  workload: {
    kind: 'cafe',
    orders: [
      { path: 'shipped', points: 0, duplicates: [], poisonAt: 0 },
      { path: 'placed', points: 0, duplicates: [] },
    ],
    strayPoison: [],
  },
  sendOrder: [],
  batchSize: 1,
  environments: 1,
  kafka: { partitions: 1, retryReading: 'resume-from-lowest-offset' },
  receiveSeed: 0,
  staleReceiptDeletes: false,
  invocations: [
    { environment: 0, remainingMs: 30_000, callCostMs: 0, faults: [] },
    { environment: 0, remainingMs: 30_000, callCostMs: 0, faults: [{ call: 1, kind: '5xx-after' }] },
  ],
};

describe('found: an attempt counted twice when the SDK retries a write the server applied', () => {
  const replayed = replaySession();

  it('the replay: every record that runs out of attempts had all 5 of them', async () => {
    const result = await replayed(replay);
    expect(result.violations).toEqual([]);
  });
});

const direct = describeUnlessDeployedStack('reads and writes attempt records of fixed source ids');

direct('AttemptLog under a lost answer (the write applied, a 5xx returned, the SDK retries)', () => {
  let env: TestResources;
  let lostAnswers = 0;
  let log: AttemptLog;
  beforeAll(async () => {
    env = await testResources('attempt-token');
    const dynamoDb = emulatorDynamoDb(env);
    // Below the SDK's retry: the first attempt of each UpdateItem reaches the server, then its answer is lost.
    dynamoDb.middlewareStack.add(
      (next, context) => async (args) => {
        const output = await next(args);
        if (context.commandName === 'UpdateItemCommand' && lostAnswers % 2 === 0) {
          lostAnswers += 1;
          throw Object.assign(new Error('We encountered an internal error. Please try again.'), {
            name: 'InternalServerError',
            $fault: 'server',
            $metadata: { httpStatusCode: 500 },
          });
        }
        if (context.commandName === 'UpdateItemCommand') lostAnswers += 1;
        return output;
      },
      { step: 'deserialize', name: 'loseTheFirstAnswer' },
    );
    log = new AttemptLog({
      client: DynamoDBDocumentClient.from(dynamoDb),
      tableName: env.resources.inboxTable,
      consumerName: 'attempt-token',
      ttlSeconds: 3600,
    });
  });
  afterAll(() => env?.dispose());

  it("counts a Kafka record's failed attempts once each: 1, 2, 3", async () => {
    const failure = { source: 'SelfManagedKafka:local', errorType: 'PredecessorNotApplied', errorMessage: 'waits' };
    const counts = [];
    for (let i = 0; i < 3; i += 1) counts.push(await log.recordFailure('kafka:orders-0@1', 'identity-1', failure));
    expect(counts).toEqual([1, 2, 3]);
    expect(lostAnswers).toBe(6); // each write: its first answer lost, the SDK's retry answered
  });

  it('restarts the count at 1 for another record at the same coordinates, once', async () => {
    const failure = { source: 'SelfManagedKafka:local', errorType: 'PredecessorNotApplied', errorMessage: 'waits' };
    expect(await log.recordFailure('kafka:orders-0@1', 'identity-2', failure)).toBe(1);
    expect(await log.recordFailure('kafka:orders-0@1', 'identity-2', failure)).toBe(2);
  });

  it("counts an SQS message's skipped receives once each", async () => {
    await log.recordSkip('sqs:m-1', 'an earlier message of its group failed');
    await log.recordSkip('sqs:m-1', 'an earlier message of its group failed');
    const stored = await env.documentClient.send(
      new GetCommand({ TableName: env.resources.inboxTable, Key: { pk: log.key('sqs:m-1') }, ConsistentRead: true }),
    );
    expect(stored.Item?.skips).toBe(2);
    expect((await log.skipsOf(['sqs:m-1'])).get('sqs:m-1')).toBe(2);
  });
});

direct('AttemptLog under contention (a TransactionConflictException the SDK does not retry)', () => {
  let env: TestResources;
  let conflicts = 0;
  let log: AttemptLog;
  beforeAll(async () => {
    env = await testResources('attempt-conflict');
    const dynamoDb = emulatorDynamoDb(env, { maxAttempts: 1 });
    // Before the request leaves: every other UpdateItem meets a conflict and writes nothing.
    let updates = 0;
    dynamoDb.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'UpdateItemCommand' && updates++ % 2 === 0) {
          conflicts += 1;
          throw Object.assign(new Error('Transaction is ongoing for the item'), {
            name: 'TransactionConflictException',
            $fault: 'client',
            $metadata: { httpStatusCode: 400 },
          });
        }
        return next(args);
      },
      { step: 'initialize', name: 'conflictEveryOtherUpdate' },
    );
    log = new AttemptLog({
      client: DynamoDBDocumentClient.from(dynamoDb),
      tableName: env.resources.inboxTable,
      consumerName: 'attempt-conflict',
      ttlSeconds: 3600,
      sleep: async () => undefined,
    });
  });
  afterAll(() => env?.dispose());

  // Found by the 10,000-schedule generated run (seed 828394144, Kafka schedule 3331; replay
  // `kafka-lost-failure-write` in generatedConsumers.test.ts): a failure whose count met a
  // conflict was not counted, and the mapping's retries ran out before the consumer's attempts.
  it("counts a Kafka record's failed attempts through conflicts: 1, 2, 3", async () => {
    const failure = { source: 'SelfManagedKafka:local', errorType: 'PredecessorNotApplied', errorMessage: 'waits' };
    const counts = [];
    for (let i = 0; i < 3; i += 1) counts.push(await log.recordFailure('kafka:orders-0@7', 'identity-1', failure));
    expect(counts).toEqual([1, 2, 3]);
    expect(conflicts).toBe(3);
  });
});
