/**
 * The deployed café stack end to end, when the run targets one (`IC_OUTPUTS_FILE=cdk-outputs.json`
 * after `cdk deploy` or `cdklocal deploy --outputs-file cdk-outputs.json`, with
 * `AWS_ENDPOINT_URL` for LocalStack): a message sent to the stack's source queue is applied by
 * the deployed function (its event source mapping, not a local one), and a poison message ends
 * in the stack's dead-letter queue with its reason. Ids are this run's own, so the test runs on a
 * shared stack, again and again. Without a deployed stack it is skipped (nothing consumes a
 * locally provisioned queue).
 */
import { randomUUID } from 'node:crypto';
import { type Message, ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cafeResources, orderState } from '../support/cafeHarness.js';
import { deadLetterAttribute } from '../support/deadLetterAttributes.js';
import { body } from '../support/sqsEvents.js';
import { deployedStack, type TestResources } from '../support/testResources.js';
import { waitFor } from '../support/waitFor.js';

const deployed = deployedStack() !== undefined;
// Skipped (with its reason in the run's output) unless IC_OUTPUTS_FILE names a deployed stack:
// this file drives the deployed function itself, which no emulator here stands in for.
if (!deployed)
  /* skipped: needs a deployed stack, which no emulator stands in for */ it.skip('needs a deployed stack: IC_OUTPUTS_FILE=cdk-outputs.json (see docs/deploy.md)', () =>
    undefined);

describe.runIf(deployed)('the deployed café stack (IC_OUTPUTS_FILE)', () => {
  let env: TestResources;
  const run = randomUUID().slice(0, 8);
  beforeAll(async () => {
    env = await cafeResources('deployed');
  });
  afterAll(() => env?.dispose());

  it('applies an order sent to its source queue with the deployed function', async () => {
    const orderId = `O-${run}`;
    const send = (message: Record<string, unknown>): Promise<unknown> =>
      env.sqs.send(
        new SendMessageCommand({
          QueueUrl: env.resources.queueUrl,
          MessageBody: JSON.stringify(message),
          ...(env.settings.queue.fifo ? { MessageGroupId: orderId, MessageDeduplicationId: String(message.eventId) } : {}),
        }),
      );

    await send(body.placed(`${orderId}-placed`, orderId));
    await send(body.paid(`${orderId}-paid`, orderId, 10));

    const order = await waitFor(
      async () => {
        const state = await orderState(env, orderId);
        return state?.status === 'Paid' ? state : undefined;
      },
      { timeoutMs: 180_000, what: `order ${orderId} paid by the deployed function` },
    );
    expect(order.pointsAwarded).toBe(10);
  }, 240_000);

  it('dead-letters a poison message with its reason, body unchanged', async () => {
    const poison = `{"eventId":"poison-${run}","type":"OrderTeleported","orderId":"O-${run}-x"}`;
    await env.sqs.send(
      new SendMessageCommand({
        QueueUrl: env.resources.queueUrl,
        MessageBody: poison,
        ...(env.settings.queue.fifo ? { MessageGroupId: `O-${run}-x`, MessageDeduplicationId: `poison-${run}` } : {}),
      }),
    );

    const dead = await waitFor(
      async () => {
        const { Messages = [] } = await env.sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: env.resources.deadLetterQueueUrl,
            MaxNumberOfMessages: 10,
            WaitTimeSeconds: 5,
            VisibilityTimeout: 2,
            MessageAttributeNames: ['All'],
          }),
        );
        return Messages.find((m: Message) => m.Body === poison);
      },
      { timeoutMs: 180_000, what: 'the poison message in the dead-letter queue' },
    );
    expect(deadLetterAttribute(dead, 'failureReason')).toBe('UnknownMessageType');
  }, 240_000);
});
