/**
 * End to end on the emulators: a consumer built with the public API commits outbox items with its
 * writes; the local relay (the relay handler behind the local DynamoDB Stream event source, with
 * the construct's filter and settings) publishes them. Checked against what is stored and what
 * the destination received: written == published, each message delivered once, also after a
 * duplicate delivery of the input and after a relay invocation that times out; a message that
 * cannot be published ends in the on-failure destination, not silently.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { CreateTableCommand, DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, DeleteQueueCommand } from '@aws-sdk/client-sqs';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { createIdempotentConsumer, type IdempotentConsumerHandler } from 'idempotent-consumer';
import { lambdaEnvironment, withOverrides } from '../../packages/idempotent-consumer/src/settings/settings.js';
import {
  createOutboxRelay,
  type OutboxRelayHandler,
  type OutboxRelayRuntimeOptions,
} from '../../packages/idempotent-consumer/src/outbox/createOutboxRelay.js';
import { outboxRelaySettings } from '../../packages/idempotent-consumer/src/outbox/outboxRelaySettings.js';
import { countOutboxItems } from '../../packages/local/src/outbox/countOutboxItems.js';
import { receiveOutboxDeliveries } from '../../packages/local/src/outbox/receiveOutboxDeliveries.js';
import { type LocalRelay, startLocalRelay } from '../../packages/local/src/outbox/startLocalRelay.js';
import { lambdaContext, sqsEvent, sqsRecord } from '../support/sqsEvents.js';
import { clients, CONSUMER, crash, hook, type OutboxResources, outboxResources } from './outboxHarness.js';
import { describeUnlessDeployedStack } from '../support/testResources.js';

const describe = describeUnlessDeployedStack('an inbox table with a stream and destination queues of its own');

interface Deposit {
  readonly depositId: string;
  readonly account: string;
  readonly amount: number;
  /** Send the receipt to a destination the relay does not have. */
  readonly misrouted?: boolean;
}

const quiet = () => {
  const metrics = new Metrics({ namespace: 'OutboxTest', serviceName: CONSUMER });
  vi.spyOn(metrics, 'publishStoredMetrics').mockImplementation(() => metrics);
  return { logger: new Logger({ serviceName: CONSUMER, logLevel: 'SILENT' }), metrics };
};

