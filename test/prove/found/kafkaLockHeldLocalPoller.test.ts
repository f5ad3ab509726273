/**
 * The first finding of `kafkaLockHeldSpendsRetries.test.ts` reproduced without the proof
 * suite's simulation: the local runtime's own Kafka event source poller, on real time, the café
 * handler on DynamoDB Local, the stack's retry setting for its batch size. Fixed as that one
 * (the engine waits for the lock's expiry); about 8 s of real time, the function timeout here.
 *
 * The completion record of the payment's notification cannot be written once (case C16: a
 * throttled `UpdateItem`), and the commit beside it is throttled too (the completion is written
 * while the commit is sent: alone, its failure no longer fails the message, which is applied; with
 * its commit refused the message comes back), so its in-progress lock stays until the first invocation's deadline
 * (30 s). The poller retries the batch at once; every retry finds the lock held and reports the
 * records without counting an attempt; `requiredKafkaRetryAttempts` (9 for a batch of 2) are
 * spent in about a second and the records are given up to the on-failure destination.
 *
 * Expected: nothing is given up; the order ends `Paid` with one ledger entry and one notification.
 */
import { emulatorDynamoDb } from '../../support/hookedDynamoDb.js';
import { createIdempotentConsumer } from 'idempotent-consumer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withOverrides, kafkaRetryAttempts } from '../../../packages/idempotent-consumer/src/settings/settings.js';
import { cafeConsumerOptions } from '../../../examples/cafe/consumer.js';
import { type KafkaOnFailureRecord, KafkaEventSourcePoller } from '../../../packages/local/src/kafka/KafkaEventSourcePoller.js';
import { PartitionedLog } from '../../../packages/local/src/kafka/PartitionedLog.js';
import { cafeResources, ledgerOf, notificationsOf, orderState } from '../../support/cafeHarness.js';
import { body } from '../../support/sqsEvents.js';
import type { TestResources } from '../../support/testResources.js';

describe('found: on Kafka, a side-effect lock left by a failed completion write spends the retries (local poller)', () => {
  let env: TestResources;
  beforeAll(async () => {
    env = await cafeResources('found-lock-poller', { kafka: { batchSize: 2 } });
  });
  afterAll(() => env?.dispose());

  it('applies the payment once and gives nothing up', async () => {
    const log = new PartitionedLog({ topic: 'orders', partitions: 1 });
    log.append({ key: 'L-1', value: JSON.stringify(body.placed('l-placed', 'L-1')) });
    log.append({ key: 'L-1', value: JSON.stringify(body.paid('l-paid', 'L-1', 10)) });
    // The first completion write of the idempotency table is throttled (after the SDK's own retries), and the commit sent beside it.
    let throttled = 0;
    let commitsThrottled = 0;
    const dynamoDb = emulatorDynamoDb(env);
    dynamoDb.middlewareStack.add(
      (next, context) => async (args) => {
        if (
          context.commandName === 'UpdateItemCommand' &&
          (args.input as { TableName?: string }).TableName === env.resources.idempotencyTable &&
          throttled === 0
        ) {
          throttled += 1;
          throw Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
            name: 'ThrottlingException',
            $retryable: {},
          });
        }
        if (context.commandName === 'TransactWriteItemsCommand' && throttled === 1 && commitsThrottled === 0) {
          commitsThrottled += 1;
          throw Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
            name: 'ThrottlingException',
            $retryable: {},
          });
        }
        return next(args);
      },
      { step: 'initialize', name: 'throttleCompletionOnce' },
    );
    const handler = createIdempotentConsumer(cafeConsumerOptions, {
      environment: env.environment,
      clients: { dynamoDb, sqs: env.sqs, s3: env.s3 },
    });
    const gaveUp: KafkaOnFailureRecord[] = [];
    const retryAttempts = kafkaRetryAttempts(withOverrides({ kafka: { batchSize: 2 } }));
    // A short function timeout keeps the lock's life (the invocation's deadline) short on real time.
    const poller = new KafkaEventSourcePoller({
      log,
      createHandler: () => handler,
      batchSize: 2,
      retryAttempts,
      functionTimeoutSeconds: 8,
      onFailure: (record) => void gaveUp.push(record),
    });

    await poller.runUntilIdle({ maxInvocations: 100 });

    expect(throttled).toBe(1);
    expect(commitsThrottled).toBe(1);
    expect(gaveUp.map((record) => record.KafkaBatchInfo.recordsInfo)).toEqual([]);
    expect((await orderState(env, 'L-1'))?.status).toBe('Paid');
    expect(await ledgerOf(env, 'L-1')).toHaveLength(1);
    expect(await notificationsOf(env, 'L-1')).toHaveLength(1);
  });
});
