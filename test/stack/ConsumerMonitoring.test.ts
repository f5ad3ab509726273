import { beforeAll, describe, expect, it } from 'vitest';
import type { CfnElement } from 'aws-cdk-lib';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { Role } from 'aws-cdk-lib/aws-iam';
import { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import type { IConstruct } from 'constructs';
import { InvalidSettingsError } from '../../packages/idempotent-consumer/src/settings/validateSettings.js';
import { CafeStack } from '../../examples/cafe/infra/CafeStack.js';
import { ConsumerMonitoring, type ConsumerAlarms } from '../../packages/cdk/src/ConsumerMonitoring.js';
import { acknowledgedRules, awsSolutionsViolations, newApp, refusal, skipBundling, synthCafeStack, synthConsumer } from './stackHelpers.js';

// Alarms and dashboard do not depend on the handler's code: these stacks skip bundling.
const clusterArn = 'arn:aws:kafka:us-east-1:123456789012:cluster/demo/abc';

/** What an alarm must watch and when it must fire. */
interface ExpectedAlarm {
  readonly alarm: keyof ConsumerAlarms;
  readonly namespace: string;
  readonly metricName: string;
  readonly dimensions: (stack: CafeStack) => unknown[];
  readonly statistic: string;
  /** Seconds. */
  readonly period: number;
  readonly threshold: number;
  readonly evaluationPeriods: number;
  readonly treatMissingData: string;
}

const logicalId = (stack: CafeStack, construct: IConstruct) => stack.getLogicalId(construct.node.defaultChild as CfnElement);

/** The alarms of the default stack, with the default thresholds. */
const defaultAlarms: readonly ExpectedAlarm[] = [
  {
    alarm: 'deadLetterQueueNotEmpty',
    namespace: 'AWS/SQS',
    metricName: 'ApproximateNumberOfMessagesVisible',
    dimensions: (s) => [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(s, s.consumer.deadLetterQueue), 'QueueName'] } }],
    statistic: 'Maximum',
    period: 60,
    threshold: 0,
    evaluationPeriods: 1,
    treatMissingData: 'ignore',
  },
  {
    alarm: 'oldestMessageAge',
    namespace: 'AWS/SQS',
    metricName: 'ApproximateAgeOfOldestMessage',
    dimensions: (s) => [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(s, s.consumer.queue), 'QueueName'] } }],
    statistic: 'Maximum',
    period: 60,
    threshold: 300,
    evaluationPeriods: 1,
    treatMissingData: 'notBreaching',
  },
  {
    alarm: 'functionErrors',
    namespace: 'AWS/Lambda',
    metricName: 'Errors',
    dimensions: (s) => [{ Name: 'FunctionName', Value: { Ref: logicalId(s, s.consumer.function) } }],
    statistic: 'Sum',
    period: 300,
    threshold: 0,
    evaluationPeriods: 1,
    treatMissingData: 'notBreaching',
  },
  {
    alarm: 'functionThrottles',
    namespace: 'AWS/Lambda',
    metricName: 'Throttles',
    dimensions: (s) => [{ Name: 'FunctionName', Value: { Ref: logicalId(s, s.consumer.function) } }],
    statistic: 'Sum',
    period: 300,
    threshold: 0,
    evaluationPeriods: 1,
    treatMissingData: 'notBreaching',
  },
  {
    alarm: 'deadLettered',
    namespace: 'IdempotentConsumer',
    metricName: 'DeadLettered',
    dimensions: () => [{ Name: 'service', Value: 'cafe-orders' }],
    statistic: 'Sum',
    period: 300,
    threshold: 0,
    evaluationPeriods: 1,
    treatMissingData: 'notBreaching',
  },
];

/** The properties of the alarm `name` in the template. */
function alarmProperties(stack: CafeStack, template: Template, name: keyof ConsumerAlarms): Record<string, unknown> {
  const alarm = stack.monitoring.alarms[name];
  if (alarm === undefined) throw new Error(`no alarm ${name}`);
  return (template.toJSON().Resources as Record<string, { Properties: Record<string, unknown> }>)[logicalId(stack, alarm)]!.Properties;
}

/** Checks one alarm's metric, threshold, comparison, periods, missing-data rule and actions. */
function expectAlarm(stack: CafeStack, template: Template, expected: ExpectedAlarm): void {
  const properties = alarmProperties(stack, template, expected.alarm);
  const topic = { Ref: logicalId(stack, stack.monitoring.topic) };

  expect(properties).toMatchObject({
    Namespace: expected.namespace,
    MetricName: expected.metricName,
    Dimensions: expected.dimensions(stack),
    Statistic: expected.statistic,
    Period: expected.period,
    Threshold: expected.threshold,
    ComparisonOperator: 'GreaterThanThreshold',
    EvaluationPeriods: expected.evaluationPeriods,
    DatapointsToAlarm: expected.evaluationPeriods,
    TreatMissingData: expected.treatMissingData,
    AlarmActions: [topic],
    OKActions: [topic],
  });
  expect(properties.AlarmDescription).toMatch(/^cafe-orders: .{80,}/);
}

