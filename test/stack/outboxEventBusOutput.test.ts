/**
 * A consumer whose outbox relay publishes to EventBridge says so in its stack outputs, as one
 * publishing to a topic or a queue does (`OutboxEventBusArn`; `outputs --shell` prints it as
 * `OUTBOX_EVENT_BUS_ARN`).
 */
import { describe, expect, it } from 'vitest';
import { shellVariables } from '../../packages/cli/src/stackOutputs.js';
import { consumerOutputKeys } from '../../packages/idempotent-consumer/src/settings/outputKeys.js';
import { synthConsumer } from './stackHelpers.js';

describe('the outputs of a consumer publishing to EventBridge', () => {
  it('outputs the bus ARN, and no topic or queue', () => {
    const { template } = synthConsumer({
      props: { outbox: { destination: { create: 'eventBus' } } },
      after: (_stack, consumer) => void consumer.addOutputs(),
    });
    const outputs = template.toJSON().Outputs as Record<string, { Value: unknown; Description?: string }>;
    const keys = Object.keys(outputs);
    expect(keys).toContain(consumerOutputKeys.outboxEventBusArn);
    expect(keys).not.toContain(consumerOutputKeys.outboxTopicArn);
    expect(keys).not.toContain(consumerOutputKeys.outboxQueueUrl);
    const bus = Object.keys(template.findResources('AWS::Events::EventBus'));
    expect(bus).toHaveLength(1);
    expect(outputs[consumerOutputKeys.outboxEventBusArn]!.Value).toEqual({ 'Fn::GetAtt': [bus[0], 'Arn'] });
    expect(shellVariables.outboxEventBusArn).toBe('OUTBOX_EVENT_BUS_ARN');
  });
});
