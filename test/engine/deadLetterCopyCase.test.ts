/**
 * Field case C27 with its expected values: the inventory example (`examples/inventory`) on a
 * FIFO queue, against the real DynamoDB Local and SQS server. A producer copy of a
 * dead-lettered event (new message id, same idempotency key, same body) is acknowledged as a
 * duplicate of the dead letter; a redrive of the dead letter (recognised by its `ic.redrive`
 * message attribute, the dead letter's original message id, which `dlq redrive` adds) is the one
 * way to apply it, once.
 */
import type { SQSRecord } from 'aws-lambda';
import { afterAll, expect, it } from 'vitest';
import { redriveDeadLetters } from '../../packages/cli/src/dlq/redrive.js';
import { inventoryConsumerOptions } from '../../examples/inventory/consumer.js';
import { inventoryTables } from '../../examples/inventory/settings.js';
import { deadLetters } from '../support/cafeHarness.js';
import {
  consumerEnvironment,
  type ExecutionEnvironment,
  inboxRowOf,
  outboxItems,
  outcomeList,
  recordFromMessage,
  sourceRecord,
  storedItem,
} from '../support/consumerHarness.js';
import { deadLetterAttribute } from '../support/deadLetterAttributes.js';
import { receiveAll } from '../support/sqsMessages.js';
import { lambdaContext, sqsEvent } from '../support/sqsEvents.js';
import { describeUnlessDeployedStack, type TestResources, testResources } from '../support/testResources.js';

const describe = describeUnlessDeployedStack(
  "the inventory consumer's tables on a FIFO queue, and assertions over its whole outbox and DLQ: a deployed stack has the café's",
);

/** The SQS message attribute that marks a redrive of a dead letter; its value is the dead letter's original message id. */
const REDRIVE_ATTRIBUTE = 'ic.redrive';
const SKU = 'SKU-1';
const at = '2026-03-01T10:00:00Z';
const bodies = {
  m0: { requestId: 'r-0', kind: 'StockReceived', sku: SKU, quantity: 2, at },
  m1: { requestId: 'r-1', kind: 'ReservationRequested', sku: SKU, reservationId: 'res-1', quantity: 5, at },
  m2: { requestId: 'r-2', kind: 'StockReceived', sku: SKU, quantity: 10, at },
};
/** m-3: a producer retry of m-1, the same body byte for byte. */
const m1Body = JSON.stringify(bodies.m1);

type Layout = 'one batch [m-1, m-2, m-3]' | 'three batches in order, m-3 in another execution environment';
type Scenario = { readonly env: TestResources; readonly first: ExecutionEnvironment; readonly second: ExecutionEnvironment };