/** The dashboard's body with its tokens resolved to their CloudFormation form, as text. */
function dashboardBody(template: Template): string {
  const dashboards = Object.values(template.findResources('AWS::CloudWatch::Dashboard'));
  expect(dashboards).toHaveLength(1);
  return JSON.stringify(dashboards[0]!.Properties.DashboardBody);
}

describe('ConsumerMonitoring (default stack: no Kafka, no email)', () => {
  let stack: CafeStack;
  let template: Template;

  beforeAll(() => {
    ({ stack, template } = synthCafeStack());
  });

  it("creates exactly the five SQS and Lambda alarms, beside the outbox relay's own", () => {
    const relayAlarms = Object.keys(stack.consumer.outboxRelay!.alarms).length;
    expect(relayAlarms).toBeGreaterThan(0);
    template.resourceCountIs('AWS::CloudWatch::Alarm', 5 + relayAlarms);
    expect(Object.keys(stack.monitoring.alarms).sort()).toEqual([
      'deadLetterQueueNotEmpty',
      'deadLettered',
      'functionErrors',
      'functionThrottles',
      'oldestMessageAge',
    ]);
    expect(stack.monitoring.alarms.kafkaOffsetLag).toBeUndefined();
  });

  it.each(defaultAlarms)('$alarm: $namespace $metricName ($statistic, $period s) > $threshold, notifying the topic', (expected) => {
    expectAlarm(stack, template, expected);
  });

  it('encrypts the alarm topic with a rotated key that CloudWatch may use, and denies requests without TLS', () => {
    const key = logicalId(stack, stack.monitoring.node.findChild('AlarmTopicKey'));

    template.hasResourceProperties('AWS::KMS::Key', {
      EnableKeyRotation: true,
      KeyPolicy: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Allow',
            Principal: { Service: 'cloudwatch.amazonaws.com' },
            Action: ['kms:Decrypt', 'kms:GenerateDataKey*'],
          }),
        ]),
      },
    });
    const keyPolicy = (
      template.toJSON().Resources as Record<string, { Properties: { KeyPolicy: { Statement: Record<string, unknown>[] } } }>
    )[key]!.Properties.KeyPolicy.Statement;
    const forCloudWatch = keyPolicy.filter((statement) => JSON.stringify(statement.Principal).includes('cloudwatch.amazonaws.com'));
    expect(forCloudWatch).toHaveLength(1);
    expect(forCloudWatch[0]!.Condition).toEqual({
      StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } },
      ArnLike: {
        'aws:SourceArn': {
          'Fn::Join': [
            '',
            ['arn:', { Ref: 'AWS::Partition' }, ':cloudwatch:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, ':alarm:*'],
          ],
        },
      },
    });
    template.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: { 'Fn::GetAtt': [key, 'Arn'] } });
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      Topics: [{ Ref: logicalId(stack, stack.monitoring.topic) }],
      PolicyDocument: {
        Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]),
      },
    });
  });

  it('subscribes no email address when none is given', () => {
    template.resourceCountIs('AWS::SNS::Subscription', 0);
  });

  it('outputs the alarm topic and the dashboard', () => {
    template.hasOutput('AlarmTopicArn', { Value: { Ref: logicalId(stack, stack.monitoring.topic) } });
    template.hasOutput('DashboardName', { Value: { Ref: logicalId(stack, stack.monitoring.dashboard) } });
  });

  it('shows throughput, duplicates, failures by reason, DLQ depth, oldest message age, latency percentiles and the function', () => {
    const body = dashboardBody(template);

    for (const text of [
      'MessagesApplied',
      'DuplicatesAcknowledged',
      'RetryableFailures',
      'DeadLettered',
      'MessagesParked',
      'AppliedFromPark',
      'SEARCH(\'{IdempotentConsumer,failureReason,service} MetricName=\\\\\\"DeadLettered\\\\\\" service=\\\\\\"cafe-orders\\\\\\"\'',
      'ApproximateNumberOfMessagesVisible',
      'ApproximateAgeOfOldestMessage',
      'ProcessingLatency',
      '\\"stat\\":\\"p50\\"',
      '\\"stat\\":\\"p90\\"',
      '\\"stat\\":\\"p99\\"',
      '\\"Errors\\"',
      '\\"Throttles\\"',
      '\\"Duration\\"',
      'ConcurrentExecutions',
    ]) {
      expect(body).toContain(text);
    }
    expect(body).not.toContain('OffsetLag');
  });

  it('reports no cdk-nag finding that is not acknowledged, and acknowledges nothing for the monitoring', () => {
    expect(awsSolutionsViolations(stack)).toEqual([]);
    expect([...acknowledgedRules(stack.monitoring).keys()]).toEqual([]);
  });
});

