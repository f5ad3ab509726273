/**
 * The built-in destinations against the SQS/SNS server: deduplication by message id on FIFO
 * destinations, none on a standard queue, the attributes every message carries, the FIFO group
 * rule; the lazy client; the attribute rules.
 */
import type { PublishCommand, SNSClient } from '@aws-sdk/client-sns';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  fifoMessageGroupId,
  MAX_OUTGOING_ATTRIBUTES,
  MESSAGE_ID_ATTRIBUTE,
  messageAttributes,
  OutboxMessageError,
  type OutboxMessage,
} from '../../packages/idempotent-consumer/src/outbox/OutboxDestination.js';
import { outboxMessageId } from '../../packages/idempotent-consumer/src/outbox/outboxItems.js';
import { snsTopicDestination } from '../../packages/idempotent-consumer/src/outbox/snsTopicDestination.js';
import { sqsQueueDestination } from '../../packages/idempotent-consumer/src/outbox/sqsQueueDestination.js';
import { receiveOutboxDeliveries } from '../../packages/local/src/outbox/receiveOutboxDeliveries.js';
import { CONSUMER, type OutboxResources, outboxResources } from './outboxHarness.js';
import { describeUnlessDeployedStack } from '../support/testResources.js';

const describe = describeUnlessDeployedStack('an inbox table with a stream and destination queues of its own');

const message = (key: string, overrides: Partial<OutboxMessage> = {}): OutboxMessage => ({
  messageId: outboxMessageId(CONSUMER, key, 0),
  consumer: CONSUMER,
  idempotencyKey: key,
  position: 0,
  destination: 'default',
  messageGroupId: 'group-1',
  body: JSON.stringify({ type: 'Something', key }),
  attributes: { type: 'Something' },
  createdAt: new Date().toISOString(),
  ...overrides,
});

describe('built-in destinations on the SQS/SNS server', () => {
  let env: OutboxResources;
  beforeAll(async () => {
    env = await outboxResources('dest');
  });
  afterAll(() => env.dispose());

  it('a FIFO queue receives a message published twice once, with its attributes, group and deduplication id', async () => {
    const destination = sqsQueueDestination({ queueUrl: env.fifoQueueUrl, client: env.sqs });
    const sent = message('k-1');
    const first = await destination.publish(sent);
    await destination.publish(sent);
    const deliveries = await receiveOutboxDeliveries(env.sqs, env.fifoQueueUrl);
    expect(deliveries.delivered).toBe(1);
    expect(first.destinationMessageId).toEqual(expect.any(String));
    const [received] = deliveries.messages;
    expect(received?.Body).toBe(sent.body);
    expect(received?.MessageAttributes?.[MESSAGE_ID_ATTRIBUTE]?.StringValue).toBe(sent.messageId);
    expect(received?.MessageAttributes?.['type']?.StringValue).toBe('Something');
  });

  it('a FIFO topic delivers a message published twice once to its FIFO subscriber', async () => {
    const destination = snsTopicDestination({ topicArn: env.fifoTopicArn, client: env.sns });
    const sent = message('k-2');
    await destination.publish(sent);
    await destination.publish(sent);
    const deliveries = await receiveOutboxDeliveries(env.sqs, env.fifoTopicSubscriberUrl);
    expect([...deliveries.byMessageId]).toEqual([[sent.messageId, 1]]);
    expect(deliveries.messages[0]?.Body).toBe(sent.body);
  });

  it('a standard queue has no deduplication: a second publish is a second delivery with the same outboxMessageId', async () => {
    const destination = sqsQueueDestination({ queueUrl: env.standardQueueUrl, client: env.sqs });
    const sent = message('k-3');
    await destination.publish(sent);
    await destination.publish(sent);
    const deliveries = await receiveOutboxDeliveries(env.sqs, env.standardQueueUrl);
    expect([...deliveries.byMessageId]).toEqual([[sent.messageId, 2]]);
  });

  it('a group that FIFO SQS refuses (spaces, non-ASCII, too long) is sent as a stable sha256 group', async () => {
    expect(fifoMessageGroupId('O-1')).toBe('O-1');
    const odd = 'Café au lait #1';
    expect(fifoMessageGroupId(odd)).toMatch(/^sha256-[0-9a-f]{64}$/);
    expect(fifoMessageGroupId(odd)).toBe(fifoMessageGroupId(odd));
    expect(fifoMessageGroupId('x'.repeat(129))).toMatch(/^sha256-/);
    const destination = sqsQueueDestination({ queueUrl: env.fifoQueueUrl, client: env.sqs });
    await destination.publish(message('k-4', { messageGroupId: odd }));
    const deliveries = await receiveOutboxDeliveries(env.sqs, env.fifoQueueUrl);
    expect(deliveries.delivered).toBe(1);
  });

  it('creates its client at the first publish, once', async () => {
    let created = 0;
    const destination = snsTopicDestination({
      topicArn: env.fifoTopicArn,
      client: () => {
        created += 1;
        return env.sns;
      },
    });
    expect(created).toBe(0);
    await destination.publish(message('k-5'));
    await destination.publish(message('k-6'));
    expect(created).toBe(1);
    await receiveOutboxDeliveries(env.sqs, env.fifoTopicSubscriberUrl);
  });

  it('sends no group or deduplication id to a standard topic', async () => {
    const sent: Record<string, unknown>[] = [];
    const recording = {
      send: async (command: PublishCommand) => (sent.push(command.input as unknown as Record<string, unknown>), { MessageId: 'm' }),
    } as unknown as SNSClient;
    await snsTopicDestination({ topicArn: 'arn:aws:sns:us-east-1:123456789012:plain', client: recording }).publish(message('k-7'));
    expect(sent).toHaveLength(1);
    expect(sent[0]).not.toHaveProperty('MessageGroupId');
    expect(sent[0]).not.toHaveProperty('MessageDeduplicationId');
    expect(sent[0]?.['TopicArn']).toBe('arn:aws:sns:us-east-1:123456789012:plain');
  });
});

describe('message attributes', () => {
  it('adds outboxMessageId beside the decision’s string attributes', () => {
    const sent = message('a-1', { attributes: { type: 'T', tenant: 'x' } });
    expect(messageAttributes(sent)).toEqual({
      type: { DataType: 'String', StringValue: 'T' },
      tenant: { DataType: 'String', StringValue: 'x' },
      [MESSAGE_ID_ATTRIBUTE]: { DataType: 'String', StringValue: sent.messageId },
    });
  });

  it('refuses a message that sets outboxMessageId itself', () => {
    expect(() => messageAttributes(message('a-2', { attributes: { [MESSAGE_ID_ATTRIBUTE]: 'forged' } }))).toThrow(OutboxMessageError);
  });

  it(`refuses more than ${MAX_OUTGOING_ATTRIBUTES} attributes (SNS and SQS carry 10)`, () => {
    const attributes = Object.fromEntries(Array.from({ length: MAX_OUTGOING_ATTRIBUTES + 1 }, (_, i) => [`a${i}`, 'v']));
    expect(() => messageAttributes(message('a-3', { attributes }))).toThrow(/at most 9/);
    const fits = Object.fromEntries(Array.from({ length: MAX_OUTGOING_ATTRIBUTES }, (_, i) => [`a${i}`, 'v']));
    expect(Object.keys(messageAttributes(message('a-4', { attributes: fits })))).toHaveLength(10);
  });
});
