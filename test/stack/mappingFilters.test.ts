import type { CfnElement, Stack } from 'aws-cdk-lib';
import type { Template } from 'aws-cdk-lib/assertions';
import type { CfnEventSourceMapping } from 'aws-cdk-lib/aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { ConsumerMonitoring } from '../../packages/cdk/src/ConsumerMonitoring.js';
import type { IdempotentConsumer } from '../../packages/cdk/src/IdempotentConsumer.js';
import type { FilterPattern } from '../../packages/idempotent-consumer/src/settings/filterCriteria.js';
import { withOverrides } from '../../packages/idempotent-consumer/src/settings/settings.js';
import { InvalidSettingsError } from '../../packages/idempotent-consumer/src/settings/validateSettings.js';
import { awsSolutionsViolations, synthConsumer } from './stackHelpers.js';

// Mappings, alarms and the dashboard do not depend on the handler's code: these stacks skip bundling.
const clusterArn = 'arn:aws:kafka:us-east-1:123456789012:cluster/demo/abcd1234-0000-0000-0000-000000000000-1';

type Properties = Record<string, unknown>;
const mappings = (template: Template): Properties[] =>
  Object.values(template.findResources('AWS::Lambda::EventSourceMapping')).map((r) => r.Properties as Properties);
const sqsMapping = (template: Template) => mappings(template).find((p) => p.Topics === undefined)!;
const kafkaMapping = (template: Template) => mappings(template).find((p) => p.Topics !== undefined)!;
const logicalIdOf = (stack: Stack, mapping: CfnEventSourceMapping) => stack.getLogicalId(mapping as CfnElement);

describe('the SQS event source mapping by default', () => {
  let template: Template;
  beforeAll(() => {
    ({ template } = synthConsumer());
  });

  it('turns its metrics on (EventCount), keeps maximum concurrency, and has no filter and no provisioned pollers', () => {
    const mapping = sqsMapping(template);
    expect(mapping.MetricsConfig).toEqual({ Metrics: ['EventCount'] });
    expect(mapping.ScalingConfig).toEqual({ MaximumConcurrency: 5 });
    expect(mapping.ProvisionedPollerConfig).toBeUndefined();
    expect(mapping.FilterCriteria).toBeUndefined();
  });
});

describe('an SQS event source mapping with filters, provisioned pollers and its metrics off', () => {
  const paid: FilterPattern = { body: { type: ['OrderPaid', 'OrderShipped'], region: [{ prefix: 'eu-' }] } };
  const legacy: FilterPattern = { body: [{ prefix: 'legacy:' }] };
  let stack: Stack;
  let template: Template;
  beforeAll(() => {
    ({ stack, template } = synthConsumer({
      props: {
        settings: withOverrides({ function: { filters: [paid, legacy], minimumPollers: 2, maximumPollers: 10, mappingMetrics: false } }),
      },
    }));
  });

  it('writes FilterCriteria, one Pattern per filter as JSON, and ProvisionedPollerConfig instead of ScalingConfig', () => {
    const mapping = sqsMapping(template);
    expect(mapping.FilterCriteria).toEqual({ Filters: [{ Pattern: JSON.stringify(paid) }, { Pattern: JSON.stringify(legacy) }] });
    expect(mapping.ProvisionedPollerConfig).toEqual({ MinimumPollers: 2, MaximumPollers: 10 });
    expect(mapping.ScalingConfig).toBeUndefined();
    expect(mapping.MetricsConfig).toBeUndefined();
  });

  it('passes cdk-nag', () => {
    expect(awsSolutionsViolations(stack).map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.locations).join()}`)).toEqual([]);
  });
});

describe('filter criteria are checked against AWS rules before anything is built', () => {
  it('refuses a key other than body, an unsupported operator, and more than 5 filters', () => {
    const build = (filters: unknown[]) => () =>
      synthConsumer({ props: { settings: withOverrides({ function: { filters: filters as FilterPattern[] } }) } });
    expect(build([{ attributes: { ApproximateReceiveCount: ['1'] } }])).toThrow(InvalidSettingsError);
    expect(build([{ attributes: { ApproximateReceiveCount: ['1'] } }])).toThrow(/filters only on the "body" key/);
    expect(build([{ body: { type: [{ wildcard: 'Order*' }] } }])).toThrow(/does not support/);
    expect(build(Array.from({ length: 6 }, (_, i) => ({ body: { n: [i] } })))).toThrow(/at most 5/);
  });

  it('refuses SQS provisioned pollers outside AWS ranges', () => {
    expect(() => synthConsumer({ props: { settings: withOverrides({ function: { minimumPollers: 1 } }) } })).toThrow(
      /SQS provisioned pollers/,
    );
  });
});

describe('a Kafka event source mapping with filters, and the monitoring of both mappings', () => {
  const paid: FilterPattern = { value: { type: ['OrderPaid'] } };
  let stack: Stack;
  let consumer: IdempotentConsumer;
  let template: Template;
  beforeAll(() => {
    ({ stack, consumer, template } = synthConsumer({
      props: { kafka: { clusterArn, consumerGroupId: 'orders' }, settings: withOverrides({ kafka: { filters: [paid] } }) },
      after: (s, c) => void new ConsumerMonitoring(s, 'Monitoring', { consumer: c }),
    }));
  });

  it('writes the Kafka FilterCriteria and keeps its metrics', () => {
    const mapping = kafkaMapping(template);
    expect(mapping.FilterCriteria).toEqual({ Filters: [{ Pattern: JSON.stringify(paid) }] });
    expect(mapping.MetricsConfig).toEqual({ Metrics: ['EventCount', 'ErrorCount', 'KafkaMetrics'] });
  });

  it('alarms when the Kafka mapping drops records: DroppedEventCount of its EventSourceMappingUUID, Sum over 5 min, > 0', () => {
    const kafkaId = logicalIdOf(stack, consumer.kafkaSource!.cfnMapping);
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')).map((r) => r.Properties as Properties);
    const dropped = alarms.filter((a) => a.MetricName === 'DroppedEventCount');
    expect(dropped).toHaveLength(1);
    expect(dropped[0]).toMatchObject({
      Namespace: 'AWS/Lambda',
      Dimensions: [{ Name: 'EventSourceMappingUUID', Value: { Ref: kafkaId } }],
      Statistic: 'Sum',
      Period: 300,
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
    });
  });

  it('graphs the mappings: polled, filtered out, invoked, failed, deleted (SQS), dropped and on-failure (Kafka)', () => {
    const dashboard = JSON.stringify(Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0]!.Properties);
    for (const name of [
      'PolledEventCount',
      'FilteredOutEventCount',
      'InvokedEventCount',
      'FailedInvokeEventCount',
      'DeletedEventCount',
      'DroppedEventCount',
      'OnFailureDestinationDeliveredEventCount',
    ]) {
      expect(dashboard).toContain(`\\"${name}\\",\\"EventSourceMappingUUID\\"`);
    }
  });
});
