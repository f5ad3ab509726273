import { describe, expect, it } from 'vitest';
import type { FilterPattern } from '../../packages/idempotent-consumer/src/settings/filterCriteria.js';
import { withOverrides } from '../../packages/idempotent-consumer/src/settings/settings.js';
import { planStackRun, templateDifferences } from '../../packages/local/src/app/stackPlan.js';
import { type CfnTemplate, readStackTemplate } from '../../packages/local/src/app/stackTemplate.js';

const path = (p: string) => ({ 'aws:cdk:path': `Shop/${p}/Resource` });
const paid: FilterPattern = { body: { type: ['OrderPaid'], region: [{ prefix: 'eu-' }] } };

/** A consumer on an SQS queue, its mapping with `mapping` properties added (as the construct writes them). */
function template(mapping: Record<string, unknown>): CfnTemplate {
  return {
    Resources: {
      Inbox: {
        Type: 'AWS::DynamoDB::Table',
        Properties: {
          AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
          KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        },
        Metadata: path('Consumer/Inbox'),
      },
      DeadLetterQueue: { Type: 'AWS::SQS::Queue', Properties: {}, Metadata: path('Consumer/DeadLetterQueue') },
      Queue: {
        Type: 'AWS::SQS::Queue',
        Properties: {
          VisibilityTimeout: 180,
          RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': ['DeadLetterQueue', 'Arn'] }, maxReceiveCount: 10 },
        },
        Metadata: path('Consumer/Queue'),
      },
      Function: {
        Type: 'AWS::Lambda::Function',
        Properties: {
          Handler: 'index.handler',
          Timeout: 30,
          MemorySize: 1024,
          Environment: { Variables: { CONSUMER_NAME: 'shop', INBOX_TABLE_NAME: { Ref: 'Inbox' } } },
        },
        Metadata: path('Consumer/Function'),
      },
      Mapping: {
        Type: 'AWS::Lambda::EventSourceMapping',
        Properties: {
          BatchSize: 10,
          EventSourceArn: { 'Fn::GetAtt': ['Queue', 'Arn'] },
          FunctionName: { Ref: 'Function' },
          FunctionResponseTypes: ['ReportBatchItemFailures'],
          ...mapping,
        },
        Metadata: path('Consumer/Function/SqsEventSource'),
      },
    },
  };
}

const name = 'src/settings.ts#settings';
const differencesWith = (mapping: Record<string, unknown>, overrides: Parameters<typeof withOverrides>[0]) =>
  templateDifferences(planStackRun(readStackTemplate(template(mapping), 'Shop')), {
    settings: { value: withOverrides({ consumerName: 'shop', ...overrides }), name },
  });

describe('local --app: the mapping filter criteria and provisioned mode from the template', () => {
  const filtered = {
    FilterCriteria: { Filters: [{ Pattern: JSON.stringify(paid) }] },
    ProvisionedPollerConfig: { MinimumPollers: 2, MaximumPollers: 10 },
    MetricsConfig: { Metrics: ['EventCount'] },
  };

  it('reads FilterCriteria into the settings the run uses (the local poller applies them), and the pollers', () => {
    const plan = planStackRun(readStackTemplate(template(filtered), 'Shop'));
    expect(plan.settings.function.filters).toEqual([paid]);
    expect(plan.settings.function.minimumPollers).toBe(2);
    expect(plan.settings.function.maximumPollers).toBe(10);
    expect(plan.sqs?.mapping.metrics).toEqual(['EventCount']);
  });

  it('finds no difference with the settings the stack was synthesized with, whatever their key order', () => {
    const reordered: FilterPattern = { body: { region: [{ prefix: 'eu-' }], type: ['OrderPaid'] } };
    expect(differencesWith(filtered, { function: { filters: [reordered], minimumPollers: 2, maximumPollers: 10 } })).toEqual([]);
  });

  it('names the filters of both sides when they differ, or when only one side has them', () => {
    const other: FilterPattern = { body: { type: ['OrderShipped'] } };
    const differences = differencesWith(filtered, { function: { filters: [other], minimumPollers: 2, maximumPollers: 10 } });
    expect(differences).toEqual([
      {
        setting: 'function.filters',
        template: expect.stringContaining('FilterCriteria of Shop/Consumer/Function/SqsEventSource'),
        local: expect.stringContaining('OrderShipped'),
      },
    ]);
    expect(differencesWith({}, { function: { filters: [paid] } }).map((d) => d.setting)).toEqual(['function.filters']);
    expect(differencesWith(filtered, { function: { minimumPollers: 2, maximumPollers: 10 } }).map((d) => d.template)).toEqual([
      expect.stringContaining('"OrderPaid"'),
    ]);
  });

  it('holds provisioned mode and the mapping metrics to the template', () => {
    const standard = { FilterCriteria: filtered.FilterCriteria, ScalingConfig: { MaximumConcurrency: 5 } };
    expect(differencesWith(standard, { function: { filters: [paid], minimumPollers: 2 } }).map((d) => d.setting)).toEqual([
      'function.minimumPollers / function.maximumPollers (SQS provisioned mode)',
    ]);
    expect(
      differencesWith(filtered, { function: { filters: [paid], minimumPollers: 2, maximumPollers: 20 } }).map((d) => d.setting),
    ).toEqual(['function.maximumPollers']);
    expect(
      differencesWith(filtered, { function: { filters: [paid], minimumPollers: 2, maximumPollers: 10, mappingMetrics: false } }).map(
        (d) => d.setting,
      ),
    ).toEqual(['function.mappingMetrics']);
  });
});
