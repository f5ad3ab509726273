/**
 * A local run from a synthesized stack (`local --app`) with a Kinesis Data Streams or DynamoDB
 * Streams source: the template's stream mapping is recognized, named, and reported as not yet run
 * locally from a template; the rest of the plan is what it was.
 */
import { describe, expect, it } from 'vitest';
import { AttributeType, StreamViewType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { Stream } from 'aws-cdk-lib/aws-kinesis';
import { notRunFromTemplate, planStackRun, templateDifferences } from '../../packages/local/src/app/stackPlan.js';
import { type CfnTemplate, readStackTemplate } from '../../packages/local/src/app/stackTemplate.js';
import { refOf, synthConsumer } from './stackHelpers.js';

describe('local --app with a stream source', () => {
  it('recognizes the Kinesis mapping of a stream of the stack, and says it is not yet run locally from a template', () => {
    const { template, consumer } = synthConsumer({ props: { kinesis: {} } });
    const model = readStackTemplate(template.toJSON() as CfnTemplate, 'Generic');

    const plan = planStackRun(model);

    expect(plan.sqs).toBeDefined();
    expect(plan.kafka).toBeUndefined();
    expect(plan.relay).toBeUndefined();
    expect(plan.stream?.mapping.source).toEqual({
      kind: 'kinesis',
      streamId: Object.keys(template.findResources('AWS::Kinesis::Stream'))[0],
      streamArn: undefined,
    });
    expect(plan.stream?.mapping).toMatchObject({ reportBatchItemFailures: true, bisectBatchOnError: false, retryAttempts: 504 });
    expect(notRunFromTemplate(plan)).toEqual([
      `${plan.consumer.path}: its Kinesis Data Streams event source mapping ${plan.stream?.mapping.path} is not yet run locally ` +
        'from a template; the local run drives its SQS or Kafka source only',
    ]);
    expect(plan.consumer.id).toBe(refOf(consumer.function).Ref);
    // The SQS run is what it was.
    expect(templateDifferences(plan, {})).toEqual([]);
    expect(templateDifferences(plan, { source: 'kinesis' })).toEqual([
      expect.objectContaining({
        setting: 'the event source',
        local: '--source kinesis',
        template: expect.stringMatching(/not yet run locally from a template/),
      }),
    ]);
  });

  it('recognizes a mapping on a stream made elsewhere by its ARN', () => {
    const arn = 'arn:aws:kinesis:us-east-1:123456789012:stream/orders';
    const { template } = synthConsumer({ extra: (stack) => ({ kinesis: { stream: Stream.fromStreamArn(stack, 'Given', arn) } }) });

    const plan = planStackRun(readStackTemplate(template.toJSON() as CfnTemplate, 'Generic'));

    expect(plan.stream?.mapping.source).toEqual({ kind: 'kinesis', streamId: undefined, streamArn: arn });
  });

  it("tells a DynamoDB Streams source (a business table's stream) from the outbox relay's (the inbox's)", () => {
    const { template } = synthConsumer({
      props: { outbox: { destination: { create: 'queue' } } },
      extra: (stack) => ({
        dynamoDbStream: {
          table: new Table(stack, 'Orders', { partitionKey: { name: 'id', type: AttributeType.STRING }, stream: StreamViewType.NEW_IMAGE }),
        },
      }),
    });

    const plan = planStackRun(readStackTemplate(template.toJSON() as CfnTemplate, 'Generic'));

    expect(plan.relay).toBeDefined();
    expect(plan.stream?.mapping.source.kind).toBe('dynamodb-stream');
    expect(plan.stream?.mapping.source).not.toEqual(plan.relay?.mapping.source);
    expect(notRunFromTemplate(plan)[0]).toMatch(/its DynamoDB Streams event source mapping .* is not yet run locally from a template/);
    expect(templateDifferences(plan, { source: 'kinesis' })).toEqual([
      expect.objectContaining({ template: expect.stringMatching(/^no kinesis event source mapping for /) }),
    ]);
  });

  it('has nothing to say of a stack without a stream source', () => {
    const { template } = synthConsumer();
    const plan = planStackRun(readStackTemplate(template.toJSON() as CfnTemplate, 'Generic'));
    expect(plan.stream).toBeUndefined();
    expect(notRunFromTemplate(plan)).toEqual([]);
  });
});
