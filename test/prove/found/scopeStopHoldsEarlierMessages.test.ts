/**
 * Found while shrinking a `npm run prove` failure on Kafka (the replay of
 * `kafkaLockHeldSpendsRetries.test.ts`): a message that must be retried also holds back the
 * messages *before* it in its FIFO group or Kafka partition, when they were decided in the same
 * round. Fixed: a scope stops only after its first failed message (`BatchEngine.#plan`).
 *
 * `BatchEngine.settle` plans `OrderPlaced` (first) and `OrderPaid` (second) of one order
 * together (folded on the order item); `OrderPaid`'s side effect fails because another
 * invocation holds its lock, so the round is dropped. The next round's `#plan` collects
 * `stoppedScopes` from every failed retryable unit of the batch, whatever its position, and
 * fails every unsettled unit of those scopes as `NotAttempted` — `OrderPlaced` included,
 * although it comes first. Both are reported; nothing is applied. AWS's contract (and the
 * DESIGN) stops a group at its first failure: the messages before it are processed.
 *
 * Expected: only `OrderPaid` is reported; `OrderPlaced` is applied in the same invocation.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { emulatorDynamoDb } from '../../support/hookedDynamoDb.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cafeResources, executionEnvironment, orderState, queueRecord } from '../../support/cafeHarness.js';
import { kafkaRecord, mskEvent } from '../../support/kafkaEvents.js';
import { body, lambdaContext, sqsEvent } from '../../support/sqsEvents.js';
import { describeUnlessDeployedStack, type TestResources } from '../../support/testResources.js';

/** A DynamoDB client that crashes (refuses every later call) once the side effect's lock is written. */
function crashingAfterTheLock(env: TestResources): DynamoDBClient {
  let crashed = false;
  const client = emulatorDynamoDb(env);
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (crashed) throw Object.assign(new Error('the invocation crashed'), { name: 'InvocationCrashed' });
      const output = await next(args);
      if (context.commandName === 'PutItemCommand' && (args.input as { TableName?: string }).TableName === env.resources.idempotencyTable)
        crashed = true;
      return output;
    },
    { step: 'initialize', name: 'crashAfterTheLock' },
  );
  return client;
}

const describe = describeUnlessDeployedStack('needs a standard and a FIFO queue at once; a deployed stack has one kind');

describe('found: a message that must be retried holds back the earlier messages of its group or partition', () => {
  let env: TestResources;
  let fifo: TestResources;
  beforeAll(async () => {
    [env, fifo] = await Promise.all([cafeResources('found-scope'), cafeResources('found-scope-fifo', { queue: { fifo: true } })]);
  });
  afterAll(() => Promise.all([env?.dispose(), fifo?.dispose()]));

  it('Kafka: applies OrderPlaced at offset 0 and reports only OrderPaid at offset 1 while its lock is held elsewhere', async () => {
    const event = mskEvent(
      kafkaRecord('orders', 0, 0, body.placed('k-placed', 'K-1')),
      kafkaRecord('orders', 0, 1, body.paid('k-paid', 'K-1', 10)),
    );
    await executionEnvironment(env, { dynamoDb: crashingAfterTheLock(env) }).handler(event, lambdaContext()); // dies holding the lock
    const response = await executionEnvironment(env).handler(event, lambdaContext());
    expect(JSON.stringify(response)).toBe('{"batchItemFailures":[{"itemIdentifier":{"partition":"orders-0","offset":1}}]}');
    expect((await orderState(env, 'K-1'))?.status).toBe('Created');
  });

  it('FIFO: applies OrderPlaced and reports only OrderPaid while its lock is held elsewhere', async () => {
    const event = sqsEvent(
      queueRecord(fifo, 'f-placed', body.placed('f-placed', 'F-1'), { groupId: 'F-1' }),
      queueRecord(fifo, 'f-paid', body.paid('f-paid', 'F-1', 10), { groupId: 'F-1' }),
    );
    await executionEnvironment(fifo, { dynamoDb: crashingAfterTheLock(fifo) }).handler(event, lambdaContext());
    const response = await executionEnvironment(fifo).handler(event, lambdaContext());
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'f-paid' }] });
    expect((await orderState(fifo, 'F-1'))?.status).toBe('Created');
  });
});