describe('ConsumerMonitoring with Kafka, an email address and custom thresholds', () => {
  let stack: CafeStack;
  let template: Template;

  beforeAll(() => {
    ({ stack, template } = synthCafeStack({
      context: { kafkaClusterArn: clusterArn, alarmEmail: 'ops@example.com' },
      props: { monitoring: { oldestMessageAgeThresholdSeconds: 600, kafkaOffsetLagThreshold: 5000 } },
    }));
  });

  it('adds the Kafka offset lag alarm: AWS/Lambda OffsetLag of the function, Maximum over 5 min, > 5000 records 3 periods in a row', () => {
    // The five of every consumer, the offset lag and the Kafka mapping's dropped events (mappingMetrics.test.ts), the relay's.
    template.resourceCountIs('AWS::CloudWatch::Alarm', 7 + Object.keys(stack.consumer.outboxRelay!.alarms).length);
    expectAlarm(stack, template, {
      alarm: 'kafkaOffsetLag',
      namespace: 'AWS/Lambda',
      metricName: 'OffsetLag',
      dimensions: (s) => [{ Name: 'FunctionName', Value: { Ref: logicalId(s, s.consumer.function) } }],
      statistic: 'Maximum',
      period: 300,
      threshold: 5000,
      evaluationPeriods: 3,
      treatMissingData: 'notBreaching',
    });
  });

  it('uses the oldest-message-age threshold given, in seconds', () => {
    expectAlarm(stack, template, { ...defaultAlarms.find((a) => a.alarm === 'oldestMessageAge')!, threshold: 600 });
    expect(alarmProperties(stack, template, 'oldestMessageAge').AlarmDescription).toContain('older than 600 s');
  });

  it('subscribes the email address from -c alarmEmail to the alarm topic', () => {
    template.resourceCountIs('AWS::SNS::Subscription', 1);
    template.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'ops@example.com',
      TopicArn: { Ref: logicalId(stack, stack.monitoring.topic) },
    });
  });

  it('shows the Kafka offset lag on the dashboard', () => {
    expect(dashboardBody(template)).toContain('\\"AWS/Lambda\\",\\"OffsetLag\\",\\"FunctionName\\"');
  });

  it('reports no cdk-nag finding that is not acknowledged', () => {
    expect(awsSolutionsViolations(stack)).toEqual([]);
  });
});

describe('ConsumerMonitoring options', () => {
  it('refuses an alarm email that is not an address', () => {
    const { error } = refusal(newApp({ ...skipBundling, alarmEmail: 'ops-at-example' }), (app) => new CafeStack(app, 'BadEmail'));

    expect(error).toBeInstanceOf(InvalidSettingsError);
    expect(error.message).toContain('alarm email "ops-at-example" is not an email address');
  });

  it('refuses thresholds that are not positive whole numbers, all at once, before building anything', () => {
    const { consumer } = synthConsumer();
    const before = consumer.node.scope!.node.findAll().length;
    const { error } = refusal(
      newApp(),
      () => new ConsumerMonitoring(consumer, 'Monitoring', { consumer, oldestMessageAgeThresholdSeconds: 0, kafkaOffsetLagThreshold: 1.5 }),
    );

    expect((error as InvalidSettingsError).problems).toEqual([
      'oldest message age threshold 0 s must be a positive whole number of seconds',
      'Kafka offset lag threshold 1.5 must be a positive whole number of records',
    ]);
    expect(consumer.node.scope!.node.findAll().length).toBe(before);
  });
});

describe('ConsumerMonitoring of a consumer with an imported queue and function', () => {
  it('watches them by name', () => {
    const { template } = synthConsumer({
      extra: (s) => ({
        existingQueue: Queue.fromQueueArn(s, 'Imported', 'arn:aws:sqs:us-east-1:123456789012:orders'),
        existingDeadLetterQueue: Queue.fromQueueArn(s, 'ImportedDlq', 'arn:aws:sqs:us-east-1:123456789012:orders-dlq'),
        existingFunction: LambdaFunction.fromFunctionAttributes(s, 'ImportedFunction', {
          functionArn: 'arn:aws:lambda:us-east-1:123456789012:function:orders-consumer',
          role: Role.fromRoleArn(s, 'ImportedRole', 'arn:aws:iam::123456789012:role/orders-consumer'),
        }),
      }),
      after: (stack, consumer) => new ConsumerMonitoring(stack, 'Monitoring', { consumer }),
    });

    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [{ Name: 'QueueName', Value: 'orders-dlq' }],
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'ApproximateAgeOfOldestMessage',
      Dimensions: [{ Name: 'QueueName', Value: 'orders' }],
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: 'orders-consumer' }],
    });
  });
});