describe('case C27: a copy of a dead-lettered event is not applied later', () => {
  const envs: TestResources[] = [];
  afterAll(() => Promise.all(envs.map((env) => env.dispose())));

  const record = (
    env: TestResources,
    messageId: string,
    body: string | Record<string, unknown>,
    options: { receiveCount?: number; stringAttributes?: Record<string, string> } = {},
  ): SQSRecord => sourceRecord(env, messageId, body, { groupId: SKU, ...options });
  const stock = (env: TestResources) => storedItem<{ sku: string; available: number; reserved: number }>(env, 'stock', { sku: SKU });
  const confirmations = async (env: TestResources) =>
    (await outboxItems(env)).filter((item) => String(item.body).includes('ReservationConfirmed'));

  /**
   * Arrange and act: 2 in stock (m-0), then m-1 reserve r-1 ×5 (OutOfStock), m-2 receive 10, m-3
   * the producer's copy of m-1, in `layout`; returns the resources and the two environments.
   */
  async function scenario(name: string, layout: Layout): Promise<Scenario> {
    const env = await testResources(name, inventoryTables, { consumerName: 'inventory-reservations', queue: { fifo: true } });
    envs.push(env);
    const first = consumerEnvironment(env, inventoryConsumerOptions);
    const second = consumerEnvironment(env, inventoryConsumerOptions);
    expect(await first.handler(sqsEvent(record(env, 'm-0', bodies.m0)), lambdaContext())).toEqual({ batchItemFailures: [] });
    first.outcomes.length = 0;
    if (layout === 'one batch [m-1, m-2, m-3]') {
      expect(
        await first.handler(
          sqsEvent(record(env, 'm-1', m1Body), record(env, 'm-2', bodies.m2), record(env, 'm-3', m1Body)),
          lambdaContext(),
        ),
      ).toEqual({ batchItemFailures: [] });
    } else {
      expect(await first.handler(sqsEvent(record(env, 'm-1', m1Body)), lambdaContext())).toEqual({ batchItemFailures: [] });
      expect(await first.handler(sqsEvent(record(env, 'm-2', bodies.m2)), lambdaContext())).toEqual({ batchItemFailures: [] });
      expect(await second.handler(sqsEvent(record(env, 'm-3', m1Body)), lambdaContext())).toEqual({ batchItemFailures: [] });
    }
    return { env, first, second };
  }

  it.each<Layout>(['one batch [m-1, m-2, m-3]', 'three batches in order, m-3 in another execution environment'])(
    '%s: r-1 is not applied (12 available, 0 reserved, no ReservationConfirmed); m-3 is a duplicate of the dead letter',
    async (layout) => {
      // Arrange and act
      const { env, first, second } = await scenario(layout.startsWith('one') ? 'c27-batch' : 'c27-apart', layout);

      // Assert: what is stored.
      expect(await stock(env)).toMatchObject({ available: 12, reserved: 0 });
      expect(await storedItem(env, 'reservations', { reservationId: 'res-1' })).toBeUndefined();
      expect(await confirmations(env)).toEqual([]);
      expect(await inboxRowOf(env, 'r-1')).toMatchObject({ status: 'dead-lettered', reason: 'OutOfStock' });
      // The outcomes: m-3 acknowledged as a duplicate, neither applied nor dead-lettered again.
      expect(outcomeList([...first.outcomes, ...second.outcomes])).toEqual(['m-1:dead-lettered', 'm-2:applied', 'm-3:duplicate']);
      // The DLQ: m-1 alone, with its reason and its body byte for byte.
      const dlq = await deadLetters(env);
      expect(dlq).toHaveLength(1);
      expect(dlq[0]?.Body).toBe(m1Body);
      expect(deadLetterAttribute(dlq[0], 'failureReason')).toBe('OutOfStock');
      expect(deadLetterAttribute(dlq[0], 'originalMessageId')).toBe('m-1');
    },
  );

  it('a redrive of m-1 (ic.redrive = its original message id) applies r-1 once; its redelivery and another producer copy are duplicates', async () => {
    // Arrange
    const { env, second } = await scenario('c27-redrive', 'three batches in order, m-3 in another execution environment');
    const [dead] = await deadLetters(env);
    const originalMessageId = deadLetterAttribute(dead, 'originalMessageId') ?? '';
    expect(originalMessageId).toBe('m-1');
    second.outcomes.length = 0;

    // Act: the redrive (a new message id, the dead letter's body, the attribute), then its redelivery, then one more producer copy.
    const redriven = (receiveCount: number) =>
      record(env, 'm-1-redriven', dead?.Body ?? '', { receiveCount, stringAttributes: { [REDRIVE_ATTRIBUTE]: originalMessageId } });
    const responses = [
      await second.handler(sqsEvent(redriven(1)), lambdaContext()),
      await second.handler(sqsEvent(redriven(2)), lambdaContext()),
      await second.handler(sqsEvent(record(env, 'm-4', m1Body)), lambdaContext()),
    ];

    // Assert: r-1 applied once.
    expect(responses).toEqual([{ batchItemFailures: [] }, { batchItemFailures: [] }, { batchItemFailures: [] }]);
    expect(outcomeList(second.outcomes)).toEqual(['m-1-redriven:applied', 'm-1-redriven:duplicate', 'm-4:duplicate']);
    expect(await stock(env)).toMatchObject({ available: 7, reserved: 5 });
    expect(await storedItem(env, 'reservations', { reservationId: 'res-1' })).toMatchObject({ sku: SKU, quantity: 5, status: 'held' });
    expect(await inboxRowOf(env, 'r-1')).toMatchObject({ status: 'applied', messageId: 'm-1-redriven' });
    const confirmed = await confirmations(env);
    expect(confirmed).toHaveLength(1);
    expect(JSON.parse(String(confirmed[0]?.body))).toMatchObject({ type: 'ReservationConfirmed', reservationId: 'res-1', quantity: 5 });
    expect(await deadLetters(env)).toEqual([]);
  });

  it('a copy whose ic.redrive names another message than the dead letter is still a duplicate', async () => {
    // Arrange
    const { env, second } = await scenario('c27-forged', 'three batches in order, m-3 in another execution environment');
    second.outcomes.length = 0;

    // Act: m-3's id (the producer's copy) is not the dead letter's original message id.
    const response = await second.handler(
      sqsEvent(record(env, 'm-5', m1Body, { stringAttributes: { [REDRIVE_ATTRIBUTE]: 'm-3' } })),
      lambdaContext(),
    );

    // Assert
    expect(response).toEqual({ batchItemFailures: [] });
    expect(outcomeList(second.outcomes)).toEqual(['m-5:duplicate']);
    expect(await stock(env)).toMatchObject({ available: 12, reserved: 0 });
    expect(await confirmations(env)).toEqual([]);
  });

  it('`dlq redrive` puts m-1 back on its queue with ic.redrive, and the consumer applies r-1 once', async () => {
    // Arrange
    const { env, first } = await scenario('c27-cli', 'one batch [m-1, m-2, m-3]');
    first.outcomes.length = 0;

    // Act 1: the command line's redrive (receive → send → delete), then what Lambda would receive from the source queue.
    const result = await redriveDeadLetters(
      { sqs: env.sqs },
      { queueUrl: env.resources.deadLetterQueueUrl, yes: true, waitTimeSeconds: 0, visibilityTimeoutSeconds: 30 },
    );
    const received = await receiveAll(env.sqs, env.resources.queueUrl, 0);

    // Assert 1: m-1 moved, with its body and the redrive attribute naming it.
    expect(result.moved.map((item) => item.reason)).toEqual(['OutOfStock']);
    expect(received.map((message) => message.Body)).toEqual([m1Body]);
    expect(received[0]?.MessageAttributes?.[REDRIVE_ATTRIBUTE]?.StringValue).toBe('m-1');

    // Act 2: the consumer gets the redriven message, then the same message again.
    const redriven = recordFromMessage(received[0]!, env.resources.queueArn);
    const responses = [
      await first.handler(sqsEvent(redriven), lambdaContext()),
      await first.handler(sqsEvent({ ...redriven, attributes: { ...redriven.attributes, ApproximateReceiveCount: '2' } }), lambdaContext()),
    ];

    // Assert 2: applied once.
    expect(responses).toEqual([{ batchItemFailures: [] }, { batchItemFailures: [] }]);
    expect(first.outcomes.map((o) => o.outcome)).toEqual(['applied', 'duplicate']);
    expect(await stock(env)).toMatchObject({ available: 7, reserved: 5 });
    expect(await confirmations(env)).toHaveLength(1);
    expect(await deadLetters(env)).toEqual([]);
  });
});