describe('the local relay behind a consumer', () => {
  let env: OutboxResources;
  let accountsTable: string;
  let deadLetterQueueUrl: string;
  let consumer: IdempotentConsumerHandler;
  let relay: LocalRelay | undefined;

  // Each test has its own tables and queues: a relay reads its stream from the trim horizon.
  beforeEach(async () => {
    env = await outboxResources('local');
    accountsTable = `${env.prefix}accounts`;
    await env.dynamoDb.send(
      new CreateTableCommand({
        TableName: accountsTable,
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [{ AttributeName: 'account', KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: 'account', AttributeType: 'S' }],
      }),
    );
    deadLetterQueueUrl = (await env.sqs.send(new CreateQueueCommand({ QueueName: `${env.prefix}dlq` }))).QueueUrl!;
    const settings = withOverrides({ consumerName: CONSUMER });
    consumer = createIdempotentConsumer<Deposit>(
      {
        parse: (json) => json as Deposit,
        idempotencyKey: 'depositId',
        orderingKey: 'account',
        tables: { accounts: { partitionKey: 'account' } },
        read: (deposit) => [{ table: 'accounts', key: { account: deposit.account } }],
        decide: (deposit, state) => {
          const balance =
            (state.get<{ account: string; balance: number }>('accounts', { account: deposit.account })?.balance ?? 0) + deposit.amount;
          return {
            writes: [{ Put: { TableName: 'accounts', Item: { account: deposit.account, balance } } }],
            outbox: [
              {
                body: { type: 'Deposited', depositId: deposit.depositId, account: deposit.account, balance },
                attributes: { type: 'Deposited' },
              },
              ...(deposit.misrouted === true ? [{ body: 'receipt', destination: 'receipts' }] : []),
            ],
          };
        },
      },
      {
        environment: lambdaEnvironment(settings, {
          inboxTable: env.inboxTable,
          idempotencyTable: env.idempotencyTable,
          deadLetterQueueUrl,
          tables: { accounts: accountsTable },
        }),
        clients: { dynamoDb: env.dynamoDb, sqs: env.sqs },
        ...quiet(),
      },
    );
  });
  afterEach(async () => {
    await relay?.stop();
    relay = undefined;
    await Promise.allSettled([
      env.dynamoDb.send(new DeleteTableCommand({ TableName: accountsTable })),
      env.sqs.send(new DeleteQueueCommand({ QueueUrl: deadLetterQueueUrl })),
    ]);
    await env.dispose();
  });

  const deposits = (prefix: string, count: number, extra: Partial<Deposit> = {}) =>
    Array.from({ length: count }, (_, i) => ({ depositId: `${prefix}-${i}`, account: `acct-${i % 3}`, amount: 10 + i, ...extra }));
  const deliver = (batch: readonly Deposit[], attempt = 1) =>
    consumer(
      sqsEvent(...batch.map((deposit) => sqsRecord(`m-${deposit.depositId}-${attempt}`, { ...deposit }))),
      lambdaContext(),
    ) as Promise<unknown>;

  /** Starts the local relay on the test's tables, FIFO queue as the default destination. */
  function start(options: { relay?: OutboxRelayHandler; timeoutSeconds?: number; retryAttempts?: number } = {}) {
    const { metrics, logger } = quiet();
    return startLocalRelay({
      dynamoDb: env.dynamoDb,
      streams: env.streams,
      consumerName: CONSUMER,
      inboxTableName: env.inboxTable,
      idempotencyTableName: env.idempotencyTable,
      destinations: { default: env.fifoQueueUrl },
      clients: { sqs: env.sqs, sns: env.sns },
      settings: outboxRelaySettings({
        batchSize: 10,
        timeoutSeconds: options.timeoutSeconds ?? 30,
        retryAttempts: options.retryAttempts ?? 10,
      }),
      logger,
      metrics,
      ...(options.relay === undefined ? {} : { relay: options.relay }),
    });
  }

  it('publishes every committed outbox item once: written == published, each delivered once, a duplicate input adds nothing', async () => {
    relay = await start();
    const batch = deposits('d', 6);
    expect(await deliver(batch)).toEqual({ batchItemFailures: [] });
    expect(await deliver(batch, 2)).toEqual({ batchItemFailures: [] }); // SQS delivered the batch again: duplicates
    await relay.drain();

    expect(await countOutboxItems(env.dynamoDb, env.inboxTable, CONSUMER)).toEqual({ written: 6, published: 6 });
    expect(relay.published()).toBe(6);
    const deliveries = await receiveOutboxDeliveries(env.sqs, env.fifoQueueUrl);
    expect(deliveries.delivered).toBe(6);
    expect([...deliveries.byMessageId.values()]).toEqual([1, 1, 1, 1, 1, 1]);
    const bodies = deliveries.messages.map((message) => JSON.parse(message.Body!) as { depositId: string; balance: number });
    expect(bodies.map((body) => body.depositId).sort()).toEqual(batch.map((deposit) => deposit.depositId).sort());
    expect(bodies.find((body) => body.depositId === 'd-3')?.balance).toBe(10 + 13); // acct-0: d-0 then d-3
    expect(relay.gaveUp()).toEqual([]);
  });

  it('retries a relay invocation that timed out in a new environment: each message still delivered once', async () => {
    let environments = 0;
    let hung = false;
    const base = createOutboxRelay();
    const crashing = ((event, context) => base(event, context)) as OutboxRelayHandler;
    Object.defineProperty(crashing, 'withRuntime', {
      value: (runtime: OutboxRelayRuntimeOptions) => {
        environments += 1;
        if (environments > 1) return createOutboxRelay({}, runtime);
        // The first environment hangs right after its first send (before Powertools records it).
        const { dynamoDb } = clients();
        let updates = 0;
        hook(dynamoDb as DynamoDBClient, async (phase, command, input) => {
          if (
            phase === 'before' &&
            command === 'UpdateItemCommand' &&
            JSON.stringify(input).includes(env.idempotencyTable) &&
            ++updates === 1
          ) {
            hung = true;
            await crash();
          }
        });
        return createOutboxRelay({}, { ...runtime, clients: { ...runtime.clients, dynamoDb } });
      },
    });
    relay = await start({ relay: crashing, timeoutSeconds: 2 });
    expect(await deliver(deposits('t', 4))).toEqual({ batchItemFailures: [] });
    await relay.drain({ timeoutMs: 120_000 });

    expect(hung).toBe(true);
    expect(environments).toBe(2);
    expect(relay.poller.invocations).toBeGreaterThanOrEqual(2);
    const after = await countOutboxItems(env.dynamoDb, env.inboxTable, CONSUMER);
    expect(after).toEqual({ written: 4, published: 4 });
    const deliveries = await receiveOutboxDeliveries(env.sqs, env.fifoQueueUrl);
    expect(deliveries.delivered).toBe(4);
    expect([...deliveries.byMessageId.values()]).toEqual([1, 1, 1, 1]);
  });

  it('gives up a message it can never publish after its retries: the on-failure destination gets it, the good ones are published', async () => {
    relay = await start({ retryAttempts: 2 });
    expect(await deliver([...deposits('p', 1, { misrouted: true }), ...deposits('q', 2)])).toEqual({ batchItemFailures: [] });
    await relay.drain({ timeoutMs: 120_000 });

    const after = await countOutboxItems(env.dynamoDb, env.inboxTable, CONSUMER);
    expect(after).toEqual({ written: 4, published: 3 }); // p-0 (two messages), q-0, q-1; all but the misrouted receipt
    const gaveUp = relay.gaveUp();
    expect(gaveUp).toHaveLength(1);
    expect(gaveUp[0]?.requestContext).toMatchObject({ condition: 'RetryAttemptsExhausted', approximateInvokeCount: 3 });
    expect(gaveUp[0]?.DDBStreamBatchInfo.streamArn).toBe(relay.streamArn);
    expect((await receiveOutboxDeliveries(env.sqs, env.fifoQueueUrl)).delivered).toBe(3);
  });
});
