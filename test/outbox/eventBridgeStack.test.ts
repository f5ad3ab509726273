/**
 * A stack whose outbox relay publishes to an event bus, run locally from its template: the local run
 * reads the `AWS::Events::EventBus`, creates it in the local EventBridge under the template's name,
 * and resolves the relay's destination variable to the local bus ARN, which the relay reads as its
 * EventBridge destination. Without a local EventBridge the bus is refused, not skipped.
 */
import { App, type CfnElement, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AttributeType, BillingMode, StreamViewType, Table } from 'aws-cdk-lib/aws-dynamodb';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SNSClient } from '@aws-sdk/client-sns';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDestinationTarget } from '../../packages/idempotent-consumer/src/outbox/outboxRelayConfig.js';
import { OutboxRelay } from '../../packages/cdk/src/OutboxRelay.js';
import { type LocalEventBridge, startEventBridgeServer } from '../../packages/local/src/aws/eventBridgeServer.js';
import { localAccountId, provisionStack } from '../../packages/local/src/app/provisionStack.js';
import { type CfnTemplate, readStackTemplate, resolveValue } from '../../packages/local/src/app/stackTemplate.js';
import { ProvisioningError } from '../../packages/local/src/errors.js';

describe('an outbox event bus in a local run from the template', () => {
  let eventBridge: LocalEventBridge;
  let template: CfnTemplate;
  let busId: string;
  beforeAll(async () => {
    eventBridge = await startEventBridgeServer();
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new Stack(app, 'Shop', { env: { account: '123456789012', region: 'eu-west-1' } });
    const table = (id: string, stream?: StreamViewType) =>
      new Table(stack, id, {
        partitionKey: { name: 'pk', type: AttributeType.STRING },
        billingMode: BillingMode.PAY_PER_REQUEST,
        ...(stream === undefined ? {} : { stream }),
      });
    const relay = new OutboxRelay(stack, 'OutboxRelay', {
      consumerName: 'shop',
      inboxTable: table('Inbox', StreamViewType.NEW_IMAGE),
      idempotencyTable: table('Idempotency'),
      destination: { create: 'eventBus' },
    });
    busId = stack.getLogicalId(relay.destinations['default']!.node.defaultChild as CfnElement);
    template = Template.fromStack(stack).toJSON() as CfnTemplate;
  });
  afterAll(() => eventBridge.stop());

  // Only the bus is created (`only`): these clients are never called.
  const clients = { dynamoDb: {} as DynamoDBClient, sqs: {} as SQSClient, sns: {} as SNSClient };

  it("creates the bus under the template's name and resolves the relay's destination to its local ARN", async () => {
    const model = readStackTemplate(template, 'Shop');
    const bus = model.eventBuses.get(busId)!;
    expect(bus.name).toEqual(expect.any(String));
    const values = await provisionStack(model, { ...clients, eventBridge, prefix: 'run1-', only: new Set([busId]) });
    const local = values.get(busId)!;
    expect(local).toEqual({
      ref: `run1-${bus.name}`,
      attributes: { Arn: eventBridge.eventBusArn(`run1-${bus.name}`), Name: `run1-${bus.name}` },
    });
    expect(eventBridge.events(local.ref)).toEqual([]); // the bus exists

    const relayFunction = [...model.functions.values()].find((fn) => 'OUTBOX_DESTINATION_DEFAULT' in fn.environment)!;
    const target = resolveValue(
      relayFunction.environment.OUTBOX_DESTINATION_DEFAULT,
      { stackName: 'Shop', region: eventBridge.region, accountId: localAccountId, resources: values, types: model.types },
      'OUTBOX_DESTINATION_DEFAULT',
    );
    expect(target).toBe(local.attributes.Arn);
    expect(parseDestinationTarget(target as string)).toEqual({ kind: 'eventBridge', eventBusArn: local.attributes.Arn });
  });

  it('refuses a stack with an event bus when no local EventBridge is given', async () => {
    const model = readStackTemplate(template, 'Shop');
    await expect(provisionStack(model, { ...clients, only: new Set([busId]) })).rejects.toThrow(ProvisioningError);
  });
});
